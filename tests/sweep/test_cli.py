"""Bad command lines: exit code 2, a message, no traceback, nothing written."""

import subprocess
import sys

import pytest

from tests.helpers import small_spec_dict, write_spec


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nosuch"], "No such command"),
        (["run"], "Missing argument"),
        (
            ["run", "SPEC", "--batch-size", "-3"],
            "--batch-size: expected 'auto' or a positive integer",
        ),
        (["run", "SPEC", "--batch-size", "many"], "--batch-size"),
        (["run", "SPEC", "--executor", "dask"], "dask"),
        (["run", "SPEC", "--on-error", "ignore"], "ignore"),
        (["run", "SPEC", "--workers", "0"], "--workers"),
        (["run", "missing.toml"], "cannot read"),
        (["status", "RUN"], "no manifest.json"),
        (["resume", "RUN"], "no manifest.json"),
        (["verify", "RUN"], "no manifest.json"),
        (["results", "RUN"], "no manifest.json"),
    ],
)
def test_bad_command_lines(tmp_path, args, message):
    spec = write_spec(tmp_path / "s.toml", small_spec_dict())
    argv = [
        str(spec) if a == "SPEC" else str(tmp_path / "nothing") if a == "RUN" else a for a in args
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "sweep", *argv], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


def test_unknown_sort_column_suggests_a_match(tmp_path):
    from sweep import run_sweep, spec_from_dict

    run_sweep(spec_from_dict(small_spec_dict()), tmp_path / "run", progress=False)
    proc = subprocess.run(
        [sys.executable, "-m", "sweep", "results", str(tmp_path / "run"), "--sort", "sharp"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "Did you mean 'sharpe'" in proc.stderr
    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "sweep",
            "results",
            str(tmp_path / "run"),
            "--top",
            "3",
            "--format",
            "csv",
        ],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0 and len(ok.stdout.strip().splitlines()) == 4
