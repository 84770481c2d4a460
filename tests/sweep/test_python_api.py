"""The one-call Python API and honest run-folder provenance (issue 14, point 2).

A strategy object (a batch-kernel class defined here, a built-in instance, a class defined
in ``__main__`` or inside a function), a grid of Python values and a DataFrame, in one call;
the run folder records where data and strategy came from, keeps a copy of an in-memory
panel, and ``resume``/``report`` reopen it from Python and from the command line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import sweep
from strategies import Param, StrategyOutput
from strategies.xs_momentum import xs_momentum as XsMomentum
from sweep import panel_fingerprint, python_grid, resolve, run_sweep, spec_from_dict
from sweep.errors import DataError, GridError, RunFolderError, UntrustedStrategyError
from sweep.store._panel_copy import decode_panel, encode_panel
from tests.helpers import listed_sp500, small_spec_dict, sp500_path

METRICS = {"bootstrap_reps": 20, "block_length": 10, "pbo_blocks": 4}


class LiveTrend:
    """Equal weight over the live assets whose close is above its close ``lookback`` ago.

    A batch kernel: one row per config, each computed alone (invariant 1); weights are zero
    where an asset is not live, so a listing or a delisting is never traded on.
    """

    name = "live_trend"
    version = "1"
    honours_listings = True  # it holds nothing where panel.live is False
    params = (
        Param("lookback", "int", minimum=1, window=True, doc="trend window"),
        Param("band", "float", minimum=0.0, default=0.0, doc="required rise"),
    )

    def evaluate(
        self, panel: Any, params: Mapping[str, Any], rngs: Sequence[np.random.Generator]
    ) -> StrategyOutput:
        close, live = panel.close, panel.live_mask
        growth = close[1:] / close[:-1] - 1.0
        n = len(params["lookback"])
        returns = np.zeros((n, close.shape[0] - 1))
        turnover = np.zeros_like(returns)
        trades = np.zeros(n, dtype=np.int64)
        for j in range(n):
            lb, band = int(params["lookback"][j]), float(params["band"][j])
            up = np.zeros(close.shape, dtype=bool)
            up[lb:] = close[lb:] > close[:-lb] * (1.0 + band)
            held = up & live
            weights = held / np.maximum(held.sum(axis=1, keepdims=True), 1)
            returns[j] = (weights[:-1] * growth).sum(axis=1)
            change = np.abs(np.diff(weights, axis=0, prepend=0.0))[:-1]
            turnover[j] = change.sum(axis=1)
            trades[j] = int((change > 0).sum())
        return StrategyOutput(returns, turnover, trades)


@pytest.fixture(scope="module")
def listed_frame() -> pd.DataFrame:
    """1,500 days of the real S&P 500 sample from 2013, with masked delistings (RRC, GE)."""
    raw = pd.read_csv(sp500_path(), index_col="Date", parse_dates=True)
    masked = listed_sp500(raw.loc["2013-01-01":])
    assert masked["RRC"].isna().any() and masked["GE"].isna().any()
    return masked.iloc[:1500]


def _manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "manifest.json").read_text())


def _cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sweep", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def _drop_a_part(run_dir: Path) -> None:
    parts = sorted((run_dir / "parts").iterdir())
    assert len(parts) > 1
    parts[0].unlink()


def test_python_grid_turns_python_values_into_the_spec_grid():
    grid = python_grid(
        {
            "lookback": range(20, 120, 20),
            "band": np.linspace(0.0, 0.02, 3),
            "n": np.array([1, 2], dtype=np.int32),
            "flag": True,
            "where": "lookback > 20",
        }
    )
    assert grid["lookback"] == {"start": 20, "stop": 120, "step": 20}
    assert grid["band"] == [0.0, 0.01, 0.02] and all(type(v) is float for v in grid["band"])
    assert grid["n"] == [1, 2] and all(type(v) is int for v in grid["n"])
    assert grid["flag"] == [True] and grid["where"] == "lookback > 20"
    json.dumps(grid)
    with pytest.raises(GridError, match=r"grid\.lookback: expected numbers or true/false, got"):
        python_grid({"lookback": [object()]})
    with pytest.raises(GridError, match=r"grid\.band: expected a 1-d array"):
        python_grid({"band": np.zeros((2, 2))})


def test_a_kernel_class_a_python_grid_and_a_frame_in_one_call(tmp_path, listed_frame):
    result = sweep.run(
        LiveTrend(),
        {"lookback": range(20, 120, 20), "band": np.array([0.0, 0.01])},
        listed_frame,
        run_dir=tmp_path / "run",
        metrics=METRICS,
    )
    assert result.complete and result.table_hash is not None
    frame = result.results()
    assert len(frame) == 10 and set(frame["status"]) == {"ok"}
    assert result.data.kind == "memory" and result.data.copy == "data/panel.parquet"
    assert result.data.description.startswith("in-memory DataFrame, 1500 dates x 20 assets, ")
    manifest = _manifest(tmp_path / "run")
    assert manifest["spec"]["data"] == {"source": "memory"}
    assert manifest["data"]["source"] == result.data.description
    assert 0 < manifest["data"]["listed_cells"] < manifest["data"]["cells"] == 1500 * 20
    assert manifest["format"] == "raysweep-run-v2"
    assert manifest["provenance"]["data"]["kind"] == "memory"
    assert manifest["identity"]["data_fingerprint"] == result.fingerprint
    copy = decode_panel((tmp_path / "run" / "data" / "panel.parquet").read_bytes(), "copy")
    assert panel_fingerprint(copy) == result.fingerprint and copy.has_listings
    assert manifest["provenance"]["strategy"]["defined_in"].endswith(":LiveTrend")
    # The same sweep again (same frame, same object): nothing left to do, same hash.
    again = sweep.resume(tmp_path / "run", data=listed_frame, strategy=LiveTrend())
    assert again.table_hash == result.table_hash and again.summary.computed == 0


def test_a_builtin_on_a_frame_resumes_and_reports_from_the_command_line(tmp_path, listed_frame):
    run_dir = tmp_path / "run"
    result = sweep.run(
        XsMomentum,
        {"lookback": [20, 60, 120], "top_k": [2, 5]},
        listed_frame,
        run_dir=run_dir,
        metrics=METRICS,
        batch_size=2,
    )
    assert result.strategy.import_path == "xs_momentum"
    assert _manifest(run_dir)["spec"]["strategy"]["name"] == "xs_momentum"
    _drop_a_part(run_dir)
    resumed = _cli("resume", run_dir, "-q", "--batch-size", "2")
    assert resumed.returncode == 0, resumed.stderr
    assert f"table hash: {result.table_hash}" in resumed.stdout
    report = _cli("report", run_dir, "-q")
    assert report.returncode == 0, report.stderr
    assert (run_dir / "report" / "report.json").is_file()
    # A damaged copy is refused with what to do, not used.
    copy = run_dir / "data" / "panel.parquet"
    table = decode_panel(copy.read_bytes(), "copy")

    altered = sweep.make_panel(table.dates, table.assets, table.close * 1.01)
    copy.write_bytes(encode_panel(altered))
    _drop_a_part(run_dir)
    refused = _cli("resume", run_dir, "-q")
    assert refused.returncode == 2, refused.stderr
    assert "data/panel.parquet has fingerprint" in refused.stderr
    assert "sweep.resume(run_dir, data=...)" in refused.stderr
    healed = sweep.resume(run_dir, data=listed_frame, batch_size=2)
    assert healed.table_hash == result.table_hash


def test_reading_the_panel_copy_lets_go_of_its_bytes_before_returning(small_panel):
    """Issue 28, point 8: ``sweep resume`` on an altered copy printed its error, then exited
    134 ("terminate called without an active exception") in some runs.

    ``pq.read_table`` over the copy's bytes let an Arrow pool thread release the buffer
    after the read returned; when the command ended first, that thread aborted the process
    at interpreter exit. A bytearray cannot grow while a buffer is exported, so growing it
    right after each read shows whether anything still holds it (before the fix: about 1
    read in 5 here; the exit itself aborted about 1 run in 40).
    """
    data = encode_panel(small_panel)
    for _ in range(200):
        buffer = bytearray(data)
        decode_panel(buffer, "copy")  # type: ignore[arg-type]
        buffer.append(0)  # BufferError while an Arrow thread still holds a view on it


def test_a_different_panel_is_refused_from_python(tmp_path, listed_frame):
    sweep.run(
        "xs_momentum",
        {"lookback": [20, 60], "top_k": 3},
        listed_frame,
        run_dir=tmp_path / "r",
        metrics=METRICS,
    )
    other = listed_frame * 1.001
    with pytest.raises(DataError) as info:
        sweep.resume(tmp_path / "r", data=other)
    message = str(info.value)
    assert "the panel handed over has fingerprint" in message and "was run on" in message
    assert "in-memory DataFrame, 1500 dates x 20 assets" in message


def test_a_strategy_without_an_importable_identity_runs_and_says_so(tmp_path, listed_frame):
    def make() -> Any:
        class Local(LiveTrend):
            name = "local_trend"

        return Local()

    strategy = make()
    run_dir = tmp_path / "run"
    grid = {"lookback": [20, 40, 60, 80], "band": [0.0]}
    result = sweep.run(strategy, grid, listed_frame, run_dir=run_dir, metrics=METRICS, batch_size=1)
    assert result.strategy.import_path is None
    record = _manifest(run_dir)["provenance"]["strategy"]
    assert record["import_path"] is None and "<locals>.Local" in record["defined_in"]
    _drop_a_part(run_dir)
    refused = _cli("resume", run_dir, "-q")
    assert refused.returncode == 2, refused.stderr
    assert "cannot be imported" in refused.stderr and "strategy=obj" in refused.stderr
    with pytest.raises(UntrustedStrategyError, match=r"sweep\.resume"):
        sweep.resume(run_dir)
    with pytest.raises(sweep.SweepError, match=r"version '2'.*version '1'"):
        sweep.resume(run_dir, strategy=type("V2", (type(strategy),), {"version": "2"})())
    resumed = sweep.resume(run_dir, strategy=strategy, batch_size=1)
    assert resumed.table_hash == result.table_hash and resumed.summary.computed == 1
    built, files = sweep.report_run(run_dir, strategy=strategy, out=tmp_path / "report")
    assert files.json.is_file() and built is not None
    assert "cannot rebuild" not in files.json.read_text()  # recomputed with the object


def test_a_strategy_defined_in_main_runs_from_a_script(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sweep
            from strategies.momentum import Momentum

            class MainMomentum(Momentum):
                name = "main_momentum"

            result = sweep.run(MainMomentum(), {{"lookback": [5, 10], "band": [0.0]}},
                               sweep.synthetic_panel(years=2),
                               run_dir={str(tmp_path / "run")!r}, metrics={METRICS!r})
            print(result.strategy.defined_in, result.strategy.import_path, result.table_hash)
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    defined_in, path, table_hash = proc.stdout.split()
    assert defined_in == "__main__:MainMomentum" and path == "None" and len(table_hash) == 64
    # The report is written, and says why its recomputations could not run.
    report = _cli("report", tmp_path / "run", "-q")
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "run" / "report" / "report.json").read_text()
    assert "defined in __main__:MainMomentum, which cannot be imported" in text
    assert "sweep.report_run(" in text
    resume = _cli("resume", tmp_path / "run", "-q")
    assert resume.returncode == 2 and "strategy=obj" in resume.stderr


def test_resolve_with_another_panel_records_it_honestly_and_the_cli_reopens_it(tmp_path):
    spec = spec_from_dict(small_spec_dict(grid={"lookback": [5, 25], "band": [0.0]}))
    same = resolve(spec, sweep.synthetic_panel(years=4))
    assert same.data_origin.kind == "synthetic" and same.spec.spec_hash == spec.spec_hash
    other = sweep.synthetic_panel(seed=1, years=4)
    moved = resolve(spec, other)
    assert moved.spec.data.source == "memory" and moved.data_origin.kind == "memory"
    assert "in-memory Panel, 1044 dates x 3 assets" in moved.data_origin.description
    summary = run_sweep(moved, tmp_path / "r", progress=False)
    manifest = _manifest(tmp_path / "r")
    assert manifest["spec"]["data"]["source"] == "memory"
    resumed = _cli("resume", tmp_path / "r", "-q")
    assert resumed.returncode == 0 and f"table hash: {summary.table_hash}" in resumed.stdout
    status = _cli("status", tmp_path / "r")
    assert status.returncode == 0, status.stderr
    # A copy lost (say, a driver killed between the manifest and the copy): the command line
    # says what it needs; a resume from Python with the same panel writes the copy again.
    (tmp_path / "r" / "data" / "panel.parquet").unlink()
    missing = _cli("resume", tmp_path / "r", "-q")
    assert missing.returncode == 2 and "data/panel.parquet is missing" in missing.stderr
    assert sweep.resume(tmp_path / "r", data=other).table_hash == summary.table_hash
    assert (tmp_path / "r" / "data" / "panel.parquet").is_file()


def test_the_api_gives_the_spec_route_s_table_hash(tmp_path):
    spec_route = run_sweep(spec_from_dict(small_spec_dict()), tmp_path / "spec", progress=False)
    api = sweep.run(
        "momentum",
        {"lookback": range(5, 125, 8), "band": [0.0, 0.005, 0.01, 0.02]},
        sweep.synthetic_panel(years=4),
        run_dir=tmp_path / "api",
        seed=7,
        metrics=small_spec_dict()["metrics"],
    )
    assert api.table_hash == spec_route.table_hash
    assert _manifest(tmp_path / "spec")["format"] == "raysweep-run-v1"


def test_a_manifest_of_an_unknown_format_is_refused_naming_versions(tmp_path):
    run_sweep(
        spec_from_dict(small_spec_dict(grid={"lookback": [5], "band": [0.0]})),
        tmp_path / "r",
        progress=False,
    )
    path = tmp_path / "r" / "manifest.json"
    doc = json.loads(path.read_text())
    doc["format"] = "raysweep-run-v9"
    path.write_text(json.dumps(doc))
    with pytest.raises(
        RunFolderError, match="'raysweep-run-v9', expected 'raysweep-run-v1' or 'raysweep-run-v2'"
    ):
        sweep.resume(tmp_path / "r")


def test_the_docs_python_api_example_runs_as_written_and_prints_its_hash(
    tmp_path, monkeypatch, capsys
):
    import re

    sp500_path()  # skipped where the real sample is not installed
    text = (Path(__file__).resolve().parents[2] / "docs" / "tutorial" / "python.md").read_text()
    found = re.search(
        r"<!-- python-api-example -->\n```python\n(.*?)```\n\n```\n(.*?)```", text, re.S
    )
    assert found is not None
    code, shown = found.groups()
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs Python API example", "exec"), {})
    printed = capsys.readouterr().out
    assert printed.splitlines()[0] == shown.splitlines()[0]
    assert printed.splitlines()[1] == shown.splitlines()[1]
    assert printed.splitlines()[-1] == "0"
