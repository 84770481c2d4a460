"""Stops and take-profits filled inside the bar: raysweep against vectorbt and backtesting.py.

A 10,000-config sweep of a long-only SMA crossover x stop-loss x take-profit on GOOG daily
OHLC (backtesting.py's test data, 2,148 bars), 10 bps fees:

- raysweep: a position function (one numpy call per config) booked by the bar book, every
  row metric (``evaluate_batch``, no bootstrap), one process;
- vectorbt 1.2 ``Portfolio.from_signals`` with ``open/high/low``, ``sl_stop``, ``tp_stop``,
  then total return, Sharpe and max drawdown, one process (its numba kernels);
- backtesting.py ``Backtest.optimize(method="grid")`` on a sample of the same grid, in one
  process (``max_tries`` configs), per config.

The three run alternated, ``--rounds`` times, best of each; the ratios are per core.

    python benchmarks/bench_stops.py [--configs 10000] [--rounds 2] [--bt-sample 100]
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
import warnings

import numpy as np
import pandas as pd

from strategies import Param, position_strategy
from sweep import evaluate_batch, python_grid, resolve, spec_from_dict
from sweep.data._panels import panel_from_frame

FASTS = list(range(5, 55, 5))
SLOWS = list(range(20, 220, 20))
STOPS = [round(0.01 * i, 2) for i in range(1, 11)]
TAKES = [round(0.02 * i, 2) for i in range(1, 11)]
FEE = 0.001


@position_strategy(
    version="1",
    params=[Param("fast", "int", window=True), Param("slow", "int", window=True)],
    long_only=True,
)
def sma_cross_stops(prices: np.ndarray, fast: int, slow: int) -> np.ndarray:
    """All in while the fast SMA is above the slow one."""
    frame = pd.DataFrame(prices)
    up = frame.rolling(fast).mean().to_numpy() > frame.rolling(slow).mean().to_numpy()
    return up.astype(np.float64)


def goog() -> pd.DataFrame:
    """backtesting.py's GOOG daily bars."""
    from backtesting.test import GOOG

    return GOOG.astype(float)


def raysweep_run(bars: pd.DataFrame, n: int) -> float:
    """Seconds for ``n`` configs through evaluate_batch (strategy, bar book, every metric)."""
    frame = pd.concat(
        {f: bars[f.title()].rename("GOOG").to_frame() for f in ("close", "open", "high", "low")},
        axis=1,
    )
    panel = panel_from_frame(frame)
    grid = {"fast": FASTS, "slow": SLOWS, "stop_loss": STOPS, "take_profit": TAKES}
    doc = {
        "name": "bench-stops",
        "seed": 1,
        "grid": python_grid(grid),
        "strategy": {"name": "sma_cross_stops"},
        "costs": {"fee_bps": FEE / 1e-4},
        "metrics": {"bootstrap_reps": 0},
    }
    sweep = resolve(spec_from_dict(doc), panel, strategy=sma_cross_stops)
    start = time.perf_counter()
    evaluate_batch(sweep, np.arange(n, dtype=np.int64))
    return time.perf_counter() - start


def vectorbt_run(bars: pd.DataFrame, n: int) -> float:
    """Seconds for ``n`` configs: signals, from_signals with stops, three metrics."""
    import vectorbt as vbt

    combos = [(f, s, a, b) for f in FASTS for s in SLOWS for a in STOPS for b in TAKES][:n]
    start = time.perf_counter()
    close = bars["Close"]
    sma = {w: close.rolling(w).mean().to_numpy() for w in {*FASTS, *SLOWS}}
    up = np.column_stack([sma[f] > sma[s] for f, s, _, _ in combos])
    before = np.vstack([np.zeros((1, up.shape[1]), bool), up[:-1]])
    pf = vbt.Portfolio.from_signals(
        np.repeat(close.to_numpy()[:, None], len(combos), axis=1),
        up & ~before,
        ~up & before,
        open=bars["Open"].to_numpy()[:, None],
        high=bars["High"].to_numpy()[:, None],
        low=bars["Low"].to_numpy()[:, None],
        sl_stop=np.array([c[2] for c in combos]),
        tp_stop=np.array([c[3] for c in combos]),
        fees=FEE,
        freq="1D",
    )
    pf.total_return(), pf.sharpe_ratio(), pf.max_drawdown()
    return time.perf_counter() - start


def backtesting_run(bars: pd.DataFrame, n: int) -> float:
    """Seconds for ``n`` configs of ``Backtest.optimize`` (grid, one process)."""
    from backtesting import Backtest, Strategy

    class SmaCrossStops(Strategy):
        fast, slow, stop_loss, take_profit = 10, 40, 0.05, 0.1

        def init(self) -> None:
            close = pd.Series(self.data.Close)
            self.f = self.I(lambda: close.rolling(self.fast).mean().to_numpy())
            self.s = self.I(lambda: close.rolling(self.slow).mean().to_numpy())

        def next(self) -> None:
            c = self.data.Close[-1]
            if self.f[-1] > self.s[-1] and not self.position:
                self.buy(sl=c * (1 - self.stop_loss), tp=c * (1 + self.take_profit))
            elif self.f[-1] < self.s[-1] and self.position:
                self.position.close()

    bt = Backtest(bars, SmaCrossStops, cash=1e7, commission=FEE, trade_on_close=True)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        multiprocessing.set_start_method("spawn", force=True)  # one process: no fork pool
        bt.optimize(
            fast=FASTS,
            slow=SLOWS,
            stop_loss=STOPS,
            take_profit=TAKES,
            method="grid",
            max_tries=n,
            random_state=0,
        )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--bt-sample", type=int, default=100)
    args = parser.parse_args()
    bars = goog()
    raysweep_run(bars, 64)  # compile and warm
    vectorbt_run(bars, 64)
    best = {"raysweep": np.inf, "vectorbt": np.inf, "backtesting.py": np.inf}
    for _ in range(args.rounds):
        best["raysweep"] = min(best["raysweep"], raysweep_run(bars, args.configs))
        best["vectorbt"] = min(best["vectorbt"], vectorbt_run(bars, args.configs))
        best["backtesting.py"] = min(best["backtesting.py"], backtesting_run(bars, args.bt_sample))
    rate = {
        "raysweep": args.configs / best["raysweep"],
        "vectorbt": args.configs / best["vectorbt"],
        "backtesting.py": args.bt_sample / best["backtesting.py"],
    }
    for name, value in rate.items():
        print(f"{name:15s} {value:10.1f} configs/s per core")
    print(f"raysweep / vectorbt       {rate['raysweep'] / rate['vectorbt']:.1f}x (goal 20x)")
    ratio = rate["raysweep"] / rate["backtesting.py"]
    print(f"raysweep / backtesting.py {ratio:.0f}x (goal 1,000x)")


if __name__ == "__main__":
    main()
