"""The passes after a sweep as tasks over groups of parts, on any backend.

``sweep verify``, ``sweep results --top`` and ``sweep report`` do their per-part work (a
part's checks and digest; a part's best rows) in one function of a folder location and some
part names. :func:`map_part_groups` cuts the parts into groups (several per CPU of the
backend) and runs that function over them with the backend's
:meth:`sweep.executors._base.Executor.map_groups`, yielding the answers in the order of the
groups while keeping only those that came back before an earlier one. The report's
computation over runs of rows, the recomputed returns (:func:`config_returns_on`), goes
through :meth:`sweep.executors._base.Executor.map_runs` with its inputs shipped once.

The folder must be reachable by the same location from every node: a URI (``s3://``,
``gs://``) or a path on a shared filesystem (a local path is made absolute first).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from sweep.common._fs import LocalFilesystem
from sweep.engine._evaluate import RETURNS_BLOCK, ReturnsRunner, config_returns
from sweep.executors._base import Executor
from sweep.executors._pool import in_order
from sweep.spec._resolve import ResolvedSweep
from sweep.store._run_store import RunStore

T = TypeVar("T")


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
    backend: Executor,
    body: Callable[..., T],
    store: RunStore,
    names: Sequence[str],
    args: tuple[Any, ...],
) -> Iterator[T]:
    """``body(location, group, *args)`` over groups of ``names`` on ``backend``, in group order.

    Parameters
    ----------
    backend : Executor
        Where the groups run (connected on first use).
    body : callable
        An importable module-level function (a task's body).
    store : RunStore
        The run folder (opened by each task at :func:`worker_location`).
    names : sequence of str
        The parts, cut into :attr:`Executor.groups_wanted` consecutive groups at most.
    args : tuple
        Further arguments of ``body`` (small: they travel with every task).

    Yields
    ------
    object
        ``body``'s answer for each group, in the order of the groups (which cover ``names``
        in order); each is released once the consumer takes the next.
    """
    if not names:
        return
    groups = part_groups(names, backend.groups_wanted)
    yield from in_order(backend.map_groups(body, worker_location(store), groups, args))


def _one_thread() -> None:
    """Numba's threads set to one: a task has one CPU of its worker, not the whole node's."""
    import numba

    numba.set_num_threads(1)


def row_runs(rows: NDArray[Any], runs: int, most_rows: int | None = None) -> Iterator[NDArray[Any]]:
    """``rows`` in ``runs`` consecutive runs, or more so that none has over ``most_rows``."""
    runs = max(runs, -(-len(rows) // most_rows) if most_rows else 0)
    bounds = [len(rows) * k // runs for k in range(runs + 1)]
    return (rows[a:b] for a, b in itertools.pairwise(bounds) if b > a)


def returns_chunk(sweep: ResolvedSweep, indices: NDArray[np.int64]) -> NDArray[np.float64]:
    """:func:`sweep.engine._evaluate.config_returns` of some configs, on one CPU of a worker."""
    _one_thread()
    return config_returns(sweep, indices)


def config_returns_on(
    backend: Executor,
    body: Callable[..., NDArray[np.float64]] = returns_chunk,
    extra: tuple[Any, ...] = (),
) -> ReturnsRunner:
    """A :class:`sweep.engine._evaluate.ReturnsRunner` whose configs run as tasks on ``backend``.

    The sweep (its data included) is shipped once; each task recomputes a run of the configs
    (at most :data:`sweep.engine._evaluate.RETURNS_BLOCK`) and the runs are yielded in the
    order asked. A config's returns depend only on the config, the data and the root seed,
    so they are the in-process ones bit for bit.

    Parameters
    ----------
    backend : Executor
        Where the configs run.
    body : callable, optional
        The task: :func:`returns_chunk` (tests give one that kills its worker once).
    extra : tuple, optional
        Further arguments of ``body`` after the grid positions.
    """

    def run(sweep: ResolvedSweep, indices: NDArray[np.int64], /) -> Iterator[NDArray[np.float64]]:
        runs = row_runs(np.asarray(indices), backend.groups_wanted, RETURNS_BLOCK)
        yield from backend.map_runs(body, (sweep,), runs, extra)

    return run
