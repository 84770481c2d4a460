"""Time-series momentum with a dead band, equal weight across assets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from strategies._protocol import Param, StrategyOutput, group_rows

if TYPE_CHECKING:
    from sweep._data import Panel


class Momentum:
    """Time-series momentum with a dead band.

    Per asset: long if the trailing ``lookback``-period log return exceeds ``band``, short if
    it is below ``-band``, else flat; equal weight ``1/A`` across the ``A`` assets.
    The position formed at the close of period ``t`` earns the simple return from ``t`` to
    ``t + 1`` (no look-ahead); until ``lookback`` periods of history exist the book is flat.
    ``cost`` is charged per unit of one-way turnover (sum of absolute weight changes) in the
    period the new weights are held. The trailing return of a lookback is computed once for
    every band that uses it.
    """

    name = "momentum"
    version = "1"
    params = (
        Param("lookback", "int", window=True, doc="trailing window in periods"),
        Param("band", "float", minimum=0.0, doc="dead band on the trailing log return"),
        Param("cost", "float", minimum=0.0, default=0.0, doc="cost per unit of turnover"),
    )

    def evaluate(
        self,
        panel: Panel,
        params: Mapping[str, NDArray[Any]],
        rngs: Sequence[np.random.Generator],
    ) -> StrategyOutput:
        """Evaluate a batch of configs (see :class:`strategies.Strategy`)."""
        close = panel.close
        log_price = np.log(close)
        asset_returns = close[1:] / close[:-1] - 1.0
        n_assets = close.shape[1]
        n, n_ret = params["lookback"].shape[0], asset_returns.shape[0]
        returns = np.empty((n, n_ret))
        turnover = np.empty((n, n_ret))
        n_trades = np.empty(n, dtype=np.int64)
        band = params["band"].astype(np.float64)
        cost = params["cost"].astype(np.float64)
        for lookback, rows in group_rows(params["lookback"]):
            lb = int(lookback)
            # Signal at the close of t (t = 0..T-2), NaN (flat) before lb periods exist.
            signal = np.full((n_ret, n_assets), np.nan)
            signal[lb:] = log_price[lb:-1] - log_price[: -1 - lb]
            strength = np.abs(signal).T.copy()  # (A, T) for contiguous per-asset rows
            direction = np.sign(np.nan_to_num(signal)).T.astype(np.int8)
            signed_return = (np.sign(np.nan_to_num(signal)) * asset_returns).T.copy()
            b = band[rows][:, np.newaxis]
            gross = np.zeros((rows.shape[0], n_ret))
            moved = np.zeros((rows.shape[0], n_ret), dtype=np.int8)
            trades = np.zeros(rows.shape[0], dtype=np.int64)
            for a in range(n_assets):
                active = strength[a] > b  # NaN compares False: flat
                gross += np.where(active, signed_return[a], 0.0)
                position = direction[a] * active
                change = np.abs(np.diff(position, axis=1, prepend=0))
                moved += change
                trades += np.count_nonzero(change, axis=1)
            out_turnover = moved / n_assets
            returns[rows] = gross / n_assets - cost[rows][:, np.newaxis] * out_turnover
            turnover[rows] = out_turnover
            n_trades[rows] = trades
        return StrategyOutput(returns, turnover, n_trades)
