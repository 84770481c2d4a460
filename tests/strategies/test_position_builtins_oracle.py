"""Correctness oracles for the position-function built-ins: plain loops from their docstrings.

Each reference computes the target weights date by date and asset by asset with Python
floats (no numpy, pandas or numba on the signal path), then books them with the plain-loop
accounting of ``tests/accounting_oracle.py``. The panel has an asset that lists late and one
that delists early, so "equal weight over the listed assets" and "never hold an unlisted
asset" are exercised.
"""

from __future__ import annotations

import itertools
import math
import statistics
from typing import Any

import numpy as np
import pandas as pd
import pytest

from strategies import Panel, PositionStrategy
from strategies.mean_reversion import bollinger_reversion, rsi_reversion
from strategies.trend_filter import trend_filter
from strategies.xs_momentum import xs_momentum
from tests.accounting_oracle import book_loop

COSTS = {"fee_bps": 3.0, "slippage_bps": 2.0, "fixed_fee": 1.0, "borrow_bps": 0.5}
MARGIN = 1e-9  # decisions must be this far from a threshold (float noise is ~1e-13)


def listed_panel(seed: int, n: int = 260, assets: int = 8) -> Panel:
    rng = np.random.default_rng(seed)
    close = 100 * np.exp(np.cumsum(rng.normal(0, 0.015, (n, assets)), axis=0))
    live = np.ones((n, assets), dtype=bool)
    live[:70, 2] = False  # lists at row 70
    live[180:, 5] = False  # delists after row 179
    close[:70, 2] = close[70, 2]  # nearest valid price, as the loader fills it
    close[180:, 5] = close[179, 5]
    dates = pd.bdate_range("2015-01-01", periods=n).to_numpy()
    return Panel(dates, tuple(f"A{i}" for i in range(assets)), close, {}, live)


def prices_seen(panel: Panel) -> list[list[float]]:
    """What the function is documented to see: NaN where an asset is not listed."""
    return [
        [
            float(panel.close[t, a]) if panel.live_mask[t, a] else math.nan
            for a in range(panel.n_assets)
        ]
        for t in range(panel.n_periods)
    ]


def n_listed(row: list[float]) -> int:
    return max(1, sum(not math.isnan(p) for p in row))


def check_against(
    strategy: PositionStrategy, panel: Panel, configs: list[dict[str, Any]], reference
) -> None:  # type: ignore[no-untyped-def]
    names = [p.name for p in strategy.params if not p.optional]  # as a grid without exits
    params = {}
    for name in names:
        default = next(p.default for p in strategy.params if p.name == name)
        params[name] = np.array([c.get(name, COSTS.get(name, default)) for c in configs])
    out = strategy.evaluate(panel, params, [])
    held_any = 0
    for j, config in enumerate(configs):
        weights = reference(prices_seen(panel), **config)
        held_any += sum(1 for row in weights for w in row if w != 0)
        ref = book_loop(np.array(weights), panel.close, panel.live_mask, **COSTS)
        np.testing.assert_allclose(out.returns[j], ref["returns"], rtol=1e-10, atol=1e-15)
        np.testing.assert_allclose(out.turnover[j], ref["turnover"], rtol=1e-10, atol=1e-15)
        assert out.n_trades[j] == ref["n_trades"]
    assert held_any > 0, "the configs should trade"


def states(signal_rows: list[list[float]], enter_long, exit_long, enter_short, exit_short):  # type: ignore[no-untyped-def]
    """The entry/exit state machine written out: -1, 0, +1 per date and asset."""
    n_assets = len(signal_rows[0])
    out = [[0] * n_assets for _ in signal_rows]
    for a in range(n_assets):
        state = 0
        for t, row in enumerate(signal_rows):
            x = row[a]
            if math.isnan(x):
                state = 0
            else:
                if state == 1 and exit_long(x):
                    state = 0
                if state == -1 and exit_short(x):
                    state = 0
                if state == 0 and enter_long(x):
                    state = 1
                elif state == 0 and enter_short(x):
                    state = -1
            out[t][a] = state
    return out


# --- cross-sectional momentum ----------------------------------------------------------------


