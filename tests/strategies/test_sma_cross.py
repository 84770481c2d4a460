"""Tests of the SMA-crossover kernel.

Reference values: a hand-computed price path, a line-by-line Python transcription of the
vectorbt 1.2 loops the kernel claims to reproduce (``generic.nb.rolling_mean_1d_nb``,
``generic.nb.crossed_above_1d_nb`` and the all-in cash/size accounting of
``Portfolio.from_signals``), and, where installed, vectorbt itself.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from strategies import StrategyError
from strategies.sma_cross import SmaCross, held_state, simple_moving_average
from sweep.data._panels import Panel, make_panel

#: vectorbt 1.2 compiles functions that take reflected lists; numba warns once per compile.
VBT_WARNINGS = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning:numba")


def _panel(*columns: Any) -> Panel:
    close = np.column_stack([np.asarray(c, dtype=np.float64) for c in columns])
    dates = pd.bdate_range("2020-01-01", periods=close.shape[0])
    return make_panel(dates, [f"A{i}" for i in range(close.shape[1])], close)


def _params(fast: Any, slow: Any, fees: Any = 0.0, asset: Any = 0) -> dict[str, np.ndarray]:
    fast = np.atleast_1d(np.asarray(fast, dtype=np.int64))
    n = fast.shape[0]
    return {
        "fast": fast,
        "slow": np.broadcast_to(np.asarray(slow, dtype=np.int64), (n,)).copy(),
        "fees": np.broadcast_to(np.asarray(fees, dtype=np.float64), (n,)).copy(),
        "asset": np.broadcast_to(np.asarray(asset, dtype=np.int64), (n,)).copy(),
    }


def _evaluate(panel: Panel, params: dict[str, np.ndarray]) -> Any:
    return SmaCross().evaluate(panel, params, [])


# --- a transcription of vectorbt's loops (no vectorbt needed) --------------------------------


def _vbt_rolling_mean(a: np.ndarray, window: int) -> np.ndarray:
    """``vectorbt.generic.nb.rolling_mean_1d_nb(a, window, minp=window)`` for NaN-free ``a``."""
    out = np.empty(a.shape[0])
    cumsum_arr = np.zeros(a.shape[0])
    cumsum = 0.0
    for i in range(a.shape[0]):
        cumsum = cumsum + a[i]
        cumsum_arr[i] = cumsum
        if i < window:
            window_len, window_cumsum = i + 1, cumsum
        else:
            window_len, window_cumsum = window, cumsum - cumsum_arr[i - window]
        out[i] = np.nan if window_len < window else window_cumsum / window_len
    return out


def _vbt_crossed_above(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``vectorbt.generic.nb.crossed_above_1d_nb(a, b, wait=0)``."""
    out = np.zeros(a.shape[0], dtype=bool)
    was_below, crossed_ago = False, -1
    for i in range(a.shape[0]):
        if math.isnan(a[i]) or math.isnan(b[i]):
            crossed_ago, was_below = -1, False
        elif a[i] > b[i]:
            if was_below:
                crossed_ago += 1
                out[i] = crossed_ago == 0
        elif a[i] == b[i]:
            crossed_ago = -1
        else:
            crossed_ago, was_below = -1, True
    return out


def _reference(
    close: np.ndarray, fast: int, slow: int, fees: float
) -> tuple[np.ndarray, np.ndarray, int]:
    """Per-period returns, trade flags and trade count of the vectorbt recipe, bar by bar."""
    fast_ma, slow_ma = _vbt_rolling_mean(close, fast), _vbt_rolling_mean(close, slow)
    entries = _vbt_crossed_above(fast_ma, slow_ma)
    exits = _vbt_crossed_above(slow_ma, fast_ma)
    cash, size = 100.0, 0.0
    value = np.empty(close.shape[0])
    traded = np.zeros(close.shape[0], dtype=bool)
    for t, price in enumerate(close):
        if size == 0.0 and entries[t]:
            size, cash, traded[t] = cash / (1.0 + fees) / price, 0.0, True
        elif size > 0.0 and exits[t]:
            cash, size, traded[t] = size * price * (1.0 - fees), 0.0, True
        value[t] = cash + size * price
    return value[1:] / value[:-1] - 1.0, traded[1:], int(traded.sum())


def _tied_prices(seed: int, n: int = 160) -> np.ndarray:
    """Small-integer random walk: moving averages of different windows are often equal."""
    rng = np.random.default_rng(seed)
    return 100.0 + np.cumsum(rng.integers(-1, 2, size=n)).astype(np.float64)


