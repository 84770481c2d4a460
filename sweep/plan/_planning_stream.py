"""Planning while the workers work: the batch plan of a multi-worker session, overlapped.

:func:`sweep.plan._planner.plan_batches` runs its warm-up and pilot rounds one at a time and
waits for each, then probes the overhead with no-op tasks: on W workers every wait leaves
workers idle (about 0.2 s of a 1.6 s sweep on a local 2-worker cluster). A
:class:`PlanningStream` is one stream of batches instead, pulled by the executor whenever a
worker slot frees:

1. a pilot of ``PILOT_FIRST`` configs per worker: each worker's first task, cold (imports,
   compiled kernels), timed but not fitted;
2. then *provisional* batches, so no worker waits for the measurement: the planner's clamps
   with ``b`` bounded from above by the tasks timed so far (the load-balance clamp usually
   binds, so they are about the planned size; ``4 * PILOT_FIRST`` before anything is back);
3. once every pilot and a warm provisional batch are back: :func:`sweep.plan._planner.law_plan`
   through the warm tasks (``b`` measured at about the planned size; with one size the
   fixed in-task cost is not separated from it), and the planned size from then on, the
   last ``workers`` batches splitting what is left evenly.

Every task before the plan is one more per-task overhead than a run whose batch size was
given; with the barriers gone that is all planning costs (``benchmarks/bench_plan.py``
measures it against such a run).

``O`` is measured where it is paid: the gap on each worker between the end of one task and
the start of its next (sending the arguments, deserialising the sweep, returning the result,
the scheduler's turn), the median over the pre-plan tasks; no no-op probe, whose round
trips carry neither the sweep nor a result. Every batch's results are kept, so a config is
still computed exactly once and the table is the same whatever the plan.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from itertools import pairwise

import numpy as np
from numpy.typing import NDArray

from sweep.common._range_set import RangeSet
from sweep.executors._base import BatchOutcome, Executor
from sweep.plan._planner import PILOT_FIRST, PlannerSettings, clamp_batch, law_plan, small_plan
from sweep.store._record import PilotTask, Plan, TaskTelemetry

#: What a pre-plan batch was handed out as.
PILOT, PROVISIONAL = "pilot", "provisional"


class PlanningStream:
    """The batches of a session whose plan is made while they run (see the module).

    Parameters
    ----------
    todo : RangeSet
        Grid positions still to run (drawn in ascending, canonical order, a batch at a time).
    workers : int
        Batches that run at once (two or more: with one, the driver's part write runs in
        series with the work and :func:`sweep.plan._planner.plan_batches` plans).
    settings : PlannerSettings
        Targets.
    on_plan : callable
        Called once with the plan when it is made.
    """

    def __init__(
        self,
        todo: RangeSet,
        workers: int,
        settings: PlannerSettings,
        on_plan: Callable[[Plan], None],
    ) -> None:
        if workers < 2:  # one worker: the driver's write is in series, plan_batches plans it
            raise ValueError(f"a planning stream needs several workers, got {workers}")
        self.todo, self.workers, self.settings, self.on_plan = todo, workers, settings, on_plan
        self.plan: Plan | None = None
        self.taken = 0
        self.started = time.perf_counter()
        self._pilot_sizes = [PILOT_FIRST] * workers  # each worker's first, cold task
        self._kinds: dict[int, str] = {}  # first grid position of a pre-plan batch -> kind
        self._pilots_out = 0  # pilot batches handed out, not yet back
        self._tail_size = 0  # the last batches' size, once set
        self._provisional_back = False  # a warm provisional batch is back
        self._workers_seen: set[tuple[str, str]] = set()
        self._cold_configs = 0
        self._tasks: list[PilotTask] = []  # warm tasks: the fit's points
        self._timings: list[TaskTelemetry] = []

    def batches(self) -> Iterator[NDArray[np.int64]]:
        """Every batch of the session, sized as the plan stands when each is drawn."""
        n = len(self.todo)
        while self.taken < n:
            kind, size = self._next()
            batch = self.todo.take(self.taken, self.taken + size)
            if kind:
                self._kinds[int(batch[0])] = kind
            self.taken += batch.shape[0]
            yield batch

    def _next(self) -> tuple[str, int]:
        """The kind ("" once planned) and size of the next batch."""
        if self.plan is not None:
            return "", self._planned_size()
        if self._pilot_sizes:
            self._pilots_out += 1
            return PILOT, self._pilot_sizes.pop(0)
        return PROVISIONAL, self._provisional_size()

    def _planned_size(self) -> int:
        """The plan's batch; the last ``workers`` batches share what is left evenly.

        Pilots and provisional batches shift where the planned batches end, so the last
        one could be short while another worker still runs a full one: once less than a
        batch per worker is left, the rest is split into ``workers`` equal batches.
        """
        assert self.plan is not None
        size = self.plan.batch_size
        left = len(self.todo) - self.taken
        if self._tail_size == 0 and left < self.workers * size:
            self._tail_size = max(1, -(-left // self.workers))
        return self._tail_size or size

    def _provisional_size(self) -> int:
        """The clamps' batch with ``b`` as the timed tasks bound it; a pilot size before.

        The largest per-config time seen (cold tasks and fixed in-task cost included)
        over-states ``b``, so the task-duration clamp errs short; the load-balance clamp is
        the planned size's usual bound, so provisional batches are about the planned size.
        """
        if not self._timings:
            return 4 * PILOT_FIRST
        rough = max(t.compute_seconds / t.n_configs for t in self._timings)
        size, _ = clamp_batch(math.inf, len(self.todo), self.workers, rough, self.settings)
        return size

    def observe(self, outcome: BatchOutcome, write_seconds: float) -> None:
        """Take a finished batch's timing; make the plan once it has what it needs.

        A worker's first task is cold (imports, compiled kernels) and is not a point of the
        fit. The plan is made once every pilot is back and a warm provisional batch too.

        Parameters
        ----------
        outcome : BatchOutcome
            The finished batch.
        write_seconds : float
            The driver's seconds writing it.
        """
        if self.plan is not None:
            return
        kind = self._kinds.pop(int(outcome.indices[0]), "")
        tel = outcome.telemetry
        self._timings.append(tel)
        worker = (tel.node, tel.worker)
        cold = worker not in self._workers_seen
        self._workers_seen.add(worker)
        if kind == PILOT:
            self._pilots_out -= 1
        if cold:
            self._cold_configs += int(outcome.indices.shape[0])
        elif kind:
            self._provisional_back |= kind == PROVISIONAL
            self._tasks.append(
                PilotTask(
                    configs=float(outcome.indices.shape[0]),
                    compute_seconds=float(tel.compute_seconds),
                    round_trip_overhead_seconds=float(tel.round_trip_overhead),
                    write_seconds=write_seconds,
                )
            )
        if self._pilots_out == 0 and not self._pilot_sizes and self._provisional_back:
            self._make_plan()

    def finish(self) -> None:
        """Make the plan from what was timed, if the sweep ended before the plan was made.

        Nothing is left to run then; the plan is the record of what was measured.
        """
        if self.plan is not None:
            return
        if self._tasks:
            self._make_plan()
            return
        self.plan = Plan(
            batch_size=PILOT_FIRST,
            source="the pilots were the whole sweep",
            warmup_configs=self._cold_configs,
            planning_seconds=time.perf_counter() - self.started,
        )
        self.on_plan(self.plan)

    def _make_plan(self) -> None:
        """The plan; its load-balance clamp counts the session's configs, pilots included."""
        plan = law_plan(
            self._tasks,
            between_tasks(self._timings),
            workers=self.workers,
            n_todo=len(self.todo),
            settings=self.settings,
            source="auto (amortization law, planned while running)",
        )
        self.plan = replace(
            plan,
            warmup_configs=self._cold_configs,
            planning_seconds=time.perf_counter() - self.started,
        )
        self.on_plan(self.plan)


