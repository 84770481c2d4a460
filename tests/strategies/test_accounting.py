"""Tests of the shared accounting (``strategies.account``).

Oracles: a hand-computed two-period book (arithmetic in the comments), a plain-Python loop
written from the documented fill convention (``tests/accounting_oracle.py``), and vectorbt's
``Portfolio.from_orders`` on a real series (the S&P 500 that ``arch`` ships).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from strategies import Book, Costs, account, asset_returns
from tests.accounting_oracle import book_loop

VBT_WARNINGS = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning:numba")


def test_hand_computed_two_periods() -> None:
    # One asset at 100, 110, 99; hold half the book over the first period, then nothing.
    # fee 10 bps of the fill value, slippage 5 bps, capital 1000.
    # t0: V=1000, buy 5 shares at 100.05: fee 0.50025, cash 499.24975, cost 0.25 + 0.50025.
    # t1: V = 499.24975 + 550 = 1049.24975; sell 5 at 109.945: fee 0.549725,
    #     cash 499.24975 + 549.725 - 0.549725 = 1048.425025, cost 0.275 + 0.549725.
    close = np.array([[100.0], [110.0], [99.0]])
    weights = np.array([[0.5], [0.0], [0.7]])
    out = account(
        weights,
        close,
        np.ones_like(close, dtype=bool),
        Costs(fee_bps=10, slippage_bps=5, capital=1000.0),
        Book(),
    )
    np.testing.assert_allclose(out.equity, [1000.0, 1049.24975, 1048.425025], rtol=1e-14)
    np.testing.assert_allclose(out.returns, [0.04924975, 1048.425025 / 1049.24975 - 1], rtol=1e-12)
    np.testing.assert_allclose(out.turnover, [0.5, 550 / 1049.24975], rtol=1e-14)
    np.testing.assert_allclose(out.costs, [0.00075025, 0.824725 / 1049.24975], rtol=1e-12)
    assert out.n_trades == 2


def _random_case(seed: int, n: int = 120, assets: int = 5):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    close = 50 * np.exp(np.cumsum(rng.normal(0, 0.02, (n, assets)), axis=0))
    weights = rng.normal(0, 0.4, (n, assets))
    weights[rng.random((n, assets)) < 0.2] = 0.0  # some flat cells
    tradable = np.ones((n, assets), dtype=bool)
    tradable[:30, 1] = False  # listed late
    tradable[90:, 3] = False  # delisted
    close[:30, 1] = close[30, 1]  # the panel holds the nearest valid price
    close[90:, 3] = close[89, 3]
    weights[~tradable] = np.nan  # ignored where not listed
    return close, weights, tradable


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"fee_bps": 7.0, "slippage_bps": 3.0},
        {"fee_bps": 2.0, "fixed_fee": 25.0, "borrow_bps": 1.5, "capital": 250_000.0},
        {"fee_bps": 5.0, "long_only": True},
        {"slippage_bps": 10.0, "borrow_bps": 4.0, "max_leverage": 0.8},
    ],
)
@pytest.mark.parametrize("seed", [1, 2])
def test_matches_the_plain_loop(seed: int, options: dict[str, float]) -> None:
    close, weights, tradable = _random_case(seed)
    book = Book(bool(options.get("long_only", False)), options.get("max_leverage"))
    cost_options = {k: v for k, v in options.items() if k not in ("long_only", "max_leverage")}
    out = account(weights, close, tradable, Costs(**cost_options), book)
    ref = book_loop(weights, close, tradable, **options)  # type: ignore[arg-type]
    np.testing.assert_allclose(out.returns, ref["returns"], rtol=1e-11, atol=1e-15)
    np.testing.assert_allclose(out.turnover, ref["turnover"], rtol=1e-11, atol=1e-15)
    np.testing.assert_allclose(out.costs, ref["costs"], rtol=1e-9, atol=1e-16)
    np.testing.assert_allclose(out.equity, ref["equity"], rtol=1e-11)
    assert out.n_trades == ref["n_trades"]
    assert np.isfinite(out.returns).all()


def test_not_listed_is_never_held_and_costs_only_reduce_returns() -> None:
    close, weights, tradable = _random_case(3)
    free = account(weights, close, tradable, Costs(), Book())
    zeroed = np.where(tradable, weights, 0.0)
    np.testing.assert_array_equal(
        free.returns, account(zeroed, close, tradable, Costs(), Book()).returns
    )
    costly = account(weights, close, tradable, Costs(fee_bps=20, slippage_bps=20), Book())
    assert costly.equity[-1] < free.equity[-1]
    # With no costs, a frictionless book earns exactly the weighted asset returns when the
    # weights are formed from the drifted holdings (here: a buy-and-hold of one asset).
    one = np.zeros_like(close)
    one[:, 0] = 1.0
    hold = account(one, close, np.ones_like(tradable), Costs(), Book())
    np.testing.assert_allclose(hold.returns, asset_returns(close[:, 0]), rtol=1e-12, atol=1e-15)


def test_ruin_closes_the_book() -> None:
    close = np.array([[100.0], [300.0], [310.0], [320.0]])
    out = account(np.full((4, 1), -1.0), close, np.ones((4, 1), dtype=bool), Costs(), Book())
    assert out.returns[0] == -1.0
    np.testing.assert_array_equal(out.returns[1:], [0.0, 0.0])
    np.testing.assert_array_equal(out.equity[1:], [0.0, 0.0, 0.0])


@pytest.mark.slow  # numba compiles vectorbt's order simulation on a cold cache
@VBT_WARNINGS
def test_vectorbt_from_orders_on_sp500() -> None:
    vbt = pytest.importorskip("vectorbt")
    sp500 = pytest.importorskip("arch.data.sp500")
    close = sp500.load()["Adj Close"]
    prices = close.to_numpy()
    # A continuous long/short weight in [-0.9, 0.9] (vectorbt refuses orders that would take
    # its cash below zero, which a gross exposure under 1 never does): 0.9 tanh of the
    # 20-day log return times 20, flat inside a dead band.
    signal = np.log(close / close.shift(20)).fillna(0.0).to_numpy()
    w = 0.9 * np.tanh(20 * signal)
    w[np.abs(w) < 0.3] = 0.0
    fee, slip, fixed, capital = 0.001, 0.0005, 1.0, 100_000.0
    orders = w.copy()
    orders[-1] = np.nan  # the last close's weight is never held: no order
    pf = vbt.Portfolio.from_orders(
        close,
        size=pd.Series(orders, index=close.index),
        size_type="targetpercent",
        direction="both",
        fees=fee,
        slippage=slip,
        fixed_fees=fixed,
        init_cash=capital,
        freq="1D",
    )
    ours = account(
        w[:, np.newaxis],
        prices[:, np.newaxis],
        np.ones((prices.shape[0], 1), dtype=bool),
        Costs(fee_bps=fee * 1e4, slippage_bps=slip * 1e4, fixed_fee=fixed, capital=capital),
        Book(),
    )
    # vectorbt books a fill's costs at that close; we book them in the period that follows:
    # our equity after the trade at t (V_t less its costs) is vectorbt's value at t.
    after_trade = ours.equity.copy()
    after_trade[:-1] -= ours.costs * ours.equity[:-1]
    assert pf.orders.count() > 1000
    np.testing.assert_allclose(after_trade, pf.value().to_numpy(), rtol=1e-9)
    np.testing.assert_allclose(ours.equity[-1] / capital - 1, pf.total_return(), rtol=1e-9)
    assert ours.n_trades == pf.orders.count()
    records = pf.orders.records
    slippage_paid = np.abs(records["size"]) * prices[records["idx"]] * slip
    np.testing.assert_allclose(
        (ours.costs * ours.equity[:-1]).sum(),
        records["fees"].sum() + slippage_paid.sum(),
        rtol=1e-9,
    )
