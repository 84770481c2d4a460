"""Executors: where batches are evaluated. The driver only sees this interface.

Owns the :class:`Executor` protocol, the in-process and Ray executors, the task a Ray worker
runs and the clean-up of orphaned local Ray sessions. May import ``common``, ``spec``,
``store`` and ``engine``; never ``plan``, ``runner``, ``report``, ``bench`` or the CLI.

``RayExecutor`` and ``LocalExecutor`` import Ray only when started. Inside the engine,
``_task.evaluate_on_worker`` is the task every Ray worker runs (one batch and the worker's
timing) and ``_ray_orphans.before_local_ray_start`` stops what a killed local Ray session
left running.
"""

import typing

from sweep import errors as _errors
from sweep.executors._base import BatchOutcome, Executor
from sweep.executors._local import LocalExecutor
from sweep.executors._ray import RayExecutor

__all__ = [
    "EXECUTOR_CHOICES",
    "KINDS",
    "BatchOutcome",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "make_executor",
]

#: The engines a sweep can run on, by the name ``--executor`` takes.
KINDS = ("local", "ray")
#: What ``--executor`` accepts: an engine, or ``auto`` (chosen per run).
EXECUTOR_CHOICES = ("auto", *KINDS)


def make_executor(kind: str, **options: typing.Any) -> Executor:
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
        return LocalExecutor()
    if kind == "ray":
        return RayExecutor(address=options.get("address"), workers=options.get("workers"))
    raise _errors.SpecError(
        f"--executor: expected 'auto', 'local' or 'ray', got {kind!r}"
        + _errors.close_matches(kind, EXECUTOR_CHOICES)
    )
