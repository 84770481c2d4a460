"""Correctness oracle for the ``momentum`` kernel: a plain loop from its documented definition.

The reference is written from the :class:`strategies.momentum.Momentum` docstring and
``StrategyOutput``'s field docs (not from the kernel): per asset, long when the trailing
``lookback``-period log return exceeds ``band``, short when below ``-band``, else flat (flat
until ``lookback`` periods of history exist); weights ``position / A``; the weights formed at
the close of ``t`` earn the simple return ``t -> t+1`` and pay ``cost`` per unit of one-way
turnover (sum of absolute weight changes) in that same period; ``n_trades`` counts position
changes per asset.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from strategies.momentum import Momentum
from sweep.data._panels import make_panel


def _panel(close: np.ndarray):  # type: ignore[no-untyped-def]
    dates = pd.bdate_range("2020-01-01", periods=close.shape[0])
    return make_panel(dates, [f"A{i}" for i in range(close.shape[1])], close)


def oracle(close: np.ndarray, lookback: int, band: float, cost: float):  # type: ignore[no-untyped-def]
    """Returns, turnover, trade count and the smallest |signal - band| margin, bar by bar."""
    n_dates, n_assets = close.shape
    returns, turnover = [], []
    held = [0.0] * n_assets  # weights, the book starts flat
    position = [0] * n_assets
    trades, margin = 0, math.inf
    for t in range(n_dates - 1):  # position formed at the close of t, held over t -> t+1
        new_held, gross, moved = [], 0.0, 0.0
        for a in range(n_assets):
            pos = 0
            if t >= lookback:
                signal = math.log(close[t, a] / close[t - lookback, a])
                margin = min(margin, abs(abs(signal) - band))
                if signal > band:
                    pos = 1
                elif signal < -band:
                    pos = -1
            if pos != position[a]:
                trades += 1
            weight = pos / n_assets
            moved += abs(weight - held[a])
            gross += weight * (close[t + 1, a] / close[t, a] - 1.0)
            new_held.append(weight)
            position[a] = pos
        held = new_held
        returns.append(gross - cost * moved)
        turnover.append(moved)
    return np.array(returns), np.array(turnover), trades, margin


def _run(close: np.ndarray, configs: list[tuple[int, float, float]]):  # type: ignore[no-untyped-def]
    lb, band, cost = (np.array(c) for c in zip(*configs, strict=True))
    params = {"lookback": lb.astype(np.int64), "band": band, "cost": cost}
    return Momentum().evaluate(_panel(close), params, [])


def _check(close: np.ndarray, configs: list[tuple[int, float, float]]) -> int:
    out = _run(close, configs)
    total_trades = 0
    for i, (lb, band, cost) in enumerate(configs):
        returns, turnover, trades, margin = oracle(close, lb, band, cost)
        # decisions away from the band by far more than the rounding of a log difference
        assert margin > 1e-9, (lb, band, margin)
        np.testing.assert_allclose(out.returns[i], returns, rtol=1e-12, atol=1e-16)
        np.testing.assert_allclose(out.turnover[i], turnover, rtol=1e-12, atol=0)
        assert out.n_trades[i] == trades
        total_trades += trades
    return total_trades


def _walk(seed: int, n: int, assets: int, vol: float = 0.02) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 100.0 * np.exp(np.cumsum(rng.normal(0.0003, vol, (n, assets)), axis=0))


CONFIGS = [
    (1, 0.0, 0.0),
    (1, 0.01, 0.001),
    (5, 0.0, 0.002),
    (5, 0.03, 0.0),
    (20, 0.02, 0.0005),
    (20, 0.1, 0.01),
    (63, 0.0, 0.001),
    (63, 0.05, 0.0),
    (118, 0.0, 0.003),  # lookback = T - 2: one period held
    (119, 0.0, 0.003),  # lookback = T - 1: never any history in time, always flat
    (7, 10.0, 0.01),  # band above every signal: never a position
]


@pytest.mark.parametrize(("seed", "assets"), [(0, 1), (1, 3), (2, 7)])
def test_kernel_equals_the_plain_loop_on_random_panels(seed: int, assets: int) -> None:
    close = _walk(seed, 120, assets)
    assert _check(close, CONFIGS) > 100


def test_warm_up_and_flat_configs() -> None:
    close = _walk(5, 120, 4)
    out = _run(close, [(30, 0.0, 0.01), (119, 0.0, 0.01), (7, 10.0, 0.01)])
    # nothing held or paid before lookback periods of history exist
    assert not out.returns[0, :30].any() and not out.turnover[0, :30].any()
    assert out.turnover[0, 30] > 0
    for i in (1, 2):  # never any position: zero returns, turnover and trades
        assert not out.returns[i].any() and not out.turnover[i].any() and out.n_trades[i] == 0


def test_reversal_long_to_short_turns_over_twice_the_weight_and_counts_one_trade() -> None:
    # one asset up 15 periods then down 15: lookback 1, band 0
    close = np.r_[np.linspace(100, 115, 16), np.linspace(114, 100, 15)][:, None]
    out = _run(close, [(1, 0.0, 0.01)])
    returns, turnover, trades, _ = oracle(close, 1, 0.0, 0.01)
    assert 2.0 in out.turnover[0].tolist()  # long -> short in one period
    np.testing.assert_allclose(out.returns[0], returns, rtol=1e-12, atol=1e-16)
    np.testing.assert_array_equal(out.turnover[0], turnover)
    assert out.n_trades[0] == trades == 2  # enter long at close 1, flip at close 16


def test_an_exact_tie_with_the_band_is_flat() -> None:
    # Unchanged prices give a trailing log return of exactly 0: flat at band 0 (strict >).
    close = np.r_[[100.0, 101.0] * 15, [102.0, 102.0]][:, None]
    out = _run(close, [(2, 0.0, 0.0)])
    # signals at closes 2..29 are 0 (price back to where it was): flat; close 30 is up
    np.testing.assert_array_equal(out.turnover[0], [0.0] * 30 + [1.0])
    # A band equal to the kernel's own signal value is a tie too (strictly exceeds); just
    # below it the position is taken.
    log_p = np.log(close[:, 0])
    signal = log_p[30] - log_p[28]
    tie = _run(close, [(2, float(signal), 0.0), (2, float(np.nextafter(signal, 0.0)), 0.0)])
    assert not tie.turnover[0].any() and tie.turnover[1, 30] == 1.0


def test_costs_are_charged_on_the_turnover_of_the_period_held() -> None:
    close = _walk(9, 120, 3)
    free, costly = _run(close, [(10, 0.01, 0.0), (10, 0.01, 0.004)]).returns
    turnover = oracle(close, 10, 0.01, 0.0)[1]
    np.testing.assert_allclose(free - costly, 0.004 * turnover, rtol=1e-12, atol=1e-18)


def test_oracle_can_fail() -> None:
    close = _walk(3, 120, 2)
    out = _run(close, [(5, 0.0, 0.002)])
    returns, _, trades, _ = oracle(close, 5, 0.0, 0.002)
    bad = returns.copy()
    bad[np.flatnonzero(bad)[0]] *= 1 + 1e-10
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(out.returns[0], bad, rtol=1e-12, atol=1e-16)
    # one period later formation (a look-ahead or lag bug) is caught too
    lagged = oracle(close, 6, 0.0, 0.002)[0]
    assert not np.allclose(out.returns[0], lagged, rtol=1e-12, atol=1e-16)
    assert out.n_trades[0] == trades


def _sequential_kernel(strength, signed_return, direction, band, cost):  # type: ignore[no-untyped-def]
    """The compiled kernel's previous form, period by period in plain Python (bitwise rule)."""
    n_assets, n_ret = strength.shape
    previous = [0] * n_assets
    returns, turnover, trades = [], [], 0
    for t in range(n_ret):
        gross, moved = 0.0, 0
        for a in range(n_assets):
            position = int(direction[a, t]) if strength[a, t] > band else 0
            if position != 0:
                gross += float(signed_return[a, t])
            step = position - previous[a]
            if step != 0:
                trades += 1
                moved += abs(step)
            previous[a] = position
        traded = moved / n_assets
        returns.append(gross / n_assets - cost * traded)
        turnover.append(traded)
    return np.array(returns), np.array(turnover), trades


