"""Planning batches, predicting costs, choosing the executor.

Knowing before and while running: the batch planner (amortization law), planning while
the workers work, cost predictions, the ``auto`` executor rule, ``sweep plan`` and the ETA.

May import ``common``, ``data``, ``spec``, ``store``, ``engine`` and ``executors``; never
``runner``, ``report``, ``bench`` or the CLI.
"""
