"""The executor interface the driver runs batches through."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from sweep._evaluate import BatchResult
from sweep._record import TaskTelemetry
from sweep._spec import ResolvedSweep
from sweep.errors import SpecError, close_matches


@dataclass(frozen=True)
class BatchOutcome:
    """A finished batch: its grid positions, its result and its task's telemetry.

    ``telemetry`` is the task's :class:`sweep._record.TaskTelemetry` (the same fields from
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

    def describe(self) -> dict[str, Any]:
        """JSON-ready description: kind, workers, nodes, address."""
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


EXECUTORS = ("local", "ray")


def make_executor(kind: str, **options: Any) -> Executor:
    """Return an executor by name.

    Parameters
    ----------
    kind : {"local", "ray"}
        In-process, or on a Ray cluster.
    **options
        ``address`` and ``workers`` for Ray.

    Returns
    -------
    Executor
        The executor (not started).
    """
    if kind == "local":
        from sweep.executors._local import LocalExecutor

        return LocalExecutor()
    if kind == "ray":
        from sweep.executors._ray import RayExecutor

        return RayExecutor(address=options.get("address"), workers=options.get("workers"))
    raise SpecError(
        f"--executor: expected 'auto', 'local' or 'ray', got {kind!r}"
        + close_matches(kind, ("auto", *EXECUTORS))
    )
