"""Any backtester as a strategy: one function per config, its equity curve or returns back."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from strategies import Param, StrategyError, check_lookahead, returns_strategy
from sweep import evaluate_batch, load_results, resolve, run_sweep, spec_from_dict
from sweep.data._panels import synthetic_panel

PANEL = synthetic_panel(years=2)


def _close(data: pd.DataFrame) -> pd.Series:
    return data["close"].iloc[:, 0]


@returns_strategy(version="1", params=[Param("window", "int", window=True)])
def bar_loop(data: pd.DataFrame, window: int) -> pd.Series:
    """Long the first asset while its close is above its trailing mean: a plain bar loop."""
    close = _close(data).to_numpy()
    equity, held, cash = np.empty(len(close)), 0.0, 1.0
    for t in range(len(close)):
        equity[t] = cash + held * close[t]
        above = t >= window and close[t] > close[t - window : t].mean()
        if above and held == 0.0:
            held, cash = equity[t] / close[t], 0.0
        elif not above and held:
            held, cash = 0.0, equity[t]
    return pd.Series(equity[window:], index=data.index[window:])  # starts after its warm-up


@returns_strategy(version="1", params=[Param("window", "int", window=True)])
def peeking(data: pd.DataFrame, window: int) -> pd.Series:
    """Earns a day's return only when the next day rises: reads tomorrow's close."""
    close = _close(data)
    up = (close.shift(-1) > close).astype(float)
    return (close.pct_change().fillna(0.0) * up + 1.0).cumprod()


def _one(strategy, **config):
    params = {k: np.array([v]) for k, v in config.items()}
    return strategy.evaluate(PANEL, params, [np.random.default_rng(0)])


def test_a_shorter_curve_is_aligned_and_its_missing_periods_are_zero() -> None:
    out = _one(bar_loop, window=30)
    assert out.returns.shape == (1, PANEL.n_periods - 1)
    assert (out.returns[0, :30] == 0.0).all() and np.abs(out.returns[0, 30:]).sum() > 0
    close = PANEL.close[:, 0]
    held_days = np.flatnonzero(out.returns[0])
    assert np.allclose(out.returns[0, held_days], close[held_days + 1] / close[held_days] - 1)


def test_returns_by_period_end_and_extra_columns() -> None:
    @returns_strategy(output="returns", columns=[("n_trades", "int"), ("hit_rate", "float")])
    def daily(data: pd.DataFrame) -> tuple[pd.Series, dict[str, float]]:
        r = _close(data).pct_change().iloc[1:] * 0.5
        return r, {"n_trades": 3, "hit_rate": 0.25}

    out = _one(daily)
    expected = 0.5 * (PANEL.close[1:, 0] / PANEL.close[:-1, 0] - 1)
    np.testing.assert_allclose(out.returns[0], expected, rtol=1e-12)
    assert out.n_trades[0] == 3 and out.extra == {"hit_rate": pytest.approx(np.array([0.25]))}


@pytest.mark.parametrize(
    ("curve", "message"),
    [
        (lambda d: "not a series", r"returned str; expected its equity as a pandas Series"),
        (
            lambda d: pd.Series(1.0, index=pd.date_range("1990-01-01", periods=3)),
            r"returned 3 dates that are not the panel's \(1990-01-01, 1990-01-02, 1990-01-03\)",
        ),
        (lambda d: pd.Series(np.nan, index=d.index), r"returned nan on .*expected finite"),
        (lambda d: 1 / 0, r"raised ZeroDivisionError: division by zero"),
    ],
)
def test_garbage_fails_the_config_naming_the_strategy_config_and_fault(curve, message) -> None:
    strategy = returns_strategy(
        lambda data, k: curve(data), name="junk", params=[Param("k", "int")]
    )
    with pytest.raises(StrategyError, match=r"strategy 'junk' \(config k=2\) " + message):
        _one(strategy, k=2)


def test_a_failing_config_fails_alone_in_a_sweep(tmp_path) -> None:
    @returns_strategy(params=[Param("k", "int")])
    def sometimes(data: pd.DataFrame, k: int) -> pd.Series:
        if k == 2:
            raise RuntimeError("engine crashed")
        return (_close(data) / _close(data).iloc[0]) ** (k / 4)

    doc = {
        "name": "any",
        "seed": 1,
        "data": {"source": "synthetic", "years": 2},
        "strategy": {"name": "sometimes"},
        "grid": {"k": [1, 2, 3]},
        "metrics": {"bootstrap_reps": 20, "block_length": 5, "pbo_blocks": 4},
    }
    sweep = resolve(spec_from_dict(doc), strategy=sometimes)
    table = evaluate_batch(sweep, np.arange(3, dtype=np.int64)).table.to_pandas()
    assert list(table["status"]) == ["ok", "error", "ok"]
    assert (
        "strategy 'sometimes' (config k=2) raised RuntimeError: engine crashed" in table["error"][1]
    )
    summary = run_sweep(sweep, tmp_path / "run", executor="local", progress=False)
    assert summary.done == 3 and len(load_results(tmp_path / "run")) == 3


def test_the_lookahead_check_catches_a_backtest_that_reads_tomorrow() -> None:
    caught = check_lookahead(peeking, PANEL, {"window": 5})
    assert not caught.clean and caught.asset is None
    assert "its return for the period ending on" in caught.message()
    assert check_lookahead(bar_loop, PANEL, {"window": 20}).clean


def test_bad_declarations_are_refused() -> None:
    with pytest.raises(StrategyError, match="output must be 'equity' or 'returns'"):
        returns_strategy(lambda d: d, name="x", output="weights")  # type: ignore[arg-type]
    with pytest.raises(StrategyError, match=r"kind must be one of \['float', 'int'\]"):
        returns_strategy(lambda d: d, name="x", columns=[("a", "str")])
