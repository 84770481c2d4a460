"""The cost of walk-forward validation on the main job, measured side by side (issue 13).

Runs the main job's 10,000-config momentum grid (``examples/momentum.toml``: buy-and-hold
benchmark, 200 joint bootstrap replications, and its ``[validation] walk_forward`` block of
45 folds) in process on one core, with and without the ``[validation]`` section, alternating
the two three times and keeping the best time of each: the kernel, metrics, null summaries
and the fold summaries. Then builds the report of each run (which recomputes the selected
configs for the walk-forward section). Goal: within 1.3x of the time without validation.

Run: ``python benchmarks/bench_walk_forward.py``.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import numpy as np

from sweep import evaluate_batch, load_spec, resolve, run_sweep, spec_from_dict
from sweep.report import ReportOptions, build_report

SPEC = Path(__file__).resolve().parents[1] / "examples" / "momentum.toml"


def sweep_seconds(sweep) -> float:
    idx = np.arange(len(sweep.grid), dtype=np.int64)
    t0 = time.perf_counter()
    for lo in range(0, idx.shape[0], 1000):
        evaluate_batch(sweep, idx[lo : lo + 1000])
    return time.perf_counter() - t0


def main() -> None:
    with_wf = resolve(load_spec(SPEC))
    doc = with_wf.spec.to_dict()
    doc.pop("validation")
    without = resolve(spec_from_dict(doc), with_wf.panel)
    for s in (with_wf, without):  # compile and warm up
        evaluate_batch(s, np.arange(64, dtype=np.int64))
    times: dict[str, list[float]] = {"with": [], "without": []}
    for _ in range(3):
        times["without"].append(sweep_seconds(without))
        times["with"].append(sweep_seconds(with_wf))
    report: dict[str, float] = {"with": np.inf, "without": np.inf}
    with tempfile.TemporaryDirectory() as tmp:
        for name, s in (("without", without), ("with", with_wf)):
            run_sweep(s, Path(tmp) / name, progress=False)
        for _ in range(2):  # alternate, best of two (the first build also warms up)
            for name in ("without", "with"):
                t0 = time.perf_counter()
                build_report(Path(tmp) / name, ReportOptions(progress=False))
                took = time.perf_counter() - t0
                report[name] = min(report[name], took)
                print(f"report {name}: {took:.3f} s", flush=True)
    best = {k: min(v) for k, v in times.items()}
    print(
        json.dumps(
            {
                "configs": len(with_wf.grid),
                "folds": len(with_wf.fold_plan.folds),
                "sweep_seconds_best_of_3": best,
                "sweep_ratio_with_over_without": best["with"] / best["without"],
                "report_seconds": report,
                "report_ratio_with_over_without": report["with"] / report["without"],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
