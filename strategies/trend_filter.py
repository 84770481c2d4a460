"""Trend filter on the position API: long the listed assets above their moving average."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from strategies._indicators import live_count, rolling_mean
from strategies._position import position_strategy
from strategies._protocol import Param


@position_strategy(
    name="trend_filter",
    version="1",
    long_only=True,
    params=[Param("window", "int", window=True, default=200, doc="moving-average window")],
)
def trend_filter(prices: NDArray[np.float64], window: int) -> NDArray[np.float64]:
    """Long each asset whose close is above its ``window``-period simple moving average.

    Each such asset gets ``1 / n_t``, with ``n_t`` the number of assets listed at ``t``
    (the rest of the book is cash); flat until the average exists. Long only.

    References
    ----------
    Faber, M. T. (2007). A quantitative approach to tactical asset allocation.
    *Journal of Wealth Management* 9(4), 69-79.
    """
    mean = rolling_mean(prices, window)
    with np.errstate(invalid="ignore"):
        above = prices > mean
    out: NDArray[np.float64] = above / live_count(prices)
    return out
