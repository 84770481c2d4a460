"""The in-process executor: batches run one after another in the driver's process."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from strategies._panel import frozen_panel
from sweep.engine._evaluate import evaluate_batch
from sweep.executors._base import BatchOutcome
from sweep.spec._resolve import ResolvedSweep
from sweep.store._record import ExecutorInfo, TaskTelemetry, WorkerTiming

T = TypeVar("T")


class LocalExecutor:
    """Evaluate batches in the driver's own process, one at a time."""

    name = "local"
    title = "in-process"
    address: str | None = None

    def __init__(self) -> None:
        self._sweep: ResolvedSweep | None = None

    def connect(self) -> None:
        """Nothing to start."""

    def start(self, sweep: ResolvedSweep) -> None:
        """Keep the sweep, its panel's arrays made immutable (one copy, nothing to ship).

        A strategy that writes into the panel then fails here as it does on a Ray worker
        (whose arrays come read-only from the object store) instead of changing the prices
        of every later batch (:func:`strategies._panel.frozen_panel`).
        """
        self._sweep = replace(sweep, panel=frozen_panel(sweep.panel))

    @property
    def workers(self) -> int:
        """One batch at a time."""
        return 1

    def describe(self) -> ExecutorInfo:
        """Kind, one worker, this host."""
        return ExecutorInfo(kind=self.name, workers=1, nodes=1, host=socket.gethostname())

    def measure_overhead(self, result_bytes: int) -> float:
        """An in-process call has no transport; the overhead is the call itself (~µs)."""
        t0 = time.perf_counter()
        for _ in range(100):
            bytes(result_bytes)
        return (time.perf_counter() - t0) / 100

    def run(self, batches: Iterable[NDArray[np.int64]]) -> Iterator[BatchOutcome]:
        """Evaluate each batch as it is drawn from ``batches``."""
        if self._sweep is None:
            raise RuntimeError("LocalExecutor.run() called before start()")
        for indices in batches:
            submit = time.time()
            result = evaluate_batch(self._sweep, indices)
            end = time.time()
            telemetry = TaskTelemetry.of_task(
                WorkerTiming.here(submit, end),
                submit_time=submit,
                received_time=end,
                n_configs=int(indices.shape[0]),
                compute_seconds=result.compute_seconds,
            )
            yield BatchOutcome(indices, result, telemetry)

    @property
    def groups_wanted(self) -> int:
        """A pass's parts as one group: the body folds them one after another itself."""
        return 1

    def map_groups(
        self,
        body: Callable[..., T],
        location: str,
        groups: Sequence[list[str]],
        args: tuple[Any, ...],
    ) -> Iterator[tuple[int, T]]:
        """``body(location, group, *args)`` here, one group after another."""
        for k, group in enumerate(groups):
            yield k, body(location, group, *args)

    def map_runs(
        self,
        body: Callable[..., T],
        shared: tuple[Any, ...],
        runs: Iterable[Any],
        extra: tuple[Any, ...],
    ) -> Iterator[T]:
        """``body(*shared, run, *extra)`` here, one run after another."""
        for run in runs:
            yield body(*shared, run, *extra)

    def close(self) -> None:
        """Nothing to release."""
        self._sweep = None
