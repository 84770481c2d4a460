"""Write a built report: report.json, report.md (with figures/), report.html (self-contained)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from sweep.common._fs import is_uri
from sweep.common._jsonable import dumps
from sweep.report._build import Report, report_from_json
from sweep.report._document import report_document
from sweep.report._render_html import render_html
from sweep.report._render_md import FIGURE_DIR, render_markdown


@dataclass(frozen=True)
class ReportFiles:
    """Where a report was written."""

    folder: Path
    json: Path
    markdown: Path
    html: Path
    figures: list[Path]


def default_out_dir(run_dir: str) -> Path:
    """``RUN_DIR/report`` for a local run folder, ``./report-<name>`` for a URI."""
    if is_uri(run_dir):
        path = urlsplit(run_dir).path.rstrip("/")
        name = path.rsplit("/", 1)[-1] or urlsplit(run_dir).netloc or "run"
        return Path(f"report-{name}")
    return Path(run_dir) / "report"


def write_report(report: Report, out_dir: str | Path) -> ReportFiles:
    """Write the report's files into a local folder.

    Parameters
    ----------
    report : Report
        From :func:`sweep.report.build_report`.
    out_dir : str or Path
        Created if needed; existing report files are replaced.

    Returns
    -------
    ReportFiles
        Paths of ``report.json``, ``report.md``, ``report.html`` and ``figures/*.png``.
    """
    folder = Path(out_dir)
    (folder / FIGURE_DIR).mkdir(parents=True, exist_ok=True)
    text = dumps(report.to_json())
    # Rendered from exactly what report.json holds (NaN as null), read back as the record.
    data = report_from_json(json.loads(text))
    blocks = report_document(data, list(report.figures))
    figure_paths = []
    for name, png in report.figures.items():
        path = folder / FIGURE_DIR / f"{name}.png"
        path.write_bytes(png)
        figure_paths.append(path)
    json_path = folder / "report.json"
    md_path = folder / "report.md"
    html_path = folder / "report.html"
    json_path.write_text(text, encoding="utf-8")
    md_path.write_text(render_markdown(blocks), encoding="utf-8")
    title = f"Sweep report: {data.identity.run_name}"
    html_path.write_text(render_html(blocks, report.figures, title), encoding="utf-8")
    return ReportFiles(folder, json_path, md_path, html_path, figure_paths)
