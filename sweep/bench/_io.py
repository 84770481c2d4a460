"""Saving benchmark results (JSON and PNG); :mod:`sweep.store._bench_results` reads them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sweep.common._jsonable import dumps
from sweep.report._bench_figures import PLOTS
from sweep.store._bench_results import FORMAT


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
