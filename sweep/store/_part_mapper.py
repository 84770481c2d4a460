"""Where a pass over a run folder's parts runs: the signature both places share.

A pass after a sweep does per-part work in a function of a folder location and some part
names (a task's body). A :class:`PartMapper` runs it over groups of parts: here
(:func:`map_here`), or as tasks of a backend
(``sweep.runner._pass_executor.PassExecutor.map_parts``, over
:func:`sweep.executors._part_tasks.map_part_groups`). The readers of a folder take one, fold
its answers as they come, and do not care which.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from sweep.store._run_store import RunStore

T = TypeVar("T")


class PartMapper(Protocol):
    """Runs ``body(location, group, *args)`` over groups of parts; the answers by group.

    :func:`map_here` in this process, or
    :meth:`sweep.runner._pass_executor.PassExecutor.map_parts` where a pass runs (tasks).
    The groups cover ``names`` in order, and the answers are yielded in the order of the
    groups, one at a time: a reader folds each into its running state and drops it.
    """

    def __call__(
        self,
        body: Callable[..., T],
        store: RunStore,
        names: Sequence[str],
        args: tuple[Any, ...],
    ) -> Iterator[T]: ...


def map_here(
    body: Callable[..., T], store: RunStore, names: Sequence[str], args: tuple[Any, ...]
) -> Iterator[T]:
    """A :class:`PartMapper` in this process: ``names`` as one group (none when empty).

    The body reads the parts one after another and folds them itself, so one answer is
    held: a group's answer is what a fold over its parts keeps (one merged null summary
    for the audits, one set of reducers for the read), never one per part.
    """
    if names:
        yield body(store.location, list(names), *args)
