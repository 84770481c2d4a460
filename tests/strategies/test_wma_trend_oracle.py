"""Correctness oracle for the ``wma_trend`` kernel: a plain loop from its documented definition.

From the :class:`strategies.wma_trend.WmaTrend` and ``weighted_moving_average`` docstrings:
the WMA of ``window`` closes has weights ``1..window``, newest heaviest, and is undefined for
the first ``window - 1`` closes; an asset is long (weight ``1/A``) while its close is above its
WMA, else flat; the position formed at the close of ``t`` earns ``t -> t+1`` and pays ``cost``
per unit of one-way turnover in that period. The decisions use exact rational arithmetic
(``fractions.Fraction``), so a close exactly equal to its average is a tie (flat).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from strategies.wma_trend import WmaTrend, weighted_moving_average
from sweep.data._panels import make_panel


def _panel(close: np.ndarray):  # type: ignore[no-untyped-def]
    dates = pd.bdate_range("2020-01-01", periods=close.shape[0])
    return make_panel(dates, [f"A{i}" for i in range(close.shape[1])], close)


def exact_wma(prices: np.ndarray, t: int, window: int) -> Fraction:
    """The WMA at close ``t``, exactly: sum of (window - i) * p[t - i] over sum of weights."""
    num = sum(Fraction(window - i) * Fraction(float(prices[t - i])) for i in range(window))
    return num / Fraction(window * (window + 1), 2)


def oracle(close: np.ndarray, window: int, cost: float):  # type: ignore[no-untyped-def]
    n_dates, n_assets = close.shape
    held = [0.0] * n_assets
    returns, turnover, trades = [], [], 0
    for t in range(n_dates - 1):
        gross, moved, new = 0.0, 0.0, []
        for a in range(n_assets):
            long = t >= window - 1 and Fraction(float(close[t, a])) > exact_wma(
                close[:, a], t, window
            )
            weight = 1.0 / n_assets if long else 0.0
            if weight != held[a]:
                trades += 1
            moved += abs(weight - held[a])
            gross += weight * (close[t + 1, a] / close[t, a] - 1.0)
            new.append(weight)
        held = new
        returns.append(gross - cost * moved)
        turnover.append(moved)
    return np.array(returns), np.array(turnover), trades


def _run(close: np.ndarray, windows: list[int], costs: list[float]):  # type: ignore[no-untyped-def]
    params = {"window": np.array(windows, dtype=np.int64), "cost": np.array(costs)}
    return WmaTrend().evaluate(_panel(close), params, [])


WINDOWS = [1, 2, 3, 10, 21, 59, 60]
COSTS = [0.0, 0.001, 0.0, 0.002, 0.0005, 0.01, 0.003]


@pytest.mark.parametrize(("seed", "assets"), [(0, 1), (1, 4)])
def test_kernel_equals_the_plain_loop_on_random_panels(seed: int, assets: int) -> None:
    rng = np.random.default_rng(seed)
    close = 100.0 * np.exp(np.cumsum(rng.normal(0.0, 0.02, (61, assets)), axis=0))
    out = _run(close, WINDOWS, COSTS)
    for i, (w, c) in enumerate(zip(WINDOWS, COSTS, strict=True)):
        returns, turnover, trades = oracle(close, w, c)
        np.testing.assert_allclose(out.returns[i], returns, rtol=1e-12, atol=1e-16)
        np.testing.assert_allclose(out.turnover[i], turnover, rtol=1e-12, atol=0)
        assert out.n_trades[i] == trades
    assert out.n_trades[0] == 0  # window 1: the close is its own WMA, never above it
    assert out.n_trades.sum() > 20
    # the comparison can fail: a perturbed expectation or a neighbouring window is caught
    returns = oracle(close, 10, 0.002)[0]
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(out.returns[3], returns * (1 + 1e-10), rtol=1e-12, atol=1e-16)
    assert not np.allclose(out.returns[3], oracle(close, 11, 0.002)[0], rtol=1e-12, atol=1e-16)


def test_wma_matches_the_definition_and_warm_up() -> None:
    close = np.random.default_rng(4).lognormal(0, 0.01, (50, 2)).cumprod(axis=0) * 10
    for w in (1, 4, 50):
        wma = weighted_moving_average(close, w)
        assert np.isnan(wma[: w - 1]).all() and not np.isnan(wma[w - 1 :]).any()
        for t in range(w - 1, 50):
            for a in range(2):
                assert wma[t, a] == pytest.approx(float(exact_wma(close[:, a], t, w)), rel=1e-14)


def _tied(seed: int, n: int = 120) -> np.ndarray:
    """Integer prices with long flat runs: the close often equals its WMA exactly."""
    rng = np.random.default_rng(seed)
    steps = rng.choice([-1, 0, 0, 0, 0, 1], size=n)
    return (50.0 + np.cumsum(steps)).reshape(-1, 1)


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_ties_with_the_average_are_flat(seed: int) -> None:
    close = _tied(seed)
    windows = [3, 5, 6, 7, 10]
    out = _run(close, windows, [0.0] * len(windows))
    for i, w in enumerate(windows):
        _, turnover, trades = oracle(close, w, 0.0)
        np.testing.assert_array_equal(out.turnover[i], turnover)
        assert out.n_trades[i] == trades
