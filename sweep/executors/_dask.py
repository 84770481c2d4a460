"""The Dask backend: the sweep scattered to every worker once, batches stream as futures.

Dask's part of :class:`sweep.executors._cluster_executor.ClusterExecutor`. It joins the scheduler at
``--address tcp://host:port`` (or ``DASK_SCHEDULER_ADDRESS``), else starts a
``distributed.LocalCluster`` of worker processes, one thread each, on 127.0.0.1 only and
without a dashboard. A cluster built some other way (dask-jobqueue's ``SLURMCluster`` or
``PBSCluster``, Kubernetes) is joined by its scheduler's address.

A task whose worker dies is rescheduled by Dask's scheduler on another worker: up to
``distributed.scheduler.allowed-failures`` deaths per task (set to
:data:`sweep.executors._cluster_executor.MAX_RETRIES` on a local cluster started here; a joined
scheduler keeps its own setting, 3 by default). An exception raised inside a task is not
retried (``retries=0``) and reaches the caller as it was raised.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

from sweep.errors import ExecutionError, SweepError
from sweep.executors._address import check_local_workers, wait_for_listener
from sweep.executors._cluster_executor import MAX_RETRIES, ClusterExecutor
from sweep.executors._pool import TaskPool
from sweep.executors._task import Identify
from sweep.store._record import ExecutorInfo

#: The environment variable Dask's own tools read a scheduler address from.
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"


def scheduler_address(address: str | None) -> str | None:
    """The scheduler to join: ``address``, else :data:`SCHEDULER_ENV`, else None (local)."""
    return address or os.environ.get(SCHEDULER_ENV) or None


def dask_identity() -> tuple[str | None, int]:
    """On a Dask worker: its address (the node); the attempt is not known to a task (-1)."""
    from distributed import get_worker

    return str(get_worker().address), -1


class DaskPool:
    """Dask's :class:`sweep.executors._pool.TaskPool`: futures of one client.

    ``options`` are passed to every ``client.submit`` (the benchmarks' pools: the workers a
    task may run on).
    """

    def __init__(self, client: Any, **options: Any) -> None:
        self.client = client
        self.options = options

    def share(self, value: Any) -> Any:
        """``client.scatter`` to every worker: one future every task reads."""
        return self.client.scatter(value, broadcast=True, hash=False)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        """A future of ``fn(*args)``, never merged with an equal call (``pure=False``)."""
        return self.client.submit(fn, *args, pure=False, retries=0, **self.options)

    def wait_any(self, handles: list[Any]) -> list[Any]:
        """``distributed.wait`` for the first to finish (this pool's client, not a default)."""
        from distributed import wait

        with self.client.as_current():
            wait(handles, return_when="FIRST_COMPLETED")  # type: ignore[no-untyped-call]
        return [h for h in handles if h.done()]

    def result(self, handle: Any) -> Any:
        """The future's result; the task's own exception as it was raised."""
        from distributed import KilledWorker

        try:
            return handle.result()
        except KilledWorker as exc:
            raise ExecutionError(
                f"a Dask task failed: its workers died {MAX_RETRIES} times or more while "
                f"running it ({exc})"
            ) from exc
        finally:
            handle.release()

    def cancel(self, handles: list[Any]) -> None:
        """Cancel the futures still running."""
        self.client.cancel(handles)


class DaskExecutor(ClusterExecutor):
    """Run tasks on a Dask cluster joined at ``address`` or started locally.

    ``address`` is the scheduler's (``tcp://host:port``); default: ``DASK_SCHEDULER_ADDRESS``,
    else a local cluster of ``workers`` processes (default: one per CPU). See
    :class:`sweep.executors._cluster_executor.ClusterExecutor` for the other parameters.
    """

    name = "dask"
    title = "Dask"
    address_forms = "tcp://host:port"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._client: Any = None
        self._cluster: Any = None
        self._pool: DaskPool | None = None

    @property
    def pool(self) -> TaskPool:
        """Dask's task pool."""
        if self._pool is None:
            raise RuntimeError("DaskExecutor: not connected")
        return self._pool

    def _join(self) -> int:
        try:
            import dask
            from distributed import Client, LocalCluster
        except ImportError as exc:
            raise SweepError(
                f"--executor dask: Dask is not installed ({exc}); install it with "
                "pip install 'raysweep[dask]' (dask and distributed)"
            ) from exc

        address = scheduler_address(self.address)
        if address:
            wait_for_listener(address)
            self._client = Client(address, set_as_default=False)  # type: ignore[no-untyped-call]
        else:
            if not self.oversubscribe:
                check_local_workers(self.requested_workers)
            with dask.config.set({"distributed.scheduler.allowed-failures": MAX_RETRIES}):
                self._cluster = LocalCluster(  # type: ignore[no-untyped-call]
                    n_workers=self.requested_workers or os.cpu_count() or 1,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                    # No dashboard, and the scheduler's own HTTP routes (metrics, health)
                    # on a free loopback port, not 8787: a second local cluster beside
                    # this one starts without a port clash.
                    scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                    silence_logs=logging.ERROR,
                )
            self._client = Client(self._cluster, set_as_default=False)  # type: ignore[no-untyped-call]
        self._pool = DaskPool(self._client)
        info = self._client.scheduler_info(n_workers=-1)
        return sum(int(w.get("nthreads", 1)) for w in info["workers"].values())

    def _identify(self) -> Identify:
        return dask_identity

    def joins_existing(self) -> bool:
        """An address, or :data:`SCHEDULER_ENV` set."""
        return scheduler_address(self.address) is not None

    def one_worker_pool(self) -> tuple[TaskPool, str]:
        """Tasks restricted to one worker (of the fewest threads, the first by address).

        A worker runs as many tasks at once as it has threads: one on a local cluster
        started here, so the tasks run one at a time as the benchmark needs.
        """
        workers = self._client.scheduler_info(n_workers=-1)["workers"]
        one = min(workers, key=lambda a: (int(workers[a].get("nthreads", 1)), a))
        pool = DaskPool(self._client, workers=[one], allow_other_workers=False)
        return pool, f"one worker ({int(workers[one].get('nthreads', 1))} thread(s))"

    def spread_pool(self, in_flight: int) -> tuple[TaskPool, float]:
        """The plain pool: a task takes a worker thread, so beyond the threads tasks queue."""
        return DaskPool(self._client), 1.0

    def describe(self) -> ExecutorInfo:
        """Kind, workers, nodes (distinct worker hosts) and the scheduler's address."""
        workers = self._client.scheduler_info(n_workers=-1)["workers"].values()
        hosts = {str(w.get("host", "")) for w in workers}
        return ExecutorInfo(
            kind=self.name,
            workers=self._workers,
            nodes=len(hosts),
            node_addresses=tuple(sorted(hosts)),
            address=scheduler_address(self.address) or "local",
            backend_version=version("dask"),
        )

    def _leave(self) -> None:
        """Close the client; stop the local cluster if this executor started it."""
        client, cluster = self._client, self._cluster
        self._client = self._cluster = self._pool = None
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
