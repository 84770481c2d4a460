"""Mean-reversion built-ins on the position API: RSI and Bollinger-band reversion."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from strategies._indicators import hysteresis, live_count, rolling_mean, rolling_std, wilder_rsi
from strategies._position import position_strategy
from strategies._protocol import Param


@position_strategy(
    name="rsi_reversion",
    version="1",
    params=[
        Param("window", "int", window=True, default=14, doc="RSI smoothing window"),
        Param("lower", "float", minimum=0.0, maximum=100.0, default=30.0, doc="buy below"),
        Param("upper", "float", minimum=0.0, maximum=100.0, default=70.0, doc="sell above"),
        Param("exit", "float", minimum=0.0, maximum=100.0, default=50.0, doc="exit level"),
    ],
)
def rsi_reversion(
    prices: NDArray[np.float64], window: int, lower: float, upper: float, exit: float = 50.0
) -> NDArray[np.float64]:
    """RSI mean reversion, equal weight over the listed assets.

    Per asset, on Wilder's RSI (:func:`strategies._indicators.wilder_rsi`): enter long when
    RSI < ``lower`` and hold until RSI >= ``exit``; enter short when RSI > ``upper`` and hold
    until RSI <= ``exit``; flat while the RSI is undefined. Each position is
    ``+-1 / n_t`` with ``n_t`` the number of assets listed at ``t``. Requires
    ``lower < exit < upper``.

    References
    ----------
    Wilder, J. W. (1978). *New Concepts in Technical Trading Systems*. Trend Research.
    """
    if not lower < exit < upper:
        raise ValueError(
            f"expected lower < exit < upper, got lower={lower}, exit={exit}, upper={upper}"
        )
    rsi = wilder_rsi(prices, window)
    valid = np.isfinite(rsi)
    with np.errstate(invalid="ignore"):
        side = hysteresis(valid, rsi < lower, rsi >= exit, rsi > upper, rsi <= exit)
    out: NDArray[np.float64] = side / live_count(prices)
    return out


@position_strategy(
    name="bollinger_reversion",
    version="1",
    params=[
        Param("window", "int", window=True, default=20, doc="moving-average window"),
        Param("n_std", "float", minimum=0.0, default=2.0, doc="band width in std devs"),
    ],
)
def bollinger_reversion(
    prices: NDArray[np.float64], window: int, n_std: float
) -> NDArray[np.float64]:
    """Bollinger-band reversion, equal weight over the listed assets.

    Per asset, with ``z = (P - SMA) / SD`` over the last ``window`` closes (population
    standard deviation): enter long when ``z < -n_std`` and hold until ``z >= 0`` (the price
    is back at its average); enter short when ``z > n_std`` and hold until ``z <= 0``; flat
    while the band is undefined (fewer than ``window`` prices, or zero dispersion). Each
    position is ``+-1 / n_t`` with ``n_t`` the number of assets listed at ``t``.

    References
    ----------
    Bollinger, J. (2001). *Bollinger on Bollinger Bands*. McGraw-Hill.
    """
    mean = rolling_mean(prices, window)
    sd = rolling_std(prices, window)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (prices - mean) / sd
    valid = np.isfinite(z)
    with np.errstate(invalid="ignore"):
        side = hysteresis(valid, z < -n_std, z >= 0.0, z > n_std, z <= 0.0)
    out: NDArray[np.float64] = side / live_count(prices)
    return out
