"""The CLI commands run in this process (typer's runner), so their code paths are measured.

The subprocess tests (``test_cli.py``, ``test_hostile_cli.py``) check exit codes and the
real entry point; these check what each command prints and refuses, through ``main()`` where
the exit code matters.
"""

from __future__ import annotations

import json
import shutil
import signal

import pandas as pd
import pytest
from typer.testing import CliRunner

from sweep import load_results, results_hash
from sweep.cli._app import app
from tests.helpers import run_main, small_spec_dict, write_spec

runner = CliRunner()


@pytest.fixture(scope="module")
def done_run(tmp_path_factory, small_run):
    """A copy of the session's small completed run (tests resume it): (spec path, run folder)."""
    root = tmp_path_factory.mktemp("cli")
    spec = write_spec(root / "s.toml", small_spec_dict())
    run_dir = root / "run"
    shutil.copytree(small_run, run_dir)
    return spec, run_dir


_main = run_main


def test_run_in_process_gives_the_table_of_the_api_run(small_run, tmp_path):
    spec = write_spec(tmp_path / "s.toml", small_spec_dict())
    run_dir = tmp_path / "run"
    result = runner.invoke(app, ["run", str(spec), "--run-dir", str(run_dir), "--quiet"])
    assert result.exit_code == 0, result.output
    assert results_hash(run_dir) == results_hash(small_run)
    assert f"table hash: {results_hash(run_dir)}" in " ".join(result.output.split())


def test_run_prints_the_summary_and_the_table_hash(done_run):
    _, run_dir = done_run
    table_hash = results_hash(run_dir)
    status = runner.invoke(app, ["status", str(run_dir)])
    assert status.exit_code == 0, status.output
    assert f"table hash:    {table_hash}" in status.output
    assert "next:          sweep report" in status.output
    assert "100.0%" in status.output


