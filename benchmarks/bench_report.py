"""Time ``sweep report`` step by step on a finished run folder (a script, not a test).

Usage::

    python benchmarks/bench_report.py runs/momentum-demo            # default options
    python benchmarks/bench_report.py runs/momentum-demo --repeat 2  # and check stability

Prints the seconds of each step (read and verify, telemetry, results, recompute returns,
effective number of trials, DSR, PBO, SPA, figures) and, with --repeat, whether report.json
is identical across builds apart from ``generated``.
"""

from __future__ import annotations

import argparse
import json

from sweep.common._jsonable import dumps
from sweep.report import ReportOptions, build_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", nargs="?", default="runs/momentum-demo")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    docs = []
    for k in range(args.repeat):
        report = build_report(args.run_dir, ReportOptions(progress=False))
        steps = report.data.generated.step_seconds
        total = sum(steps.values())
        print(f"build {k + 1}: {total:.1f} s")
        for name, seconds in steps.items():
            print(f"  {name:<40} {seconds:7.2f} s")
        doc = json.loads(dumps(report.to_json()))
        doc.pop("generated")
        docs.append(doc)
    if len(docs) > 1:
        print("report.json identical across builds:", all(d == docs[0] for d in docs[1:]))


if __name__ == "__main__":
    main()