# --- fast tests ------------------------------------------------------------------------------


def test_hand_computed_path() -> None:
    # fast = 1, slow = 2: fast > slow exactly when the close rose, = when it was unchanged.
    # Bars: 1 falls (first "below"), 2 rises -> buy at 9, 4 falls -> sell at 11, 5 unchanged
    # (tie: no signal), 6 rises -> buy at 13 (ties do not block a cross), then flat prices
    # (ties) hold the position to the end, marked at 15.
    path = [10.0, 8.0, 9.0, 12.0, 11.0, 11.0, 13.0, 15.0] + [15.0] * 22
    f = 0.01
    out = _evaluate(_panel(path), _params(1, 2, f))
    expected = np.zeros(len(path) - 1)
    expected[1] = 1 / (1 + f) - 1  # entry at close 2: pay the fee, marked at the fill price
    expected[2] = 12 / 9 - 1
    expected[3] = 11 / 12 * (1 - f) - 1  # exit at close 4 net of the fee
    expected[5] = 1 / (1 + f) - 1
    expected[6] = 15 / 13 - 1
    np.testing.assert_allclose(out.returns[0], expected, rtol=1e-14, atol=1e-16)
    total = np.prod(1.0 + out.returns[0]) - 1.0
    assert total == pytest.approx(11 / 9 * 15 / 13 * (1 - f) / (1 + f) ** 2 - 1, rel=1e-13)
    turnover = np.zeros(len(path) - 1)
    turnover[[1, 3, 5]] = 1.0
    np.testing.assert_array_equal(out.turnover[0], turnover)
    assert out.n_trades.tolist() == [3]
    assert out.returns.dtype == np.float64 and out.n_trades.dtype == np.int64


def test_matches_transcribed_reference_loops_with_ties() -> None:
    pairs = [(1, 2), (2, 3), (2, 4), (3, 6), (4, 8), (5, 10), (3, 12), (7, 20), (6, 3), (4, 4)]
    for seed in range(3):
        close = _tied_prices(seed)
        fast, slow = np.array(pairs).T
        out = _evaluate(_panel(close), _params(fast, slow, 0.002))
        n_ties = 0
        for i, (fw, sw) in enumerate(pairs):
            returns, traded, n_trades = _reference(close, fw, sw, 0.002)
            np.testing.assert_allclose(out.returns[i], returns, rtol=1e-12, atol=1e-15)
            np.testing.assert_array_equal(out.turnover[i], traded.astype(np.float64))
            assert out.n_trades[i] == n_trades
            fma, sma = _vbt_rolling_mean(close, fw), _vbt_rolling_mean(close, sw)
            n_ties += int(np.sum(fma[sw:] == sma[sw:])) if fw != sw else 0
        assert n_ties > 50, "the test data should exercise exact ties"
        assert out.n_trades.sum() > 50


def test_sma_is_the_reference_arithmetic_bit_for_bit() -> None:
    close = np.random.default_rng(1).lognormal(0.0, 0.01, 400).cumprod() * 100.0
    for window in (1, 2, 5, 17, 200, 400):
        np.testing.assert_array_equal(
            simple_moving_average(close, window), _vbt_rolling_mean(close, window)
        )
    np.testing.assert_allclose(
        simple_moving_average(close, 5)[4:], np.convolve(close, np.ones(5) / 5, "valid")
    )


def test_invariant_1_alone_equals_inside_a_shuffled_batch() -> None:
    rng = np.random.default_rng(7)
    panel = _panel(_tied_prices(3, 300), rng.lognormal(0, 0.02, 300).cumprod() * 50.0)
    n = 150
    batch = _params(
        rng.integers(1, 40, n),
        rng.integers(1, 80, n),
        rng.choice([0.0, 0.001, 0.01], n),
        rng.integers(0, 2, n),
    )
    out = _evaluate(panel, batch)
    for order in (rng.permutation(n), np.arange(n)[::-1]):
        shuffled = _evaluate(panel, {k: v[order] for k, v in batch.items()})
        assert shuffled.returns.tobytes() == out.returns[order].tobytes()
        assert shuffled.turnover.tobytes() == out.turnover[order].tobytes()
        np.testing.assert_array_equal(shuffled.n_trades, out.n_trades[order])
    for i in range(n):
        alone = _evaluate(panel, {k: v[i : i + 1] for k, v in batch.items()})
        np.testing.assert_array_equal(
            alone.returns.view(np.uint64), out.returns[i : i + 1].view(np.uint64)
        )
        np.testing.assert_array_equal(alone.turnover, out.turnover[i : i + 1])
        assert alone.n_trades[0] == out.n_trades[i]


