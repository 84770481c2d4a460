"""Saving benchmark results (JSON and PNG); :mod:`sweep.store._bench_results` reads them."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from sweep.common._jsonable import dumps
from sweep.report._bench_figures import plot_bench
from sweep.store._bench_results import BenchResult, bench_from_json


def write_bench(result: BenchResult, out_dir: str | Path) -> dict[str, Path]:
    """Write ``<kind>.json`` and ``<kind>.png`` into ``out_dir``.

    Parameters
    ----------
    result : OverheadResult, AmortizationResult or ScalingResult
        A benchmark result (its ``kind`` names the files; ``generated`` is set to now).
    out_dir : str or Path
        Folder, created if needed.

    Returns
    -------
    dict
        ``{"json": path, "png": path}``; the figure is drawn from the JSON as saved, as the
        report draws it.
    """
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    stamped = replace(result, generated=datetime.now(UTC).isoformat(timespec="seconds"))
    json_path = folder / f"{result.kind}.json"
    png_path = folder / f"{result.kind}.png"
    json_path.write_text(dumps(stamped.to_json()), encoding="utf-8")
    saved = bench_from_json(json.loads(json_path.read_text(encoding="utf-8")), str(json_path))
    png_path.write_bytes(plot_bench(saved))
    return {"json": json_path, "png": png_path}
