"""SmaCross vs vectorbt on the S&P 500 (arch's bundled daily series), same grid, same run.

Grid: fast 5..50, slow 10..200, fast < slow (7,925 configs), fees 0.001 of traded value.
vectorbt: ``MA.run`` over the fast and the slow window lists (one column per config),
``ma_crossed_above`` / ``ma_crossed_below``, ``Portfolio.from_signals(..., fees=0.001)`` and
``total_return()``, timed after a warm-up call (numba compilation excluded).
raysweep: ``SmaCross.evaluate`` plus ``prod(1 + returns) - 1`` per config, timed after a
warm-up call, once as one batch and once in sub-batches of 64 configs (as the engine's
``sweep._evaluate.SUB_BATCH`` feeds a kernel).

Run: ``python benchmarks/bench_sma_cross.py [--repeat N]`` (needs vectorbt and arch).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from strategies.sma_cross import SmaCross
from sweep._data import Panel, make_panel

FEES = 0.001


def grid() -> np.ndarray:
    return np.array([(f, s) for f in range(5, 51) for s in range(10, 201) if f < s])


def vectorbt_total_returns(close: pd.Series, pairs: np.ndarray) -> np.ndarray:
    import vectorbt as vbt

    fast = vbt.MA.run(close, window=pairs[:, 0].tolist(), short_name="fast")
    slow = vbt.MA.run(close, window=pairs[:, 1].tolist(), short_name="slow")
    entries = fast.ma_crossed_above(slow)
    exits = fast.ma_crossed_below(slow)
    pf = vbt.Portfolio.from_signals(close, entries, exits, fees=FEES)
    return np.asarray(pf.total_return().to_numpy(), dtype=np.float64)


def raysweep_total_returns(panel: Panel, pairs: np.ndarray, batch: int) -> np.ndarray:
    kernel = SmaCross()
    n = pairs.shape[0]
    total = np.empty(n)
    for lo in range(0, n, batch):
        chunk = pairs[lo : lo + batch]
        params = {
            "fast": chunk[:, 0].astype(np.int64),
            "slow": chunk[:, 1].astype(np.int64),
            "fees": np.full(chunk.shape[0], FEES),
            "asset": np.zeros(chunk.shape[0], dtype=np.int64),
        }
        out = kernel.evaluate(panel, params, [])
        total[lo : lo + batch] = np.prod(1.0 + out.returns, axis=1) - 1.0
    return total


def timed(fn: Callable[[], Any], repeat: int) -> tuple[Any, float, list[float]]:
    """Warm up once, then time ``repeat`` calls; return the result, warm-up and timed seconds."""
    start = time.perf_counter()
    result = fn()
    warm = time.perf_counter() - start
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return result, warm, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed calls after the warm-up")
    args = parser.parse_args()

    from arch.data import sp500

    close = sp500.load()["Adj Close"]
    panel = make_panel(close.index, ["SP500"], close.to_numpy()[:, np.newaxis])
    pairs = grid()
    n = pairs.shape[0]
    print(
        f"S&P 500 adjusted close: {close.shape[0]} days ({close.index[0].date()} .. "
        f"{close.index[-1].date()}); {n} configs; fees {FEES}"
    )

    with warnings.catch_warnings():
        # numba's reflected-list notice when it compiles vectorbt on a cold cache
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        reference, vbt_warm, vbt_times = timed(
            lambda: vectorbt_total_returns(close, pairs), args.repeat
        )
    runs = {"vectorbt 1.2 (one call)": (vbt_warm, vbt_times)}
    totals = {}
    for label, batch in [("SmaCross (one batch)", n), ("SmaCross (batches of 64)", 64)]:
        totals[label], warm, times = timed(
            lambda b=batch: raysweep_total_returns(panel, pairs, b), args.repeat
        )
        runs[label] = (warm, times)

    vbt_best = min(vbt_times)
    print(
        f"\n{'':28s} {'warm-up s':>10s} {'best s':>8s} {'median s':>9s} {'configs/s':>10s} "
        f"{'x vbt':>7s}"
    )
    for label, (warm, times) in runs.items():
        best = min(times)
        print(
            f"{label:28s} {warm:10.3f} {best:8.3f} {statistics.median(times):9.3f} "
            f"{n / best:10.0f} {vbt_best / best:7.1f}"
        )
    print()
    for label, total in totals.items():
        rel = np.abs(total - reference) / np.abs(reference)
        worst = int(np.argmax(rel))
        print(
            f"{label}: max relative difference of total returns vs vectorbt {rel.max():.2e} "
            f"(fast={pairs[worst, 0]}, slow={pairs[worst, 1]}: {total[worst]:.12g} vs "
            f"{reference[worst]:.12g}); total returns range {total.min():.4f} .. "
            f"{total.max():.4f}"
        )
    one, many = totals.values()
    print(f"one batch vs batches of 64 bitwise identical: {one.tobytes() == many.tobytes()}")


if __name__ == "__main__":
    main()
