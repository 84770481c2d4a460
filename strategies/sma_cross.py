"""Long-only simple-moving-average crossover on one asset, matching vectorbt's ``from_signals``."""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

from strategies._accounting import refuse_listings
from strategies._indicators import PanelMemo
from strategies._panel import Panel
from strategies._protocol import Param, StrategyOutput, group_rows
from strategies._strategy_errors import StrategyError


def simple_moving_average(prices: NDArray[np.float64], window: int) -> NDArray[np.float64]:
    """Trailing simple moving average by differences of a running sum, as vectorbt computes it.

    Parameters
    ----------
    prices : ndarray of float64, shape (T,)
        Prices (finite).
    window : int
        Window length in periods, ``1 <= window <= T``.

    Returns
    -------
    ndarray of float64, shape (T,)
        NaN for the first ``window - 1`` periods, then the mean of the last ``window`` prices.

    Notes
    -----
    With ``c = cumsum(prices)`` (a sequential running sum from the first price), the mean at
    ``t = window - 1`` is ``c[t] / window`` and at ``t >= window`` it is
    ``(c[t] - c[t - window]) / window``. This is the floating arithmetic of vectorbt's
    ``rolling_mean_1d_nb`` (used by ``vbt.MA``) for NaN-free input, so both libraries agree
    bit for bit, including on which bars two averages are exactly equal. It differs in the
    last bits from pandas' ``rolling().mean()`` (which adds and removes values one at a time).
    """
    out = np.empty_like(prices, dtype=np.float64)
    _sma_from_cumsum(np.cumsum(prices), window, out)
    return out


def _sma_from_cumsum(running: NDArray[np.float64], window: int, out: NDArray[np.float64]) -> None:
    out[: window - 1] = np.nan
    out[window - 1] = running[window - 1] / window
    np.subtract(running[window:], running[:-window], out=out[window:])
    out[window:] /= window


