"""Executors: where batches are evaluated. The driver only sees this interface."""

from sweep.executors._base import BatchOutcome, Executor, make_executor

__all__ = ["BatchOutcome", "Executor", "make_executor"]
