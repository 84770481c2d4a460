"""The main job end to end, this tree against a base commit, and the planner's law on both.

Each round runs ``sweep run examples/momentum.toml --executor local`` once with the base
tree and once with this tree (alternated, each into a fresh run folder, each tree with its
own warm numba cache: one untimed run per tree first), timing the whole command (imports,
planning, the sweep, the parts written and the table hash). Best of ``--rounds``.

From each run's manifest it reads the plan: the measured per-task overhead O, the per-config
cost b, the target efficiency f, the law's batch ``B*(f) = f O / (b (1 - f))`` and the batch
used after the clamps; it checks the recorded law batch is that formula of the recorded O
and b, and prints both trees' values side by side (O should not move when b drops; the law
batch should grow as 1/b).

Run: ``python benchmarks/bench_main_job_against_base.py [--base 77e77b2] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_against_base import export  # noqa: E402
from bench_kernels_against_base import BASE  # noqa: E402


def run_main_job(tree: Path, run_dir: Path) -> tuple[float, dict[str, float], str]:
    """Seconds of the whole command, its plan and its table hash."""
    cache = Path(tempfile.gettempdir()) / "raysweep-bench-numba" / tree.resolve().name
    env = {**os.environ, "PYTHONPATH": str(tree), "NUMBA_CACHE_DIR": str(cache)}
    command = [sys.executable, "-m", "sweep", "run", str(REPO / "examples" / "momentum.toml")]
    command += ["--executor", "local", "--run-dir", str(run_dir), "-q"]
    t0 = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=tree, env=env, check=False)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    plan = manifest["sessions"][-1]["plan"]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("table hash:"))
    return seconds, plan, line.split()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=BASE)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"base": [], "head": []}
    plans: dict[str, list[dict[str, float]]] = {"base": [], "head": []}
    hashes: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="bench-main-job-") as tmp:
        base_tree = Path(tmp) / "base"
        export(args.base, base_tree)
        trees = (("base", base_tree), ("head", REPO))
        for side, tree in trees:  # warm each tree's numba cache
            run_main_job(tree, Path(tmp) / f"warm-{side}")
        for k in range(args.rounds):
            for side, tree in trees:
                seconds, plan, digest = run_main_job(tree, Path(tmp) / f"{side}-{k}")
                times[side].append(seconds)
                plans[side].append(plan)
                hashes.add(digest)
    print(f"sweep run examples/momentum.toml --executor local, best of {args.rounds} alternated:")
    for side in ("base", "head"):
        print(f"  {side}: {min(times[side]):6.2f} s (median {statistics.median(times[side]):.2f})")
    print(f"  ratio base / this tree: {min(times['base']) / min(times['head']):.2f}x")
    print(f"  table hashes: {sorted(hashes)} ({'one' if len(hashes) == 1 else 'DIFFERENT'})")
    print("\nplan (median over rounds): O, b, f, law batch f O / (b (1 - f)), batch used")
    for side in ("base", "head"):
        o = statistics.median(p["overhead_seconds"] for p in plans[side])
        b = statistics.median(p["per_config_seconds"] for p in plans[side])
        law = statistics.median(p["law_batch"] for p in plans[side])
        used = statistics.median(p["batch_size"] for p in plans[side])
        worst = max(abs(p["law_batch"] - _law(p)) / _law(p) for p in plans[side] if p["law_batch"])
        print(
            f"  {side}: O {o * 1e3:.2f} ms, b {b * 1e6:.1f} us, law batch {law:,.0f}, "
            f"used {used:,.0f}; recorded law batch vs formula: worst relative gap {worst:.1e}"
        )


def _law(plan: dict[str, float]) -> float:
    f = plan["target_efficiency"]
    return f * plan["overhead_seconds"] / (plan["per_config_seconds"] * (1 - f))


if __name__ == "__main__":
    main()
