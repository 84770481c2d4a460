"""Evaluating configs into result rows and per-part summaries.

Evaluating configs: ``evaluate_batch`` (grid positions to result rows and per-part
summaries), the per-config metrics and the shared joint-bootstrap draws, and the heap
settings of an evaluating process.

May import ``common``, ``data``, ``spec`` and ``store``; never ``executors``, ``plan``,
``runner``, ``report``, ``bench`` or the CLI.
"""
