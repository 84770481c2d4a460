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
        (["run", "SPEC", "--executor", "spark"], "spark"),
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


def _sweep_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sweep", *args], capture_output=True, text=True)


def test_results_table_piped_is_whole_and_columns_can_be_chosen(tmp_path):
    from sweep import load_results, run_sweep, spec_from_dict

    run_dir = str(tmp_path / "run")
    run_sweep(spec_from_dict(small_spec_dict()), run_dir, progress=False)
    best = load_results(run_dir).sort_values("excess_sharpe_ann", ascending=False).iloc[0]
    default = _sweep_cli("results", run_dir, "--top", "2")
    lines = default.stdout.splitlines()
    assert default.returncode == 0 and "…" not in default.stdout
    first = next(line.split() for line in lines if line.lstrip().startswith("1 "))
    assert first[1:5] == [
        best["config_id"][:8],
        str(best["lookback"]),
        f"{best['band']:.4g}",
        f"{best['excess_sharpe_ann']:.2f}",
    ]
    chosen = _sweep_cli("results", run_dir, "--top", "2", "--columns", "lookback,sharpe")
    header = chosen.stdout.splitlines()[0].split()
    assert chosen.returncode == 0 and header == ["#", "lookback", "sharpe"]
    wide = _sweep_cli("results", run_dir, "--top", "1", "--all")
    assert "excess_kurtosis" in wide.stdout and "blk_sum_00" not in wide.stdout
    bad = _sweep_cli("results", run_dir, "--columns", "lookbak")
    assert bad.returncode == 2 and "Did you mean 'lookback'" in bad.stderr


def test_version_and_status_show_whole_values(tmp_path):
    from sweep import run_sweep, spec_from_dict
    from sweep._version import ENGINE_VERSION

    version = _sweep_cli("--version")
    assert version.returncode == 0 and version.stdout.startswith(f"raysweep {ENGINE_VERSION}\n")
    assert "numpy" in version.stdout and "ray" in version.stdout
    run_dir = str(tmp_path / "run")
    summary = run_sweep(spec_from_dict(small_spec_dict()), run_dir, progress=False)
    status = _sweep_cli("status", run_dir)
    assert status.returncode == 0
    assert f"table hash:    {summary.table_hash}" in status.stdout
    assert "100.0%" in status.stdout and f"next:          sweep report {run_dir}" in status.stdout
