"""The backend interface: everything engine-specific sits behind it.

The driver runs a sweep's batches through it, and every pass after a sweep (``verify``,
``status``, ``report``, ``reproduce``) maps its per-part work over it; ``plan`` and
``bench`` measure it. In-process (:mod:`sweep.executors._local`), Ray and Dask implement it;
nothing outside :mod:`sweep.executors` names an engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from sweep.engine._evaluate import BatchResult
from sweep.spec._resolve import ResolvedSweep
from sweep.store._record import ExecutorInfo, TaskTelemetry

T = TypeVar("T")


@dataclass(frozen=True)
class BatchOutcome:
    """A finished batch: its grid positions, its result and its task's telemetry.

    ``telemetry`` is the task's :class:`sweep.store._record.TaskTelemetry` (the same fields from
    every executor).
    """

    indices: NDArray[np.int64]
    result: BatchResult
    telemetry: TaskTelemetry


class Executor(Protocol):
    """A backend: runs batches, and maps work over groups of parts, somewhere.

    ``name`` is the engine's name as ``--executor`` takes it. A task lost with its worker
    or node is run again (each engine's retry rule); an exception raised inside a task's
    function is not retried and reaches the caller.
    """

    name: str
    #: The engine's name in messages ("in-process", "Ray", "Dask").
    title: str
    #: The cluster joined (None: one started here, or none).
    address: str | None

    def connect(self) -> None:
        """Start or join the engine (no sweep: a pass after one needs only the workers)."""
        ...

    def start(self, sweep: ResolvedSweep) -> None:
        """Prepare to run ``sweep``: :meth:`connect`, then ship the sweep and its data once."""
        ...

    @property
    def workers(self) -> int:
        """Number of batches that can run at once."""
        ...

    @property
    def groups_wanted(self) -> int:
        """How many groups a pass cuts its parts into (several per CPU; in-process, one each)."""
        ...

    def describe(self) -> ExecutorInfo:
        """What it is: kind, workers, nodes, address (recorded with each session)."""
        ...

    def measure_overhead(self, result_bytes: int) -> float:
        """Per-task overhead O in seconds: a no-op task returning ``result_bytes`` bytes."""
        ...

    def run(self, batches: Iterable[NDArray[np.int64]]) -> Iterator[BatchOutcome]:
        """Evaluate batches, yielding outcomes in completion order.

        The iterable is consumed lazily; at most a bounded number of batches are in flight.
        """
        ...

    def map_groups(
        self,
        body: Callable[..., T],
        location: str,
        groups: Sequence[list[str]],
        args: tuple[Any, ...],
    ) -> Iterator[tuple[int, T]]:
        """``body(location, group, *args)`` for each group; ``(k, answer)`` as each finishes.

        ``k`` is the group's position in ``groups``; answers come in completion order, never
        as a list of all of them. ``body`` is an importable module-level function and
        ``location`` the run folder as every worker opens it.
        """
        ...

    def map_runs(
        self,
        body: Callable[..., T],
        shared: tuple[Any, ...],
        runs: Iterable[Any],
        extra: tuple[Any, ...],
    ) -> Iterator[T]:
        """``body(*shared, run, *extra)`` for each run; the answers in the order of ``runs``.

        ``shared`` is shipped once and read by every task; at most a few answers wait for an
        earlier one (the window of tasks in flight).
        """
        ...

    def close(self) -> None:
        """Release resources (leave a joined cluster running)."""
        ...
