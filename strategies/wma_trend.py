"""Trend filter on a linearly weighted moving average, equal weight across assets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from strategies._accounting import asset_returns, refuse_listings
from strategies._panel import Panel
from strategies._protocol import Param, StrategyOutput, group_rows, signed_positions_output


def weighted_moving_average(prices: NDArray[np.float64], window: int) -> NDArray[np.float64]:
    """Linearly weighted moving average of each column (weights 1..window, newest heaviest).

    Parameters
    ----------
    prices : ndarray, shape (T, A)
        Prices.
    window : int
        Window length in periods, ``1 <= window <= T``.

    Returns
    -------
    ndarray, shape (T, A)
        NaN for the first ``window - 1`` rows.
    """
    # Integer weights summed first, one division last: a flat run of a price p gives exactly
    # p (no weight is rounded), so a close equal to its average is a tie, never "above".
    weights = np.arange(window, 0, -1, dtype=np.float64)
    total = window * (window + 1) / 2
    out = np.full_like(prices, np.nan)
    for a in range(prices.shape[1]):
        out[window - 1 :, a] = np.convolve(prices[:, a], weights, mode="valid") / total
    return out


class WmaTrend:
    """Trend filter on a weighted moving average.

    Long an asset while its close is above its ``window``-period weighted moving average,
    else flat; equal weight across assets; the position formed at ``t`` earns ``t -> t+1``.
    A panel with listings is refused (use ``trend_filter``, which weights live assets).
    """

    name = "wma_trend"
    version = "1"
    params = (
        Param("window", "int", window=True, doc="WMA window in periods"),
        Param("cost", "float", minimum=0.0, default=0.0, doc="cost per unit of turnover"),
    )

    def evaluate(
        self,
        panel: Panel,
        params: Mapping[str, NDArray[Any]],
        rngs: Sequence[np.random.Generator],
    ) -> StrategyOutput:
        """Evaluate a batch of configs (see :class:`strategies.Strategy`)."""
        refuse_listings(panel, self.name, "the position-function built-in 'trend_filter'")
        returns_of_assets = asset_returns(panel.close)
        n, n_ret = params["window"].shape[0], returns_of_assets.shape[0]
        returns = np.empty((n, n_ret))
        turnover = np.empty((n, n_ret))
        n_trades = np.empty(n, dtype=np.int64)
        cost = params["cost"].astype(np.float64)
        for window, rows in group_rows(params["window"]):
            wma = weighted_moving_average(panel.close, int(window))
            above = (panel.close[:-1] > wma[:-1]).astype(np.int8)
            positions = np.broadcast_to(above, (rows.shape[0], *above.shape))
            out = signed_positions_output(positions, returns_of_assets, cost[rows])
            returns[rows], turnover[rows], n_trades[rows] = out.returns, out.turnover, out.n_trades
        return StrategyOutput(returns, turnover, n_trades)