def test_resume_of_a_complete_run_computes_nothing(done_run):
    _, run_dir = done_run
    result = runner.invoke(app, ["resume", str(run_dir), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "(0 computed now, 0 failed)" in result.output
    assert f"table hash: {results_hash(run_dir)}" in result.output


def test_status_json_is_machine_readable(done_run):
    _, run_dir = done_run
    result = runner.invoke(app, ["status", str(run_dir), "--json"])
    info = json.loads(result.output)
    assert info["done"] == info["total"] == len(load_results(run_dir))
    assert info["remaining"] == 0 and info["lock"] is None


def test_verify_prints_the_hash_of_the_parts(done_run):
    _, run_dir = done_run
    result = runner.invoke(app, ["verify", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert f"table hash: {results_hash(run_dir)}" in result.output
    assert "0 bad" in result.output


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_results_export_every_row_of_the_table(done_run, fmt, tmp_path):
    _, run_dir = done_run
    expected = load_results(run_dir).sort_values("excess_sharpe_ann", ascending=False)
    out = tmp_path / f"r.{fmt}"
    result = runner.invoke(app, ["results", str(run_dir), "--format", fmt, "-o", str(out)])
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(out) if fmt == "csv" else pd.read_json(out, orient="records")
    assert list(frame["config_id"]) == list(expected["config_id"])


def test_results_top_as_a_table_in_a_file(done_run, tmp_path):
    _, run_dir = done_run
    best = load_results(run_dir).sort_values("excess_sharpe_ann", ascending=False)
    out = tmp_path / "top.txt"
    result = runner.invoke(app, ["results", str(run_dir), "--top", "3", "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert all(cid[:8] in text for cid in best["config_id"].iloc[:3])
    assert best["config_id"].iloc[3][:8] not in text


def test_results_parquet_round_trips(done_run, tmp_path):
    _, run_dir = done_run
    out = tmp_path / "r.parquet"
    result = runner.invoke(app, ["results", str(run_dir), "--format", "parquet", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert len(pd.read_parquet(out)) == len(load_results(run_dir))


def test_strategies_lists_every_built_in():
    from strategies import available_strategies

    result = runner.invoke(app, ["strategies"])
    assert result.exit_code == 0
    for name in available_strategies():
        assert name in result.output


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["run", "{spec}", "--batch-size", "many"], 2, "--batch-size: expected 'auto' or a"),
        (["run", "{spec}", "--batch-size", "0"], 2, "got '0'"),
        (
            ["run", "{spec}", "--executor", "local", "--workers", "2"],
            2,
            "--workers: applies only with --executor ray, dask or auto",
        ),
        (
            ["results", "{run}", "--format", "parquet"],
            2,
            "--format parquet: expected --output FILE",
        ),
        (["results", "{run}", "--folds"], 2, "its spec has no [validation] section"),
        (["results", "{run}", "--sort", "sharpe_anual"], 2, "sharpe_ann"),
        (["status", "{spec}"], 2, "is a file, not a folder; expected a run folder"),
        (["verify", "{empty}"], 2, "no manifest.json (not a raysweep run folder)"),
        (["report", "{run}", "--heatmap", "lookback"], 2, "--heatmap: expected two grid axes"),
        (
            ["report", "{run}", "--heatmap", "lookback,bnd", "--out", "{tmp}"],
            2,
            "'bnd' is not a grid parameter",
        ),
    ],
)
def test_bad_input_is_refused_with_exit_2_and_one_message(
    done_run, monkeypatch, capsys, tmp_path, args, code, message
):
    spec, run_dir = done_run
    filled = [a.format(spec=spec, run=run_dir, tmp=tmp_path / "rep", empty=tmp_path) for a in args]
    exit_code, out, err = _main(monkeypatch, capsys, *filled)
    assert exit_code == code, (out, err)
    assert message in " ".join(err.split()), err
    assert "Traceback" not in err


def test_a_spec_that_is_not_utf8_is_refused(tmp_path, monkeypatch, capsys):
    spec = tmp_path / "s.toml"
    spec.write_bytes(b'name = "x"\n\xff\xfe')
    exit_code, _, err = _main(monkeypatch, capsys, "run", str(spec), "--run-dir", str(tmp_path))
    assert exit_code == 2
    assert "spec: expected a UTF-8 text file" in err and "0xff" in err


def test_report_writes_its_files_and_prints_the_headline(done_run, tmp_path):
    _, run_dir = done_run
    out = tmp_path / "rep"
    result = runner.invoke(
        app, ["report", str(run_dir), "--out", str(out), "--top", "3", "--alpha", "0.1"]
    )
    assert result.exit_code == 0, result.output
    assert (out / "report.json").is_file() and (out / "report.html").is_file()
    data = json.loads((out / "report.json").read_text())
    assert data["options"]["alpha"] == 0.1 and len(data["results"]["top"]) == 3
    assert f"table:    {results_hash(run_dir)}" in result.output
    assert "verdict:" in result.output


def test_report_alpha_outside_0_1_is_a_usage_error(done_run):
    _, run_dir = done_run
    result = runner.invoke(app, ["report", str(run_dir), "--alpha", "1.5"])
    assert result.exit_code == 2
    assert "strictly between 0 and 1" in result.output


def test_status_names_the_driver_holding_the_lock(done_run):
    import os

    from sweep.store._run_store import RunStore

    _, run_dir = done_run
    with RunStore(run_dir).locked() as took_over:
        assert took_over is None
        result = runner.invoke(app, ["status", str(run_dir)])
        info = json.loads(runner.invoke(app, ["status", str(run_dir), "--json"]).output)
    assert f"lock held by pid {os.getpid()}" in result.output
    assert info["lock"]["pid"] == os.getpid() and len(info["lock"]["token"]) == 16
    assert "none running" in runner.invoke(app, ["status", str(run_dir)]).output


def test_the_entry_point_leaves_this_process_sigterm_handler_as_it_was(
    done_run, monkeypatch, capsys
):
    before = signal.getsignal(signal.SIGTERM)
    _, run_dir = done_run
    assert _main(monkeypatch, capsys, "status", str(run_dir))[0] == 0
    assert signal.getsignal(signal.SIGTERM) is before
