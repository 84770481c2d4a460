"""Join or start the Ray cluster a benchmark measures, and describe it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from sweep.errors import ExecutionError
from sweep.executors._ray_orphans import before_local_ray_start
from sweep.store._bench_results import ClusterInfo


def describe_cluster(address: str) -> ClusterInfo:
    """Nodes, CPUs and Ray version of the cluster this process is connected to."""
    import ray

    nodes = [n for n in ray.nodes() if n.get("Alive")]  # type: ignore[no-untyped-call]
    return ClusterInfo(
        nodes=len(nodes),
        cpus=int(ray.cluster_resources().get("CPU", 0)),  # type: ignore[no-untyped-call]
        node_addresses=tuple(sorted({str(n["NodeManagerAddress"]) for n in nodes})),
        ray_version=ray.__version__,
        driver_host_cpus=os.cpu_count(),
        address=address,
    )


@contextlib.contextmanager
def ray_cluster(address: str | None = None, cpus: int | None = None) -> Iterator[ClusterInfo]:
    """Use the connected Ray, else join ``address``, else start a local cluster.

    Parameters
    ----------
    address : str, optional
        Cluster to join (``host:port``, ``ray://...`` or ``"auto"``).
    cpus : int, optional
        CPUs of a local cluster (default: all logical CPUs).

    Yields
    ------
    ClusterInfo
        :func:`describe_cluster`, with ``address`` ``"local"`` when started here.
    """
    import ray

    owns = False
    if not ray.is_initialized():
        try:
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                before_local_ray_start()
                ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
        except Exception as exc:
            raise ExecutionError(f"cannot start or join Ray (address {address!r}): {exc}") from exc
        owns = True
    try:
        where = address if address else ("local" if owns else "existing")
        yield describe_cluster(where)
    finally:
        if owns:
            ray.shutdown()
