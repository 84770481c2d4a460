"""``sweep bench amortization``: per-call against batched task times, and the law's fit.

One worker (one task at a time) runs, for every batch size B of the grid, ``reps`` tasks
of B configs (batched) and B tasks of one config each (per call), timing each task from
submission to result on the driver. ``T = O + bB`` (batched) and ``O + a`` (per call) are
fitted jointly by :func:`stats.fit_amortization`, and the measured speedup
``S(B) = per-call time / batched time`` is set against the fitted law. The planner's own
estimate (its pilot batches and no-op probe) is measured on the same worker to compare.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from stats import fit_amortization
from sweep._planner import PlannerSettings, plan_batches
from sweep._spec import ResolvedSweep
from sweep.bench._workload import workload_indices
from sweep.errors import SweepError
from sweep.executors._ray import RayExecutor


@dataclass(frozen=True)
class AmortizationSettings:
    """What ``sweep bench amortization`` measures.

    Attributes
    ----------
    batch_sizes : tuple of int
        Batch sizes B (at least two distinct).
    reps : int
        Batched tasks per B (their median is plotted).
    planner_configs : int
        Configs offered to the planner for its pilot batches (0: skip the comparison).
    seed : int
        Seed of the sample of grid positions evaluated.
    """

    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)
    reps: int = 3
    planner_configs: int = 2048
    seed: int = 0


def _timed_task(executor: RayExecutor, indices: NDArray[np.int64]) -> tuple[float, float]:
    """Driver-side seconds from submission to result of one task, and its compute time."""
    start = time.perf_counter()
    outcome = next(iter(executor.run([indices])))
    return time.perf_counter() - start, float(outcome.telemetry["compute_seconds"])


def _planner_estimate(executor: RayExecutor, sweep: ResolvedSweep, n: int) -> dict[str, Any]:
    todo = np.arange(min(n, len(sweep.grid)), dtype=np.int64)
    plan, _ = plan_batches(executor, todo, None, lambda outcome: 0.0, PlannerSettings())
    return plan.to_dict()


def measure_amortization(sweep: ResolvedSweep, settings: AmortizationSettings) -> dict[str, Any]:
    """Measure per-call and batched task times on one worker and fit the amortization law.

    Parameters
    ----------
    sweep : ResolvedSweep
        The sweep whose configs are evaluated.
    settings : AmortizationSettings
        Batch sizes, repetitions, planner comparison.

    Returns
    -------
    dict
        ``batched`` and ``per_call`` timings per B, ``speedup`` measured per B, ``fit``
        (O, b, a, R², ridge O/b, B*(0.9), B*(0.99), ceiling), ``planner`` (its plan) and
        ``comparison`` (planner / fitted ratios).
    """
    sizes = sorted({int(b) for b in settings.batch_sizes})
    pool = workload_indices(len(sweep.grid), max(sizes), settings.seed)
    executor = RayExecutor(workers=1)
    executor.start(sweep)
    try:
        _timed_task(executor, pool[:1])  # warm-up: worker start, imports, JIT compilation
        _timed_task(executor, pool)
        batched: list[dict[str, Any]] = []
        for b in sizes:
            runs = [_timed_task(executor, pool[:b]) for _ in range(settings.reps)]
            walls = [w for w, _ in runs]
            batched.append(
                {
                    "batch": b,
                    "seconds": walls,
                    "median": float(statistics.median(walls)),
                    "compute_median": float(statistics.median(c for _, c in runs)),
                }
            )
        singles = [_timed_task(executor, pool[i : i + 1])[0] for i in range(max(sizes))]
        planner = (
            _planner_estimate(executor, sweep, settings.planner_configs)
            if settings.planner_configs
            else None
        )
    finally:
        executor.close()
    per_call: list[dict[str, Any]] = [
        {"batch": b, "seconds": float(sum(singles[:b]))} for b in sizes
    ]
    speedup = [
        {"batch": b, "speedup": pc["seconds"] / bt["median"]}
        for b, pc, bt in zip(sizes, per_call, batched, strict=True)
    ]
    x = np.repeat(np.array(sizes, dtype=np.float64), settings.reps)
    y = np.array([s for row in batched for s in row["seconds"]])
    fit: dict[str, Any]
    try:
        f = fit_amortization(x, y, per_call_seconds=np.array(singles))
        law = f.law
        fit = {
            "available": True,
            "overhead_seconds": f.overhead,
            "per_config_seconds": f.marginal,
            "per_call_config_seconds": f.per_call_marginal,
            "r_squared": f.r_squared,
            "ridge_batch": law.ridge,
            "batch_for_90pct": law.batch_for_fraction(0.9),
            "batch_for_99pct": law.batch_for_fraction(0.99),
            "ceiling_speedup": law.ceiling,
        }
    except SweepError as exc:
        fit = {"available": False, "reason": str(exc)}
    comparison = None
    if planner is not None and fit["available"] and planner.get("overhead_seconds"):
        comparison = {
            "overhead_planner_over_fit": planner["overhead_seconds"] / fit["overhead_seconds"]
            if fit["overhead_seconds"] > 0
            else None,
            "per_config_planner_over_fit": planner["per_config_seconds"]
            / fit["per_config_seconds"],
            "law_batch_planner": planner.get("law_batch"),
            "law_batch_fit": fit["batch_for_99pct"],
        }
    return {
        "kind": "amortization",
        "workers": 1,
        "reps": settings.reps,
        "batch_sizes": sizes,
        "method": "one task at a time on one worker; batched: reps tasks of B configs; per "
        "call: B tasks of 1 config; seconds from submission to result on the driver",
        "batched": batched,
        "per_call": per_call,
        "per_call_single": {
            "median": float(statistics.median(singles)),
            "tasks": len(singles),
        },
        "speedup": speedup,
        "fit": fit,
        "planner": planner,
        "comparison": comparison,
    }
