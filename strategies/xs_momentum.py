"""Cross-sectional momentum on the position API: long the top k, short the bottom k."""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

from strategies._position import position_strategy
from strategies._protocol import Param


@numba.njit(cache=True, nogil=True)
def _rank_weights(signal, top_k, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    n_dates, n_assets = signal.shape
    valid = np.empty(n_assets, dtype=np.int64)
    values = np.empty(n_assets)
    for t in range(n_dates):
        for a in range(n_assets):
            out[t, a] = 0.0
        n = 0
        for a in range(n_assets):
            if np.isfinite(signal[t, a]):
                valid[n] = a
                values[n] = signal[t, a]
                n += 1
        k = min(top_k, n // 2)
        if k == 0:
            continue
        order = np.argsort(values[:n], kind="mergesort")
        side = 0.5 / k
        for i in range(k):
            out[t, valid[order[i]]] = -side
            out[t, valid[order[n - 1 - i]]] = side


def trailing_log_return(
    prices: NDArray[np.float64], lookback: int, skip: int
) -> NDArray[np.float64]:
    """``log(P[t - skip] / P[t - skip - lookback])`` per asset; NaN where undefined or unlisted."""
    out = np.full(prices.shape, np.nan)
    lag = lookback + skip
    if lag < prices.shape[0]:
        with np.errstate(invalid="ignore"):
            out[lag:] = np.log(prices[lookback : prices.shape[0] - skip]) - np.log(
                prices[: prices.shape[0] - lag]
            )
    out[~np.isfinite(prices)] = np.nan
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
