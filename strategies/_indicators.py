"""Indicators the position-function built-ins share (NaN-aware: NaN where a price is missing)."""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numba
import numpy as np
import pandas as pd
from numpy.typing import NDArray

_Value = TypeVar("_Value")


class PanelMemo:
    """Values derived from the last few panels, found again by the panel object's identity.

    A strategy's ``evaluate`` is called once per sub-batch of configs on the same panel
    object; what depends on the panel alone (a log price, a running sum) or on the panel and
    one parameter (a lookback's signal, a window's average) is computed once and reused
    instead of once per sub-batch. A :class:`strategies.Panel` is immutable (the engine
    hands strategies read-only arrays), so a value stays right while its panel is alive;
    the panels are kept alive while listed, so an id is never reused for another panel
    while its values are held. Only the most recent ``panels`` panels are kept, and for
    each at most ``entries`` values (least recently used dropped first). A value is the
    same bits as computing it afresh: the memo only skips repeated work.

    Parameters
    ----------
    panels : int
        How many panels are remembered.
    entries : int
        How many values are kept per panel.
    """

    def __init__(self, panels: int, entries: int) -> None:
        self._panels = panels
        self._entries = entries
        self._held: collections.OrderedDict[
            int, tuple[object, collections.OrderedDict[Hashable, Any]]
        ] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, panel: object, key: Hashable, make: Callable[[], _Value]) -> _Value:
        """The value under ``key`` for ``panel``, from ``make()`` the first time.

        Parameters
        ----------
        panel : object
            The panel (compared by identity).
        key : hashable
            What is derived (e.g. ``("signal", lookback)``).
        make : callable
            Computes the value; called without the lock held.

        Returns
        -------
        object
            The remembered or newly made value.
        """
        with self._lock:
            held = self._held.get(id(panel))
            if held is not None and held[0] is panel:
                self._held.move_to_end(id(panel))
                values = held[1]
                if key in values:
                    values.move_to_end(key)
                    found: _Value = values[key]
                    return found
        value = make()
        with self._lock:
            held = self._held.get(id(panel))
            if held is None or held[0] is not panel:
                held = (panel, collections.OrderedDict())
                self._held[id(panel)] = held
            self._held.move_to_end(id(panel))
            held[1][key] = value
            while len(held[1]) > self._entries:
                held[1].popitem(last=False)
            while len(self._held) > self._panels:
                self._held.popitem(last=False)
        return value


def rolling_mean(prices: NDArray[np.float64], window: int) -> NDArray[np.float64]:
    """Trailing mean of the last ``window`` prices of each column; NaN unless all are present."""
    out: NDArray[np.float64] = (
        pd.DataFrame(prices).rolling(window, min_periods=window).mean().to_numpy()
    )
    return out


def rolling_std(prices: NDArray[np.float64], window: int) -> NDArray[np.float64]:
    """Trailing population standard deviation (ddof = 0) of each column, as Bollinger defined."""
    out: NDArray[np.float64] = (
        pd.DataFrame(prices).rolling(window, min_periods=window).std(ddof=0).to_numpy()
    )
    return out


def live_count(prices: NDArray[np.float64]) -> NDArray[np.float64]:
    """Number of assets with a price at each date, as a float column ``(T, 1)`` (at least 1)."""
    count = np.isfinite(prices).sum(axis=1, keepdims=True).astype(np.float64)
    out: NDArray[np.float64] = np.maximum(count, 1.0)
    return out


@numba.njit(cache=True, nogil=True)
def _wilder_rsi(prices, window, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    n_dates, n_assets = prices.shape
    for a in range(n_assets):
        gain = 0.0
        loss = 0.0
        seen = 0
        for t in range(n_dates):
            out[t, a] = np.nan
            if t == 0 or not (np.isfinite(prices[t, a]) and np.isfinite(prices[t - 1, a])):
                gain = 0.0
                loss = 0.0
                seen = 0
                continue
            change = prices[t, a] - prices[t - 1, a]
            up = change if change > 0.0 else 0.0
            down = -change if change < 0.0 else 0.0
            seen += 1
            if seen < window:
                gain += up
                loss += down
                continue
            if seen == window:
                gain = (gain + up) / window
                loss = (loss + down) / window
            else:
                gain = (gain * (window - 1) + up) / window
                loss = (loss * (window - 1) + down) / window
            if loss == 0.0:
                out[t, a] = 100.0 if gain > 0.0 else 50.0
            else:
                out[t, a] = 100.0 - 100.0 / (1.0 + gain / loss)


def wilder_rsi(prices: NDArray[np.float64], window: int) -> NDArray[np.float64]:
    """Wilder's relative strength index of each column, 0..100.

    Parameters
    ----------
    prices : ndarray of float64, shape (T, A)
        Prices, NaN where missing.
    window : int
        Smoothing window ``n``.

    Returns
    -------
    ndarray of float64, shape (T, A)
        NaN until ``window`` price changes exist since the last missing price; then
        ``100 - 100 / (1 + G / L)`` with ``G`` and ``L`` the average gain and loss, seeded by
        the simple mean of the first ``window`` changes and smoothed as
        ``G_t = (G_{t-1} (n - 1) + gain_t) / n``. 100 when there was no loss, 50 when the
        price did not move.

    References
    ----------
    Wilder, J. W. (1978). *New Concepts in Technical Trading Systems*. Trend Research.
    """
    out = np.empty_like(prices, dtype=np.float64)
    _wilder_rsi(np.ascontiguousarray(prices, dtype=np.float64), int(window), out)
    return out


@numba.njit(cache=True, nogil=True)
def _hysteresis(  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    valid, enter_long, exit_long, enter_short, exit_short, out
):
    n_dates, n_assets = valid.shape
    for a in range(n_assets):
        state = 0
        for t in range(n_dates):
            if not valid[t, a]:
                state = 0
            else:
                if (state == 1 and exit_long[t, a]) or (state == -1 and exit_short[t, a]):
                    state = 0
                if state == 0:
                    if enter_long[t, a]:
                        state = 1
                    elif enter_short[t, a]:
                        state = -1
            out[t, a] = state


def hysteresis(
    valid: NDArray[np.bool_],
    enter_long: NDArray[np.bool_],
    exit_long: NDArray[np.bool_],
    enter_short: NDArray[np.bool_],
    exit_short: NDArray[np.bool_],
) -> NDArray[np.int8]:
    """Positions -1/0/+1 from entry and exit conditions, column by column.

    At each date, where the signal is not valid the position is flat (and the state resets);
    else a long position exits on ``exit_long`` and a short one on ``exit_short``; then a
    flat position enters long on ``enter_long``, else short on ``enter_short`` (an exit and a
    new entry may happen on the same date).
    """
    out = np.empty(valid.shape, dtype=np.int8)
    v, el, xl, es, xs = (
        np.ascontiguousarray(x, dtype=np.bool_)
        for x in (valid, enter_long, exit_long, enter_short, exit_short)
    )
    _hysteresis(v, el, xl, es, xs, out)
    return out
