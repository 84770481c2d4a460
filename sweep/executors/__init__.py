"""Executors: where batches are evaluated. The driver only sees this interface.

``evaluate_on_worker`` is the task every Ray worker runs (one batch and the worker's timing);
``RayExecutor`` and ``LocalExecutor`` import Ray only when started;
``before_local_ray_start`` stops what a killed local Ray session left running.
"""

from sweep.executors._base import BatchOutcome, Executor, make_executor
from sweep.executors._local import LocalExecutor
from sweep.executors._ray import RayExecutor
from sweep.executors._ray_orphans import before_local_ray_start
from sweep.executors._task import evaluate_on_worker

__all__ = [
    "BatchOutcome",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "before_local_ray_start",
    "evaluate_on_worker",
    "make_executor",
]
