"""Benchmark results on disk (``<kind>.json``): where they live and how they are read back.

The store's side of the bench -> report seam: ``sweep bench`` writes these files
(:mod:`sweep.bench._io`), the report's scaling section and ``sweep plan`` read them here, so
neither imports the bench package.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Benchmark kinds, in the order the report shows them.
BENCH_KINDS = ("overhead", "amortization", "scaling")
FORMAT = "raysweep-bench-v1"
#: Where ``sweep bench`` writes and the report and ``sweep plan`` look by default.
DEFAULT_BENCH_DIR = Path("runs/bench")


def load_bench(read: Callable[[str], bytes | None]) -> dict[str, dict[str, Any]]:
    """Read the benchmark results found by ``read``.

    Parameters
    ----------
    read : callable
        ``read(file_name)`` returns the file's bytes, or None when it is absent.

    Returns
    -------
    dict
        Kind to result, for the kinds found (unreadable or foreign files are skipped).
    """
    found: dict[str, dict[str, Any]] = {}
    for kind in BENCH_KINDS:
        data = read(f"{kind}.json")
        if data is None:
            continue
        try:
            doc = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(doc, dict) and doc.get("format") == FORMAT and doc.get("kind") == kind:
            found[kind] = doc
    return found


def local_reader(folder: str | Path) -> Callable[[str], bytes | None]:
    """A reader for :func:`load_bench` over a local folder."""
    base = Path(folder)

    def read(name: str) -> bytes | None:
        path = base / name
        return path.read_bytes() if path.is_file() else None

    return read
