"""The Ray executor: the data goes into the object store once, batches stream as tasks.

Submission keeps at most ``in_flight_per_worker * workers`` tasks outstanding, so the driver's
memory does not grow with the grid; results are collected with ``ray.wait`` in completion
order and handed to the driver, which writes each as a part. A task lost with its node or
worker is retried by Ray (``max_retries``); an exception inside a strategy never reaches
Ray (it is recorded per config by :func:`sweep.engine._evaluate.evaluate_batch`).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sweep.errors import ExecutionError, SweepError
from sweep.executors._address import check_local_workers, wait_for_listener
from sweep.executors._base import BatchOutcome
from sweep.executors._ray_orphans import before_local_ray_start
from sweep.executors._task import evaluate_on_worker
from sweep.spec._resolve import ResolvedSweep
from sweep.store._record import ExecutorInfo, TaskTelemetry

#: Ray retries a task this many times when its worker or node dies.
MAX_RETRIES = 5


def _noop_task(nbytes: int, delay: float) -> bytes:
    if delay:
        time.sleep(delay)
    return bytes(nbytes)


def init_ray(address: str | None, workers: int | None) -> None:
    """Join the cluster at ``address``, or start a local Ray of ``workers`` CPUs (None: all).

    Ray's own error is raised as it is (the caller says what failed); a malformed or silent
    address, or more local workers than CPUs, is a :class:`sweep.errors.SweepError` first
    (:mod:`sweep.executors._address`).
    """
    import ray

    if address:
        wait_for_listener(address)
        ray.init(address=address, log_to_driver=False)
    else:
        check_local_workers(workers)
        before_local_ray_start()
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)


class RayExecutor:
    """Run batches as Ray tasks on a cluster joined at ``address`` or started locally.

    Parameters
    ----------
    address : str, optional
        Cluster to join (``ray://`` or ``host:port``, or ``"auto"``); default: use an
        already-initialised Ray, or start a local cluster.
    workers : int, optional
        CPUs of a local cluster (and a cap on the workers used on a joined cluster).
    in_flight_per_worker : int
        Tasks outstanding per worker (2 keeps every worker busy while results travel back).
    noop_delay : float
        Seconds each overhead-probe task sleeps: a test hook that emulates a slow scheduler
        so the planner's response to a larger overhead can be checked. Leave at 0.
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        in_flight_per_worker: int = 2,
        noop_delay: float = 0.0,
    ) -> None:
        self.address = address
        self.requested_workers = workers
        self.in_flight_per_worker = in_flight_per_worker
        self.noop_delay = noop_delay
        self._owns_ray = False
        self._workers = 1
        self._cluster_cpus = 1
        self._sweep_ref: Any = None
        self._pending: dict[Any, tuple[NDArray[np.int64], float]] = {}

    def start(self, sweep: ResolvedSweep) -> None:
        """Start or join Ray, register the tasks and put the sweep in the object store."""
        import ray

        if not ray.is_initialized():
            try:
                init_ray(self.address, self.requested_workers)
            except SweepError:
                raise
            except Exception as exc:
                raise ExecutionError(
                    f"cannot start or join Ray (address {self.address!r}): {exc}"
                ) from exc
            self._owns_ray = True
        cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
        self._cluster_cpus = max(1, cpus)
        self._workers = max(1, min(cpus, self.requested_workers or cpus))
        self._task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False)(
            evaluate_on_worker
        )
        self._noop = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(_noop_task)
        self._sweep_ref = ray.put(sweep)

    @property
    def workers(self) -> int:
        """CPUs available to the sweep."""
        return self._workers

    def describe(self) -> ExecutorInfo:
        """Kind, workers, nodes and address."""
        import ray

        nodes = [n for n in ray.nodes() if n.get("Alive")]  # type: ignore[no-untyped-call]
        return ExecutorInfo(
            kind=self.name,
            workers=self._workers,
            nodes=len(nodes),
            node_addresses=tuple(sorted({str(n["NodeManagerAddress"]) for n in nodes})),
            address=self.address or ("local" if self._owns_ray else "existing"),
            ray_version=ray.__version__,
        )

    def measure_overhead(self, result_bytes: int, rounds: int = 3) -> float:
        """Per-task overhead O (worker-seconds): pipelined no-ops returning ``result_bytes``.

        Each round submits ``4 * cluster_cpus`` no-op tasks at once and waits for all; O is
        ``cluster_cpus * elapsed / tasks`` (the probes may run on every CPU of the
        cluster), the median over ``rounds`` rounds after a warm-up.
        """
        import ray

        n = 4 * self._cluster_cpus
        ray.get([self._noop.remote(result_bytes, self.noop_delay) for _ in range(n)])
        samples = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            ray.get([self._noop.remote(result_bytes, self.noop_delay) for _ in range(n)])
            samples.append(self._cluster_cpus * (time.perf_counter() - t0) / n)
        return float(statistics.median(samples))

    def run(self, batches: Iterable[NDArray[np.int64]]) -> Iterator[BatchOutcome]:
        """Stream batches through Ray, at most ``in_flight_per_worker * workers`` at a time."""
        import ray

        source = iter(batches)
        limit = self.in_flight_per_worker * self._workers

        def submit() -> bool:
            indices = next(source, None)
            if indices is None:
                return False
            ref = self._task.remote(self._sweep_ref, indices)
            self._pending[ref] = (indices, time.time())
            return True

        # One task per worker first; the second in flight goes out with the first result,
        # when a batch source that sizes batches from outcomes has one to go by.
        while len(self._pending) < self._workers and submit():
            pass
        while self._pending:
            ready, _ = ray.wait(list(self._pending), num_returns=1)
            for ref in ready:
                indices, submitted = self._pending.pop(ref)
                try:
                    result, timing = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    raise ExecutionError(
                        f"a Ray task failed after {MAX_RETRIES} retries: {exc}"
                    ) from exc
                telemetry = TaskTelemetry.of_task(
                    timing,
                    submit_time=submitted,
                    received_time=time.time(),
                    n_configs=int(indices.shape[0]),
                    compute_seconds=result.compute_seconds,
                )
                # The driver takes the outcome before the next batch is drawn, so a batch
                # source that sizes batches from outcomes (the planning stream) sees it; the
                # worker meanwhile runs its other task in flight.
                yield BatchOutcome(indices, result, telemetry)
                while len(self._pending) < limit and submit():
                    pass

    def close(self) -> None:
        """Shut Ray down if this executor started it; else cancel the tasks still in flight.

        A local cluster this executor started goes down whole, its workers with it, so its
        tasks are not cancelled one by one first: a force-cancel racing the shutdown can end
        in a Ray-internal check failure that kills the driver (seen after SIGTERM in full-suite
        runs on a loaded 2-core machine). On a joined cluster each task is cancelled.
        """
        import ray

        if not self._owns_ray:
            for ref in list(self._pending):
                with contextlib.suppress(Exception):  # already finished or its node is gone
                    ray.cancel(ref, force=True)
        self._pending.clear()
        self._sweep_ref = None
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False
