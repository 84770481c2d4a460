"""This tree vs an earlier commit, same measurement alternated in one run (noisy machines).

Absolute configs/s on a shared machine say little; the ratio of two versions measured
alternately under the same load says more. The base commit's tree is exported with
``git archive`` into a temporary folder; each round runs one child process per version
(the base first, then this tree) that measures, on one core, ``evaluate_batch`` of the
10,000-config momentum grid (``examples/momentum.toml``) without bootstrap, after a
warm-up (numba compilation excluded), in batches of 1,000 configs. Best of ``--rounds``
per version; the ratio is base time over this tree's time.

Issue 15 measured the base (ae5ceb0) at 7,396 configs/s/core on a quieter machine; the
projection printed is that figure times the ratio (an estimate, not a measurement).

``--spec`` measures another spec the same way, e.g. ``benchmarks/close_book.toml`` (a
position strategy booked at the close with a cost grid: the close-only book).

Run: ``python benchmarks/bench_against_base.py [--base ae5ceb0] [--rounds 3] [--spec FILE]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
ISSUE_BASE_RATE = 7_396

CHILD = r"""
import json, sys, time
import numpy as np
from sweep import evaluate_batch, load_spec, resolve, spec_from_dict
base = resolve(load_spec(sys.argv[1]))
doc = base.spec.to_dict(); doc["metrics"]["bootstrap_reps"] = int(sys.argv[2])
sweep = resolve(spec_from_dict(doc), base.panel)
idx = np.arange(len(sweep.grid), dtype=np.int64)
evaluate_batch(sweep, idx[:64])
t0 = time.perf_counter()
for lo in range(0, idx.shape[0], 1000):
    evaluate_batch(sweep, idx[lo : lo + 1000])
print(json.dumps({"seconds": time.perf_counter() - t0, "configs": int(idx.shape[0])}))
"""


def export(commit: str, folder: Path) -> None:
    data = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", commit],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        # A symlink (an old commit tracked one to an absolute venv path) is not code: skip it.
        files = [member for member in tar if not member.issym()]
        tar.extractall(folder, members=files, filter="data")


def base_module(commit: str, path: str, name: str) -> ModuleType:
    """Import ``path`` as it was at ``commit`` as the module ``name``, beside this tree's.

    The file is written to a folder of its own per commit (kept, so numba caches its
    kernels between runs) and rewritten only when its text differs.
    """
    text = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{commit}:{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    folder = Path(tempfile.gettempdir()) / f"raysweep-bench-base-{commit}"
    folder.mkdir(exist_ok=True)
    file = folder / f"{name}.py"
    if not file.exists() or file.read_text() != text:
        file.write_text(text)
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def measure(tree: Path, spec: Path, reps: int = 0) -> float:
    # Each tree compiles into its own cache outside the work tree (never beside the sources).
    cache = Path(tempfile.gettempdir()) / "raysweep-bench-numba" / tree.resolve().name
    env = {**os.environ, "PYTHONPATH": str(tree), "NUMBA_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(spec), str(reps)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
        env=env,
    ).stdout
    doc = json.loads(out.strip().splitlines()[-1])
    return float(doc["seconds"]) / doc["configs"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="ae5ceb0")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bootstrap-reps", type=int, default=0, help="joint bootstrap reps")
    parser.add_argument("--spec", type=Path, default=REPO / "examples" / "momentum.toml")
    args = parser.parse_args()
    reps = args.bootstrap_reps
    spec = args.spec.resolve()
    with tempfile.TemporaryDirectory(prefix="bench-base-") as tmp:
        base_tree = Path(tmp) / "base"
        export(args.base, base_tree)
        best = {"base": float("inf"), "head": float("inf")}
        for _ in range(args.rounds):
            best["base"] = min(best["base"], measure(base_tree, spec, reps))
            best["head"] = min(best["head"], measure(REPO, spec, reps))
    ratio = best["base"] / best["head"]
    print(f"{spec.name}, {reps} bootstrap replications, best of {args.rounds} alternated rounds:")
    print(f"  base {args.base}: {1 / best['base']:8,.0f} configs/s/core")
    print(f"  this tree:      {1 / best['head']:8,.0f} configs/s/core")
    print(f"  ratio this tree / base: {ratio:.2f}x")
    if spec.name == "momentum.toml":
        print(
            f"  projection at the issue's base figure ({ISSUE_BASE_RATE:,}/s): "
            f"{ISSUE_BASE_RATE * ratio:,.0f} configs/s/core (goal 10,000)"
        )


if __name__ == "__main__":
    main()
