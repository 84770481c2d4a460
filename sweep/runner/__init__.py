"""The driver of a sweep.

Running a sweep: the driver (lock, resume, plan, execute, write parts), its progress
display and a run folder's status.

May import every package below it (``common`` to ``plan``); never ``report``, ``bench`` or
the CLI.
"""
