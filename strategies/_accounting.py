"""The one accounting of target weights: fills, costs, turnover and net returns.

Every position-function strategy (:mod:`strategies._position`) is booked here, and the batch
kernels take their asset returns from :func:`asset_returns`. The fill convention, the cost
model and the order of operations are stated once, in :func:`account`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import astuple, dataclass
from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

from strategies._bar_fills import (
    EXIT_PARAMS,
    Execution,
    ExitCounts,
    Exits,
    _bar_row,
    _bar_rows,
    bar_fields,
)
from strategies._panel import Panel
from strategies._protocol import Param
from strategies._strategy_errors import StrategyError
from strategies._targets import _gross_scale, _held

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

    @property
    def gross_cap(self) -> float:
        """The cap as the kernels read it (0: none)."""
        return 0.0 if self.max_leverage is None else float(self.max_leverage)


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
        Number of (asset, period) pairs in which the holding changed; in a bar book, the
        number of fills (a reversal is one, a stop exit is one).
    exit_counts : ExitCounts or None
        In a bar book (exit levels or next-open fills), what decided each exit.
    equity_after : ndarray of float64, shape (T,), or None
        In a bar book, equity after each close's trades (``equity`` less their costs): the
        value vectorbt reports at a bar.
    fills : ndarray of float64, shape (n_trades, 5), or None
        In a bar book asked for its fills (``account(..., fills=True)``), one row per fill:
        bar, asset index, shares traded (negative: sold), price before slippage, and why
        (0 an order, 1 the stop-loss, 2 the take-profit, 3 the trailing stop).
    """

    returns: NDArray[np.float64]
    turnover: NDArray[np.float64]
    costs: NDArray[np.float64]
    equity: NDArray[np.float64]
    n_trades: int
    exit_counts: ExitCounts | None = None
    equity_after: NDArray[np.float64] | None = None
    fills: NDArray[np.float64] | None = None


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
def _rebalance(weights, tradable, close, t, value, rates, rules, shares):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Trade every asset to its target at close ``t``; returns (cash flow, traded, cost, trades).

    Whole arrays and the row index are passed, never row slices: a slice is a new array
    object per period, which costs more than the arithmetic here.
    """
    fee, slip, fixed = rates[0], rates[1], rates[2]
    long_only, max_gross = rules[0] > 0.0, rules[1]
    scale = _gross_scale(weights, tradable, t, long_only, max_gross) if max_gross > 0.0 else 1.0
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


def account(  # noqa: PLR0913 - the accounting's inputs, each a published convention
    weights: NDArray[np.float64],
    close: NDArray[np.float64],
    tradable: NDArray[np.bool_],
    costs: Costs,
    book: Book,
    *,
    exits: Exits | None = None,
    execution: Execution | None = None,
    fields: dict[str, NDArray[np.float64]] | None = None,
    fills: bool = False,
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
    exits : Exits, optional
        Stop-loss, take-profit and trailing-stop levels. Given (even with every level off),
        the weights are booked by the bar book below; None (default): by the close book.
    execution : Execution, optional
        When orders fill (the close, or the next open) and the rule for a bar that holds
        both a stop and the take-profit (default: the close, stop first).
    fields : dict of str to ndarray, optional
        The panel's ``open``, ``high`` and ``low`` (shaped like ``close``), needed by exit
        levels and next-open fills.
    fills : bool
        In a bar book, also return every fill (:attr:`Accounts.fills`).

    Returns
    -------
    Accounts
        Returns, turnover and costs per period, equity per close and the trade count.

    Raises
    ------
    StrategyError
        When exit levels or next-open fills are asked for and ``fields`` lacks the open,
        high or low.

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

    **The bar book.** With ``exits`` given (a grid with an exit-level axis: its configs
    with every level off are booked the same way, so they compare with the others) or
    ``fill="next_open"`` the book trades orders, not drift: an asset is traded when its
    target weight (after the listing mask, long-only and the leverage cap) differs from the
    last one acted on, and its shares are held otherwise (a constant weight is not
    rebalanced). Per period ``t -> t + 1``:

    1. At the close of ``t``: ``V_t`` is marked, and each changed target is traded at
       ``close_t`` as in step 3 above (``fill="close"``), or queued for the next open
       (``fill="next_open"``). An entry (a position from flat, or a reversal) sets the
       entry price, the reference of every level: the close, or the open it filled at.
    2. ``fill="next_open"``: the queued orders fill at ``open_{t+1}``, to ``w V / open``
       shares with ``V`` the book marked at the opens, slippage and fees as at the close.
    3. Exits on bar ``t + 1``, for every position held (with ``fill="close"`` the entry bar
       is never checked: the position opened at its close; with ``"next_open"`` it is,
       after the fill at its open). A long's stop is the higher of ``entry (1 - stop_loss)``
       and ``best (1 - trailing_stop)`` (``best``: the highest high since the entry, the
       entry price at first), its take-profit ``entry (1 + take_profit)``; a short's the
       mirror image. A bar that opens beyond a level fills at the **open** (a gap: a stop
       fills worse than its level only there); otherwise a level within
       ``[low, high]`` fills at the level. A bar whose range holds both the stop and the
       take-profit is counted (``ambiguous``) and resolved by ``execution.ambiguous``
       (stop first by default, as vectorbt and backtesting.py do). Slippage and fees apply
       to an exit fill as to any fill. Then ``best`` is updated with the bar's high (a
       long) or low (a short): a trailing level never uses the bar that moves it.
    4. After an exit the asset stays flat: its target at the exit bar's close is ignored,
       and it trades again at the first later close where the target's sign differs from
       its sign at the exit bar's close (it changed sign, or went to zero; from zero, the
       next departure enters).
    5. Borrow, then ``V_{t+1}`` at ``close_{t+1}`` as above: exits are booked in the period
       of their bar.

    With ``fill="close"`` and weights of constant magnitude this is vectorbt's
    ``Portfolio.from_signals`` with ``open``, ``high``, ``low``, ``sl_stop``, ``tp_stop``
    (or ``sl_trail``), ``size_type="value"``, ``stop_entry_price="close"``,
    ``stop_exit_price="stopmarket"`` and ``upon_stop_exit="close"``, bar for bar
    (``tests/strategies/test_bar_fills_peers.py``).
    """
    n_dates = close.shape[0]
    rates = np.array(_rate_terms(*(getattr(costs, k) for k in COST_NAMES)))
    execution = execution or Execution()
    if exits is not None or execution.fill == "next_open":
        levels = astuple(exits or Exits())
        settings = np.array([*rates, *_bar_rules(book, execution), *levels])
        return _book_bars(weights, close, tradable, settings, fields or {}, fills)
    rules = np.array([1.0 if book.long_only else 0.0, book.gross_cap])
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


