"""Where a pass over a run folder's parts runs: the signature both places share.

A pass after a sweep does per-part work in a function of a folder location and some part
names (a Ray task's body). A :class:`PartMapper` runs it over groups of parts: here
(:func:`map_here`), or as Ray tasks (``sweep.runner._pass_executor.PassExecutor.map_parts``,
over :func:`sweep.executors._part_tasks.map_part_groups`). The readers of a folder take one
and do not care which.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from sweep.store._run_store import RunStore

T = TypeVar("T")


class PartMapper(Protocol):
    """Runs ``body(location, group, *args)`` over groups of parts; the results by group.

    :func:`map_here` in this process, or
    :meth:`sweep.runner._pass_executor.PassExecutor.map_parts` where a pass runs (Ray tasks).
    The groups cover ``names`` in order, and the results are in the order of the groups.
    """

    def __call__(
        self,
        body: Callable[..., T],
        store: RunStore,
        names: Sequence[str],
        args: tuple[Any, ...],
    ) -> list[T]: ...


def map_here(
    body: Callable[..., T], store: RunStore, names: Sequence[str], args: tuple[Any, ...]
) -> list[T]:
    """A :class:`PartMapper` in this process: ``names`` as one group (none when empty)."""
    return [body(store.location, list(names), *args)] if names else []
