"""What every distributed engine provides, and the streaming written once on top of it.

An engine is a :class:`TaskPool`: put a value where every worker reads it (once), submit a
module-level function as a task, wait for any of some tasks to finish, take a finished
task's result, cancel. A task whose worker or node dies is run again by the engine (its own
retry rule); an exception raised inside the function is not retried and reaches the caller
as it was raised. Everything else is written here once, for every engine:

* :func:`stream_tasks`: tasks drawn lazily from an iterable, at most ``limit`` in flight,
  their answers yielded in completion order with the item each answered (a sweep's batches,
  the groups of parts of a pass);
* :func:`ordered_runs`: the same, but yielded in the order of the items and with at most
  ``limit`` answered-or-running at once, so what waits for an earlier slow task is bounded
  (the runs of rows of one computation: PBO's splits, the recomputed returns);
* :func:`in_order`: answers that arrive in completion order put back in item order, keeping
  only those that came early.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741


class TaskPool(Protocol):
    """The operations a distributed engine provides (Ray's, Dask's)."""

    def share(self, value: Any) -> Any:
        """Put ``value`` where every worker reads it; a handle a task takes as an argument."""
        ...

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Start ``fn(*args)`` as a task (shared handles are read on the worker); its handle."""
        ...

    def wait_any(self, handles: list[Any]) -> list[Any]:
        """Block until at least one of ``handles`` has finished; those finished."""
        ...

    def result(self, handle: Any) -> Any:
        """A finished task's result; the function's own exception raised as it is.

        Raises
        ------
        sweep.errors.ExecutionError
            The task was lost more times than the engine retries.
        """
        ...

    def cancel(self, handles: list[Any]) -> None:
        """Cancel tasks still running (best effort: some may already be done)."""
        ...


def stream_tasks(
    pool: TaskPool,
    fn: Callable[..., T],
    items: Iterable[I],
    args: Callable[[I], tuple[Any, ...]],
    limit: int,
    *,
    first: int | None = None,
) -> Iterator[tuple[I, T, Any]]:
    """``fn(*args(item))`` for each item as tasks; ``(item, answer, handle)`` as they finish.

    Items are drawn from ``items`` only when a task is submitted, at most ``limit`` in
    flight; the first submissions stop at ``first`` (default ``limit``), so a source that
    decides its next item from the answers (the planner's batches) sees the first answer
    before most of its items are drawn. The next task goes out after the answer is yielded.
    Tasks still running when the consumer stops are cancelled.
    """
    source = iter(items)
    pending: dict[Any, I] = {}

    def submit() -> bool:
        item = next(source, _END)
        if item is _END:
            return False
        pending[pool.submit(fn, *args(item))] = item
        return True

    try:
        while len(pending) < (limit if first is None else min(first, limit)) and submit():
            pass
        while pending:
            for handle in pool.wait_any(list(pending)):
                item = pending.pop(handle)
                answer = pool.result(handle)
                yield item, answer, handle
                del answer
                while len(pending) < limit and submit():
                    pass
    finally:
        if pending:
            pool.cancel(list(pending))


def ordered_runs(
    pool: TaskPool,
    fn: Callable[..., T],
    items: Iterable[I],
    args: Callable[[I], tuple[Any, ...]],
    limit: int,
) -> Iterator[T]:
    """``fn(*args(item))`` for each item as tasks; the answers in the order of the items.

    At most ``limit`` tasks are running or answered-but-not-yet-yielded: the next goes out
    only once the oldest has been yielded, so the driver holds at most ``limit`` answers
    however slow the oldest task is.
    """
    source = iter(items)
    window: list[Any] = []
    try:
        for item in source:
            window.append(pool.submit(fn, *args(item)))
            if len(window) >= limit:
                break
        while window:
            oldest = window.pop(0)
            while pool.wait_any([oldest]) != [oldest]:  # pragma: no cover - engine says so
                pass
            answer = pool.result(oldest)
            item = next(source, _END)
            if item is not _END:
                window.append(pool.submit(fn, *args(item)))
            yield answer
            del answer
    finally:
        if window:
            pool.cancel(window)


def in_order(answers: Iterable[tuple[int, T]]) -> Iterator[T]:
    """Answers numbered 0, 1, 2, ... that arrive in any order, yielded in number order.

    Only those that arrive before an earlier one are kept, until it comes.
    """
    early: dict[int, T] = {}
    nxt = 0
    for k, answer in answers:
        early[k] = answer
        del answer
        while nxt in early:
            yield early.pop(nxt)
            nxt += 1
    if early:  # pragma: no cover - a caller that numbered its answers with gaps
        raise RuntimeError(f"answers missing before {sorted(early)[:3]}")


_END: Any = object()
