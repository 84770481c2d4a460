"""The run folder and what is kept in it.

The run folder: manifest and the typed run record, parts (atomic, self-verifying,
bound to their run), null and fold summaries stored with the parts, the table hash and the
results table, the trust rules of opening a folder, the kept copy of an in-memory panel,
and benchmark results on disk.

May import ``common``, ``data`` and ``spec``; never ``engine``, ``executors``, ``plan``,
``runner``, ``report``, ``bench`` or the CLI.
"""