def _bar_rules(book: Book, execution: Execution) -> list[float]:
    """The bar kernel's rules after the rates: long only, gross cap, next open, TP first."""
    return [
        1.0 if book.long_only else 0.0,
        book.gross_cap,
        1.0 if execution.fill == "next_open" else 0.0,
        1.0 if execution.ambiguous == "take_profit_first" else 0.0,
    ]


def _bar_inputs(
    weights: NDArray[np.float64],
    close: NDArray[np.float64],
    tradable: NDArray[np.bool_],
    fields: Mapping[str, NDArray[np.float64]],
    settings: NDArray[np.float64],
) -> tuple[NDArray[Any], ...]:
    """The bar kernel's arrays: weights, close, open, high, low, tradable (contiguous).

    ``settings`` (k, 12) are the configs' (rates, :func:`_bar_rules`, levels); when none sets a
    level and they fill at the close, the bars are never read and may be missing.
    """
    close = np.ascontiguousarray(close, dtype=np.float64)
    if not settings[:, -3:].any() and not settings[:, 7].any():
        fields = {"open": close, "high": close, "low": close, **fields}
    opens, high, low = bar_fields(dict(fields), close)
    return (
        np.ascontiguousarray(weights, dtype=np.float64),
        close,
        opens,
        high,
        low,
        np.ascontiguousarray(tradable, dtype=np.bool_),
    )


