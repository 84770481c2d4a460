"""Panel fields by argument name: ``open``, ``high``, ``low`` and ``volume`` reach a position
function shaped, masked and read-only as its prices; the look-ahead check sees a peek at them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from strategies import Panel, Param, StrategyError, check_lookahead, position_strategy
from strategies._position import FIELD_ARGUMENTS
from sweep import synthetic_panel
from tests import position_strategies_for_tests as fixtures

N_DATES, N_ASSETS = 60, 3


def _panel(n_assets: int = N_ASSETS, live: np.ndarray | None = None) -> Panel:
    rng = np.random.default_rng(1)
    shape = (N_DATES, n_assets)
    close = 20 * np.exp(np.cumsum(rng.normal(0, 0.02, shape), axis=0))
    fields = {
        "open": close * 0.99,
        "high": close * 1.02,
        "low": close * 0.97,
        "volume": rng.integers(1, 1000, shape).astype(np.float64),
    }
    dates = pd.bdate_range("2022-01-03", periods=N_DATES).to_numpy()
    return Panel(dates, tuple(f"A{i}" for i in range(n_assets)), close, fields, live)


def _recorder(seen: dict[str, Any], inputs: str = "numpy") -> Any:
    @position_strategy(name="recorder", inputs=inputs)  # type: ignore[call-overload]
    def recorder(prices: Any, high: Any, volume: Any, *, open: Any, low: Any) -> Any:
        seen.update(prices=prices, open=open, high=high, low=low, volume=volume)
        return np.zeros(prices.shape)

    return recorder


def test_fields_arrive_by_name_masked_and_read_only() -> None:
    live = np.ones((N_DATES, N_ASSETS), dtype=bool)
    live[:10, 1] = False
    panel = _panel(live=live)
    seen: dict[str, Any] = {}
    strategy = _recorder(seen)
    assert strategy.fields == frozenset(FIELD_ARGUMENTS)
    strategy.weights(panel, {})
    for name in FIELD_ARGUMENTS:
        got = seen[name]
        assert got.dtype == np.float64 and got.shape == seen["prices"].shape
        assert np.array_equal(got[live], panel.fields[name][live])
        assert np.isnan(got[~live]).all()  # NaN where not listed, as the prices
        assert not got.flags.writeable
        with pytest.raises(ValueError, match="WRITEABLE"):
            got.flags.writeable = True


def test_a_function_naming_no_field_gets_none_and_reads_a_close_only_panel() -> None:
    assert fixtures.sma_position.fields == frozenset()
    close_only = Panel(_panel().dates, ("A0",), _panel(1).close)
    weights = fixtures.sma_position.weights(close_only, {"fast": 3, "slow": 9})
    assert weights.shape == (N_DATES, 1)


def test_pandas_fields_are_frames_indexed_like_the_prices() -> None:
    panel = _panel()
    seen: dict[str, Any] = {}
    _recorder(seen, inputs="pandas").weights(panel, {})
    prices = seen["prices"]
    assert isinstance(prices, pd.DataFrame)
    for name in FIELD_ARGUMENTS:
        frame = seen[name]
        assert isinstance(frame, pd.DataFrame)
        assert frame.index.equals(prices.index) and list(frame.columns) == list(prices.columns)
        assert np.array_equal(frame.to_numpy(), panel.fields[name])


def test_one_asset_fields_are_shaped_as_its_prices() -> None:
    seen: dict[str, Any] = {}
    _recorder(seen).weights(_panel(n_assets=1), {})
    for name in FIELD_ARGUMENTS:
        assert seen[name].shape == seen["prices"].shape == (N_DATES, 1)


def test_writing_into_a_field_fails_the_config_with_the_read_only_hint() -> None:
    @position_strategy
    def writer(prices: np.ndarray, low: np.ndarray) -> np.ndarray:
        low[0, 0] = 1.0
        return np.zeros(prices.shape)

    with pytest.raises(StrategyError, match=r"strategy 'writer'.*read-only"):
        writer.weights(_panel(), {})


def test_a_missing_field_is_named() -> None:
    close_only = Panel(_panel().dates, _panel().assets, _panel().close)
    with pytest.raises(StrategyError, match=r"reads the panel field 'volume'.*\['close'\]"):
        fixtures.volume_surge.weights(close_only, {"window": 5})


def test_field_names_are_reserved_and_need_no_declaration() -> None:
    with pytest.raises(StrategyError, match=r"parameter name 'volume' is reserved.*'high'"):

        @position_strategy(params=[Param("volume", "int", default=1)])
        def f(prices: np.ndarray, volume: int = 1) -> np.ndarray:
            return np.zeros(prices.shape)

    @position_strategy
    def g(prices: np.ndarray, low: np.ndarray, **rest: Any) -> np.ndarray:
        assert set(rest) == set()  # **kwargs does not ask for fields
        return np.zeros(prices.shape)

    assert g.fields == frozenset({"low"})
    g.weights(_panel(), {})


def test_a_batch_builds_the_fields_once_and_rows_equal_alone() -> None:
    panel = _panel()
    both = fixtures.high_breakout.evaluate(
        panel, {"window": np.array([3, 7])}, [np.random.default_rng(0)] * 2
    )
    alone = fixtures.high_breakout.evaluate(panel, {"window": np.array([7])}, [])
    assert np.array_equal(both.returns[1], alone.returns[0])
    assert both.n_trades[0] > 0


def test_lookahead_catches_a_peek_at_the_next_high_and_passes_past_highs() -> None:
    panel = synthetic_panel(seed=3, years=1, ohlcv=True)
    peek = check_lookahead(fixtures.next_high, panel, n_cuts=4)
    assert not peek.clean and peek.period is not None and peek.cut is not None
    assert peek.period <= peek.cut and peek.exact
    assert "strategy 'next_high'" in peek.message() and "looks ahead" in peek.message()
    clean = check_lookahead(fixtures.high_breakout, panel, {"window": 10}, n_cuts=4)
    assert clean.clean, clean.message()


def test_the_mirror_leaves_every_field_up_to_the_cut_as_it_was() -> None:
    from strategies._lookahead import _mirrored

    panel, cut = _panel(), 20
    mirrored = _mirrored(panel, cut)
    for name in FIELD_ARGUMENTS:
        assert np.array_equal(mirrored.fields[name][: cut + 1], panel.fields[name][: cut + 1])
    after = slice(cut + 1, None)
    high, low, close = mirrored.fields["high"], mirrored.fields["low"], mirrored.close
    assert (high[after] > close[after]).all() and (low[after] < close[after]).all()
