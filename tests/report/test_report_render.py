"""The rendered files: images decode, the HTML is self-contained and renders in Chromium."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from sweep.bench._io import write_bench
from sweep.report import build_report, write_report
from sweep.store._bench_results import (
    AmortizationResult,
    BatchTiming,
    LawFit,
    PerCallTiming,
    ScalingPoint,
    ScalingResult,
    SingleCallTimes,
    SpeedupPoint,
    UslFit,
)
from sweep.store._record import Plan
from tests.report.conftest import FAST

DATA_URI = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def decode_png(data: bytes) -> np.ndarray:
    """Decode PNG bytes fully (PIL when installed, else matplotlib) into pixels."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    try:
        from PIL import Image
    except ImportError:
        import matplotlib.image

        return np.asarray(matplotlib.image.imread(io.BytesIO(data), format="png"))
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        return np.asarray(image.convert("RGB"))


@pytest.mark.parametrize("name", ["complete", "resumed", "failing"])
def test_every_embedded_and_written_image_decodes(reports, name):
    _, files = reports[name]
    embedded = DATA_URI.findall(files.html.read_text())
    assert len(embedded) >= 5
    for b64 in embedded:
        pixels = decode_png(base64.b64decode(b64))
        assert pixels.shape[0] > 100 and pixels.shape[1] > 100
        assert pixels.std() > 1.0  # not a blank image
    for path in files.figures:
        decode_png(path.read_bytes())


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if shutil.os.path.exists("/usr/bin/chromium") else None


def screenshot(html, tmp_path, width: int, height: int) -> np.ndarray:
    """Render a file in headless Chromium; the first screen's pixels (RGB)."""
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed (scripts/test installs it when run as root)")
    shot = tmp_path / f"shot-{width}x{height}.png"
    cmd = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={shot}",
        f"--window-size={width},{height}",
        html.resolve().as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    pixels = decode_png(shot.read_bytes())[..., :3]
    assert pixels.shape[:2] == (height, width)
    return pixels


def test_html_renders_in_headless_chromium(reports, tmp_path):
    _, files = reports["complete"]
    pixels = screenshot(files.html, tmp_path, 1280, 2000).astype(np.float64)
    assert pixels.var() > 100.0  # text, tables and figures, not a blank page


def test_the_summary_is_on_the_first_screen(reports, tmp_path):
    report, files = reports["complete"]
    html = files.html.read_text()
    # The summary (verdict, winner, Sharpe vs benchmark, p-value, OOS, hash) precedes §1.
    summary, identity = html.index(">Summary<"), html.index(">1. Identity<")
    head = html[summary:identity]
    winner = report.to_json()["multiple_testing"]["winner"]
    for text in ("winner", "annualised Sharpe", "sweep-wide p-value", "out of sample"):
        assert text in head
    assert report.to_json()["integrity"]["table_hash"] in head
    assert f"{winner['sharpe_ann']:.2f}" in head
    # On a 1280 x 800 screen, the verdict's coloured bar and the summary table are visible
    # without scrolling: the bar's colour (red, green or amber) appears in the top screen.
    pixels = screenshot(files.html, tmp_path, 1280, 800).astype(np.int64)
    bars = [(0xCF, 0x22, 0x2E), (0x1A, 0x7F, 0x37), (0x9A, 0x67, 0x00)]
    rows = np.flatnonzero(
        np.any([(np.abs(pixels - bar).sum(axis=2) < 12).any(axis=1) for bar in bars], axis=0)
    )
    assert rows.size and rows.max() < 500, rows


def fake_bench(folder):
    """Benchmark results as `sweep bench` writes them (made up, no Ray needed)."""
    sizes = (1, 2, 4, 8, 16, 32, 64)
    o, b = 0.008, 0.0004
    batched = tuple(BatchTiming(s, (o + b * s,) * 2, o + b * s, 2 * (o + b * s)) for s in sizes)
    per_call = tuple(PerCallTiming(s, s * (o + b)) for s in sizes)
    write_bench(
        AmortizationResult(
            workers=1,
            reps=2,
            batch_sizes=sizes,
            method="made up",
            batched=batched,
            per_call=per_call,
            per_call_single=SingleCallTimes(o + b, 65),
            speedup=tuple(
                SpeedupPoint(s, pc.seconds / bt.median)
                for s, pc, bt in zip(sizes, per_call, batched, strict=True)
            ),
            fit=LawFit(
                overhead_seconds=o,
                per_config_seconds=b,
                per_call_config_seconds=b,
                r_squared=1.0,
                ridge_batch=o / b,
                batch_for_90pct=0.9 * o / (b * 0.1),
                batch_for_99pct=0.99 * o / (b * 0.01),
                ceiling_speedup=1 + o / b,
            ),
            planner=Plan(
                64, "auto", overhead_seconds=0.006, per_config_seconds=0.0005, law_batch=1188.0
            ),
            comparison=None,
        ),
        folder,
    )
    points = tuple(
        ScalingPoint(p, p, (1.0,), 100.0 * p / (1 + 0.1 * (p - 1) + 0.02 * p * (p - 1)))
        for p in range(1, 7)
    )
    write_bench(
        ScalingResult(
            cluster_cpus=4,
            max_workers=6,
            cpus_per_task=1.0,
            batch_size=64,
            tasks=24,
            configs=64 * 24,
            rounds=1,
            warm_workers=6,
            method="made up",
            points=points,
            fit=UslFit(
                sigma=0.1,
                kappa=0.02,
                gamma=100.0,
                peak_workers=6.7,
                peak_throughput=260.0,
                r_squared=1.0,
            ),
        ),
        folder,
    )


def test_scaling_section_uses_bench_results(runs, tmp_path):
    bench = tmp_path / "bench"
    fake_bench(bench)
    assert (bench / "amortization.png").is_file() and (bench / "scaling.json").is_file()
    report = build_report(runs["complete"], dataclasses.replace(FAST, bench_dir=str(bench)))
    scaling = report.to_json()["scaling"]
    assert scaling["available"] is True and scaling["source"] == str(bench)
    assert scaling["amortization"]["fit"]["ridge_batch"] == pytest.approx(20.0)
    assert scaling["scaling"]["fit"]["peak_workers"] == 6.7
    assert {"bench_amortization", "bench_scaling"} <= set(report.figures)
    files = write_report(report, tmp_path / "out")
    text = files.markdown.read_text()
    assert "ridge O/b = 20" in text and "p* = 6.7" in text
    assert "the planner estimated O = 6 ms, b = 0.5 ms, B*(0.99) = 1.19e+03" in text
    doc = json.loads(files.json.read_text())
    assert doc["scaling"]["searched"] == [str(bench)]


def test_without_bench_results_the_section_says_where_it_looked(reports):
    scaling = reports["complete"][0].to_json()["scaling"]
    if scaling["available"]:  # a developer's runs/bench in the working folder
        pytest.skip("runs/bench exists in the working folder")
    assert scaling["searched"][-1] == "runs/bench"
    assert "sweep bench" in scaling["hint"]
