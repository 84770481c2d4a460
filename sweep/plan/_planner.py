"""Choosing the batch size from measurements: the amortization law, then clamps.

Every task pays a fixed overhead ``O`` and each config costs ``b``; the batch that reaches a
fraction ``f`` of the achievable speedup is ``B*(f) = f O / (b (1 - f))``. After a warm-up
task per worker (imports, compiled kernels), the planner measures ``O`` on the executor:
no-op round trips carrying a result of the real size, plus the fixed in-task cost. The
driver writes one part per task: in-process that write runs in series with the work and is
added to ``O``; with ``W`` parallel workers a task finishes every ``(O + bB) / W`` seconds,
so ``O`` is raised to at least ``W`` times the write time to keep the driver from becoming
the bottleneck. It
measures ``b`` from pilot batches of growing sizes (whose results are kept), then clamps
``B``: at least ``min_tasks_per_worker`` tasks per worker (load balance, little lost per
preemption) and at most ``max_task_seconds`` per task.

On several workers the driver plans while they work instead
(:mod:`sweep.plan._planning_stream`): the same law and clamps (:func:`law_plan`), measured
without rounds that wait for each other.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stats import AmortizationLaw, fit_amortization
from sweep.common._range_set import RangeSet
from sweep.errors import StatsInputError
from sweep.executors._base import BatchOutcome, Executor
from sweep.store._record import PilotTask, Plan

#: The first pilot batch size; each round runs one pilot batch per worker at once and the
#: size grows x4 each round until a pilot runs at least PILOT_MIN_SECONDS and 4 times the
#: shortest, or the pilots reach a tenth of the work. b and the fixed in-task cost are the
#: slope and intercept of stats.fit_amortization through all pilots.
PILOT_FIRST = 32
PILOT_MIN_SECONDS = 0.3


@dataclass(frozen=True)
class PlannerSettings:
    """Targets of the planner."""

    target_efficiency: float = 0.99
    min_tasks_per_worker: int = 4
    max_task_seconds: float = 10.0


#: The batch plan is the record's :class:`sweep.store._record.Plan` (recorded in each session).
BatchPlan = Plan


def clamp_batch(
    law_batch: float,
    n_todo: int,
    workers: int,
    per_config_seconds: float,
    settings: PlannerSettings,
) -> tuple[int, list[str]]:
    """Clamp the law's batch size; return it and a sentence per clamp that bound it.

    Parameters
    ----------
    law_batch : float
        ``B*(f)`` from the amortization law.
    n_todo : int
        Configs left to run.
    workers : int
        Batches that run at once.
    per_config_seconds : float
        Measured ``b``.
    settings : PlannerSettings
        Targets.

    Returns
    -------
    batch_size : int
        At least 1.
    clamps : list of str
        Why the batch is not the law's value.
    """
    batch = max(1, math.ceil(law_batch)) if math.isfinite(law_batch) else n_todo
    clamps = []
    balance = max(1, math.ceil(n_todo / (workers * settings.min_tasks_per_worker)))
    if batch > balance:
        batch = balance
        clamps.append(
            f"load balance: at most {balance} configs so {n_todo} configs make at least "
            f"{settings.min_tasks_per_worker} tasks for each of {workers} workers"
        )
    if per_config_seconds > 0:
        longest = max(1, math.floor(settings.max_task_seconds / per_config_seconds))
        if batch > longest:
            batch = longest
            clamps.append(
                f"task duration: at most {longest} configs so a task stays under "
                f"{settings.max_task_seconds:g} s"
            )
    return batch, clamps


def small_plan(n_todo: int, workers: int, settings: PlannerSettings) -> Plan | None:
    """The plan of a sweep too small for pilots (both planners use it)."""
    if n_todo >= 8 * PILOT_FIRST:
        return None
    size, clamps = clamp_batch(math.inf, n_todo, workers, 0.0, settings)
    return Plan(batch_size=size, source="small sweep (no pilot)", clamps=tuple(clamps))


def plan_batches(
    executor: Executor,
    todo: RangeSet,
    requested: int | None,
    on_pilot: Callable[[BatchOutcome], float],
    settings: PlannerSettings = PlannerSettings(),
) -> tuple[Plan, RangeSet]:
    """Measure, choose the batch size, and return it with the configs still to run.

    Parameters
    ----------
    executor : Executor
        A started executor.
    todo : RangeSet
        Grid positions still to run (drawn in ascending, canonical order).
    requested : int or None
        A fixed batch size (``batch_size``), or None for automatic.
    on_pilot : callable
        Called with each pilot outcome (the driver writes it as a part); returns the seconds
        the driver spent on it.
    settings : PlannerSettings
        Targets.

    Returns
    -------
    plan : Plan
        The choice and its inputs.
    remaining : RangeSet
        ``todo`` without the pilot's configs.
    """
    workers = executor.workers
    if requested is not None:
        return Plan(batch_size=requested, source="fixed (--batch-size)"), todo
    small = small_plan(len(todo), workers, settings)
    if small is not None:
        return small, todo
    # Warm-up: one single-config task per worker, at once, so every worker has imported the
    # strategy and loaded its compiled kernels before anything is timed (results are kept).
    for outcome in executor.run([todo.take(i, i + 1) for i in range(workers)]):
        on_pilot(outcome)
    pilots = _run_pilots(executor, todo, workers, on_pilot)
    # Transport: no-op probes carrying a result of the real size, or the pilots' own round
    # trips beyond their compute (submit to result in hand), whichever is larger.
    probe = executor.measure_overhead(pilots.result_bytes)
    trips = [r.round_trip_overhead_seconds for r in pilots.tasks]
    transport = max(probe, float(np.median(trips)))
    remaining = todo.drop(pilots.used)
    plan = law_plan(
        pilots.tasks,
        transport,
        workers=workers,
        n_todo=len(remaining),
        settings=settings,
        source="auto (amortization law)",
        probe=probe,
    )
    return plan, remaining


def law_plan(
    tasks: list[PilotTask],
    transport: float,
    *,
    workers: int,
    n_todo: int,
    settings: PlannerSettings,
    source: str,
    probe: float = math.nan,
) -> Plan:
    """The plan from timed pilot tasks and a measured transport: ``O``, ``b``, the law, clamps.

    Parameters
    ----------
    tasks : list of PilotTask
        The timed pilots (two sizes or more for a fitted ``b``).
    transport : float
        Seconds per task outside the task's compute (round trip, or gap between tasks).
    workers : int
        Batches that run at once.
    n_todo : int
        Configs left for the planned batches.
    settings : PlannerSettings
        Targets.
    source : str
        How the plan was made (recorded).
    probe : float
        The no-op probe's overhead, when one ran.

    Returns
    -------
    Plan
        The batch size and everything it was chosen from.
    """
    b, fixed = _per_config_cost(tasks)
    write_s = float(np.median([r.write_seconds for r in tasks]))
    if workers == 1:  # in-process: the driver's part write runs in series with the work
        overhead = transport + fixed + write_s
    else:  # the driver writes one part per task while W workers compute: it must keep up
        overhead = max(transport + fixed, workers * write_s)
    law = AmortizationLaw(overhead, b).batch_for_fraction(settings.target_efficiency)
    size, clamps = clamp_batch(law, n_todo, workers, b, settings)
    return Plan(
        batch_size=size,
        source=source,
        overhead_seconds=overhead,
        transport_seconds=transport,
        probe_seconds=probe,
        fixed_in_task_seconds=fixed,
        driver_write_seconds=write_s,
        per_config_seconds=b,
        target_efficiency=settings.target_efficiency,
        law_batch=law,
        clamps=tuple(clamps),
        warmup_configs=workers,
        pilot=tuple(tasks),
    )


@dataclass(frozen=True)
class _Pilots:
    """The pilot tasks timed, the configs used (warm-up included) and the largest result."""

    tasks: list[PilotTask]
    used: int
    result_bytes: int


def _run_pilots(
    executor: Executor,
    todo: RangeSet,
    workers: int,
    on_pilot: Callable[[BatchOutcome], float],
) -> _Pilots:
    """Rounds of one pilot batch per worker, x4 larger each round, until long enough.

    They stop when :func:`pilots_long_enough` or at the budget; the first ``workers`` configs of
    ``todo`` went to the warm-up.
    """
    tasks: list[PilotTask] = []
    used, size, nbytes = workers, PILOT_FIRST, 0
    budget = max(2 * PILOT_FIRST * workers, len(todo) // 10)
    while True:
        # One pilot batch of the round's size per worker, run at once (no worker idles).
        round_batches = [todo.take(used + k * size, used + (k + 1) * size) for k in range(workers)]
        used += sum(b.shape[0] for b in round_batches)
        for outcome in executor.run(round_batches):
            write_s = on_pilot(outcome)
            nbytes = max(nbytes, int(outcome.result.table.nbytes))
            tel = outcome.telemetry
            tasks.append(
                PilotTask(
                    configs=float(outcome.indices.shape[0]),
                    compute_seconds=float(tel.compute_seconds),
                    round_trip_overhead_seconds=float(tel.round_trip_overhead),
                    write_seconds=write_s,
                )
            )
        if pilots_long_enough(tasks) or used + 4 * size * workers > budget:
            return _Pilots(tasks, used, nbytes)
        size *= 4


def pilots_long_enough(tasks: list[PilotTask]) -> bool:
    """Two sizes or more, the longest at least PILOT_MIN_SECONDS and 4 times the shortest."""
    sizes_seen = {r.configs for r in tasks}
    longest = max(r.compute_seconds for r in tasks)
    first = min(r.compute_seconds for r in tasks)
    return len(sizes_seen) >= 2 and longest >= max(PILOT_MIN_SECONDS, 4 * first)


def _per_config_cost(tasks: list[PilotTask]) -> tuple[float, float]:
    """``b`` and the fixed in-task cost, fitted through the fastest pilot of each size.

    The fastest, because a cold worker or a noisy neighbour only slows a task.
    """
    all_sizes = np.array([r.configs for r in tasks])
    all_seconds = np.array([r.compute_seconds for r in tasks])
    sizes = np.unique(all_sizes)
    seconds = np.array([all_seconds[all_sizes == s].min() for s in sizes])
    try:
        fit = fit_amortization(sizes, seconds)
        b, fixed = fit.marginal, fit.overhead
    except StatsInputError:  # one size only, or noise made the slope non-positive
        b, fixed = float(seconds.sum() / sizes.sum()), 0.0
    b = float(max(b, seconds.max() / sizes.max() / 4))  # a noisy fit must not make b vanish
    return b, float(max(fixed, 0.0))
