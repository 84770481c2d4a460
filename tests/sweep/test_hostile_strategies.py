"""Strategies that break the engine's assumptions, written as a user writes them (issue 28).

Each strategy is a small module file in the test's folder, named in a spec as
``module:object`` and imported from ``PYTHONPATH`` (in-process: ``sys.path``), the way
``examples/ts_momentum.py`` is:

- point 5, not deterministic: numpy's global generator scales the weights; the report's
  recomputation of stored rows (every column, by bytes) withholds the verdict, and a resume
  re-computes a few finished configs first and stops;
- point 6, look-ahead through a full-sample statistic (the sign of the full-sample mean, a
  full-sample rank, the date of the full-sample maximum): random factors after a cut barely
  move it; the mirrored path does, and ``check-strategy`` names the period;
- point 7, a function that makes its read-only prices writeable and writes into them (and a
  batch kernel that writes into the panel): it fails by name, whatever the batch size.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from sweep import check_strategy, results_hash, run_sweep, spec_from_dict
from sweep.errors import RunFolderError, StrategyError
from sweep.report import ReportOptions, build_report, write_report
from tests.helpers import StopAfter, write_spec

MODULE = "user_strategies_28"

USER_STRATEGIES = textwrap.dedent(
    '''
    """A user's strategies (each breaks one of the engine's assumptions)."""

    import numpy as np

    from strategies import Param, position_strategy
    from strategies.momentum import Momentum


    def _trend(prices, lookback):
        trend = np.zeros_like(prices)
        trend[lookback:] = np.sign(prices[lookback:] - prices[:-lookback])
        return trend / prices.shape[1]


    @position_strategy(version="1", params=[Param("lookback", "int", window=True)])
    def global_random(prices, lookback):
        """Trend, scaled by numpy's GLOBAL generator instead of the config's rng."""
        return _trend(prices, lookback) * (0.5 + np.random.random())


    @position_strategy(version="1", params=[Param("lookback", "int", window=True)])
    def mean_sign(prices, lookback):
        """Holds the sign of each asset's full-sample mean log return."""
        drift = np.sign(np.nanmean(np.diff(np.log(prices), axis=0), axis=0))
        return np.broadcast_to(drift / prices.shape[1], prices.shape).copy()


    @position_strategy(version="1", params=[Param("lookback", "int", window=True)])
    def best_asset(prices, lookback):
        """Long the asset with the best full-sample return (a full-sample rank)."""
        weights = np.zeros_like(prices)
        weights[:, int(np.argmax(prices[-1] / prices[0]))] = 1.0
        return weights


    @position_strategy(version="1", params=[Param("lookback", "int", window=True)])
    def until_the_peak(prices, lookback):
        """Long the book until the date of the index's full-sample maximum."""
        index = np.nanmean(prices / prices[0], axis=1)
        weights = np.zeros_like(prices)
        weights[: int(np.argmax(index))] = 1.0 / prices.shape[1]
        return weights


    @position_strategy(version="1", params=[Param("lookback", "int", window=True)])
    def scribbler(prices, lookback):
        """Trend; at lookback 20 it 'cleans' its input in place first."""
        if lookback == 20:
            prices.flags.writeable = True
            prices[1:] = prices[:-1] * 1.001
        return _trend(prices, lookback)


    class ScribblingMomentum(Momentum):
        """The momentum kernel; at lookback 20 it rescales the panel's last closes in place."""

        name = "scribbling_momentum"
        version = "1"

        def evaluate(self, panel, params, rngs):
            if (params["lookback"] == 20).any():
                panel.close.flags.writeable = True
                panel.close[-100:] *= 1.01
            return super().evaluate(panel, params, rngs)
    '''
)


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder of the user's module, importable in-process and by the CLI."""
    folder = tmp_path / "user"
    folder.mkdir()
    (folder / f"{MODULE}.py").write_text(USER_STRATEGIES)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(folder), os.getcwd()]))
    monkeypatch.setenv("RAYSWEEP_ALLOW_IMPORT", MODULE)
    sys.modules.pop(MODULE, None)
    return folder


def _doc(strategy: str, grid: dict[str, Any] | None = None, **metrics: Any) -> dict[str, Any]:
    return {
        "name": strategy.lower().replace("_", "-"),
        "seed": 11,
        "data": {"source": "synthetic", "years": 4},
        "strategy": {"name": f"{MODULE}:{strategy}"},
        "grid": grid or {"lookback": [20, 60, 120, 250]},
        "metrics": {
            "benchmark": "zero",
            "bootstrap_reps": 20,
            "block_length": 10,
            "pbo_blocks": 8,
            **metrics,
        },
    }


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sweep", *args], capture_output=True, text=True, timeout=300
    )


# --- point 5: a strategy that is not deterministic -------------------------------------


def test_the_report_withholds_the_verdict_when_recomputed_rows_differ(user, tmp_path):
    run = tmp_path / "run"
    run_sweep(spec_from_dict(_doc("global_random")), run, batch_size=1, progress=False)
    report = build_report(run, ReportOptions(progress=False))
    rows = report.data.multiple_testing.returns.row_check
    assert rows is not None and rows.compared == 4 and rows.identical < 4
    part = next((run / "parts").glob("part-*.parquet"))
    assert rows.columns == len(pq.read_schema(part).names) and rows.values_differing > 0
    assert "column mean: recorded" in rows.mismatches[0]
    verdict = report.data.verdict
    assert verdict is not None and verdict.likely_real is None
    assert verdict.headline.startswith("No verdict: the integrity check failed")
    assert "configs recomputed here differ from their stored rows" in verdict.integrity_failure
    assert "not deterministic" in verdict.paragraph
    files = write_report(report, tmp_path / "out")
    md = files.markdown.read_text()
    summary = md.split("## ")[1]  # the opening summary names it
    assert "Integrity check failed:" in summary and "recomputed here differ" in summary
    assert "| recomputed rows | every done config (4):" in md and "FAILED" in md


def test_a_resume_refuses_to_add_rows_a_strategy_would_not_give_again(user, tmp_path):
    spec = spec_from_dict(_doc("global_random"))
    run = tmp_path / "run"
    run_sweep(spec, run, batch_size=1, progress=False, executor=StopAfter(2))
    parts = sorted((run / "parts").glob("part-*.parquet"))
    assert len(parts) == 2
    with pytest.raises(RunFolderError, match=r"finished configs re-computed before continuing"):
        run_sweep(spec, run, batch_size=1, progress=False)
    assert sorted((run / "parts").glob("part-*.parquet")) == parts  # nothing written
    # Through the command line: a part deleted, then `sweep resume`.
    parts[0].unlink()
    proc = _cli("resume", str(run), "--quiet")
    assert proc.returncode == 2, proc.stderr
    assert "strategy 'global_random' is not deterministic" in proc.stderr
    assert "1 of 1 finished configs re-computed before continuing (seed " in proc.stderr


def test_a_deterministic_resume_recomputes_a_few_configs_and_goes_on(tmp_path):
    doc = _doc("x", {"lookback": [20, 60, 120, 250, 300], "band": [0.0]})
    doc["strategy"] = {"name": "momentum"}
    spec = spec_from_dict(doc)
    run_sweep(spec, tmp_path / "whole", batch_size=5, progress=False)
    run_sweep(spec, tmp_path / "r", batch_size=1, progress=False, executor=StopAfter(3))
    summary = run_sweep(spec, tmp_path / "r", batch_size=1, progress=False)
    assert summary.computed == 2
    assert summary.table_hash == results_hash(tmp_path / "whole")


# --- point 6: look-ahead through a full-sample statistic -------------------------------


@pytest.mark.parametrize("name", ["mean_sign", "best_asset", "until_the_peak"])
def test_check_strategy_catches_a_full_sample_statistic(user, name):
    (report,) = check_strategy(spec_from_dict(_doc(name)), n_configs=1, n_cuts=64)
    assert not report.clean, report.message()
    assert report.perturbation == "mirror" and report.exact
    assert report.period is not None and report.cut is not None
    assert report.period <= report.cut
    assert f"strategy '{name}' (config lookback=20) looks ahead" in report.message()
    assert "were mirrored about the close at the cut" in report.message()


def test_check_strategy_command_names_the_first_offending_period(user, tmp_path):
    spec = write_spec(tmp_path / "mean.toml", _doc("mean_sign"))
    proc = _cli("check-strategy", str(spec), "--configs", "1")
    assert proc.returncode == 1, proc.stderr
    flat = " ".join(proc.stdout.split())
    # Every weight depends on the whole sample: the first row already looks ahead.
    assert "FAIL strategy 'mean_sign' (config lookback=20) looks ahead" in flat
    assert "the first offending period: 0 (" in flat


def test_honest_strategies_raise_no_false_alarm():
    examples = str(Path(__file__).resolve().parents[2] / "examples")
    sys.path.insert(0, examples)
    try:
        grids = {
            "xs_momentum": {"lookback": [20, 250], "top_k": [1]},
            "rsi_reversion": {"window": [5, 50]},
            "bollinger_reversion": {"window": [10, 100]},
            "trend_filter": {"window": [10, 200]},
            "ts_momentum:ts_momentum": {"lookback": [20, 250], "target_vol": [0.1]},
        }
        for name, grid in grids.items():
            doc = _doc("x", grid)
            doc["strategy"] = {"name": name}
            for report in check_strategy(spec_from_dict(doc), n_configs=2, n_cuts=32):
                assert report.clean, report.message()
    finally:
        sys.path.remove(examples)


# --- point 7: a strategy that writes into its input -------------------------------------


def _hashes_by_batch(doc: dict[str, Any], root: Path) -> tuple[str | None, ...]:
    spec = spec_from_dict(doc)
    for b in (1, 4):
        run_sweep(spec, root / f"b{b}", batch_size=b, progress=False, executor="local")
    return tuple(results_hash(root / f"b{b}") for b in (1, 4))


@pytest.mark.parametrize(
    ("strategy", "grid"),
    [
        ("scribbler", None),
        ("ScribblingMomentum", {"lookback": [20, 60, 120, 250], "band": [0.0]}),
    ],
)
def test_a_strategy_writing_into_its_prices_fails_by_name_at_any_batch_size(
    user, tmp_path, strategy, grid
):
    from sweep import load_results

    one, four = _hashes_by_batch(_doc(strategy, grid), tmp_path)
    assert one == four
    frame = load_results(tmp_path / "b4").set_index("lookback")
    assert frame.loc[20, "status"] == "error"
    assert "cannot set WRITEABLE flag to True of this array" in frame.loc[20, "error"]
    assert "read-only and shared by every config" in frame.loc[20, "error"]
    assert (frame.loc[[60, 120, 250], "status"] == "ok").all()


def test_check_strategy_names_a_strategy_writing_into_its_prices(user, tmp_path):
    with pytest.raises(StrategyError, match=r"'scribbler' \(config lookback=20\) raised"):
        check_strategy(spec_from_dict(_doc("scribbler")), n_configs=1)
    spec = write_spec(tmp_path / "scribbler.toml", _doc("scribbler"))
    proc = _cli("check-strategy", str(spec), "--configs", "1")
    assert proc.returncode == 2
    assert "ok " not in proc.stdout
    assert "read-only and shared by every config" in " ".join(proc.stderr.split())


def test_frozen_arrays_keep_values_and_layout():
    from strategies._panel import immutable_copy

    c = np.arange(12.0).reshape(3, 4)
    for a, order in ((c, "C"), (np.asfortranarray(c), "F"), (c[:, ::2], "C")):
        b = immutable_copy(a)
        assert np.array_equal(a, b) and b.dtype == a.dtype
        assert b.flags[f"{order}_CONTIGUOUS"]
        with pytest.raises(ValueError, match="WRITEABLE"):
            b.flags.writeable = True
        with pytest.raises(ValueError, match="WRITEABLE"):
            b.base.flags.writeable = True