def held_state(fast_sma: NDArray[np.float64], slow_sma: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Whether the crossover strategy holds the asset after each close.

    Parameters
    ----------
    fast_sma, slow_sma : ndarray of float64, shape (k, T) or (T,)
        The two moving averages of each config (NaN before they exist).

    Returns
    -------
    ndarray of bool, same shape
        True where a position is held after the close of that bar.

    Notes
    -----
    This is the state that vectorbt's ``Portfolio.from_signals`` (long only, no accumulation)
    reaches from the signals ``fast.ma_crossed_above(slow)`` / ``ma_crossed_below`` with
    ``wait=0``. Call a bar *above* where ``fast > slow``, *below* where ``fast < slow``, *tied*
    where they are equal. An entry signal is the first above bar of a run whose previous bar
    was not above, provided a below bar has occurred since both averages exist; an exit
    signal is symmetric. Hence a tie never trades (the position is held or stays flat through
    it) and the held state after the first entry is "the last non-tied bar was above". Before
    the first below bar nothing is held: if the fast average starts above the slow one, the
    strategy waits for a genuine cross.
    """
    d = fast_sma - slow_sma
    above = d > 0.0
    below = d < 0.0
    n_bars = d.shape[-1]
    bars = np.arange(n_bars)
    has_below = below.any(axis=-1, keepdims=True)
    first_below = np.where(has_below, below.argmax(axis=-1, keepdims=True), n_bars)
    started = bars > first_below
    held: NDArray[np.bool_]
    if not (d == 0.0).any():
        held = above & started
        return held
    # Ties: carry the last non-tied state forward (index of the latest above/below bar).
    last = np.where(above | below, bars, 0)
    np.maximum.accumulate(last, axis=-1, out=last)
    held = np.take_along_axis(above, last, axis=-1) & started
    return held


@numba.njit(cache=True, nogil=True)
def _crossover_rows(  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    smas,
    fast_slot,
    slow_slot,
    rows,
    gross,
    entry_return,
    keep,
    out_returns,
    out_turnover,
    out_trades,
):
    """For each config: the held state of :func:`held_state` and its outputs, branch free.

    Same values, bit for bit, as :func:`_crossover_rows_scalar` (the bar-by-bar state
    machine), computed without carrying a state: with ``d = fast - slow`` and ``b`` the
    first bar where ``d < 0``, nothing is held up to ``b`` (no below bar before), and after
    ``b`` (where both averages exist, so ``d`` is never NaN) the held state is ``d > 0`` as
    long as no bar has ``d == 0`` (a tie carries the last state). So bars ``1 .. b`` are
    flat, and every later bar depends only on ``d`` at that bar and the one before: one
    element-wise loop over time, which the compiler vectorises. It also counts the ties
    (or NaN) after ``b``; a config with one is evaluated again by the state machine. Each
    value is the state machine's expression (``gross - 1.0``, ``gross * keep - 1.0``, the
    entry return), and the trade count an integer sum.
    """
    n_bars = smas.shape[1]
    for k in range(rows.shape[0]):
        cfg = rows[k]
        fast = smas[fast_slot[k]]
        slow = smas[slow_slot[k]]
        first_below = n_bars
        for t in range(n_bars):
            if fast[t] - slow[t] < 0.0:
                first_below = t
                break
        out_r = out_returns[cfg]
        out_t = out_turnover[cfg]
        flat = min(first_below, n_bars - 1)  # periods 0 .. flat - 1 end at bars 1 .. flat
        out_r[:flat] = 0.0
        out_t[:flat] = 0.0
        entry = entry_return[cfg]
        kept = keep[cfg]
        trades = 0
        ties = 0
        lo = first_below + 1  # views from bar lo (and lo - 1): indices the compiler sees >= 0
        fast_now, slow_now = fast[lo:], slow[lo:]
        fast_before, slow_before = fast[lo - 1 : n_bars - 1], slow[lo - 1 : n_bars - 1]
        gross_now = gross[lo - 1 :]
        r_now = out_r[lo - 1 :]
        t_now = out_t[lo - 1 :]
        for i in range(n_bars - lo):
            d = fast_now[i] - slow_now[i]
            held = d > 0.0
            held_before = fast_before[i] - slow_before[i] > 0.0
            g = gross_now[i]
            moved = held != held_before
            traded = entry if held else g * kept - 1.0
            stayed = g - 1.0 if held else 0.0
            r_now[i] = traded if moved else stayed
            t_now[i] = 1.0 if moved else 0.0
            trades += moved
            ties += not (d > 0.0 or d < 0.0)  # a tie (or NaN) carries the state
        out_trades[cfg] = trades
        if ties:
            _crossover_row_scalar(
                fast, slow, cfg, gross, entry_return, keep, out_returns, out_turnover, out_trades
            )


@numba.njit(cache=True, nogil=True)
def _crossover_rows_scalar(  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    smas,
    fast_slot,
    slow_slot,
    rows,
    gross,
    entry_return,
    keep,
    out_returns,
    out_turnover,
    out_trades,
):
    """For each config: the held state of :func:`held_state`, bar by bar, and its outputs.

    The state after bar ``t`` is "the last bar whose difference ``fast - slow`` was
    non-zero (and not NaN) was above", held only once a below bar occurred strictly before
    ``t``: :func:`held_state`'s rule in one pass (it is the vectorised twin the tests compare
    this loop with). Returns, turnover and trades follow :class:`SmaCross`'s conventions.
    """
    for k in range(rows.shape[0]):
        _crossover_row_scalar(
            smas[fast_slot[k]],
            smas[slow_slot[k]],
            rows[k],
            gross,
            entry_return,
            keep,
            out_returns,
            out_turnover,
            out_trades,
        )


@numba.njit(cache=True, nogil=True)
def _crossover_row_scalar(  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    fast, slow, cfg, gross, entry_return, keep, out_returns, out_turnover, out_trades
):
    """One config of :func:`_crossover_rows_scalar`: the state machine, bar by bar."""
    n_bars = fast.shape[0]
    state = False
    below_before = False
    held_before = False
    trades = 0
    for t in range(n_bars):
        d = fast[t] - slow[t]
        if d > 0.0:
            state = True
        elif d < 0.0:
            state = False
        held = state and below_before
        if d < 0.0:
            below_before = True
        if t == 0:
            held_before = held
            continue
        c = t - 1
        if held == held_before:
            out_returns[cfg, c] = gross[c] - 1.0 if held else 0.0
            out_turnover[cfg, c] = 0.0
        else:
            out_returns[cfg, c] = entry_return[cfg] if held else gross[c] * keep[cfg] - 1.0
            out_turnover[cfg, c] = 1.0
            trades += 1
        held_before = held
    out_trades[cfg] = trades


class SmaCross:
    """Long one asset while its fast simple moving average is above the slow one.

    Enter (all in) when the ``fast``-period SMA of the asset's close crosses above the
    ``slow``-period SMA, exit (all out) when it crosses below; orders fill at the close of
    the signal bar and pay ``fees`` times the traded value. Equity compounds; nothing is
    held before both averages exist and a first cross (up or down) has occurred. SMAs are
    computed once per distinct window and asset of a panel and reused by every config
    that needs them, in this call and later ones on the same panel object.

    Notes
    -----
    The results reproduce ``vectorbt`` (1.2):
    ``fast = vbt.MA.run(close, fast_windows)``, ``slow = vbt.MA.run(close, slow_windows)``,
    ``vbt.Portfolio.from_signals(close, fast.ma_crossed_above(slow),
    fast.ma_crossed_below(slow), fees=fees)`` (size ``inf``, long only, default cash): the
    same signals bar for bar (same SMA arithmetic, see :func:`simple_moving_average`, and the
    same NaN and tie handling, see :func:`held_state`), and total returns equal to rounding.

    Conventions of the output, over the ``T - 1`` periods ``t = 1 .. T-1`` (period ``t`` runs
    from close ``t - 1`` to close ``t``, stored at column ``t - 1``):

    - ``returns``: simple return of the equity. Held through the period: the asset's return.
      Entry at close ``t``: ``1 / (1 + fees) - 1`` (all cash buys ``cash / (price (1 + fees))``
      units, marked at that close). Exit at close ``t``:
      ``(close_t / close_{t-1}) (1 - fees) - 1``. Flat: 0. An open position is marked to
      market at every close, including the last; ``prod(1 + returns) - 1`` is the total return.
    - ``turnover``: the absolute change of the invested weight at the close that ends the
      period: 1.0 in an entry or exit period (0 -> 1 or 1 -> 0), else 0.0. A trade is thus
      recorded in the same period as its fee (at the end of the period, where vectorbt books
      it). This differs from :func:`strategies._protocol.signed_positions_output` (wma_trend;
      momentum does the same), which books a trade made at close ``t`` and its cost in
      period ``t + 1``; here it is booked in period ``t`` so that the equity matches
      vectorbt's at every close.
    - ``n_trades``: entries plus exits (position changes; a round trip counts 2, a position
      still open at the end counts 1); equals ``turnover.sum(axis=1)``.

    ``fast >= slow`` is evaluated as given (``fast == slow`` never trades; ``fast > slow``
    trades the reverse cross); a spec excludes such configs with a constraint if it wishes.
    ``fees`` below 1 keep the equity positive.
    """

    name = "sma_cross"
    version = "1"
    params = (
        Param("fast", "int", window=True, doc="fast SMA window in periods"),
        Param("slow", "int", window=True, doc="slow SMA window in periods"),
        Param(
            "fees",
            "float",
            minimum=0.0,
            maximum=0.5,
            default=0.0,
            doc="fee as a fraction of traded value",
        ),
        Param("asset", "int", minimum=0, default=0, doc="column of the panel traded (0: first)"),
    )

    def evaluate(
        self,
        panel: Panel,
        params: Mapping[str, NDArray[Any]],
        rngs: Sequence[np.random.Generator],
    ) -> StrategyOutput:
        """Evaluate a batch of configs (see :class:`strategies.Strategy`).

        Parameters
        ----------
        panel : Panel
            The price panel; the traded asset is column ``asset`` of ``panel.close``.
        params : mapping of str to ndarray
            Equal-length arrays ``fast``, ``slow``, ``fees`` and optionally ``asset``
            (default 0).
        rngs : sequence of numpy.random.Generator
            Unused (the strategy is deterministic).

        Returns
        -------
        StrategyOutput
            ``returns`` and ``turnover`` shaped ``(n, T - 1)``, ``n_trades`` shaped ``(n,)``.

        Raises
        ------
        StrategyError
            A window is outside ``1 .. T``, an asset index is outside the panel's columns, or
            the panel has listings (this kernel cannot force a weight to zero).
        """
        refuse_listings(
            panel,
            self.name,
            "'trend_filter' or a crossover written with strategies.position_strategy",
        )
        n_periods, n_assets = panel.close.shape
        fast = np.asarray(params["fast"]).astype(np.int64)
        slow = np.asarray(params["slow"]).astype(np.int64)
        n = fast.shape[0]
        fees = np.asarray(params["fees"]).astype(np.float64)
        asset = np.asarray(params.get("asset", np.zeros(n, dtype=np.int64))).astype(np.int64)
        for pname, values in (("fast", fast), ("slow", slow)):
            bad = (values < 1) | (values > n_periods)
            if bad.any():
                raise StrategyError(
                    f"sma_cross.{pname}: expected a window in 1..{n_periods} (the panel's "
                    f"length), got {int(values[bad][0])}"
                )
        bad = (asset < 0) | (asset >= n_assets)
        if bad.any():
            raise StrategyError(
                f"sma_cross.asset: expected a column index in 0..{n_assets - 1} (the panel has "
                f"{n_assets} assets {list(panel.assets)}), got {int(asset[bad][0])}"
            )
        returns = np.empty((n, n_periods - 1))
        turnover = np.empty((n, n_periods - 1))
        n_trades = np.zeros(n, dtype=np.int64)
        entry_return = 1.0 / (1.0 + fees) - 1.0
        keep = 1.0 - fees
        for a, rows in group_rows(asset):
            book = _MEMO.get(
                panel, ("smas", int(a)), functools.partial(_Averages, panel.close[:, int(a)])
            )
            smas, fast_slot, slow_slot = book.slots(fast[rows], slow[rows])
            _crossover_rows(
                smas,
                fast_slot,
                slow_slot,
                rows,
                book.gross,
                entry_return,
                keep,
                returns,
                turnover,
                n_trades,
            )
        return StrategyOutput(returns, turnover, n_trades)


#: The moving averages of the last few panels' assets (the engine calls ``evaluate`` once
#: per sub-batch of 64 configs on one panel; every sub-batch needs about one new window).
_MEMO = PanelMemo(panels=2, entries=4)


class _Averages:
    """The simple moving averages of one asset's prices, each window computed once.

    Parameters
    ----------
    prices : ndarray of float64, shape (T,)
        The asset's closes.

    Attributes
    ----------
    gross : ndarray of float64, shape (T - 1,)
        ``close[t] / close[t - 1]``, read-only.
    """

    #: At most this many bytes of averages are kept; past it the table starts afresh.
    BUDGET = 64 << 20

    def __init__(self, prices: NDArray[np.float64]) -> None:
        self._running = np.cumsum(prices)
        self.gross = prices[1:] / prices[:-1]
        self.gross.flags.writeable = False
        n_periods = prices.shape[0]
        self._slot = np.full(n_periods + 1, -1, dtype=np.int64)  # window -> row of _table
        self._table = np.empty((0, n_periods))
        self._used = 0
        self._lock = threading.Lock()

    def slots(
        self, fast: NDArray[np.int64], slow: NDArray[np.int64]
    ) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
        """The table of averages and the rows of ``fast`` and ``slow`` windows in it.

        Parameters
        ----------
        fast, slow : ndarray of int64, shape (k,)
            Windows in ``1 .. T``.

        Returns
        -------
        (table, fast_slot, slow_slot)
            ``table[fast_slot[i]]`` is :func:`simple_moving_average` of the prices with
            window ``fast[i]`` (the same bits), likewise for ``slow``.
        """
        with self._lock:
            fast_slot = self._slot[fast]
            slow_slot = self._slot[slow]
            if (fast_slot < 0).any() or (slow_slot < 0).any():
                self._add(np.unique(np.concatenate([fast[fast_slot < 0], slow[slow_slot < 0]])))
                fast_slot = self._slot[fast]
                slow_slot = self._slot[slow]
            return self._table, fast_slot, slow_slot

    def _add(self, windows: NDArray[np.int64]) -> None:
        n_periods = self._table.shape[1]
        if (self._used + windows.shape[0]) * n_periods * 8 > self.BUDGET:
            self._slot[:] = -1  # start afresh (the table in use by a caller stays valid)
            self._table = np.empty((0, n_periods))
            self._used = 0
        need = self._used + windows.shape[0]
        if need > self._table.shape[0]:
            grown = np.empty((max(need, 2 * self._table.shape[0], 16), n_periods))
            grown[: self._used] = self._table[: self._used]
            self._table = grown
        for w in windows:
            _sma_from_cumsum(self._running, int(w), self._table[self._used])
            self._slot[w] = self._used
            self._used += 1
