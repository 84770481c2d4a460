"""The passes after a sweep on a folder of many parts: this tree vs an earlier commit (issue 24).

On one run folder, runs ``sweep verify --executor local``, a ``sweep resume`` with nothing
left to do (on a fresh copy of the folder each time: a resume records a session) and
``sweep status`` (in-process in both), and with
``--report`` also ``sweep report --executor local``, once with the base commit's code and
once with this tree's, alternated for ``--rounds`` rounds under the same load. Each runs in
a fresh child process (the probe of ``bench_report_scale.py``) whose wall seconds and peak
RSS are read; the base tree is exported with ``git archive`` and put first on
``PYTHONPATH``. Prints the best of the rounds per version and the ratios (base / this), and
checks that both versions print the same verify and status output and the same table hash.

Run: ``python benchmarks/bench_passes_against_base.py --run-dir DIR [--base 564acfa]
[--rounds 2] [--report]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_against_base import export
from bench_report_scale import PROBE

REPO = Path(__file__).resolve().parents[1]


def probed_in(tree: Path, args: list[str]) -> tuple[float, float, str]:
    """``python -m sweep ARGS`` with ``tree``'s code: wall seconds, peak MiB, its stdout."""
    cache = Path(tempfile.gettempdir()) / "raysweep-bench-numba" / tree.resolve().name
    env = {**os.environ, "PYTHONPATH": str(tree), "NUMBA_CACHE_DIR": str(cache)}
    lines = subprocess.run(
        [sys.executable, "-c", PROBE, sys.executable, "-m", "sweep", *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
        env=env,
    ).stdout.splitlines()
    seconds, mib = lines[-1].split()
    return float(seconds), float(mib), "\n".join(lines[:-1])


def same_part(stdout: str) -> str:
    """What two versions must print alike: every line but where the pass ran."""
    lines = stdout.splitlines()
    kept, skipping = [], False
    for line in lines:
        if line.startswith("executor: "):
            skipping = True
            continue
        if skipping and line.startswith(" " * 10) and line[10] != " ":
            continue
        skipping = False
        kept.append(line)
    return "\n".join(kept)


def hash_lines(stdout: str) -> str:
    """A command's table hash lines (a resume's other lines hold its session and times)."""
    return "\n".join(line for line in stdout.splitlines() if "hash" in line)


#: What each step must print alike in both versions.
COMPARED = {
    "verify": same_part,
    "resume (nothing to do)": hash_lines,
    "status": lambda stdout: "\n".join(
        line for line in stdout.splitlines() if line.startswith(STATUS_FIELDS)
    ),
}
#: The lines of ``sweep status`` that do not depend on when the sessions ran.
STATUS_FIELDS = ("progress:", "configs:", "parts:", "environments:", "table hash:", "hash version:")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--base", default="564acfa")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--report", action="store_true", help="also time sweep report")
    args = parser.parse_args()
    run_dir = args.run_dir.resolve()
    best: dict[tuple[str, str], tuple[float, float]] = {}
    outputs: dict[str, set[str]] = {}
    with tempfile.TemporaryDirectory(prefix="passes-base-") as tmp:
        base = Path(tmp) / "base"
        export(args.base, base)
        trees = {"base": base, "this": REPO}
        for _ in range(args.rounds):
            for version, tree in trees.items():
                copy = Path(tmp) / f"copy-{version}"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(run_dir, copy)
                local = ["--executor", "local"]
                steps = {
                    "verify": ["verify", str(copy), *local],
                    "resume (nothing to do)": ["resume", str(copy), *local],
                    # `status` read its parts in-process, with no --executor, before 1fbf399.
                    "status": ["status", str(copy), *(local if version == "this" else [])],
                }
                if args.report:
                    out = Path(tmp) / f"report-{version}"
                    steps["report"] = [
                        "report",
                        str(copy),
                        "--executor",
                        "local",
                        "--quiet",
                        "--out",
                        str(out),
                    ]
                for step, cmd in steps.items():
                    seconds, mib, stdout = probed_in(tree, cmd)
                    if step in COMPARED:
                        outputs.setdefault(step, set()).add(COMPARED[step](stdout))
                    old = best.get((version, step))
                    best[(version, step)] = (
                        (seconds, mib) if old is None else (min(old[0], seconds), max(old[1], mib))
                    )
    same = all(len(found) == 1 for found in outputs.values())
    print(f"# this tree vs {args.base} on {run_dir} (best of {args.rounds}; peak: the largest)")
    print(f"outputs identical ({', '.join(outputs)}): {'yes' if same else 'NO'}\n")
    print("| step | base s | this s | base / this | base MiB | this MiB |")
    print("|---|---:|---:|---:|---:|---:|")
    for step in dict.fromkeys(s for _, s in best):
        (bs, bm), (ts, tm) = best[("base", step)], best[("this", step)]
        print(f"| {step} | {bs:.1f} | {ts:.1f} | {bs / ts:.2f} | {bm:,.0f} | {tm:,.0f} |")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
