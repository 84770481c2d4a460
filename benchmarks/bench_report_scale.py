"""``sweep report`` on a very large run: seconds and peak memory (issue 11, performance).

Runs the main job's momentum sweep (synthetic panel, buy-and-hold benchmark, 200 joint
bootstrap replications) widened to ``--configs`` configs (100 lookbacks x N bands), then
times ``sweep report`` on it in a fresh process and reads that process's peak RSS. The
report reads the stored null summaries for the sweep-wide tests and recomputes returns only
for the dimensionality sample (``max_return_configs``). Goal: 10^6 configs in under 60 s
and under 2 GB.

Usage::

    python benchmarks/bench_report_scale.py                    # 1,000,000 configs
    python benchmarks/bench_report_scale.py --configs 100000   # a smaller run
    python benchmarks/bench_report_scale.py --run-dir DIR      # reuse a finished run
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPEC = """name = "report-scale"
seed = 20261130
[data]
source = "synthetic"
[strategy]
name = "momentum"
[grid]
lookback = {{ start = 20, stop = 320, step = 3 }}
band = {{ linspace = [0.0, 0.02, {bands}] }}
[metrics]
benchmark = "buy_and_hold"
bootstrap_reps = 200
block_length = 21
bootstrap_method = "circular"
pbo_blocks = 16
"""


def timed(cmd: list[str]) -> tuple[float, float]:
    """Run a command; its wall seconds and peak RSS in MiB (the largest child so far)."""
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    seconds = time.perf_counter() - t0
    return seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=1_000_000)
    parser.add_argument("--run-dir", type=Path, default=None)
    args = parser.parse_args()
    sweep = [sys.executable, "-m", "sweep"]
    with tempfile.TemporaryDirectory() as tmp:
        result: dict[str, object] = {}
        run_dir = args.run_dir
        if run_dir is None or not (run_dir / "manifest.json").exists():
            run_dir = run_dir or Path(tmp) / "run"
            spec = Path(tmp) / "spec.toml"
            spec.write_text(SPEC.format(bands=max(1, args.configs // 100)))
            seconds, rss = timed([*sweep, "run", str(spec), "--run-dir", str(run_dir), "--quiet"])
            result.update(run_seconds=seconds, run_peak_rss_mib=rss)
        # The report process starts after the run's, so RUSAGE_CHILDREN's max is the larger
        # of the two: measure the report alone in a child that reports its own peak.
        probe = (
            "import resource, subprocess, sys, time; t = time.perf_counter(); "
            "subprocess.run(sys.argv[1:], check=True); "
            "print(time.perf_counter() - t, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)"
        )
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                probe,
                *sweep,
                "report",
                str(run_dir),
                "--quiet",
                "--out",
                str(Path(tmp) / "report"),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        result.update(report_seconds=float(out[-2]), report_peak_rss_mib=float(out[-1]))
        steps = json.loads((Path(tmp) / "report" / "report.json").read_text())["generated"]
        result["report_steps"] = steps.get("step_seconds")
        result["configs"] = json.loads((run_dir / "manifest.json").read_text())["grid"]["size"]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
