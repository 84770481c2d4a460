"""The evaluation task: one batch on a worker, with what the worker measured.

The one entry an engine's worker runs for a sweep (or a measurement such as ``sweep
bench``). Which node it ran on and which attempt it was are the engine's to say: the task
takes the engine's :data:`Identify` function.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from sweep.engine._evaluate import BatchResult, evaluate_batch
from sweep.spec._resolve import ResolvedSweep
from sweep.store._record import WorkerTiming

#: On a worker: ``(node, attempt)``, the engine's name of this worker's node (None: the host
#: name) and which execution of the current task this is (0 the first; -1 not known).
Identify = Callable[[], tuple[str | None, int]]


def evaluate_on_worker(
    sweep: ResolvedSweep, indices: NDArray[np.int64], identify: Identify
) -> tuple[BatchResult, WorkerTiming]:
    """Evaluate one batch inside a task; the result and the worker's timing.

    Parameters
    ----------
    sweep : ResolvedSweep
        The sweep (shipped to the worker once).
    indices : ndarray of int64
        Grid positions of the batch.
    identify : Identify
        The engine's way of naming this worker's node and the task's attempt.

    Returns
    -------
    result : BatchResult
        :func:`sweep.engine._evaluate.evaluate_batch` of the batch.
    timing : WorkerTiming
        Start and end (epoch seconds), worker pid, node, host and attempt.
    """
    start = time.time()
    result = evaluate_batch(sweep, indices)
    node, attempt = identify()
    return result, WorkerTiming.here(start, time.time(), node=node, attempt=attempt)
