"""Position-function strategies used by tests (``tests.position_strategies_for_tests:name``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from strategies import Param, position_strategy


@position_strategy(
    version="1",
    params=[
        Param("fast", "int", window=True, doc="fast SMA window"),
        Param("slow", "int", window=True, doc="slow SMA window"),
    ],
    long_only=True,
)
def sma_position(prices: np.ndarray, fast: int, slow: int) -> np.ndarray:
    """Long (all in) while the fast SMA is above the slow one; as simple as ``sma_cross``."""
    running = np.cumsum(prices, axis=0)
    fast_ma = np.full_like(prices, np.nan)
    slow_ma = np.full_like(prices, np.nan)
    fast_ma[fast - 1 :] = (
        running[fast - 1 :] - np.vstack([0 * running[:1], running[:-fast]])
    ) / fast
    slow_ma[slow - 1 :] = (
        running[slow - 1 :] - np.vstack([0 * running[:1], running[:-slow]])
    ) / slow
    with np.errstate(invalid="ignore"):
        return (fast_ma > slow_ma).astype(np.float64)


@position_strategy(version="1", params=[Param("window", "int", window=True)])
def peeking(prices: np.ndarray, window: int) -> np.ndarray:
    """Long when TOMORROW's close is above today's moving average: looks one period ahead."""
    ahead = np.vstack([prices[1:], prices[-1:]])
    mean = pd.DataFrame(prices).rolling(window).mean().to_numpy()
    with np.errstate(invalid="ignore"):
        return (ahead > mean).astype(np.float64) / prices.shape[1]


@position_strategy(version="1", params=[Param("window", "int", window=True)])
def zscore_full_sample(prices: np.ndarray, window: int) -> np.ndarray:
    """Scales by the standard deviation of the WHOLE sample: peeks at every date."""
    r = np.diff(np.log(prices), axis=0, prepend=np.nan)
    signal = pd.DataFrame(r).rolling(window).mean().to_numpy() / np.nanstd(r, axis=0)
    return np.nan_to_num(np.clip(signal, -1, 1)) / prices.shape[1]


@position_strategy(
    version="1",
    params=[Param("mode", "int", minimum=0, maximum=4, doc="which failure to produce")],
)
def faulty(prices: np.ndarray, mode: int) -> np.ndarray:
    """0: fine; 1: raises; 2: wrong shape; 3: a NaN weight; 4: an inf weight."""
    weights = np.full(prices.shape, 1.0 / prices.shape[1])
    if mode == 1:
        raise RuntimeError("the signal service is down")
    if mode == 2:
        return weights[:-1]
    if mode == 3:
        weights[10, 0] = np.nan
    if mode == 4:
        weights[20, -1] = np.inf
    return weights


@position_strategy(version="1", params=[Param("scale", "float", minimum=0.0, default=1.0)])
def noisy(prices: np.ndarray, scale: float, rng: np.random.Generator) -> np.ndarray:
    """Random weights from the config's own generator (invariant 2)."""
    return scale * rng.uniform(-1, 1, prices.shape) / prices.shape[1]


def _plain(prices: np.ndarray) -> np.ndarray:
    return np.zeros(prices.shape)


#: Bound under another name than its function's: still importable by that name.
renamed = position_strategy(name="renamed")(_plain)


@position_strategy(version="1", params=[Param("window", "int", window=True)])
def volume_surge(prices: np.ndarray, window: int, volume: np.ndarray) -> np.ndarray:
    """Long an asset while today's volume is above its mean over ``window`` days: reads volume."""
    mean = pd.DataFrame(volume).rolling(window).mean().to_numpy()
    with np.errstate(invalid="ignore"):
        return (volume > mean).astype(np.float64) / prices.shape[1]


@position_strategy(version="1", params=[Param("window", "int", window=True)])
def high_breakout(prices: np.ndarray, high: np.ndarray, window: int) -> np.ndarray:
    """Long while the close is above the highest high of the ``window`` days before today."""
    prior = pd.DataFrame(high).rolling(window).max().shift(1).to_numpy()
    with np.errstate(invalid="ignore"):
        return (prices > prior).astype(np.float64) / prices.shape[1]


@position_strategy(version="1")
def next_high(prices: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Long when TOMORROW's high is above today's close (``np.roll(high, -1)``): looks ahead."""
    with np.errstate(invalid="ignore"):
        return (np.roll(high, -1, axis=0) > prices * 1.01).astype(np.float64) / prices.shape[1]
