"""Cross-sectional momentum on the position API: long the top k, short the bottom k."""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

from stats import fixed_log
from strategies._position import position_strategy
from strategies._protocol import Param


@numba.njit(cache=True, nogil=True, inline="always")
def _before(key, a, b):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Asset ``a`` ranks below asset ``b``: smaller signal, ties broken by asset order."""
    return key[a] < key[b] or (key[a] == key[b] and a < b)


@numba.njit(cache=True, nogil=True, inline="always")
def _select(idx, lo, hi, kth, key):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Quickselect: put the asset of rank ``kth`` at ``idx[kth]`` within ``idx[lo..hi]``.

    Lower ranks end up before it and higher ranks after it (ranks by :func:`_before`).
    """
    while hi > lo:
        mid = (lo + hi) // 2
        pivot = idx[mid]
        idx[mid] = idx[hi]
        idx[hi] = pivot
        store = lo
        for i in range(lo, hi):
            if _before(key, idx[i], pivot):
                swap = idx[i]
                idx[i] = idx[store]
                idx[store] = swap
                store += 1
        idx[hi] = idx[store]
        idx[store] = pivot
        if store == kth:
            return
        if kth < store:
            hi = store - 1
        else:
            lo = store + 1


@numba.njit(cache=True, nogil=True)
def _rank_weights(signal, top_k, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Weights +-1/(2k) of the bottom and top k of each row, by two quickselects per row.

    Ranks follow a strict total order (signal, then asset index), so the selected sets are
    unique whatever the pivots: only membership of each leg matters, not the order in it.
    """
    n_dates, n_assets = signal.shape
    idx = np.empty(n_assets, dtype=np.int64)
    for t in range(n_dates):
        key = signal[t]
        n = 0
        for a in range(n_assets):
            out[t, a] = 0.0
            if np.isfinite(key[a]):
                idx[n] = a
                n += 1
        k = min(top_k, n // 2)
        if k == 0:
            continue
        _select(idx, 0, n - 1, k - 1, key)
        _select(idx, k, n - 1, n - k, key)
        side = 0.5 / k
        for i in range(k):
            out[t, idx[i]] = -side
            out[t, idx[n - 1 - i]] = side


def trailing_log_return(
    prices: NDArray[np.float64], lookback: int, skip: int
) -> NDArray[np.float64]:
    """``log(P[t - skip] / P[t - skip - lookback])`` per asset; NaN where undefined or unlisted."""
    out = np.full(prices.shape, np.nan)
    lag = lookback + skip
    if lag < prices.shape[0]:
        log_price = fixed_log(prices)  # same bits on every CPU (np.log is dispatched)
        np.subtract(log_price[lookback : prices.shape[0] - skip], log_price[:-lag], out=out[lag:])
    out[np.isnan(prices)] = np.nan
    return out


@position_strategy(
    name="xs_momentum",
    version="1",
    params=[
        Param("lookback", "int", window=True, default=252, doc="trailing return window"),
        Param("top_k", "int", minimum=1, default=10, doc="assets in each leg"),
        Param("skip", "int", minimum=0, default=0, doc="most recent periods left out"),
    ],
)
def xs_momentum(
    prices: NDArray[np.float64], lookback: int, top_k: int, skip: int = 0
) -> NDArray[np.float64]:
    """Cross-sectional momentum: long the top k, short the bottom k on trailing return.

    At each close, rank the listed assets on their trailing ``lookback``-period log return
    measured up to ``skip`` periods ago (an asset needs a price at both ends and at ``t``);
    long the ``top_k`` best and short the ``top_k`` worst, each leg with half the book
    (weights ``+-1 / (2k)``: dollar neutral, gross exposure 1). With fewer than
    ``2 top_k`` ranked assets, ``k`` is half their number (flat below two). Ties are broken
    by asset order (a stable sort). Costs and fills: :func:`strategies.account`.

    References
    ----------
    Jegadeesh, N. and Titman, S. (1993). Returns to buying winners and selling losers.
    *Journal of Finance* 48(1), 65-91.
    """
    signal = trailing_log_return(prices, lookback, skip)
    out = np.empty(prices.shape)
    _rank_weights(signal, top_k, out)
    return out
