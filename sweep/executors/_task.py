"""The evaluation task: one batch on a worker, with what the worker measured.

The one entry an executor (or a measurement such as ``sweep bench``) runs on a worker.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sweep.engine._evaluate import BatchResult, evaluate_batch
from sweep.spec._resolve import ResolvedSweep
from sweep.store._record import WorkerTiming


def _attempt_number() -> int:
    """Which execution of the current Ray task this is (0 = first); -1 if Ray does not say."""
    try:
        import ray

        worker: Any = ray._private.worker.global_worker
        return int(worker.core_worker.get_current_task_attempt_number())
    except Exception:  # private API: telemetry only
        return -1


def evaluate_on_worker(
    sweep: ResolvedSweep, indices: NDArray[np.int64]
) -> tuple[BatchResult, WorkerTiming]:
    """Evaluate one batch inside a Ray task; the result and the worker's timing.

    Parameters
    ----------
    sweep : ResolvedSweep
        The sweep (from the object store).
    indices : ndarray of int64
        Grid positions of the batch.

    Returns
    -------
    result : BatchResult
        :func:`sweep.engine._evaluate.evaluate_batch` of the batch.
    timing : WorkerTiming
        Start and end (epoch seconds), worker pid, Ray node id, host and attempt.
    """
    import ray

    start = time.time()
    result = evaluate_batch(sweep, indices)
    node = ray.get_runtime_context().get_node_id()
    return result, WorkerTiming.here(start, time.time(), node=node, attempt=_attempt_number())
