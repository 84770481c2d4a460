"""``sweep bench amortization``: per-call against batched task times, and the law's fit.

Tasks run one at a time on one worker (the backend's
:meth:`sweep.executors.ClusterExecutor.one_worker_pool`: on Ray the driver's node, each task
asking for all of its CPUs; on Dask one single-thread worker) but are streamed two in
flight, as a sweep streams them to each worker, so dispatch overlaps the previous task.
Each task's time is its *service time*, ``end - max(submit, end of the previous task)``,
the quantity the report fits to the telemetry of real runs; the first
task of each stream is dropped (it pays the pipeline's fill latency). For every batch
size B of the grid, ``reps`` tasks of B configs run (batched); one stream of single-config
tasks gives the per-call time. ``T = O + bB`` (batched) and ``O + a`` (per call) are
fitted jointly by :func:`stats.fit_amortization`, and the measured speedup ``S(B)`` (B
single-config task times over one B-config task time) is set against the fitted law. The
planner's own estimate (its pilot batches and no-op probe) is measured to compare.
"""

from __future__ import annotations

import itertools
import math
import statistics
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from stats import fit_amortization
from sweep.bench._workload import workload_indices
from sweep.common._range_set import RangeSet
from sweep.errors import USER_ERRORS
from sweep.executors import ClusterExecutor
from sweep.executors._pool import TaskPool, stream_tasks
from sweep.executors._task import Identify, evaluate_on_worker
from sweep.plan._planner import PlannerSettings, plan_batches
from sweep.spec._resolve import ResolvedSweep
from sweep.store._bench_results import (
    AmortizationResult,
    BatchTiming,
    FitFailed,
    LawFit,
    PerCallTiming,
    PlannerComparison,
    PlannerFailed,
    SingleCallTimes,
    SpeedupPoint,
)
from sweep.store._record import Plan


@dataclass(frozen=True)
class AmortizationSettings:
    """What ``sweep bench amortization`` measures.

    Attributes
    ----------
    batch_sizes : tuple of int
        Batch sizes B (at least two distinct).
    reps : int
        Batched tasks timed per B (their median is plotted).
    planner_configs : int
        Configs offered to the planner for its pilot batches (0: skip the comparison; the
        planner needs at least 128).
    seed : int
        Seed of the sample of grid positions evaluated.
    """

    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)
    reps: int = 3
    planner_configs: int = 2048
    seed: int = 0


def _stream(
    pool: TaskPool,
    sweep_ref: Any,
    identify: Identify,
    batches: list[NDArray[np.int64]],
    in_flight: int = 2,
) -> tuple[list[float], float]:
    """Run batches one at a time on ``pool``'s worker, ``in_flight`` submitted ahead.

    Returns the service seconds of every task but the first, and the stream's wall time.
    """
    submitted: dict[int, float] = {}

    def args(k: int) -> tuple[Any, ...]:
        submitted[k] = time.time()
        return (sweep_ref, batches[k], identify)

    start = time.perf_counter()
    done = [
        (submitted.pop(k), float(timing.end_time))
        for k, (_, timing), _ in stream_tasks(
            pool, evaluate_on_worker, range(len(batches)), args, in_flight
        )
    ]
    wall = time.perf_counter() - start
    done.sort(key=lambda d: d[1])
    services = [end - max(sub, prev_end) for (_, prev_end), (sub, end) in itertools.pairwise(done)]
    return services, wall


def _planner_estimate(
    executor: ClusterExecutor, sweep: ResolvedSweep, n: int
) -> Plan | PlannerFailed:
    """The planner's plan for ``n`` configs on this cluster (or the error it raised)."""
    todo = RangeSet.full(min(n, len(sweep.grid)))
    try:
        plan, _ = plan_batches(executor, todo, None, lambda outcome: 0.0, PlannerSettings())
    except USER_ERRORS as exc:
        return PlannerFailed(f"the planner failed: {exc}")
    return plan


