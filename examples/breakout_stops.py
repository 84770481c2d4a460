"""A Donchian breakout sized by ATR, with its stop-loss and take-profit swept.

Swept by ``examples/breakout_stops.toml`` on the embedded synthetic panel with its open,
high, low and volume (``[data] ohlcv = true``); ``sweep run examples/breakout_stops.toml``
imports this module from the spec's folder. See the docs' tutorial, "Your first own
strategy".

The strategy goes long when the close breaks above the highest high of the last
``channel`` bars and short when it breaks below the lowest low, and holds until the
opposite break. Each position is sized when it is entered so that one average true range
(ATR) against it costs ``risk`` of equity, and keeps that size: the book trades when the
target changes, so a fixed size means one order per entry. The exits are the engine's:
``stop_loss`` and ``take_profit`` are grid axes, checked on every bar's high and low.
"""

import numpy as np
import pandas as pd

from strategies import Param, position_strategy


@position_strategy(
    version="1",
    params=[
        Param("channel", "int", window=True, doc="breakout channel, bars"),
        Param("atr_window", "int", window=True, default=20, doc="ATR window, bars"),
        Param("risk", "float", minimum=0.0, default=0.01, doc="equity lost per ATR against"),
    ],
    inputs="pandas",
    max_leverage=1.0,
)
def breakout_stops(
    prices: pd.DataFrame,
    high: pd.DataFrame,
    low: pd.DataFrame,
    channel: int,
    atr_window: int,
    risk: float,
) -> pd.DataFrame:
    """Long above the ``channel``-bar high, short below its low, sized by ATR at entry."""
    upper = high.rolling(channel).max().shift(1)
    lower = low.rolling(channel).min().shift(1)
    side = pd.DataFrame(np.nan, index=prices.index, columns=prices.columns)
    side[prices > upper] = 1.0
    side[prices < lower] = -1.0
    side = side.ffill().fillna(0.0)
    previous = prices.shift(1)
    true_range = np.maximum(high - low, np.maximum((high - previous).abs(), (low - previous).abs()))
    atr = true_range.rolling(atr_window).mean()
    size = (risk * prices / atr).where(side != side.shift(1)).ffill()  # fixed at each entry
    return (side * size / prices.shape[1]).fillna(0.0)
