"""A backend on a distributed engine: the batches, passes and probes written once.

:class:`ClusterExecutor` implements the :class:`sweep.executors._base.Executor` protocol on
any :class:`sweep.executors._pool.TaskPool`; an engine's backend (Ray's, Dask's) says only
how to start or join, how many CPUs the cluster has, how a worker names itself, how to
describe the cluster and how to leave it.

Submission keeps at most ``in_flight_per_worker * workers`` tasks outstanding, so the
driver's memory does not grow with the grid; answers come back in completion order. A task
lost with its node or worker is run again by the engine; an exception inside a strategy
never reaches the engine (it is recorded per config by
:func:`sweep.engine._evaluate.evaluate_batch`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from sweep.errors import ExecutionError, SweepError
from sweep.executors._base import BatchOutcome
from sweep.executors._pool import TaskPool, ordered_runs, stream_tasks
from sweep.executors._task import Identify, evaluate_on_worker
from sweep.spec._resolve import ResolvedSweep
from sweep.store._record import ExecutorInfo, TaskTelemetry

T = TypeVar("T")

#: Tasks a lost worker's or node's task is run again, at most (each engine's retry count).
MAX_RETRIES = 5
#: Groups of parts per CPU of the cluster: several, so a slow node does not hold the last.
GROUPS_PER_CPU = 4


def noop_task(nbytes: int, delay: float) -> bytes:
    """The overhead probe: sleep ``delay`` seconds, return ``nbytes`` zero bytes."""
    if delay:
        time.sleep(delay)
    return bytes(nbytes)


class ClusterExecutor:
    """A backend on a distributed engine (subclasses: the engine's part).

    Parameters
    ----------
    address : str, optional
        Cluster to join; None: start a local one for this executor.
    workers : int, optional
        CPUs of a local cluster (and a cap on the workers used on a joined cluster).
    in_flight_per_worker : int
        Tasks outstanding per worker (2 keeps every worker busy while results travel back).
    noop_delay : float
        Seconds each overhead-probe task sleeps: a test hook that emulates a slow scheduler
        so the planner's response to a larger overhead can be checked. Leave at 0.
    oversubscribe : bool
        Let a local cluster have more workers than this machine has CPUs (``sweep bench
        scaling`` measures that contention; a sweep never asks for it).
    """

    name = "cluster"
    #: The engine's name in messages ("Ray", "Dask").
    title = "cluster"
    #: The forms of an address of this engine's clusters (help texts).
    address_forms = "host:port"

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        in_flight_per_worker: int = 2,
        noop_delay: float = 0.0,
        oversubscribe: bool = False,
    ) -> None:
        self.address = address
        self.requested_workers = workers
        self.oversubscribe = oversubscribe
        self.in_flight_per_worker = in_flight_per_worker
        self.noop_delay = noop_delay
        self._connected = False
        self._workers = 1
        self._cluster_cpus = 1
        self._sweep_handle: Any = None

    # --- the engine's part ---------------------------------------------------------------
    @property
    def pool(self) -> TaskPool:
        """The engine's task pool (valid once connected)."""
        raise NotImplementedError

    def _join(self) -> int:
        """Start or join the engine; the CPUs of the cluster."""
        raise NotImplementedError

    def _identify(self) -> Identify:
        """The module-level function a worker names itself with (node, attempt)."""
        raise NotImplementedError

    def describe(self) -> ExecutorInfo:
        """Kind, workers, nodes and address."""
        raise NotImplementedError

    def _leave(self) -> None:
        """Leave the engine: stop a cluster this executor started, else disconnect."""
        raise NotImplementedError

    def joins_existing(self) -> bool:
        """Whether :meth:`connect` joins a running cluster (else it starts a local one)."""
        raise NotImplementedError

    def one_worker_pool(self) -> tuple[TaskPool, str]:
        """A pool whose tasks all run on one worker, one at a time, never retried.

        For ``sweep bench amortization``: tasks streamed two in flight to it queue there,
        as a sweep's tasks queue at each worker. Valid once connected.

        Returns
        -------
        pool : TaskPool
            The pool.
        where : str
            Where its tasks run, in words (for the benchmark's method).
        """
        raise NotImplementedError

    def spread_pool(self, in_flight: int) -> tuple[TaskPool, float]:
        """A pool for ``in_flight`` tasks at once over the cluster, never retried.

        For ``sweep bench scaling``. Where the engine schedules tasks by CPUs and the
        cluster has fewer than ``in_flight``, each task asks for a share of a CPU so that
        all run at once; else tasks queue at the workers. Valid once connected.

        Returns
        -------
        pool : TaskPool
            The pool.
        cpus_per_task : float
            The CPUs each task asks for (1.0 where the engine does not share CPUs).
        """
        raise NotImplementedError

    # --- written once --------------------------------------------------------------------
    def connect(self) -> None:
        """Start or join the engine once; its failure is an :class:`ExecutionError`."""
        if self._connected:
            return
        try:
            cpus = self._join()
        except SweepError:
            raise
        except Exception as exc:
            raise ExecutionError(
                f"cannot start or join {self.title} (address {self.address!r}): {exc}"
            ) from exc
        self._connected = True
        self._cluster_cpus = max(1, cpus)
        self._workers = max(1, min(self._cluster_cpus, self.requested_workers or cpus))

    def start(self, sweep: ResolvedSweep) -> None:
        """Start or join the engine and put the sweep (its data included) there once."""
        self.connect()
        self._sweep_handle = self.pool.share(sweep)

    @property
    def workers(self) -> int:
        """CPUs available to the sweep."""
        return self._workers

    @property
    def cluster_cpus(self) -> int:
        """CPUs (worker threads) of the whole cluster (valid once connected)."""
        return self._cluster_cpus

    @property
    def identify(self) -> Identify:
        """The function a task calls on its worker to name its node and attempt."""
        return self._identify()

    def measure_overhead(self, result_bytes: int, rounds: int = 3) -> float:
        """Per-task overhead O (worker-seconds): pipelined no-ops returning ``result_bytes``.

        Each round submits ``4 * cluster_cpus`` no-op tasks at once and waits for all; O is
        ``cluster_cpus * elapsed / tasks`` (the probes may run on every CPU of the
        cluster), the median over ``rounds`` rounds after a warm-up.
        """
        n = 4 * self._cluster_cpus
        pool = self.pool

        def burst() -> None:
            for handle in [pool.submit(noop_task, result_bytes, self.noop_delay) for _ in range(n)]:
                pool.result(handle)

        burst()
        samples = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            burst()
            samples.append(self._cluster_cpus * (time.perf_counter() - t0) / n)
        return float(statistics.median(samples))

    def run(self, batches: Iterable[NDArray[np.int64]]) -> Iterator[BatchOutcome]:
        """Stream batches as tasks, at most ``in_flight_per_worker * workers`` at a time.

        One task per worker goes out first; the second in flight goes out with the first
        result, when a batch source that sizes batches from outcomes has one to go by.
        """
        if self._sweep_handle is None:
            raise RuntimeError(f"{type(self).__name__}.run() called before start()")
        submitted: dict[int, float] = {}
        identify = self._identify()

        def task_args(indices: NDArray[np.int64]) -> tuple[Any, ...]:
            submitted[id(indices)] = time.time()
            return (self._sweep_handle, indices, identify)

        answers = stream_tasks(
            self.pool,
            evaluate_on_worker,
            batches,
            task_args,
            self.in_flight_per_worker * self._workers,
            first=self._workers,
        )
        for indices, (result, timing), _ in answers:
            telemetry = TaskTelemetry.of_task(
                timing,
                submit_time=submitted.pop(id(indices)),
                received_time=time.time(),
                n_configs=int(indices.shape[0]),
                compute_seconds=result.compute_seconds,
            )
            # The driver takes the outcome before the next batch is drawn, so a batch source
            # that sizes batches from outcomes (the planning stream) sees it; the worker
            # meanwhile runs its other task in flight.
            yield BatchOutcome(indices, result, telemetry)

    def map_groups(
        self,
        body: Callable[..., T],
        location: str,
        groups: Sequence[list[str]],
        args: tuple[Any, ...],
    ) -> Iterator[tuple[int, T]]:
        """``body(location, group, *args)`` as tasks, ``2 * CPUs`` in flight; by completion."""
        self.connect()
        answers = stream_tasks(
            self.pool,
            body,
            range(len(groups)),
            lambda k: (location, groups[k], *args),
            2 * self._cluster_cpus,
        )
        for k, answer, _ in answers:
            yield k, answer
            del answer

    def map_runs(
        self,
        body: Callable[..., T],
        shared: tuple[Any, ...],
        runs: Iterable[Any],
        extra: tuple[Any, ...],
    ) -> Iterator[T]:
        """``body(*shared, run, *extra)`` as tasks, ``shared`` shipped once; in run order."""
        self.connect()
        handles = tuple(self.pool.share(value) for value in shared)
        yield from ordered_runs(
            self.pool, body, runs, lambda run: (*handles, run, *extra), 2 * self._cluster_cpus
        )

    @property
    def groups_wanted(self) -> int:
        """Groups to cut a pass's parts into: :data:`GROUPS_PER_CPU` per CPU."""
        return GROUPS_PER_CPU * self._cluster_cpus

    def close(self) -> None:
        """Leave the engine (a cluster this executor started stops with it)."""
        self._sweep_handle = None
        if self._connected:
            self._connected = False
            self._leave()