def test_fast_not_below_slow_is_evaluated_as_given() -> None:
    close = _tied_prices(5)
    out = _evaluate(_panel(close), _params([8, 8, 3], [8, 3, 8], 0.001))
    assert out.returns.shape == (3, close.shape[0] - 1)
    # fast == slow: the averages are identical, never cross, never trade.
    assert out.n_trades[0] == 0 and not out.returns[0].any() and not out.turnover[0].any()
    # fast > slow: the reverse cross, exactly as the transcription computes it.
    returns, _, n_trades = _reference(close, 8, 3, 0.001)
    np.testing.assert_allclose(out.returns[1], returns, rtol=1e-12, atol=1e-15)
    assert out.n_trades[1] == n_trades > 0


def test_no_position_before_both_averages_exist_and_a_cross() -> None:
    # Falls then rises: the fast average turns up long before the slow one exists.
    v_shape = np.r_[np.linspace(100, 80, 12), np.linspace(81, 140, 48)]
    fast, slow = np.array([2, 3, 2]), np.array([30, 40, 50])
    out = _evaluate(_panel(v_shape), _params(fast, slow, 0.001))
    for i, s in enumerate(slow):
        # the periods ending at bars 1 .. s-1 precede the slow average: nothing traded or held
        assert not out.turnover[i, : s - 1].any() and not out.returns[i, : s - 1].any()
    # Once both exist the fast average is already above: vectorbt waits for a real cross.
    assert out.n_trades.tolist() == [0, 0, 0]
    rising = _evaluate(_panel(np.linspace(10.0, 20.0, 50)), _params(1, 5, 0.0))
    assert rising.n_trades[0] == 0 and not rising.returns.any()


def test_held_state_rules() -> None:
    nan = np.nan
    slow = np.array([nan, nan, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0])
    fast = np.array([9.0, 9.0, 6.0, 4.0, 5.0, 6.0, 5.0, 6.0, 4.0, 5.0])
    # above at 2 (no cross yet), below at 3, tie at 4, above at 5 (entry), tie at 6 (hold),
    # above at 7, below at 8 (exit), tie at 9 (stay flat)
    expected = [False] * 5 + [True, True, True, False, False]
    np.testing.assert_array_equal(held_state(fast, slow), expected)
    np.testing.assert_array_equal(held_state(fast[None], slow[None])[0], expected)


def test_asset_selects_a_column_and_is_validated() -> None:
    a, b = _tied_prices(1), _tied_prices(2)[::-1] + 5.0
    both = _evaluate(_panel(a, b), _params([2, 3], [5, 9], 0.001, asset=[1, 1]))
    only_b = _evaluate(_panel(b), _params([2, 3], [5, 9], 0.001))
    assert both.returns.tobytes() == only_b.returns.tobytes()
    params = _params(2, 5)
    del params["asset"]  # optional: defaults to the first column
    assert (
        _evaluate(_panel(a, b), params).returns.tobytes()
        == _evaluate(_panel(a), params).returns.tobytes()
    )
    with pytest.raises(
        StrategyError, match=r"sma_cross.asset: expected a column index in 0..1.*got 2"
    ):
        _evaluate(_panel(a, b), _params(2, 5, asset=2))
    with pytest.raises(
        StrategyError, match=r"sma_cross.slow: expected a window in 1..160.*got 161"
    ):
        _evaluate(_panel(a), _params(2, 161))
    with pytest.raises(StrategyError, match=r"sma_cross.fast: .*got 0"):
        _evaluate(_panel(a), _params(0, 5))


def test_empty_batch() -> None:
    out = _evaluate(_panel(_tied_prices(0)), _params(np.zeros(0, np.int64), np.zeros(0, np.int64)))
    assert out.returns.shape == (0, 159) and out.n_trades.shape == (0,)


# --- cross-checks against vectorbt itself ---------------------------------------------------


