"""The passes after a sweep as Ray tasks over groups of parts (``--address``).

``sweep verify`` and ``sweep results --top`` do their per-part work (a part's checks and
digest; a part's best rows) in one function of a folder location and some part names.
:func:`map_part_groups` runs such a function as Ray tasks, one per group of parts, at most
``2 * CPUs`` in flight, and returns the per-group results in the order of the groups, so
the driver holds only what each part leaves behind. A task whose worker or node dies is
retried by Ray (``max_retries``); an exception inside the function is not retried and
reaches the caller.

The folder must be reachable by the same location from every node: a URI (``s3://``,
``gs://``) or a path on a shared filesystem (a local path is made absolute first).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sweep.common._fs import LocalFilesystem
from sweep.errors import ExecutionError
from sweep.executors._ray import MAX_RETRIES
from sweep.executors._ray_orphans import before_local_ray_start
from sweep.store._run_store import RunStore

T = TypeVar("T")

#: Groups per CPU of the cluster: several, so a slow node does not hold the last group.
GROUPS_PER_CPU = 4


def worker_location(store: RunStore) -> str:
    """The folder's location as a worker opens it: a local path made absolute, else the URI."""
    return store.fs.root if isinstance(store.fs, LocalFilesystem) else store.location


def part_groups(names: Sequence[str], groups: int) -> list[list[str]]:
    """``names`` in at most ``groups`` consecutive groups of near-equal size."""
    n = len(names)
    count = max(1, min(groups, n))
    bounds = [n * k // count for k in range(count + 1)]
    pairs = itertools.pairwise(bounds)
    return [list(names[start:stop]) for start, stop in pairs if stop > start]


def map_part_groups(
    body: Callable[..., T],
    location: str,
    names: Sequence[str],
    args: tuple[Any, ...],
    *,
    address: str | None,
) -> list[T]:
    """``body(location, group, *args)`` for groups of ``names``, as Ray tasks.

    Parameters
    ----------
    body : callable
        An importable module-level function (Ray ships it by reference).
    location : str
        The folder as every worker opens it (:func:`worker_location`).
    names : sequence of str
        The parts.
    args : tuple
        Further arguments of ``body`` (small: they travel with every task).
    address : str, optional
        The cluster to join; None uses an already-initialised Ray, or starts a local one.

    Returns
    -------
    list
        ``body``'s result for each group, in the order of the groups.
    """
    import ray

    owns = _join(address)
    try:
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))  # type: ignore[no-untyped-call]
        task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False)(body)
        groups = part_groups(names, GROUPS_PER_CPU * cpus)
        results: dict[int, T] = {}
        pending: dict[Any, int] = {}
        queue = iter(enumerate(groups))
        limit = 2 * cpus

        def submit() -> bool:
            item = next(queue, None)
            if item is None:
                return False
            k, group = item
            pending[task.remote(location, group, *args)] = k
            return True

        while len(pending) < limit and submit():
            pass
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                results[pending.pop(ref)] = _result(ref)
                while len(pending) < limit and submit():
                    pass
        return [results[k] for k in range(len(groups))]
    finally:
        if owns:
            ray.shutdown()


def _join(address: str | None) -> bool:
    """Join ``address`` or start a local Ray unless one is initialised; whether it started."""
    import ray

    if ray.is_initialized():
        return False
    try:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            before_local_ray_start()
            ray.init(include_dashboard=False, log_to_driver=False)
    except Exception as exc:
        raise ExecutionError(f"cannot start or join Ray (address {address!r}): {exc}") from exc
    return True


def _result(ref: Any) -> Any:
    """A finished task's result; its own exception raised as it is (not retried)."""
    import ray

    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause if isinstance(exc.cause, Exception) else exc
        raise cause from exc
    except ray.exceptions.RayError as exc:
        raise ExecutionError(f"a Ray task failed after {MAX_RETRIES} retries: {exc}") from exc
