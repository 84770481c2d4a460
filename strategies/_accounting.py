"""The one accounting of target weights: fills, costs, turnover and net returns.

Every position-function strategy (:mod:`strategies._position`) is booked here, and the batch
kernels take their asset returns from :func:`asset_returns`. The fill convention, the cost
model and the order of operations are stated once, in :func:`account`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

from strategies._panel import Panel
from strategies._protocol import Param
from strategies._strategy_errors import StrategyError

#: One basis point as a fraction.
BPS = 1e-4

#: The cost parameters every position-function strategy declares after its own. They are
#: ordinary strategy parameters: a spec fixes them in ``[costs]`` or sweeps them in ``[grid]``.
COST_PARAMS: tuple[Param, ...] = (
    Param(
        "fee_bps",
        "float",
        minimum=0.0,
        maximum=1000.0,
        default=0.0,
        doc="proportional fee, basis points of traded value at the fill price",
    ),
    Param(
        "slippage_bps",
        "float",
        minimum=0.0,
        maximum=1000.0,
        default=0.0,
        doc="slippage, basis points of the close (buys fill above it, sells below)",
    ),
    Param(
        "fixed_fee",
        "float",
        minimum=0.0,
        default=0.0,
        doc="fixed cost per trade (per asset and period traded), in units of capital",
    ),
    Param(
        "borrow_bps",
        "float",
        minimum=0.0,
        maximum=1000.0,
        default=0.0,
        doc="borrow cost per period, basis points of the short positions' value",
    ),
    Param(
        "capital",
        "float",
        minimum=1e-6,
        default=1_000_000.0,
        doc="starting equity (only a fixed fee depends on it)",
    ),
)

#: Names of :data:`COST_PARAMS`.
COST_NAMES: tuple[str, ...] = tuple(p.name for p in COST_PARAMS)


@dataclass(frozen=True)
class Costs:
    """Trading costs of one config (see :func:`account` for where each is charged).

    Attributes
    ----------
    fee_bps : float
        Proportional fee in basis points of the traded value at the fill price.
    slippage_bps : float
        Fill price offset from the close in basis points: buys fill at
        ``close * (1 + slippage)``, sells at ``close * (1 - slippage)``.
    fixed_fee : float
        Cost of each trade (one asset traded in one period), in the currency of ``capital``.
    borrow_bps : float
        Cost per period, in basis points of the value of the short positions held over it.
    capital : float
        Starting equity.
    """

    fee_bps: float = 0.0
    slippage_bps: float = 0.0
    fixed_fee: float = 0.0
    borrow_bps: float = 0.0
    capital: float = 1_000_000.0


@dataclass(frozen=True)
class Book:
    """Rules of the book a strategy trades.

    Attributes
    ----------
    long_only : bool
        Negative target weights are held as zero (as vectorbt's ``direction="longonly"``).
    max_leverage : float or None
        Cap on gross exposure ``sum(|w|)`` per period: targets above it are scaled down
        proportionally. None: no cap.
    """

    long_only: bool = False
    max_leverage: float | None = None


@dataclass(frozen=True)
class Accounts:
    """The booked history of one config over the ``T - 1`` periods of a ``T``-date panel.

    Attributes
    ----------
    returns : ndarray of float64, shape (T - 1,)
        Net simple return of equity over period ``t -> t + 1`` (column ``t``).
    turnover : ndarray of float64, shape (T - 1,)
        Traded value at the close of ``t`` (at the close price) divided by equity before the
        trade: ``sum_a |w_t,a - h_t,a|`` with ``h`` the drifted weights.
    costs : ndarray of float64, shape (T - 1,)
        Fees, slippage, fixed fees and borrow booked in period ``t -> t + 1``, as a fraction
        of equity before the trade at ``t``.
    equity : ndarray of float64, shape (T,)
        Equity marked at each close before that close's trade (``equity[0] = capital``).
    n_trades : int
        Number of (asset, period) pairs in which the holding changed.
    """

    returns: NDArray[np.float64]
    turnover: NDArray[np.float64]
    costs: NDArray[np.float64]
    equity: NDArray[np.float64]
    n_trades: int


def asset_returns(close: NDArray[np.float64]) -> NDArray[np.float64]:
    """Simple return of each asset over each period: ``close[t + 1] / close[t] - 1``.

    The one definition of an asset's return used by every strategy.

    Parameters
    ----------
    close : ndarray of float64, shape (T, A) or (T,)
        Close prices.

    Returns
    -------
    ndarray of float64, shape (T - 1, A) or (T - 1,)
        Row ``t`` is the return from close ``t`` to close ``t + 1``.
    """
    out: NDArray[np.float64] = close[1:] / close[:-1] - 1.0
    return out


def costs_of(params: dict[str, float]) -> Costs:
    """The :class:`Costs` of one config from its cost parameters (defaults where absent)."""
    return Costs(**{k: float(params[k]) for k in COST_NAMES if k in params})


def refuse_listings(panel: Panel, strategy: str, instead: str) -> None:
    """Refuse a panel with listings in a kernel that cannot force weights to zero.

    Parameters
    ----------
    panel : Panel
        The panel.
    strategy : str
        The kernel's name (for the message).
    instead : str
        What to use instead (for the message).

    Raises
    ------
    StrategyError
        When some asset is not listed on some date (:attr:`Panel.has_listings`).
    """
    if not panel.has_listings:
        return
    live = panel.live_mask
    asset = int(np.flatnonzero(~live.all(axis=0))[0])
    when = int(np.argmin(live[:, asset]))
    day = str(np.datetime_as_string(panel.dates[when], unit="D"))
    raise StrategyError(
        f"strategy {strategy!r}: this batch kernel cannot honour a panel with listings and "
        f"delistings (asset {panel.assets[asset]!r} is not listed on {day}); it would hold "
        f"assets that cannot be traded. Use {instead} instead."
    )


@numba.njit(cache=True, nogil=True, inline="always")
def _held(weight, tradable, long_only):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """A target weight after the listing mask and the long-only rule."""
    if not tradable or (long_only and weight < 0.0):
        return 0.0
    return weight


@numba.njit(cache=True, nogil=True, inline="always")
def _rebalance(weights, tradable, close, t, value, rates, rules, shares):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Trade every asset to its target at close ``t``; returns (cash flow, traded, cost, trades).

    Whole arrays and the row index are passed, never row slices: a slice is a new array
    object per period, which costs more than the arithmetic here.
    """
    fee, slip, fixed = rates[0], rates[1], rates[2]
    long_only, max_gross = rules[0] > 0.0, rules[1]
    scale = 1.0
    if max_gross > 0.0:
        gross = 0.0
        for a in range(shares.shape[0]):
            gross += abs(_held(weights[t, a], tradable[t, a], long_only))
        if gross > max_gross:
            scale = max_gross / gross
    flow = 0.0
    traded = 0.0
    cost = 0.0
    trades = 0
    for a in range(shares.shape[0]):
        price = close[t, a]
        target = _held(weights[t, a], tradable[t, a], long_only) * scale * value / price
        step = target - shares[a]
        if step != 0.0:
            fill = price * (1.0 + slip) if step > 0.0 else price * (1.0 - slip)
            size = abs(step)
            charge = size * fill * fee + fixed
            flow -= step * fill + charge
            cost += size * price * slip + charge
            traded += size * price
            trades += 1
            shares[a] = target
    return flow, traded, cost, trades


@numba.njit(cache=True, nogil=True, inline="always")
def _marked(cash, shares, close, t):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Cash plus the shares marked at close ``t``."""
    value = cash
    for a in range(shares.shape[0]):
        value += shares[a] * close[t, a]
    return value


@numba.njit(cache=True, nogil=True)
def _account_row(weights, close, tradable, rates, rules, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Book one config; see :func:`account`. ``out`` rows: returns, turnover, costs, equity."""
    n_dates, n_assets = close.shape
    shares = np.zeros(n_assets)
    cash = rates[4]
    trades = 0
    out[3, 0] = cash
    for t in range(n_dates - 1):
        value = _marked(cash, shares, close, t)
        if value <= 0.0:  # ruined: the book is closed
            out[0, t] = 0.0
            out[1, t] = 0.0
            out[2, t] = 0.0
            out[3, t + 1] = 0.0
            continue
        flow, traded, cost, n = _rebalance(weights, tradable, close, t, value, rates, rules, shares)
        trades += n
        carry = 0.0
        if rates[3] > 0.0:
            for a in range(n_assets):
                if shares[a] < 0.0:
                    carry -= shares[a] * close[t, a] * rates[3]
        cash += flow - carry
        cost += carry
        after = _marked(cash, shares, close, t + 1)
        out[0, t] = after / value - 1.0 if after > 0.0 else -1.0
        out[1, t] = traded / value
        out[2, t] = cost / value
        out[3, t + 1] = max(after, 0.0)
        if after <= 0.0:
            cash = 0.0
            shares[:] = 0.0
    return trades


def account(
    weights: NDArray[np.float64],
    close: NDArray[np.float64],
    tradable: NDArray[np.bool_],
    costs: Costs,
    book: Book,
) -> Accounts:
    """Book one config's target weights: fills, costs, turnover, net returns and equity.

    Parameters
    ----------
    weights : ndarray of float64, shape (T, A)
        Target weight of each asset formed at each close (fraction of equity; negative is
        short). Row ``T - 1`` is never held (no period follows it). Values where
        ``tradable`` is False are ignored (held as zero) and may be NaN.
    close : ndarray of float64, shape (T, A)
        Close prices, finite and positive.
    tradable : ndarray of bool, shape (T, A)
        Where each asset may be held (the panel's live mask).
    costs : Costs
        Fees, slippage, fixed fee, borrow and starting capital.
    book : Book
        Long-only and the gross-leverage cap.

    Returns
    -------
    Accounts
        Returns, turnover and costs per period, equity per close and the trade count.

    Notes
    -----
    Fill convention, at each close ``t = 0 .. T-2`` in this order:

    1. Equity ``V_t`` is marked at the close: cash plus shares times ``close_t``.
    2. Targets: weights where the asset is not tradable are zero; in a long-only book
       negative weights are zero; if the gross exposure ``sum_a |w_a|`` exceeds
       ``max_leverage`` every weight is scaled by ``max_leverage / gross``.
    3. Each asset is traded to ``w_a V_t / close_t`` shares (drift since the last close is
       rebalanced away: holding a constant weight trades). A buy fills at
       ``close_t (1 + slippage)``, a sell at ``close_t (1 - slippage)``; the fee is
       ``fee_bps`` of the traded value at the fill price, plus ``fixed_fee`` per asset
       traded. Cash pays for fills and fees, so equity after trading is ``V_t`` less the
       costs (the book may carry a small negative cash balance: it is financed at zero
       rate).
    4. Borrow: ``borrow_bps`` of the value of the short positions at ``close_t`` is
       charged for the period.
    5. ``V_{t+1}`` is marked at ``close_{t+1}``; the period's return is
       ``V_{t+1} / V_t - 1``, so a trade made at ``t`` and its costs are booked in period
       ``t -> t + 1``, with the position it opens (as the ``momentum`` kernel books them).

    This is the arithmetic of vectorbt's ``Portfolio.from_orders`` with
    ``size_type="targetpercent"``, ``direction="both"``, ``fees``, ``slippage`` and
    ``fixed_fees`` whenever vectorbt's cash suffices for the orders (which it does for a
    target gross exposure below one by more than the costs); vectorbt books a fee in the
    period that ends at the fill, so the two equity series agree at every close without a
    trade and in total. If equity falls to zero or below, that period's return is -1 and
    the book is closed (later returns are zero: ruin).
    """
    n_dates = close.shape[0]
    rates = np.array(
        [
            costs.fee_bps * BPS,
            costs.slippage_bps * BPS,
            costs.fixed_fee,
            costs.borrow_bps * BPS,
            costs.capital,
        ]
    )
    cap = 0.0 if book.max_leverage is None else float(book.max_leverage)
    rules = np.array([1.0 if book.long_only else 0.0, cap])
    out = np.empty((4, n_dates))
    n_trades = _account_row(
        np.ascontiguousarray(weights, dtype=np.float64),
        np.ascontiguousarray(close, dtype=np.float64),
        np.ascontiguousarray(tradable, dtype=np.bool_),
        rates,
        rules,
        out,
    )
    returns, turnover, charged = out[0, :-1], out[1, :-1], out[2, :-1]
    equity = out[3]
    return Accounts(returns, turnover, charged, equity, int(n_trades))