def _vectorbt_total_returns(
    close: pd.Series, fast: np.ndarray, slow: np.ndarray, fees: float
) -> Any:
    vbt = pytest.importorskip("vectorbt")
    fast_ma = vbt.MA.run(close, window=fast.tolist(), short_name="fast")
    slow_ma = vbt.MA.run(close, window=slow.tolist(), short_name="slow")
    entries = fast_ma.ma_crossed_above(slow_ma)
    exits = fast_ma.ma_crossed_below(slow_ma)
    return vbt.Portfolio.from_signals(close, entries, exits, fees=fees), fast_ma, slow_ma


@pytest.mark.slow  # numba compiles vectorbt on a cold cache (about 30 s)
@VBT_WARNINGS
def test_vectorbt_with_ties_period_by_period() -> None:
    pytest.importorskip("vectorbt")
    close = pd.Series(_tied_prices(11, 400), index=pd.bdate_range("2020-01-01", periods=400))
    pairs = np.array([(f, s) for f in range(1, 11) for s in range(1, 21)])
    fast, slow = pairs[:, 0], pairs[:, 1]
    pf, fast_ma, slow_ma = _vectorbt_total_returns(close, fast, slow, 0.002)
    assert (fast_ma.ma.to_numpy() == slow_ma.ma.to_numpy())[:, fast != slow].sum() > 1000
    out = _evaluate(_panel(close.to_numpy()), _params(fast, slow, 0.002))
    vbt_returns = pf.returns().to_numpy().T
    assert not vbt_returns[:, 0].any()
    np.testing.assert_allclose(out.returns, vbt_returns[:, 1:], rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(out.n_trades, pf.orders.count().to_numpy())
    np.testing.assert_allclose(np.prod(1 + out.returns, axis=1) - 1, pf.total_return(), rtol=1e-12)


@pytest.mark.slow
@VBT_WARNINGS
def test_vectorbt_full_grid_on_sp500() -> None:
    pytest.importorskip("vectorbt")
    sp500 = pytest.importorskip("arch.data.sp500")
    close = sp500.load()["Adj Close"]
    pairs = np.array([(f, s) for f in range(5, 51) for s in range(10, 201) if f < s])
    assert pairs.shape[0] == 7925
    pf, _, _ = _vectorbt_total_returns(close, pairs[:, 0], pairs[:, 1], 0.001)
    expected, expected_trades = pf.total_return().to_numpy(), pf.orders.count().to_numpy()
    del pf  # about 1 GB of vectorbt arrays
    panel = _panel(close.to_numpy())
    total, n_trades = np.empty(pairs.shape[0]), np.empty(pairs.shape[0], dtype=np.int64)
    for lo in range(0, pairs.shape[0], 1000):
        chunk = pairs[lo : lo + 1000]
        out = _evaluate(panel, _params(chunk[:, 0], chunk[:, 1], 0.001))
        total[lo : lo + 1000] = np.prod(1.0 + out.returns, axis=1) - 1.0
        n_trades[lo : lo + 1000] = out.n_trades
    np.testing.assert_allclose(total, expected, rtol=1e-9, atol=0)
    np.testing.assert_array_equal(n_trades, expected_trades)


def test_compiled_loop_equals_its_vectorised_twin_held_state() -> None:
    # The compiled bar-by-bar loop (what evaluate runs) against the documented vectorised
    # rule: held_state on the same SMAs, then the class's return/turnover conventions.
    close = _tied_prices(11, 400)  # ties between averages are frequent
    fast = np.repeat(np.arange(1, 21), 20)
    slow = np.tile(np.arange(2, 42, 2), 20)
    fees = np.linspace(0.0, 0.01, fast.shape[0])
    out = _evaluate(_panel(close), _params(fast, slow, fees))
    fast_sma = np.stack([simple_moving_average(close, int(w)) for w in fast])
    slow_sma = np.stack([simple_moving_average(close, int(w)) for w in slow])
    held = held_state(fast_sma, slow_sma)
    assert (fast_sma[:, 1:] == slow_sma[:, 1:]).any()  # the tie branch is exercised
    before, after = held[:, :-1], held[:, 1:]
    gross = close[1:] / close[:-1]
    expected = np.where(before & after, gross - 1.0, 0.0)
    entry = (1.0 / (1.0 + fees) - 1.0)[:, None]
    exit_ = gross[None, :] * (1.0 - fees)[:, None] - 1.0
    changed = before != after
    expected = np.where(changed, np.where(after, entry, exit_), expected)
    assert out.returns.tobytes() == expected.tobytes()
    assert out.turnover.tobytes() == changed.astype(np.float64).tobytes()
    assert out.n_trades.tolist() == changed.sum(axis=1).tolist()