def test_vectorised_kernel_is_bitwise_the_sequential_loop():
    from strategies.momentum import _banded_positions

    rng = np.random.default_rng(5)
    n_assets, n_ret = 3, 300
    signal = rng.normal(0, 0.01, (n_assets, n_ret))
    signal[:, :20] = np.nan  # before the lookback: flat
    side = np.sign(np.nan_to_num(signal))
    strength = np.ascontiguousarray(np.abs(signal))
    signed = np.ascontiguousarray(side * rng.normal(0, 0.02, (n_assets, n_ret)))
    bands = np.r_[0.0, rng.uniform(0, 0.02, 11)]
    costs = np.linspace(0.0, 0.01, bands.shape[0])
    n = bands.shape[0]
    out_r, out_t, out_n = np.empty((n, n_ret)), np.empty((n, n_ret)), np.empty(n, np.int64)
    _banded_positions(strength, signed, side, bands, costs, np.arange(n), out_r, out_t, out_n)
    for j in range(n):
        r, t, k = _sequential_kernel(strength, signed, side, bands[j], costs[j])
        assert out_r[j].tobytes() == r.tobytes() and out_t[j].tobytes() == t.tobytes()
        assert out_n[j] == k


def _plain_kernel(strength, signed_return, direction, band, cost):  # type: ignore[no-untyped-def]
    """The compiled kernel's per-config loop in plain Python floats (any direction values)."""
    n_assets, n_ret = strength.shape
    returns, turnover, trades = [], [], 0
    for t in range(n_ret):
        gross, moved = 0.0, 0.0
        for a in range(n_assets):
            s, d, r = float(strength[a, t]), float(direction[a, t]), float(signed_return[a, t])
            now = d if s > band else 0.0
            if t == 0:
                gross += r if now != 0.0 else 0.0
                step = now
            else:
                before = float(direction[a, t - 1]) if strength[a, t - 1] > band else 0.0
                gross += r if s > band else 0.0
                step = now - before
            moved += abs(step)
            trades += step != 0.0
        returns.append(gross / n_assets - cost * (moved / n_assets))
        turnover.append(moved / n_assets)
    return np.array(returns), np.array(turnover), trades