def xs_momentum_loop(prices: list[list[float]], lookback: int, top_k: int, skip: int = 0):  # type: ignore[no-untyped-def]
    weights = []
    for t, row in enumerate(prices):
        ranked = []
        for a, p in enumerate(row):
            end, start = t - skip, t - skip - lookback
            if start < 0 or math.isnan(p):
                continue
            p_end, p_start = prices[end][a], prices[start][a]
            if math.isnan(p_end) or math.isnan(p_start):
                continue
            ranked.append((math.log(p_end / p_start), a))
        ranked.sort()
        for (x, _), (y, _) in itertools.pairwise(ranked):
            assert y - x > MARGIN or y == x
        k = min(top_k, len(ranked) // 2)
        w = [0.0] * len(row)
        for i in range(k):
            w[ranked[i][1]] = -0.5 / k
            w[ranked[-1 - i][1]] = 0.5 / k
        weights.append(w)
    return weights


@pytest.mark.parametrize("seed", [1, 2])
def test_xs_momentum_matches_the_loop(seed: int) -> None:
    configs = [
        {"lookback": 20, "top_k": 2, "skip": 0},
        {"lookback": 60, "top_k": 3, "skip": 5},
        {"lookback": 5, "top_k": 10, "skip": 1},  # more than half the universe: k = n // 2
    ]
    check_against(xs_momentum, listed_panel(seed), configs, xs_momentum_loop)


# --- RSI --------------------------------------------------------------------------------------


def rsi_loop(prices: list[list[float]], window: int) -> list[list[float]]:
    n_dates, n_assets = len(prices), len(prices[0])
    out = [[math.nan] * n_assets for _ in range(n_dates)]
    for a in range(n_assets):
        changes: list[float] = []
        gain = loss = 0.0
        for t in range(1, n_dates):
            now, before = prices[t][a], prices[t - 1][a]
            if math.isnan(now) or math.isnan(before):
                changes = []
                continue
            changes.append(now - before)
            if len(changes) < window:
                continue
            if len(changes) == window:  # seeded by the simple mean of the first changes
                gain = sum(max(c, 0.0) for c in changes) / window
                loss = sum(max(-c, 0.0) for c in changes) / window
            else:
                gain = (gain * (window - 1) + max(changes[-1], 0.0)) / window
                loss = (loss * (window - 1) + max(-changes[-1], 0.0)) / window
            if loss == 0:
                out[t][a] = 100.0 if gain > 0 else 50.0
            else:
                out[t][a] = 100 - 100 / (1 + gain / loss)
    return out


def rsi_reversion_loop(prices, window, lower, upper, exit=50.0):  # type: ignore[no-untyped-def]
    rsi = rsi_loop(prices, window)
    for row in rsi:
        for x in row:
            assert math.isnan(x) or min(abs(x - lower), abs(x - upper), abs(x - exit)) > MARGIN
    side = states(
        rsi, lambda x: x < lower, lambda x: x >= exit, lambda x: x > upper, lambda x: x <= exit
    )
    return [[s / n_listed(row) for s in srow] for srow, row in zip(side, prices, strict=True)]


@pytest.mark.parametrize("seed", [3, 4])
def test_rsi_reversion_matches_the_loop(seed: int) -> None:
    configs = [
        {"window": 14, "lower": 30.0, "upper": 70.0, "exit": 50.0},
        {"window": 5, "lower": 20.0, "upper": 75.0, "exit": 45.0},
    ]
    check_against(rsi_reversion, listed_panel(seed), configs, rsi_reversion_loop)


# --- Bollinger --------------------------------------------------------------------------------


def bollinger_loop(prices, window, n_std):  # type: ignore[no-untyped-def]
    n_dates, n_assets = len(prices), len(prices[0])
    z = [[math.nan] * n_assets for _ in range(n_dates)]
    for t in range(window - 1, n_dates):
        for a in range(n_assets):
            last = [prices[s][a] for s in range(t - window + 1, t + 1)]
            if any(math.isnan(p) for p in last):
                continue
            sd = statistics.pstdev(last)
            if sd > 0:
                z[t][a] = (prices[t][a] - statistics.fmean(last)) / sd
                assert min(abs(abs(z[t][a]) - n_std), abs(z[t][a])) > 1e-7
    side = states(z, lambda x: x < -n_std, lambda x: x >= 0, lambda x: x > n_std, lambda x: x <= 0)
    return [[s / n_listed(row) for s in srow] for srow, row in zip(side, prices, strict=True)]


@pytest.mark.parametrize("seed", [5, 6])
def test_bollinger_reversion_matches_the_loop(seed: int) -> None:
    configs = [{"window": 20, "n_std": 2.0}, {"window": 10, "n_std": 1.0}]
    check_against(bollinger_reversion, listed_panel(seed), configs, bollinger_loop)


# --- trend filter -----------------------------------------------------------------------------


def trend_loop(prices, window):  # type: ignore[no-untyped-def]
    out = []
    for t, row in enumerate(prices):
        w = [0.0] * len(row)
        for a, p in enumerate(row):
            if t < window - 1:
                continue
            last = [prices[s][a] for s in range(t - window + 1, t + 1)]
            if any(math.isnan(x) for x in last):
                continue
            mean = math.fsum(last) / window
            assert abs(p - mean) > MARGIN * p
            if p > mean:
                w[a] = 1 / n_listed(row)
        out.append(w)
    return out


@pytest.mark.parametrize("seed", [7, 8])
def test_trend_filter_matches_the_loop(seed: int) -> None:
    configs = [{"window": 50}, {"window": 10}, {"window": 200}]
    check_against(trend_filter, listed_panel(seed), configs, trend_loop)


def test_builtins_never_hold_an_unlisted_asset() -> None:
    panel = listed_panel(9)
    for strategy in (xs_momentum, rsi_reversion, bollinger_reversion, trend_filter):
        config = {p.name: p.default for p in strategy.declared}
        if "lookback" in config:
            config["lookback"] = 20
        w = strategy.weights(panel, config)
        assert not np.nan_to_num(w)[~panel.live_mask].any(), strategy.name
