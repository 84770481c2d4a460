"""Orders that fill inside the bar: the next open, stop-losses, take-profits, trailing stops.

The book of :func:`strategies.account` when a config sets an exit level or fills at the next
open. The rules are stated once, in :func:`book_bars`; the compiled kernel is
:func:`_bar_row` (no fast-math, so no FMA: the same bits on any CPU).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

from strategies._protocol import Param
from strategies._strategy_errors import StrategyError
from strategies._targets import _gross_scale, _held

#: Exit levels every position-function strategy accepts, like the costs: fixed in
#: ``[costs]`` or swept in ``[grid]``. Optional: a spec that names none of them has no such
#: axes, so its grid, config ids and table are what they were before exits existed.
EXIT_PARAMS: tuple[Param, ...] = (
    Param(
        "stop_loss",
        "float",
        minimum=0.0,
        maximum=0.999,
        default=0.0,
        optional=True,
        doc="exit when the price moves this fraction against the entry price (0: off)",
    ),
    Param(
        "take_profit",
        "float",
        minimum=0.0,
        maximum=100.0,
        default=0.0,
        optional=True,
        doc="exit when the price moves this fraction in favour of the entry price (0: off)",
    ),
    Param(
        "trailing_stop",
        "float",
        minimum=0.0,
        maximum=0.999,
        default=0.0,
        optional=True,
        doc="exit when the price falls this fraction from its best since the entry (0: off)",
    ),
)

#: Names of :data:`EXIT_PARAMS`.
EXIT_NAMES: tuple[str, ...] = tuple(p.name for p in EXIT_PARAMS)

#: Row columns that count what decided each exit (present when the grid has an exit level).
EXIT_COLUMNS: tuple[str, ...] = (
    "exits_stop",
    "exits_take_profit",
    "exits_trailing",
    "ambiguous_bars",
)

#: When an order formed at a close fills.
FILLS: tuple[str, ...] = ("close", "next_open")
#: Which exit a bar whose range holds both the stop and the take-profit level takes.
AMBIGUOUS_RULES: tuple[str, ...] = ("stop_first", "take_profit_first")

#: Panel fields the bar book reads (besides the close).
BAR_FIELDS: tuple[str, ...] = ("open", "high", "low")


@dataclass(frozen=True)
class Exits:
    """Exit levels of one config, as fractions (0: off).

    Attributes
    ----------
    stop_loss : float
        A long exits when the price falls to ``entry * (1 - stop_loss)``; a short when it
        rises to ``entry * (1 + stop_loss)``.
    take_profit : float
        A long exits at ``entry * (1 + take_profit)``; a short at ``entry * (1 - take_profit)``.
    trailing_stop : float
        A long exits at ``best * (1 - trailing_stop)``, ``best`` the highest high since the
        entry (the entry price at first); a short at ``best * (1 + trailing_stop)``, ``best``
        the lowest low.
    """

    stop_loss: float = 0.0
    take_profit: float = 0.0
    trailing_stop: float = 0.0

    @property
    def active(self) -> bool:
        """Whether any level is set."""
        return self.stop_loss > 0.0 or self.take_profit > 0.0 or self.trailing_stop > 0.0


@dataclass(frozen=True)
class Execution:
    """How a strategy's orders fill (a property of the strategy, part of its identity).

    Attributes
    ----------
    fill : {"close", "next_open"}
        An order formed at the close of ``t`` fills at that close, or at the open of ``t + 1``.
    ambiguous : {"stop_first", "take_profit_first"}
        The exit taken on a bar whose range holds both the stop and the take-profit level
        (a bar's path inside its range is unknown; vectorbt and backtesting.py take the stop).
    """

    fill: str = "close"
    ambiguous: str = "stop_first"

    def __post_init__(self) -> None:
        if self.fill not in FILLS:
            raise StrategyError(f"fill: expected one of {list(FILLS)}, got {self.fill!r}")
        if self.ambiguous not in AMBIGUOUS_RULES:
            raise StrategyError(
                f"ambiguous: expected one of {list(AMBIGUOUS_RULES)}, got {self.ambiguous!r}"
            )

    @property
    def is_default(self) -> bool:
        """Fill at the close, stop first: the rules every strategy had before."""
        return self == Execution()

    def identity(self) -> str:
        """What a strategy's version gains so that other rules give other config ids."""
        if self.is_default:
            return ""
        return f"+fill={self.fill},ambiguous={self.ambiguous}"


@dataclass(frozen=True)
class ExitCounts:
    """How many exits each rule decided in one config's book, and the ambiguous bars.

    Attributes
    ----------
    stop : int
        Exits at the stop-loss level (or a gap through it at the open).
    take_profit : int
        Exits at the take-profit level (or a gap through it).
    trailing : int
        Exits at the trailing stop (when tighter than the stop-loss).
    ambiguous : int
        Bars whose range held both a stop and the take-profit, resolved by
        :attr:`Execution.ambiguous`.
    """

    stop: int = 0
    take_profit: int = 0
    trailing: int = 0
    ambiguous: int = 0

    def as_tuple(self) -> tuple[int, int, int, int]:
        """The counts in the order of :data:`EXIT_COLUMNS`."""
        return (self.stop, self.take_profit, self.trailing, self.ambiguous)


@numba.njit(cache=True, nogil=True, inline="always")
def _sign(x):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)


