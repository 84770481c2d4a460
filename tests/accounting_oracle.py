"""A plain-Python loop of the accounting documented in ``strategies.account`` (the oracle).

Written from the docstring's fill convention, not from the compiled kernel: shares and cash,
one asset at a time, fills at the close with slippage, fees on the fill value, a fixed fee
per trade, borrow on the shorts' value for the period, equity marked at every close.
"""

from __future__ import annotations

import math

import numpy as np


def book_loop(  # noqa: PLR0913 - the documented options, spelled out
    weights: np.ndarray,
    close: np.ndarray,
    tradable: np.ndarray,
    *,
    fee_bps: float = 0.0,
    slippage_bps: float = 0.0,
    fixed_fee: float = 0.0,
    borrow_bps: float = 0.0,
    capital: float = 1_000_000.0,
    long_only: bool = False,
    max_leverage: float | None = None,
) -> dict[str, object]:
    n_dates, n_assets = close.shape
    fee, slip, borrow = fee_bps / 10_000, slippage_bps / 10_000, borrow_bps / 10_000
    shares = [0.0] * n_assets
    cash = capital
    returns, turnover, costs, equity = [], [], [], [capital]
    trades = 0
    for t in range(n_dates - 1):
        value = cash + sum(shares[a] * close[t][a] for a in range(n_assets))
        if value <= 0:
            returns.append(0.0)
            turnover.append(0.0)
            costs.append(0.0)
            equity.append(0.0)
            continue
        targets = []
        for a in range(n_assets):
            w = float(weights[t][a]) if tradable[t][a] else 0.0
            if long_only and w < 0:
                w = 0.0
            targets.append(w)
        gross = sum(abs(w) for w in targets)
        if max_leverage is not None and gross > max_leverage:
            targets = [w * (max_leverage / gross) for w in targets]
        traded = cost = 0.0
        for a in range(n_assets):
            price = close[t][a]
            step = targets[a] * value / price - shares[a]
            if step == 0:
                continue
            fill = price * (1 + slip) if step > 0 else price * (1 - slip)
            charge = abs(step) * fill * fee + fixed_fee
            cash -= step * fill + charge
            cost += abs(step) * price * slip + charge
            traded += abs(step) * price
            trades += 1
            shares[a] += step
        short_value = sum(-shares[a] * close[t][a] for a in range(n_assets) if shares[a] < 0)
        cash -= short_value * borrow
        cost += short_value * borrow
        after = cash + sum(shares[a] * close[t + 1][a] for a in range(n_assets))
        returns.append(after / value - 1 if after > 0 else -1.0)
        turnover.append(traded / value)
        costs.append(cost / value)
        equity.append(max(after, 0.0))
        if after <= 0:
            cash, shares = 0.0, [0.0] * n_assets
    assert all(math.isfinite(r) for r in returns)
    return {
        "returns": np.array(returns),
        "turnover": np.array(turnover),
        "costs": np.array(costs),
        "equity": np.array(equity),
        "n_trades": trades,
    }
