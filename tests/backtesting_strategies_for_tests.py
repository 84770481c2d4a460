"""backtesting.py strategies swept by the tests (importable by name, also on Ray workers)."""

from __future__ import annotations

from backtesting import Strategy
from backtesting.lib import crossover
from backtesting.test import SMA


class SmaCross(Strategy):
    """backtesting.py's own example: long on a golden cross, short on a death cross."""

    n1 = 10
    n2 = 20

    def init(self) -> None:
        close = self.data.Close
        self.sma1 = self.I(SMA, close, self.n1)
        self.sma2 = self.I(SMA, close, self.n2)

    def next(self) -> None:
        if crossover(self.sma1, self.sma2):
            self.position.close()
            self.buy()
        elif crossover(self.sma2, self.sma1):
            self.position.close()
            self.sell()


class SmaCrossStops(Strategy):
    """Long on a golden cross with a stop-loss and a take-profit order, out on a death cross."""

    n1 = 10
    n2 = 30
    sl = 0.04
    tp = 0.08

    def init(self) -> None:
        close = self.data.Close
        self.sma1 = self.I(SMA, close, self.n1)
        self.sma2 = self.I(SMA, close, self.n2)

    def next(self) -> None:
        price = self.data.Close[-1]
        if crossover(self.sma1, self.sma2) and not self.position:
            self.buy(sl=price * (1 - self.sl), tp=price * (1 + self.tp))
        elif crossover(self.sma2, self.sma1):
            self.position.close()


class Fragile(SmaCross):
    """SmaCross that raises for n1 = 13 (a bug in the user's code): that config fails."""

    def init(self) -> None:
        if self.n1 == 13:
            raise ValueError("n1 = 13 is unlucky")
        super().init()
