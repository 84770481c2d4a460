"""backtesting.py strategies swept by name, checked against backtesting.py itself.

For backtesting.py's own examples (``SmaCross`` on its GOOG and EURUSD data, and a strategy
with ``sl``/``tp`` orders) every ``bt_*`` column equals ``Backtest.run`` called directly with
the same parameters, and the engine's Sharpe ratio is the one recomputed from backtesting.py's
equity curve; a config whose run raises fails alone; the table hash is the same in-process,
on a local Ray cluster, and after a SIGKILL and a resume.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from strategies import StrategyError, from_backtesting
from strategies._backtesting import BT_COLUMNS
from sweep import evaluate_batch, load_results, resolve, results_hash, run_sweep, spec_from_dict
from sweep.data._panels import panel_from_frame
from sweep.errors import SpecError, StrategySpecError
from tests.helpers import write_spec

backtesting = pytest.importorskip("backtesting", reason="the backtesting extra")
from backtesting.test import EURUSD, GOOG  # noqa: E402

from tests.backtesting_strategies_for_tests import Fragile, SmaCross, SmaCrossStops  # noqa: E402

MODULE = "tests.backtesting_strategies_for_tests"
OPTIONS = {"cash": 100_000, "commission": 0.002}


def _panel(bars: pd.DataFrame, asset: str = "X"):  # type: ignore[no-untyped-def]
    fields = ("close", "open", "high", "low", "volume")
    return panel_from_frame(
        pd.concat(
            {f: bars[f.title()].rename(asset).astype(float).to_frame() for f in fields}, axis=1
        )
    )


def _direct(bars: pd.DataFrame, cls: type, **params):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return backtesting.Backtest(bars, cls, **OPTIONS).run(**params)


def _sweep(cls: type, bars: pd.DataFrame, grid: dict):  # type: ignore[no-untyped-def]
    doc = {
        "name": "bt",
        "seed": 1,
        "strategy": {"name": "bt"},
        "grid": grid,
        "metrics": {"bootstrap_reps": 20, "block_length": 10, "pbo_blocks": 4},
    }
    strategy = from_backtesting(cls, **OPTIONS)
    return resolve(spec_from_dict(doc), _panel(bars), strategy=strategy)


@pytest.mark.parametrize(
    ("bars", "cls", "grid"),
    [
        (GOOG, SmaCross, {"n1": [5, 10], "n2": [20, 40]}),
        (EURUSD, SmaCross, {"n1": [10], "n2": [30]}),
        (GOOG, SmaCrossStops, {"n1": [10], "sl": [0.03, 0.06], "tp": [0.1]}),
    ],
    ids=["GOOG-SmaCross", "EURUSD-SmaCross", "GOOG-sl-tp"],
)
def test_every_bt_column_equals_backtest_run(bars, cls, grid) -> None:
    sweep = _sweep(cls, bars, grid)
    table = evaluate_batch(sweep, np.arange(len(sweep.grid), dtype=np.int64)).table.to_pandas()
    assert (table["status"] == "ok").all()
    for _, row in table.iterrows():
        params = {p.name: row[p.name] for p in sweep.strategy.params}
        stats = _direct(
            bars, cls, **{k: v.item() if hasattr(v, "item") else v for k, v in params.items()}
        )
        for column, (key, _) in BT_COLUMNS.items():
            ours, theirs = row[column], float(stats[key])
            assert ours == theirs or (np.isnan(ours) and np.isnan(theirs)), (column, ours, theirs)
        assert row["n_trades"] == stats["# Trades"] > 0
        equity = stats["_equity_curve"]["Equity"]
        returns = (equity / equity.shift(1) - 1.0).iloc[1:]
        assert row["sharpe"] == pytest.approx(returns.mean() / returns.std(ddof=1), rel=1e-12)
        assert row["total_return"] == pytest.approx(equity.iloc[-1] / equity.iloc[0] - 1, rel=1e-12)


def test_a_config_whose_run_raises_fails_alone() -> None:
    sweep = _sweep(Fragile, GOOG, {"n1": [10, 13, 15], "n2": [30]})
    table = evaluate_batch(sweep, np.arange(3, dtype=np.int64)).table.to_pandas()
    assert list(table["status"]) == ["ok", "error", "ok"]
    assert (
        "strategy 'Fragile' (config n1=13, n2=30) raised ValueError: n1 = 13 is unlucky"
        in (table["error"][1])
    )
    assert np.isnan(table["bt_sharpe"][1]) and table["bt_trades"][1] == 0


def test_the_class_attributes_are_the_parameters_and_bad_options_are_named() -> None:
    strategy = from_backtesting(SmaCrossStops, cash=1000)
    assert [(p.name, p.kind, p.default) for p in strategy.params] == [
        ("n1", "int", 10),
        ("n2", "int", 30),
        ("sl", "float", 0.04),
        ("tp", "float", 0.08),
    ]
    assert "cash=1000" in strategy.version  # the options are part of the identity
    with pytest.raises(StrategyError, match=r"takes no 'comission'.*Did you mean 'commission'"):
        from_backtesting(SmaCross, comission=0.1)
    with pytest.raises(StrategyError, match=r"expected a subclass of backtesting\.Strategy"):
        from_backtesting(dict)


def test_a_panel_of_several_assets_is_refused_naming_them() -> None:
    two = pd.concat([_panel_frame(GOOG, "GOOG"), _panel_frame(GOOG * 1.1, "COPY")], axis=1)
    doc = {"name": "bt", "seed": 1, "strategy": {"name": "bt"}, "grid": {"n1": [10]}}
    with pytest.raises(
        StrategySpecError,
        match=r"backtests one asset, and the data has 2 \('GOOG', 'COPY'\); pick one",
    ):
        resolve(spec_from_dict(doc), panel_from_frame(two), strategy=from_backtesting(SmaCross))


def _panel_frame(bars: pd.DataFrame, asset: str) -> pd.DataFrame:
    fields = ("close", "open", "high", "low", "volume")
    return pd.concat(
        {f: bars[f.title()].rename(asset).astype(float).to_frame() for f in fields}, axis=1
    )


def test_the_spec_names_a_backtesting_class() -> None:
    spec = spec_from_dict(
        {
            "name": "bt",
            "seed": 1,
            "strategy": {"backtesting": f"{MODULE}:SmaCross", "backtest": OPTIONS},
            "grid": {"n1": [10]},
        }
    )
    assert spec.strategy.name == f"{MODULE}:SmaCross"
    assert spec.to_dict()["strategy"] == {
        "name": f"{MODULE}:SmaCross",
        "backtesting": f"{MODULE}:SmaCross",
        "backtest": OPTIONS,
    }
    plain = spec_from_dict({"name": "m", "seed": 1, "strategy": {"name": "momentum"}, "grid": {}})
    assert plain.to_dict()["strategy"] == {"name": "momentum"}  # older specs hash as before
    with pytest.raises(SpecError, match="give backtesting"):
        spec_from_dict(
            {
                "name": "bt",
                "seed": 1,
                "strategy": {"backtesting": f"{MODULE}:SmaCross", "name": "other:Thing"},
                "grid": {},
            }
        )


# ---- the same table in-process, on Ray, after a SIGKILL ---------------------------------------
def _spec_file(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    GOOG.rename(columns=str.lower).rename_axis("date").to_csv(data / "GOOG.csv")
    doc = {
        "name": "bt-goog",
        "seed": 7,
        "data": {"path": str(data)},
        "strategy": {"backtesting": f"{MODULE}:SmaCross", "backtest": OPTIONS},
        "grid": {"n1": [5, 8, 10, 15], "n2": [20, 30, 40, 60]},
        "metrics": {"bootstrap_reps": 20, "block_length": 10, "pbo_blocks": 4},
    }
    return write_spec(tmp_path / "bt.toml", doc)


@pytest.mark.slow
@pytest.mark.ray
def test_the_table_is_the_same_in_process_on_ray_and_after_a_sigkill(ray_local, tmp_path) -> None:  # type: ignore[no-untyped-def]
    spec_path = _spec_file(tmp_path)
    from sweep import load_spec

    spec = load_spec(spec_path)
    local = run_sweep(spec, tmp_path / "local", executor="local", batch_size=3, progress=False)
    remote = run_sweep(spec, tmp_path / "ray", executor="ray", batch_size=3, progress=False)
    assert local.table_hash is not None and local.table_hash == remote.table_hash
    run_dir = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path])}
    cmd = [sys.executable, "-m", "sweep", "run", str(spec_path), "--run-dir", str(run_dir)]
    proc = subprocess.Popen(
        [*cmd, "--executor", "local", "--batch-size", "2", "--quiet"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while proc.poll() is None and not list((run_dir / "parts").glob("part-*.parquet")):
        assert time.monotonic() < deadline, "no part written"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 0 < len(list((run_dir / "parts").glob("part-*.parquet"))) < 8
    resume = [sys.executable, "-m", "sweep", "resume", str(run_dir), "--executor", "local"]
    done = subprocess.run(
        [*resume, "--allow-import", MODULE, "--quiet"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert results_hash(run_dir) == local.table_hash
    assert len(load_results(run_dir)) == 16
