"""Time-series momentum with a dead band, equal weight across assets."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

from stats import fixed_log
from strategies._accounting import asset_returns, refuse_listings
from strategies._indicators import PanelMemo
from strategies._panel import Panel
from strategies._protocol import Param, StrategyOutput, group_rows


@numba.njit(cache=True, nogil=True)
def _banded_positions(  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    strength, signed_return, direction, bands, costs, rows, out_returns, out_turnover, out_trades
):
    """For each config: positions from the dead band, net returns, turnover and trades.

    Asset by asset, each loop over time is element-wise (the position before ``t`` is
    recomputed rather than carried, positions are floats -1, 0, 1, the sums go to scratch
    rows), so the compiler vectorises it; a period's gross return still adds the active
    assets in asset order starting from ``+0.0`` (an asset is active exactly when its
    strength exceeds the band, ``band >= 0``), and adding ``+0.0`` for an inactive asset
    leaves a sum that is never ``-0.0`` unchanged, so every value is bit for bit the
    sequential per-period loop's.
    """
    n_assets, n_ret = strength.shape
    gross = np.empty(n_ret)  # scratch rows of this call: the compiler sees they do not alias
    moved = np.empty(n_ret)
    for j in rows:
        band = bands[j]
        cost = costs[j]
        gross[:] = 0.0
        moved[:] = 0.0
        trades = 0
        for a in range(n_assets):
            s_a = strength[a]
            d_a = direction[a]
            r_a = signed_return[a]
            first = d_a[0] if s_a[0] > band else 0.0
            gross[0] += r_a[0] if first != 0.0 else 0.0
            moved[0] += abs(first)
            trades += first != 0.0
            for t in range(1, n_ret):
                on = s_a[t] > band
                now = d_a[t] if on else 0.0
                before = d_a[t - 1] if s_a[t - 1] > band else 0.0
                step = now - before
                gross[t] += r_a[t] if on else 0.0
                moved[t] += abs(step)
                trades += step != 0.0
        out_r = out_returns[j]
        out_t = out_turnover[j]
        for t in range(n_ret):
            out_r[t] = gross[t] / n_assets - cost * (moved[t] / n_assets)
            out_t[t] = moved[t] / n_assets
        out_trades[j] = trades


#: What to use on a panel with listings (this kernel cannot force weights to zero).
INSTEAD = (
    "the position-function built-in 'xs_momentum', or time-series momentum written with "
    "strategies.position_strategy"
)


class Momentum:
    """Time-series momentum with a dead band.

    Per asset: long if the trailing ``lookback``-period log return exceeds ``band``, short if
    it is below ``-band``, else flat; equal weight ``1/A`` across the ``A`` assets.
    The position formed at the close of period ``t`` earns the simple return from ``t`` to
    ``t + 1`` (no look-ahead); until ``lookback`` periods of history exist the book is flat.
    ``cost`` is charged per unit of one-way turnover (sum of absolute weight changes) in the
    period the new weights are held. The log prices of a panel, and the trailing return of a
    lookback, are computed once for every band that uses them, in this call and in the next
    calls on the same panel object (the few most recent lookbacks are kept). A panel with
    listings is refused (see ``INSTEAD``).
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
        refuse_listings(panel, self.name, INSTEAD)
        n, n_ret = params["lookback"].shape[0], panel.close.shape[0] - 1
        returns = np.empty((n, n_ret))
        turnover = np.empty((n, n_ret))
        n_trades = np.empty(n, dtype=np.int64)
        band = params["band"].astype(np.float64)
        cost = params["cost"].astype(np.float64)
        for lookback, rows in group_rows(params["lookback"]):
            lb = int(lookback)
            strength, signed_return, direction = _MEMO.get(
                panel, ("signal", lb), functools.partial(_signal, panel, lb)
            )
            _banded_positions(
                strength, signed_return, direction, band, cost, rows, returns, turnover, n_trades
            )
        return StrategyOutput(returns, turnover, n_trades)


#: The log prices and asset returns of the last few panels, and the signals of their last
#: few lookbacks (the engine's sub-batches of a grid in order share lookbacks).
_MEMO = PanelMemo(panels=2, entries=6)


def _prices(panel: Panel) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The panel's log prices ``(T, A)`` and asset returns ``(T - 1, A)``."""
    close = panel.close
    log_price = fixed_log(close)  # same bits on every CPU (np.log is dispatched)
    return log_price, asset_returns(close)


def _signal(
    panel: Panel, lb: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Strength, signed return and direction ``(A, T - 1)`` of one lookback (read-only).

    The signal at the close of ``t`` (``t = lb .. T-2``) is the trailing ``lb``-period log
    return; before ``lb`` periods exist the book is flat: strength NaN (never above a band),
    direction and signed return 0 (never read).
    """
    log_price, returns_of_assets = _MEMO.get(panel, "prices", functools.partial(_prices, panel))
    n_ret, n_assets = returns_of_assets.shape
    signal = (log_price[lb:-1] - log_price[: -1 - lb]).T  # (A, T - lb)
    side = np.sign(signal)  # -1.0, 0.0 or 1.0
    strength = np.full((n_assets, n_ret), np.nan)
    direction = np.zeros((n_assets, n_ret))
    signed_return = np.zeros((n_assets, n_ret))
    np.abs(signal, out=strength[:, lb:])
    direction[:, lb:] = side
    np.multiply(side, returns_of_assets[lb:].T, out=signed_return[:, lb:])
    for a in (strength, signed_return, direction):
        a.flags.writeable = False
    return strength, signed_return, direction