def _book_bars(
    weights: NDArray[np.float64],
    close: NDArray[np.float64],
    tradable: NDArray[np.bool_],
    settings: NDArray[np.float64],
    fields: dict[str, NDArray[np.float64]],
    fills: bool,
) -> Accounts:
    """The bar book of :func:`account` (exit levels, next-open fills)."""
    w, c, o, h, lo, live = _bar_inputs(weights, close, tradable, fields, settings[np.newaxis, :])
    counts = np.zeros(4, dtype=np.int64)
    out = np.empty((5, close.shape[0]))
    log = np.empty((2 * close.size + 1 if fills else 0, 5))
    n_fills = _bar_row(w, c, o, h, lo, live, settings, counts, out, log)
    return Accounts(
        out[0, :-1],
        out[1, :-1],
        out[2, :-1],
        out[3],
        int(n_fills),
        ExitCounts(*(int(c) for c in counts)),
        out[4],
        log[:n_fills] if fills else None,
    )


def _rate_terms(
    fee_bps: Any, slippage_bps: Any, fixed_fee: Any, borrow_bps: Any, capital: Any
) -> list[Any]:
    """The kernels' rates from the cost parameters (scalars, or arrays of k configs).

    One definition for :func:`account` and :func:`account_bars`, so a config's rates have
    the same bits alone or in a batch.
    """
    return [fee_bps * BPS, slippage_bps * BPS, fixed_fee, borrow_bps * BPS, capital]


def _per_config(
    values: Mapping[str, NDArray[Any]], params: tuple[Param, ...], n: int
) -> list[NDArray[np.float64]]:
    """Each parameter's values for ``n`` configs, its default where ``values`` lacks it."""
    return [np.asarray(values.get(p.name, np.full(n, p.default)), np.float64) for p in params]


@dataclass(frozen=True)
class BarBatch:
    """The bar book of configs that hold the same weights (see :func:`account_bars`).

    Attributes
    ----------
    returns, turnover : ndarray of float64, shape (k, T - 1)
        As :attr:`Accounts.returns` and :attr:`Accounts.turnover`, one row per config.
    n_trades : ndarray of int64, shape (k,)
        Fills per config.
    exit_counts : ndarray of int64, shape (k, 4)
        Exits by the stop-loss, the take-profit and the trailing stop, and ambiguous bars.
    """

    returns: NDArray[np.float64]
    turnover: NDArray[np.float64]
    n_trades: NDArray[np.int64]
    exit_counts: NDArray[np.int64]


def account_bars(
    weights: NDArray[np.float64],
    close: NDArray[np.float64],
    tradable: NDArray[np.bool_],
    values: Mapping[str, NDArray[Any]],
    book: Book,
    execution: Execution,
    fields: Mapping[str, NDArray[np.float64]],
) -> BarBatch:
    """Book k configs that hold the same weights in the bar book, in one compiled call.

    Each row is bit for bit what :func:`account` gives that config alone with
    ``exits=Exits(...)`` (the same kernel, the same settings); the batch only saves the
    Python work per config (a run of configs differing in costs or exit levels).

    Parameters
    ----------
    weights, close, tradable
        As :func:`account`.
    values : mapping of str to ndarray
        Per config (length k) cost and exit parameters; absent ones take their defaults.
    book, execution, fields
        As :func:`account`.

    Returns
    -------
    BarBatch
        Returns, turnover, fill counts and exit counts of the k configs.
    """
    n = len(next(iter(values.values()))) if values else 1
    rates = _rate_terms(*_per_config(values, COST_PARAMS, n))
    rules = [np.full(n, rule) for rule in _bar_rules(book, execution)]
    settings = np.column_stack([*rates, *rules, *_per_config(values, EXIT_PARAMS, n)])
    w, c, o, h, lo, live = _bar_inputs(weights, close, tradable, fields, settings)
    out = np.empty((n, 5, close.shape[0]))
    counts = np.zeros((n, 4), dtype=np.int64)
    fills = np.zeros(n, dtype=np.int64)
    _bar_rows(w, c, o, h, lo, live, np.ascontiguousarray(settings), counts, out, fills)
    return BarBatch(out[:, 0, :-1], out[:, 1, :-1], fills, counts)