@pytest.mark.parametrize("n_assets", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("odd_directions", [False, True])
def test_lanes_blocks_and_share_table_keep_the_bits(n_assets: int, odd_directions: bool) -> None:
    """Groups of bands side by side (short last group, rows in any order), periods in
    blocks (lengths around the block size) and the ``moved / n_assets`` table (up to 3
    assets with directions -1, 0, 1; the divide otherwise): the plain loop's bits."""
    from strategies.momentum import _BLOCK, _LANES, _banded_positions

    rng = np.random.default_rng(11 + n_assets)
    for n_ret in (1, 2, _BLOCK, _BLOCK + 1, _BLOCK + 2, 2 * _BLOCK + 7):
        signal = rng.normal(0, 0.01, (n_assets, n_ret))
        signal[:, : min(20, n_ret // 2)] = np.nan
        side = np.sign(np.nan_to_num(signal))
        if odd_directions:
            side[rng.random(side.shape) < 0.1] = 0.5
            side[rng.random(side.shape) < 0.05] = np.nan
        strength = np.ascontiguousarray(np.abs(signal))
        strength[rng.random(strength.shape) < 0.02] = 0.0
        signed = np.ascontiguousarray(side * rng.normal(0, 0.02, (n_assets, n_ret)))
        bands = np.r_[0.0, rng.uniform(0, 0.02, 2 * _LANES + 1)]
        costs = rng.uniform(0.0, 0.01, bands.shape[0])
        n = bands.shape[0]
        for rows in (rng.permutation(n), rng.permutation(n)[: _LANES + 1], np.array([3])):
            out_r, out_t = np.full((n, n_ret), 7.0), np.full((n, n_ret), 7.0)
            out_n = np.full(n, -1, np.int64)
            _banded_positions(strength, signed, side, bands, costs, rows, out_r, out_t, out_n)
            for j in range(n):
                if j not in rows:  # rows not asked for are left alone
                    assert (out_r[j] == 7.0).all() and (out_t[j] == 7.0).all() and out_n[j] == -1
                    continue
                r, t, k = _plain_kernel(strength, signed, side, bands[j], costs[j])
                assert out_r[j].tobytes() == r.tobytes() and out_t[j].tobytes() == t.tobytes()
                assert out_n[j] == k