@numba.njit(cache=True, nogil=True, inline="always")
def _exit_price(long, o, h, lo, stop, stop_kind, tp, tp_on, tp_first):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """(price, kind, ambiguous) of a position's exit on a bar (kind 0 none, 1 stop, 2 tp, 3 trail).

    ``stop`` and ``tp`` are levels; a gap through a level fills at the open.
    """
    if long:
        if stop_kind > 0 and o <= stop:
            return o, stop_kind, False
        if tp_on and o >= tp:
            return o, 2, False
        hit_stop = stop_kind > 0 and lo <= stop <= h
        hit_tp = tp_on and lo <= tp <= h
    else:
        if stop_kind > 0 and o >= stop:
            return o, stop_kind, False
        if tp_on and o <= tp:
            return o, 2, False
        hit_stop = stop_kind > 0 and lo <= stop <= h
        hit_tp = tp_on and lo <= tp <= h
    if hit_stop and hit_tp:
        if tp_first:
            return tp, 2, True
        return stop, stop_kind, True
    if hit_stop:
        return stop, stop_kind, False
    if hit_tp:
        return tp, 2, False
    return np.nan, 0, False


@numba.njit(cache=True, nogil=True, inline="always")
def _levels(long, ref, best, sl, tp, trail):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """(stop level, stop kind, take-profit level, take profit on) of a position."""
    kind = 0
    stop = 0.0
    if long:
        if sl > 0.0:
            stop, kind = ref * (1.0 - sl), 1
        if trail > 0.0:
            trailing = best * (1.0 - trail)
            if kind == 0 or trailing > stop:
                stop, kind = trailing, 3
        target = ref * (1.0 + tp)
    else:
        if sl > 0.0:
            stop, kind = ref * (1.0 + sl), 1
        if trail > 0.0:
            trailing = best * (1.0 + trail)
            if kind == 0 or trailing < stop:
                stop, kind = trailing, 3
        target = ref * (1.0 - tp)
    return stop, kind, target, tp > 0.0


