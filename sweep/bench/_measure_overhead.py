"""``sweep bench overhead``: the per-task overhead O of the cluster, by no-op round trips."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from sweep.engine._evaluate import evaluate_batch
from sweep.executors import ClusterExecutor
from sweep.spec._resolve import ResolvedSweep
from sweep.store._bench_results import OverheadPoint, OverheadResult


@dataclass(frozen=True)
class OverheadSettings:
    """What ``sweep bench overhead`` measures.

    Attributes
    ----------
    payload_bytes : tuple of int
        Result sizes each no-op task returns (the first is the headline O).
    rounds : int
        Rounds per payload; O is their median.
    workers : int or None
        Workers the no-ops run on (default: every CPU of the cluster).
    """

    payload_bytes: tuple[int, ...] = (0, 1_024, 65_536, 1_048_576)
    rounds: int = 5
    workers: int | None = None


def measure_overhead(
    sweep: ResolvedSweep, settings: OverheadSettings, executor: ClusterExecutor
) -> OverheadResult:
    """Measure the per-task overhead on a cluster (any distributed backend).

    Parameters
    ----------
    sweep : ResolvedSweep
        The sweep (shipped to the workers, as a real sweep does; its result size per
        config is reported so the payloads can be read as batch sizes).
    settings : OverheadSettings
        Payloads, rounds (``workers`` is the caller's: the executor is made with it).
    executor : ClusterExecutor
        The backend measured (connected here if it is not yet; the caller closes it).

    Returns
    -------
    OverheadResult
        ``points``: per payload the median O (worker-seconds per task, from
        :meth:`sweep.executors.ClusterExecutor.measure_overhead`, one round at a time) and
        every round; ``overhead_seconds``: O at the first payload; ``per_byte_seconds``: the
        slope of O on the payload size.
    """
    executor.start(sweep)
    one = evaluate_batch(sweep, np.zeros(1, dtype=np.int64))
    points = []
    for size in settings.payload_bytes:
        rounds = [executor.measure_overhead(size, rounds=1) for _ in range(settings.rounds)]
        points.append(
            OverheadPoint(
                payload_bytes=int(size),
                overhead_seconds=float(statistics.median(rounds)),
                rounds=tuple(rounds),
            )
        )
    workers = executor.workers
    sizes = np.array([p.payload_bytes for p in points], dtype=np.float64)
    seconds = np.array([p.overhead_seconds for p in points])
    slope = float(np.polyfit(sizes, seconds, 1)[0]) if np.unique(sizes).size >= 2 else None
    return OverheadResult(
        workers=workers,
        rounds=settings.rounds,
        method="no-op tasks returning the payload, 8 per worker submitted at once; "
        f"O = workers * elapsed / tasks per round ({type(executor).__name__}.measure_overhead)",
        points=tuple(points),
        overhead_seconds=points[0].overhead_seconds if points else None,
        per_byte_seconds=slope,
        result_bytes_per_config=int(one.table.nbytes),
    )
