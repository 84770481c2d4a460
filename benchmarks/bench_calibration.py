"""Error rates of the audit verdict, measured by Monte Carlo (issue 11, item 8).

Each panel is generated (``sweep._calibration.calibration_panel``: 3 independent assets,
6,000 business days) and swept with the momentum grid and the main job's metrics
(buy-and-hold benchmark, 200 joint circular block-bootstrap replications of length 21,
16 CSCV blocks); the report's testing section then gives the verdict, exactly as
``sweep run`` + ``sweep report`` would.

- **False-positive rate**: martingale panels (zero-mean returns, no config can beat the
  benchmark). Goal: the share called "likely real" is at most 5% within Monte-Carlo error.
- **Power**: panels with a planted momentum edge at two strengths, whose grid-best true
  annualised excess Sharpe (measured on one 200,000-day panel) is about 1 and about 0.5.

Rates come with exact (Clopper-Pearson) 95% intervals. Usage::

    python benchmarks/bench_calibration.py                   # 400 null + 2 x 150 edge panels
    python benchmarks/bench_calibration.py --null 40 --power 20 --jobs 2   # a smoke run
    python benchmarks/bench_calibration.py --grid 10000 --null 200 --power 0
    python benchmarks/bench_calibration.py --walk-forward   # the verdict with walk-forward
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path

import numpy as np

from sweep._calibration import (
    GRIDS,
    PanelOutcome,
    best_config_sharpe,
    calibration_panel,
    calibration_spec,
    judge_panel,
    rate_interval,
)

#: Planted-edge strengths (drift std / noise std) giving a grid-best Sharpe of ~1 and ~0.5.
EDGES = {"strong": 0.16, "weak": 0.10}


def _one(args: tuple[int, float, str, int, bool]) -> PanelOutcome:
    seed, edge, grid, reps, wf = args
    spec = calibration_spec(seed, grid, reps, walk_forward=wf)
    return judge_panel(calibration_panel(seed, edge), spec)


def scenario(
    name: str,
    edge: float,
    panels: int,
    grid: str,
    reps: int,
    seed: int,
    jobs: int,
    walk_forward: bool = False,
) -> dict[str, object]:
    """Run ``panels`` panels of one scenario and summarise the verdicts."""
    seeds = [seed * 1_000_003 + i for i in range(panels)]
    t0 = time.perf_counter()
    work = [(s, edge, grid, reps, walk_forward) for s in seeds]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        outcomes = list(pool.map(_one, work, chunksize=1))
    hits = sum(o.likely_real for o in outcomes)
    p = np.array([o.sweep_pvalue for o in outcomes])
    lo, hi = rate_interval(hits, panels)
    return {
        "scenario": name,
        "edge": edge,
        "panels": panels,
        "likely_real": hits,
        "rate": hits / panels,
        "ci95": [lo, hi],
        "sweep_test_rejects": float(np.mean(p <= 0.05)),
        "oos_holds": float(np.mean([o.oos_holds for o in outcomes])),
        "median_winner_sharpe_ann": float(np.median([o.winner_sharpe_ann for o in outcomes])),
        "seconds": time.perf_counter() - t0,
        "outcomes": [asdict(o) for o in outcomes],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--null", type=int, default=400, help="martingale panels")
    parser.add_argument("--power", type=int, default=150, help="panels per edge strength")
    parser.add_argument("--grid", choices=sorted(GRIDS), default="625")
    parser.add_argument("--reps", type=int, default=200, help="bootstrap replications")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=Path("runs/bench/calibration.json"))
    parser.add_argument(
        "--walk-forward",
        action="store_true",
        help="add the main job's walk-forward block: the verdict then uses its PSR",
    )
    args = parser.parse_args()
    wf = args.walk_forward

    rows = []
    if args.null:
        rows.append(
            scenario("martingale", 0.0, args.null, args.grid, args.reps, args.seed, args.jobs, wf)
        )
    if args.power:
        for i, (name, edge) in enumerate(EDGES.items()):
            row = scenario(
                name, edge, args.power, args.grid, args.reps, args.seed + 1 + i, args.jobs, wf
            )
            row["true_best_sharpe_ann"] = best_config_sharpe(edge, args.grid)
            rows.append(row)
    print(
        f"grid {args.grid} configs, {args.reps} joint bootstrap replications, 6,000 days"
        + (", walk-forward 3y/6m (verdict: PSR >= 0.95)" if wf else ", CSCV out-of-sample")
    )
    print(
        f"{'scenario':<11} {'true best SR':>12} {'panels':>6} {'likely real':>11} "
        f"{'95% CI':>15} {'p<=.05':>7} {'OOS ok':>7} {'s':>6}"
    )
    for r in rows:
        truth = r.get("true_best_sharpe_ann")
        lo, hi = r["ci95"]  # type: ignore[misc]
        print(
            f"{r['scenario']:<11} {'0 (null)' if truth is None else f'{truth:.2f}':>12} "
            f"{r['panels']:>6} {r['rate']:>11.3f} {f'[{lo:.3f}, {hi:.3f}]':>15} "
            f"{r['sweep_test_rejects']:>7.3f} {r['oos_holds']:>7.3f} {r['seconds']:>6.0f}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"grid": args.grid, "reps": args.reps, "walk_forward": wf, "rows": rows}
    args.out.write_text(json.dumps(doc, indent=1))
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