def between_tasks(timings: list[TaskTelemetry]) -> float:
    """Median seconds a worker waits between the end of one task and the start of its next.

    Tasks are grouped by worker (node and pid) and ordered by start; where no worker ran two
    tasks, the median round trip beyond compute (submission to result in hand) is used.
    """
    by_worker: dict[tuple[str, str], list[TaskTelemetry]] = {}
    for t in timings:
        by_worker.setdefault((t.node, t.worker), []).append(t)
    gaps = []
    for runs in by_worker.values():
        runs.sort(key=lambda t: t.start_time)
        gaps += [b.start_time - a.end_time for a, b in pairwise(runs)]
    if gaps:
        return max(0.0, float(np.median(gaps)))
    trips = [t.round_trip_overhead for t in timings]
    return max(0.0, float(np.median(trips))) if trips else 0.0


def plan_while_running(
    executor: Executor,
    todo: RangeSet,
    on_outcome: Callable[[BatchOutcome], float],
    settings: PlannerSettings,
) -> Plan:
    """Run a planning stream on a started multi-worker executor until its plan is made.

    What ``sweep plan`` measures on Ray: the same batches and the same plan as a run's first
    moments. The batches still in flight when the plan is made are left to the executor's
    ``close``.

    Parameters
    ----------
    executor : Executor
        A started executor with two workers or more.
    todo : RangeSet
        Grid positions (drawn in ascending, canonical order).
    on_outcome : callable
        Called with each finished batch; returns the seconds spent writing it.
    settings : PlannerSettings
        Targets.

    Returns
    -------
    Plan
        The plan (``small sweep (no pilot)`` when the grid is too small for pilots).
    """
    small = small_plan(len(todo), executor.workers, settings)
    if small is not None:
        return small
    stream = PlanningStream(todo, executor.workers, settings, lambda plan: None)
    for outcome in executor.run(stream.batches()):
        stream.observe(outcome, on_outcome(outcome))
        if stream.plan is not None:
            return stream.plan
    stream.finish()
    assert stream.plan is not None
    return stream.plan
