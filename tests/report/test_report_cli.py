"""``sweep report`` on the command line: files, summary, exit code 2 on bad input."""

from __future__ import annotations

import json
import subprocess
import sys


def sweep(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sweep", *args], capture_output=True, text=True, timeout=300
    )


def test_cli_writes_the_report_and_prints_a_summary(runs, tmp_path):
    out = tmp_path / "out"
    proc = sweep("report", str(runs["failing"]), "--out", str(out), "--top", "3", "--quiet")
    assert proc.returncode == 0, proc.stderr
    for name in ("report.json", "report.md", "report.html"):
        assert (out / name).is_file()
    doc = json.loads((out / "report.json").read_text())
    assert len(doc["results"]["top"]) == 3 and doc["options"]["top_k"] == 3
    assert "report.html" in proc.stdout and "naive N 74" in proc.stdout
    assert "verdict:" in proc.stdout and "built in" in proc.stdout
    assert "effective number of trials" in proc.stdout and "bootstrap-implied" not in proc.stdout
    assert "real:" in proc.stdout and "detects:" in proc.stdout
    # Readable at 80 columns: every line but the file paths fits.
    for line in proc.stdout.splitlines()[3:]:
        assert len(line) <= 80, line


def test_cli_default_out_is_inside_the_run_folder(runs):
    proc = sweep("report", str(runs["partial"]), "--quiet", "--heatmap", "band,lookback")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((runs["partial"] / "report" / "report.json").read_text())
    assert doc["results"]["heatmap"]["x"] == "band"


def test_cli_bad_input_exits_2_with_one_paragraph(runs, tmp_path):
    proc = sweep(
        "report", str(runs["complete"]), "--out", str(tmp_path), "--heatmap", "band,lookbak"
    )
    assert proc.returncode == 2
    assert "'lookbak' is not a grid parameter" in proc.stderr and "Traceback" not in proc.stderr
    proc = sweep("report", str(tmp_path / "nothing"))
    assert proc.returncode == 2 and "manifest.json" in proc.stderr
