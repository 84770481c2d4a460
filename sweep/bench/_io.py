"""Saving benchmark results (JSON and PNG) and finding them again for the report."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sweep._jsonable import dumps
from sweep.bench._plots import PLOTS

#: Benchmark kinds, in the order the report shows them.
BENCH_KINDS = ("overhead", "amortization", "scaling")
FORMAT = "raysweep-bench-v1"


def write_bench(result: dict[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write ``<kind>.json`` and ``<kind>.png`` into ``out_dir``.

    Parameters
    ----------
    result : dict
        A benchmark result (its ``kind`` names the files).
    out_dir : str or Path
        Folder, created if needed.

    Returns
    -------
    dict
        ``{"json": path, "png": path}``.
    """
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    kind = str(result["kind"])
    doc = {"format": FORMAT, "generated": datetime.now(UTC).isoformat(timespec="seconds"), **result}
    json_path = folder / f"{kind}.json"
    png_path = folder / f"{kind}.png"
    json_path.write_text(dumps(doc), encoding="utf-8")
    png_path.write_bytes(PLOTS[kind](json.loads(json_path.read_text(encoding="utf-8"))))
    return {"json": json_path, "png": png_path}


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
