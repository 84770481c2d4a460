"""The Ray backend: the sweep goes into the object store once, batches stream as tasks.

Ray's part of :class:`sweep.executors._cluster_executor.ClusterExecutor`: start a local Ray (after
stopping what a killed local session left running) or join one at ``--address``, its task
pool (``ray.remote`` tasks with ``max_retries``, ``ray.wait``, ``ray.put``), how a worker
names its node and attempt, and how the cluster describes itself.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

from sweep.errors import ExecutionError
from sweep.executors._address import check_local_workers, wait_for_listener
from sweep.executors._cluster_executor import MAX_RETRIES, ClusterExecutor
from sweep.executors._pool import TaskPool
from sweep.executors._ray_orphans import before_local_ray_start
from sweep.executors._task import Identify
from sweep.store._record import ExecutorInfo


def init_ray(address: str | None, workers: int | None, oversubscribe: bool = False) -> None:
    """Join the cluster at ``address``, or start a local Ray of ``workers`` CPUs (None: all).

    Ray's own error is raised as it is (the caller says what failed); a malformed or silent
    address, or more local workers than CPUs (unless ``oversubscribe``), is a
    :class:`sweep.errors.SweepError` first (:mod:`sweep.executors._address`).
    """
    import ray

    if address:
        wait_for_listener(address)
        ray.init(address=address, log_to_driver=False)
    else:
        if not oversubscribe:
            check_local_workers(workers)
        before_local_ray_start()
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)


def ray_identity() -> tuple[str | None, int]:
    """On a Ray worker: its node id and which execution of the current task this is."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    try:
        worker: Any = ray._private.worker.global_worker
        attempt = int(worker.core_worker.get_current_task_attempt_number())
    except Exception:  # private API: telemetry only
        attempt = -1
    return node, attempt


class RayPool:
    """Ray's :class:`sweep.executors._pool.TaskPool`: remote tasks of one CPU, retried.

    ``cancels`` is False on a local cluster the backend started: it goes down whole, and a
    force-cancel racing its shutdown can end in a Ray-internal check failure that kills the
    driver (seen after SIGTERM in full-suite runs on a loaded 2-core machine). ``options``
    are Ray task options that replace those defaults (the benchmarks' pools: CPUs per task,
    no retries, a node to run on).
    """

    def __init__(self, cancels: bool = True, **options: Any) -> None:
        self.cancels = cancels
        self.options = options

    @functools.cache  # noqa: B019 - one remote function per body, for the pool's life
    def _remote(self, fn: Callable[..., Any]) -> Any:
        import ray

        remote = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False)(fn)
        return remote.options(**self.options) if self.options else remote

    def share(self, value: Any) -> Any:
        """``ray.put``: the object store's reference."""
        import ray

        return ray.put(value)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        """A remote task of one CPU."""
        return self._remote(fn).remote(*args)

    def wait_any(self, handles: list[Any]) -> list[Any]:
        """``ray.wait`` for one."""
        import ray

        ready, _ = ray.wait(handles, num_returns=1)
        return list(ready)

    def result(self, handle: Any) -> Any:
        """``ray.get``; the task's own exception as it was raised."""
        import ray

        try:
            return ray.get(handle)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if isinstance(exc.cause, Exception) else exc
            raise cause from exc
        except ray.exceptions.RayError as exc:
            raise ExecutionError(f"a Ray task failed after {MAX_RETRIES} retries: {exc}") from exc

    def cancel(self, handles: list[Any]) -> None:
        """Force-cancel each task still running (on a joined cluster)."""
        import ray

        if not self.cancels:
            return
        for handle in handles:
            with contextlib.suppress(Exception):  # already finished or its node is gone
                ray.cancel(handle, force=True)


class RayExecutor(ClusterExecutor):
    """Run tasks on a Ray cluster joined at ``address`` or started locally.

    ``address`` is ``ray://host:port``, ``host:port`` or ``"auto"``; default: use an
    already-initialised Ray, or start a local cluster of ``workers`` CPUs. See
    :class:`sweep.executors._cluster_executor.ClusterExecutor` for the other parameters.
    """

    name = "ray"
    title = "Ray"
    address_forms = "host:port or ray://host:port"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._owns_ray = False
        self._pool = RayPool()

    @property
    def pool(self) -> TaskPool:
        """Ray's task pool."""
        return self._pool

    def _join(self) -> int:
        import ray

        if not ray.is_initialized():
            init_ray(self.address, self.requested_workers, self.oversubscribe)
            self._owns_ray = True
        self._pool = RayPool(cancels=not self._owns_ray)
        return int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]

    def _identify(self) -> Identify:
        return ray_identity

    def joins_existing(self) -> bool:
        """An address, or a Ray already initialised in this process."""
        import ray

        return bool(self.address) or bool(ray.is_initialized())

    def one_worker_pool(self) -> tuple[TaskPool, str]:
        """Tasks pinned to the driver's node, each asking for all of its CPUs, not retried."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        node = ray.get_runtime_context().get_node_id()
        cpus = next(
            (n["Resources"].get("CPU", 1.0) for n in ray.nodes() if n["NodeID"] == node),  # type: ignore[no-untyped-call]
            1.0,
        )
        pool = RayPool(
            cancels=not self._owns_ray,
            num_cpus=cpus,
            max_retries=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False),
        )
        return pool, "the driver's node"

    def spread_pool(self, in_flight: int) -> tuple[TaskPool, float]:
        """Tasks of ``CPUs / in_flight`` of a CPU (at most one), not retried.

        Ray keeps only about one worker process per CPU and starts a fresh one for the
        others' tasks: with a share below one CPU that start-up is part of what is measured.
        """
        share = min(1.0, self._cluster_cpus / in_flight)
        return RayPool(cancels=not self._owns_ray, num_cpus=share, max_retries=0), share

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

    def _leave(self) -> None:
        """Shut Ray down if this executor started it (its tasks go with it, uncancelled).

        On a joined cluster the streams cancelled their own tasks when they stopped.
        """
        import ray

        self._pool = RayPool()
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False
