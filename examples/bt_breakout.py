"""A trailing-stop breakout written for backtesting.py, swept by raysweep as it is.

The class is plain backtesting.py: raysweep runs ``Backtest(bars, TrailingBreakout,
cash=..., commission=...).run(channel=..., atr_mult=...)`` for each config (see the docs'
tutorial "Sweep the backtests you already have"). backtesting.py is AGPL-3.0 and installed
by the user (``pip install 'raysweep[backtesting]'``); raysweep ships none of its code.
"""

import pandas as pd
from backtesting.lib import TrailingStrategy


def _highest(high: pd.Series, n: int) -> pd.Series:
    return pd.Series(high).rolling(n).max()


class TrailingBreakout(TrailingStrategy):
    """Long when the close breaks the highest high of ``channel`` bars; a trailing stop
    ``atr_mult`` ATRs below the close (backtesting.py's ``TrailingStrategy``) ends it."""

    channel = 40
    atr_mult = 3.0

    def init(self) -> None:
        super().init()
        self.set_trailing_sl(self.atr_mult)
        self.upper = self.I(_highest, self.data.High, self.channel)

    def next(self) -> None:
        super().next()
        if not self.position and self.data.Close[-1] >= self.upper[-1]:
            self.buy()