@numba.njit(cache=True, nogil=True, inline="always")
def _trade(a, new, price, state, rates, k, log, bar, why):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Trade asset ``a`` to ``new`` shares at ``price`` (slippage and fees as at the close).

    ``state`` rows: shares, target, order, entry price, best, sign at the exit bar. An
    entry or a reversal sets the entry price. Returns the cash it moves, its cost, the
    value traded and the fills it made (0 or 1). While ``log`` has room, fill ``k`` is
    written to it: bar, asset, shares traded (signed), price before slippage, and ``why``
    (0 an order, 1 stop, 2 take profit, 3 trailing).
    """
    step = new - state[0, a]
    if step == 0.0:
        return 0.0, 0.0, 0.0, 0
    if k < log.shape[0]:
        log[k, 0] = bar
        log[k, 1] = a
        log[k, 2] = step
        log[k, 3] = price
        log[k, 4] = why
    fill = price * (1.0 + rates[1]) if step > 0.0 else price * (1.0 - rates[1])
    size = abs(step)
    charge = size * fill * rates[0] + rates[2]
    if _sign(new) != _sign(state[0, a]):
        state[3, a] = price
        state[4, a] = price
    state[0, a] = new
    return -(step * fill + charge), size * price * rates[1] + charge, size * price, 1


@numba.njit(cache=True, nogil=True)
def _bar_row(weights, close, opens, high, low, tradable, rates, counts, out, log):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Book one config bar by bar; see :func:`strategies.account` (the bar book).

    ``rates``: fee, slippage, fixed fee, borrow, capital, long only, gross cap, next open,
    take profit first, stop loss, take profit, trailing stop. ``counts`` (int64[4]) receives
    the exit counts; ``out`` rows: returns, turnover, costs, equity, equity after the close's
    trades; ``log`` (k, 5) the first k fills (see :func:`_trade`). Returns the number of fills.

    One loop with scalar helpers: a helper that takes the state arrays is called only on a
    fill (passing arrays costs reference counting, ten times the arithmetic per bar).
    """
    n_dates, n_assets = close.shape
    long_only, max_gross, next_open = rates[5] > 0.0, rates[6], rates[7] > 0.0
    tp_first, sl, tp_level, trail = rates[8] > 0.0, rates[9], rates[10], rates[11]
    state = np.zeros((6, n_assets))  # shares, target, order, entry, best, sign at exit
    queued = np.zeros(n_assets, dtype=np.bool_)  # an order waits for the next open
    blocked = np.zeros(n_assets, dtype=np.bool_)  # flat after an exit
    cash = rates[4]
    fills = 0
    out[3, 0] = cash
    for t in range(n_dates - 1):
        u = t + 1
        value = cash
        for a in range(n_assets):
            value += state[0, a] * close[t, a]
        if value <= 0.0:  # ruined: the book is closed
            out[0, t] = 0.0
            out[1, t] = 0.0
            out[2, t] = 0.0
            out[3, u] = 0.0
            out[4, t] = 0.0
            continue
        cost = 0.0
        traded = 0.0
        scale = _gross_scale(weights, tradable, t, long_only, max_gross) if max_gross > 0 else 1.0
        for a in range(n_assets):  # the targets formed at this close
            w = _held(weights[t, a], tradable[t, a], long_only) * scale
            if blocked[a]:
                if np.isnan(state[5, a]):  # the exit bar's close: its target is ignored
                    state[5, a] = _sign(w)
                    continue
                if _sign(w) == state[5, a]:
                    continue
                blocked[a] = False
            if w == state[1, a]:
                continue
            state[1, a] = w
            if next_open:
                state[2, a] = w
                queued[a] = True
            else:
                moved, charged, value_traded, n = _trade(
                    a, w * value / close[t, a], close[t, a], state, rates, fills, log, t, 0
                )
                cash += moved
                cost += charged
                traded += value_traded
                fills += n
        out[4, t] = value - cost
        if rates[3] > 0.0:
            carry = 0.0
            for a in range(n_assets):
                if state[0, a] < 0.0:
                    carry -= state[0, a] * close[t, a] * rates[3]
            cash -= carry
            cost += carry
        if next_open:  # the queued orders fill at the open, sized on the book marked there
            at_open = cash
            for a in range(n_assets):
                at_open += state[0, a] * opens[u, a]
            for a in range(n_assets):
                if queued[a]:
                    queued[a] = False
                    new = state[2, a] * at_open / opens[u, a] if at_open > 0.0 else 0.0
                    moved, charged, value_traded, n = _trade(
                        a, new, opens[u, a], state, rates, fills, log, u, 0
                    )
                    cash += moved
                    cost += charged
                    traded += value_traded
                    fills += n
        for a in range(n_assets):  # exits inside bar u, then the best price moves
            if state[0, a] == 0.0:
                continue
            long = state[0, a] > 0.0
            stop, kind, tp, tp_on = _levels(long, state[3, a], state[4, a], sl, tp_level, trail)
            o, h, lo = opens[u, a], high[u, a], low[u, a]
            price, which, both = _exit_price(long, o, h, lo, stop, kind, tp, tp_on, tp_first)
            if both:
                counts[3] += 1
            if which == 0:
                state[4, a] = max(state[4, a], h) if long else min(state[4, a], lo)
                continue
            moved, charged, value_traded, n = _trade(
                a, 0.0, price, state, rates, fills, log, u, which
            )
            cash += moved
            cost += charged
            traded += value_traded
            fills += n
            counts[0 if which == 1 else (1 if which == 2 else 2)] += 1
            state[1, a] = 0.0
            queued[a] = False
            blocked[a] = True
            state[5, a] = np.nan
        after = cash
        for a in range(n_assets):
            after += state[0, a] * close[u, a]
        out[0, t] = after / value - 1.0 if after > 0.0 else -1.0
        out[1, t] = traded / value
        out[2, t] = cost / value
        out[3, u] = max(after, 0.0)
        if after <= 0.0:
            cash = 0.0
            state[0, :] = 0.0
            queued[:] = False
    out[4, n_dates - 1] = out[3, n_dates - 1]
    return fills


@numba.njit(cache=True, nogil=True)
def _bar_rows(weights, close, opens, high, low, tradable, settings, counts, out, fills):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """:func:`_bar_row` for k configs that hold the same weights.

    One row of ``settings``, ``counts`` and ``out`` (k, 5, T) per config; ``fills`` (k,)
    receives their fill counts.
    """
    no_log = np.empty((0, 5))
    for k in range(settings.shape[0]):
        fills[k] = _bar_row(
            weights, close, opens, high, low, tradable, settings[k], counts[k], out[k], no_log
        )


def bar_fields(
    fields: dict[str, NDArray[np.float64]], close: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The open, high and low a bar book reads, contiguous float64 shaped like ``close``.

    Raises
    ------
    StrategyError
        When one is missing.
    """
    missing = [f for f in BAR_FIELDS if f not in fields]
    if missing:
        raise StrategyError(
            f"exit levels and next-open fills need the panel's {', '.join(BAR_FIELDS)}; "
            f"it has no {', '.join(missing)}"
        )
    return tuple(  # type: ignore[return-value]
        np.ascontiguousarray(np.asarray(fields[f], dtype=np.float64).reshape(close.shape))
        for f in BAR_FIELDS
    )