def _fit(batched: list[BatchTiming], singles: list[float]) -> LawFit | FitFailed:
    x = np.concatenate([np.full(len(row.seconds), float(row.batch)) for row in batched])
    y = np.array([s for row in batched for s in row.seconds])
    try:
        f = fit_amortization(x, y, per_call_seconds=np.array(singles))
    except USER_ERRORS as exc:
        return FitFailed(reason=str(exc))
    law = f.law
    return LawFit(
        overhead_seconds=f.overhead,
        per_config_seconds=f.marginal,
        per_call_config_seconds=f.per_call_marginal,
        r_squared=f.r_squared,
        ridge_batch=law.ridge,
        batch_for_90pct=law.batch_for_fraction(0.9),
        batch_for_99pct=law.batch_for_fraction(0.99),
        ceiling_speedup=law.ceiling,
    )


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _comparison(
    planner: Plan | PlannerFailed | None, fit: LawFit | FitFailed
) -> PlannerComparison | None:
    """Planner over fit, when the planner measured an O and the law was fitted."""
    if not isinstance(planner, Plan) or not isinstance(fit, LawFit):
        return None
    o_plan = _finite(planner.overhead_seconds)
    if not o_plan or fit.overhead_seconds is None or fit.per_config_seconds is None:
        return None
    b_plan = _finite(planner.per_config_seconds)
    return PlannerComparison(
        overhead_planner_over_fit=(
            o_plan / fit.overhead_seconds if fit.overhead_seconds > 0 else None
        ),
        per_config_planner_over_fit=None if b_plan is None else b_plan / fit.per_config_seconds,
        law_batch_planner=_finite(planner.law_batch),
        law_batch_fit=fit.batch_for_99pct,
    )


def measure_amortization(
    sweep: ResolvedSweep, settings: AmortizationSettings, executor: ClusterExecutor
) -> AmortizationResult:
    """Measure per-call and batched task times on one worker and fit the amortization law.

    Parameters
    ----------
    sweep : ResolvedSweep
        The sweep whose configs are evaluated.
    settings : AmortizationSettings
        Batch sizes, repetitions, planner comparison.
    executor : ClusterExecutor
        The backend measured (connected here if it is not yet; the caller closes it).

    Returns
    -------
    AmortizationResult
        ``batched`` (service seconds of each timed task per B, their median) and
        ``per_call`` (sum of B single-config task times) per B, ``speedup`` measured per B,
        ``fit`` (O, b, a, R², ridge O/b, B*(0.9), B*(0.99), ceiling), ``planner`` (its
        plan) and ``comparison`` (planner over fitted).
    """
    sizes = sorted({int(b) for b in settings.batch_sizes})
    top = max(sizes)
    # per call: B single-config tasks cost the sum of B single-task times
    pool = workload_indices(len(sweep.grid), top, settings.seed)
    executor.connect()
    tasks, where = executor.one_worker_pool()
    identify = executor.identify
    sweep_ref = tasks.share(sweep)
    _stream(tasks, sweep_ref, identify, [pool[:1], pool])  # warm-up: worker, imports, JIT
    batched: list[BatchTiming] = []
    for b in sizes:
        services, wall = _stream(tasks, sweep_ref, identify, [pool[:b]] * (settings.reps + 1))
        batched.append(
            BatchTiming(
                batch=b,
                seconds=tuple(services),
                median=float(statistics.median(services)),
                stream_wall_seconds=wall,
            )
        )
    singles, _ = _stream(
        tasks, sweep_ref, identify, [pool[i : i + 1] for i in range(max(top, 2) + 1)]
    )
    del sweep_ref
    planner: Plan | PlannerFailed | None = None
    if settings.planner_configs:
        executor.start(sweep)  # every worker, as a sweep on this cluster would plan
        planner = _planner_estimate(executor, sweep, settings.planner_configs)
    per_call = [PerCallTiming(b, float(sum(singles[:b]))) for b in sizes]
    speedup = tuple(
        SpeedupPoint(b, pc.seconds / bt.median)
        for b, pc, bt in zip(sizes, per_call, batched, strict=True)
    )
    fit = _fit(batched, singles)
    return AmortizationResult(
        workers=1,
        reps=settings.reps,
        batch_sizes=tuple(sizes),
        method=f"one task at a time on {where}, streamed two in flight as a "
        "sweep streams to a worker; task time = service time (end - max(submit, previous "
        "end)), first task of each stream dropped; batched: reps tasks of B configs; per "
        "call: single-config tasks",
        batched=tuple(batched),
        per_call=tuple(per_call),
        per_call_single=SingleCallTimes(float(statistics.median(singles)), len(singles)),
        speedup=speedup,
        fit=fit,
        planner=planner,
        comparison=_comparison(planner, fit),
    )
