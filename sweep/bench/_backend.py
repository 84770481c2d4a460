"""Join or start the cluster a benchmark measures (any distributed backend), and describe it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from sweep.errors import SweepError
from sweep.executors import KINDS, LOCAL, ClusterExecutor, make_executor
from sweep.store._bench_results import ClusterInfo

#: The backends ``sweep bench`` measures: the distributed ones.
BENCH_BACKENDS = tuple(kind for kind in KINDS if kind != LOCAL)


def bench_executor(
    kind: str, address: str | None, workers: int | None = None, oversubscribe: bool = False
) -> ClusterExecutor:
    """The backend ``kind`` (not started), refusing one that is not a distributed engine.

    Parameters
    ----------
    kind : str
        One of :data:`BENCH_BACKENDS`.
    address : str, optional
        Cluster to join; None: the one already joined, else a local one.
    workers : int, optional
        Workers of a local cluster.
    oversubscribe : bool
        Allow a local cluster of more workers than CPUs (the scaling benchmark).
    """
    if kind not in BENCH_BACKENDS:
        raise SweepError(
            f"bench: measures a distributed backend ({', '.join(BENCH_BACKENDS)}), got {kind!r}"
        )
    executor = make_executor(kind, address=address, workers=workers, oversubscribe=oversubscribe)
    assert isinstance(executor, ClusterExecutor)  # every distributed backend is one
    return executor


def describe_cluster(executor: ClusterExecutor) -> ClusterInfo:
    """Nodes, CPUs, engine and version of the cluster ``executor`` is connected to."""
    info = executor.describe()
    return ClusterInfo(
        nodes=info.nodes,
        cpus=executor.cluster_cpus,
        node_addresses=info.node_addresses or (),
        ray_version=info.ray_version,
        driver_host_cpus=os.cpu_count(),
        address=info.address or "local",
        # Ray's records name no backend (ray_version does): they keep their bytes.
        backend=None if info.ray_version is not None else info.kind,
        backend_version=info.backend_version,
    )


@contextlib.contextmanager
def bench_cluster(executor: ClusterExecutor) -> Iterator[ClusterInfo]:
    """Connect ``executor`` (join its cluster or start a local one) for one benchmark.

    Yields
    ------
    ClusterInfo
        :func:`describe_cluster`: ``address`` is ``"local"`` when started here (Ray:
        ``"existing"`` for the Ray this process had already joined).
    """
    executor.connect()
    try:
        yield describe_cluster(executor)
    finally:
        executor.close()
