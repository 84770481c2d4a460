"""The passes after a sweep as Ray tasks over groups of parts (``--address``).

``sweep verify``, ``sweep results --top`` and ``sweep report`` do their per-part work (a
part's checks and digest; a part's best rows) in one function of a folder location and some
part names.
:func:`map_part_groups` runs such a function as Ray tasks, one per group of parts, at most
``2 * CPUs`` in flight, and returns the per-group results in the order of the groups, so
the driver holds only what each part leaves behind. A task whose worker or node dies is
retried by Ray (``max_retries``); an exception inside the function is not retried and
reaches the caller. :func:`map_row_runs` does the same for runs of rows of one computation
with its inputs put in the object store once: the report's PBO splits
(:func:`cscv_splits_on_ray`) and its recomputed returns (:func:`config_returns_on_ray`).

The folder must be reachable by the same location from every node: a URI (``s3://``,
``gs://``) or a path on a shared filesystem (a local path is made absolute first).
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from stats import SplitRunner, cscv_best_and_ranks
from sweep.common._fs import LocalFilesystem
from sweep.engine._evaluate import RETURNS_BLOCK, ReturnsRunner, config_returns
from sweep.errors import ExecutionError, SweepError
from sweep.executors._ray import MAX_RETRIES, init_ray
from sweep.spec._resolve import ResolvedSweep
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
        init_ray(address, None)
    except SweepError:
        raise
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


# --- rows of one computation as Ray tasks (sweep report --address) -----------------------


def _use_task_cpus() -> None:
    """Numba's threads set to the CPUs Ray gave this task (not the whole node's)."""
    import numba
    import ray

    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1)  # type: ignore[no-untyped-call]
    most = int(getattr(numba.config, "NUMBA_NUM_THREADS", 1))
    numba.set_num_threads(max(1, min(most, int(cpus))))


def map_row_runs(
    body: Callable[..., T],
    shared: tuple[Any, ...],
    rows: NDArray[Any],
    extra: tuple[Any, ...],
    *,
    address: str | None,
    most_rows: int | None = None,
) -> Iterator[T]:
    """``body(*shared, rows[a:b], *extra)`` for consecutive runs of ``rows``, as Ray tasks.

    ``shared`` goes to the object store once (every task reads the same copy). The rows
    are cut into ``GROUPS_PER_CPU`` runs per CPU of the cluster (so a slow node does not
    hold the last one), or more so that none has over ``most_rows``. At most ``2 * CPUs``
    runs are in flight; the answers are yielded in the order of the runs, each fetched when
    asked for and released after, so the driver maps only the answers in that window (an
    answer is read from the node's shared memory, and what the driver touches there counts
    in its resident memory). A task whose worker dies is retried by Ray; an exception
    inside ``body`` reaches the caller.
    """
    import ray

    owns = _join(address)
    try:
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))  # type: ignore[no-untyped-call]
        task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False)(body)
        refs = [ray.put(value) for value in shared]
        runs = max(GROUPS_PER_CPU * cpus, -(-len(rows) // most_rows) if most_rows else 0)
        bounds = [len(rows) * k // runs for k in range(runs + 1)]
        todo = ((a, b) for a, b in itertools.pairwise(bounds) if b > a)
        window: collections.deque[Any] = collections.deque()
        for a, b in itertools.islice(todo, 2 * cpus):
            window.append(task.remote(*refs, rows[a:b], *extra))
        while window:
            answer = _result(window.popleft())
            nxt = next(todo, None)
            if nxt is not None:
                window.append(task.remote(*refs, rows[nxt[0] : nxt[1]], *extra))
            yield answer
            del answer
    finally:
        if owns:
            ray.shutdown()


def cscv_split_chunk(
    counts: NDArray[np.float64],
    sums: NDArray[np.float64],
    sums_sq: NDArray[np.float64],
    combos: NDArray[np.int8],
    sharpe: bool,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """:func:`stats.cscv_best_and_ranks` for some splits, on the task's own CPUs.

    ``counts`` may be one row, shared by every strategy (it is sent so, not broadcast).
    """
    _use_task_cpus()
    full = np.broadcast_to(counts, sums.shape)
    return cscv_best_and_ranks(full, sums, sums_sq, combos, sharpe)


def cscv_splits_on_ray(
    address: str | None,
    body: Callable[..., tuple[NDArray[np.int64], NDArray[np.float64]]] = cscv_split_chunk,
    extra: tuple[Any, ...] = (),
) -> SplitRunner:
    """A :class:`stats.SplitRunner` that runs PBO's splits as Ray tasks on ``address``.

    The block statistics go to the object store once; each task takes a run of splits
    (:func:`map_row_runs`) and the answers are put back in split order, so the result is the
    in-process one bit for bit. A task whose worker dies is retried by Ray.

    Parameters
    ----------
    address : str, optional
        The cluster to join; None uses an already-initialised Ray, or starts a local one.
    body : callable, optional
        The task: :func:`cscv_split_chunk` (tests give one that kills its worker once).
    extra : tuple, optional
        Further arguments of ``body`` after ``sharpe``.
    """

    def run(
        counts: NDArray[np.float64],
        sums: NDArray[np.float64],
        sums_sq: NDArray[np.float64],
        combos: NDArray[np.int8],
        sharpe: bool,
        /,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        one_row = counts[:1] if counts.strides[0] == 0 else counts  # one row, broadcast
        shared = tuple(np.ascontiguousarray(a) for a in (one_row, sums, sums_sq))
        answers = list(map_row_runs(body, shared, combos, (sharpe, *extra), address=address))
        best = np.concatenate([a[0] for a in answers])
        rank = np.concatenate([a[1] for a in answers])
        return best, rank

    return run


def returns_chunk(sweep: ResolvedSweep, indices: NDArray[np.int64]) -> NDArray[np.float64]:
    """:func:`sweep.engine._evaluate.config_returns` of some configs, on the task's CPUs."""
    _use_task_cpus()
    return config_returns(sweep, indices)


def config_returns_on_ray(
    address: str | None,
    body: Callable[..., NDArray[np.float64]] = returns_chunk,
    extra: tuple[Any, ...] = (),
) -> ReturnsRunner:
    """A :class:`sweep.engine._evaluate.ReturnsRunner` whose configs run as Ray tasks.

    The sweep (its data included) goes to the object store once; each task recomputes a run
    of the configs (:func:`map_row_runs`) and the runs are yielded in the order asked. A
    config's returns depend only on the config, the data and the root seed, so they are the
    in-process ones bit for bit. A task whose worker dies is retried by Ray.

    Parameters
    ----------
    address : str, optional
        The cluster to join; None uses an already-initialised Ray, or starts a local one.
    body : callable, optional
        The task: :func:`returns_chunk` (tests give one that kills its worker once).
    extra : tuple, optional
        Further arguments of ``body`` after the grid positions.
    """

    def run(sweep: ResolvedSweep, indices: NDArray[np.int64], /) -> Iterator[NDArray[np.float64]]:
        yield from map_row_runs(
            body, (sweep,), np.asarray(indices), extra, address=address, most_rows=RETURNS_BLOCK
        )

    return run
