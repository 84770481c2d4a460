"""The pictures in the docs: small, real, and made by this module (never by hand).

``scripts/docs-images`` runs ``test_make_the_docs_pictures`` with ``RAYSWEEP_DOCS_IMAGES=1``:
it runs the main job, writes its report, renders the report in headless Chromium (the
renderer of ``tests/report/test_report_render.py``), copies two of its figures, and renders
the terminal after the main job as tmux shows it at 80 columns. The rest of the suite checks
that every picture the docs show exists, decodes, is not blank and stays under 200 KB.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import time
from html import escape
from pathlib import Path

import numpy as np
import pytest

from tests.report.test_report_render import decode_png, screenshot

REPO = Path(__file__).resolve().parents[1]
IMAGES = REPO / "docs" / "images"
MAX_BYTES = 200 * 1024
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
IMAGE_LINK = re.compile(r"!\[[^\]]*\]\(([^)]+\.png)\)")


def shown_pictures() -> list[Path]:
    """Every PNG a docs page or the README shows, resolved to its file."""
    found = []
    for page in PAGES:
        for target in IMAGE_LINK.findall(page.read_text()):
            found.append((page.parent / target).resolve())
    return sorted(set(found))


def test_every_picture_shown_exists_decodes_and_is_small() -> None:
    pictures = shown_pictures()
    assert len(pictures) >= 4, pictures
    for path in pictures:
        assert path.is_file(), f"{path} is shown in the docs but missing: run scripts/docs-images"
        data = path.read_bytes()
        assert len(data) < MAX_BYTES, f"{path.name}: {len(data)} bytes, over 200 KB"
        pixels = decode_png(data).astype(np.float64)
        assert pixels.shape[0] > 200 and pixels.shape[1] > 300
        assert pixels.std() > 5.0, f"{path.name} is blank"


def _save_small(pixels: np.ndarray, path: Path) -> None:
    """Write RGB pixels as a PNG under 200 KB (a 64-colour palette, which text keeps)."""
    from PIL import Image

    image = Image.fromarray(pixels.astype(np.uint8))
    for colours in (256, 128, 64, 32):
        out = io.BytesIO()
        image.quantize(colours, dither=Image.Dither.NONE).save(out, "PNG", optimize=True)
        if out.tell() < MAX_BYTES:
            path.write_bytes(out.getvalue())
            return
    raise AssertionError(f"{path.name} stays over 200 KB")


def _terminal(folder: Path, tmp_path: Path) -> np.ndarray:
    """The main job and `sweep results --top 5` in tmux at 80 columns, rendered as a screen."""
    tmux = shutil.which("tmux")
    assert tmux, "tmux is needed to picture the terminal"
    session = f"raysweep-docs-{os.getpid()}"
    sweep = REPO / ".venv" / "bin" / "sweep"
    steps: tuple[tuple[str, str | None], ...] = (  # what to type, what shows it is done
        (f"cd {folder} && export PS1='$ ' && clear", None),
        (f"{sweep} run examples/momentum.toml --executor local", "report:     sweep report"),
        (f"{sweep} results runs/momentum-demo --top 5", "widen the terminal"),
    )
    subprocess.run(
        [tmux, "new-session", "-d", "-s", session, "-x", "80", "-y", "34", "sh"], check=True
    )
    text = ""
    try:
        for line, done in steps:
            subprocess.run([tmux, "send-keys", "-t", session, line, "Enter"], check=True)
            if done is None:
                time.sleep(1)
                continue
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                text = subprocess.run(
                    [tmux, "capture-pane", "-p", "-t", session],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                after = text.split(line[-20:], 1)[-1]
                if done in after and after.rstrip().endswith("$"):  # done, prompt back
                    break
                time.sleep(0.5)
    finally:
        subprocess.run([tmux, "kill-session", "-t", session], check=False)
    shown = text.replace(str(sweep), "sweep").rstrip() + "\n"
    assert "table hash:" in shown and "lookback" in shown, shown
    page = tmp_path / "terminal.html"
    page.write_text(
        "<html><body style='margin:0;background:#1e1e1e'><pre style='margin:0;padding:12px;"
        "color:#e6e6e6;font:14px/1.3 monospace'>" + escape(shown) + "</pre></body></html>"
    )
    pixels = screenshot(page, tmp_path, 720, 520)
    rows = np.flatnonzero(
        (np.abs(pixels.astype(int) - (0x1E, 0x1E, 0x1E)).sum(axis=2) > 30).any(axis=1)
    )
    return pixels[: min(pixels.shape[0], rows.max() + 14)]


@pytest.mark.skipif(
    os.environ.get("RAYSWEEP_DOCS_IMAGES") != "1",
    reason="makes the docs' pictures: run scripts/docs-images",
)
def test_make_the_docs_pictures(tmp_path: Path) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "examples").symlink_to(REPO / "examples")
    terminal = _terminal(folder, tmp_path)
    run_dir = folder / "runs" / "momentum-demo"
    subprocess.run(
        [
            str(REPO / ".venv" / "bin" / "sweep"),
            "report",
            "runs/momentum-demo",
            "--executor",
            "local",
            "-q",
        ],
        check=True,
        cwd=folder,
    )
    report = run_dir / "report"
    summary = screenshot(report / "report.html", tmp_path, 1100, 760)
    IMAGES.mkdir(parents=True, exist_ok=True)
    _save_small(terminal, IMAGES / "terminal.png")
    _save_small(summary, IMAGES / "report-summary.png")
    for figure, name in (
        ("heatmap.png", "heatmap.png"),
        ("walk_forward_equity.png", "walk-forward.png"),
    ):
        _save_small(decode_png((report / "figures" / figure).read_bytes()), IMAGES / name)
    test_every_picture_shown_exists_decodes_and_is_small()
