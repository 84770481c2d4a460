"""The executor interface the driver runs batches through."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from sweep.engine._evaluate import BatchResult
from sweep.spec._resolve import ResolvedSweep
from sweep.store._record import ExecutorInfo, TaskTelemetry


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
    """Runs batches somewhere and streams their outcomes back as they finish."""

    name: str

    def start(self, sweep: ResolvedSweep) -> None:
        """Prepare to run ``sweep`` (start or join a cluster, ship the data once)."""
        ...

    @property
    def workers(self) -> int:
        """Number of batches that can run at once."""
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

    def close(self) -> None:
        """Release resources (leave a joined cluster running)."""
        ...
