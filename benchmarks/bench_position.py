"""A position-function strategy vs the batch kernel it mirrors, same grid, same run.

The position function is the SMA crossover as a user would write it for one config:
``weights = (sma(prices, fast) > sma(prices, slow))`` (long only, all in), registered with
``strategies.position_strategy`` and booked by the shared accounting. The batch kernel is
``SmaCross`` (vectorised over configs, SMAs shared per window). Both run on the S&P 500 series
that arch ships, over the same (fast, slow) grid with fast < slow and 10 bps of fees, fed in
sub-batches of 64 configs as ``sweep.engine._evaluate.SUB_BATCH`` does. Timed: ``evaluate`` alone
(the strategy's own cost) and ``sweep.evaluate_batch`` (strategy plus every metric: what a
sweep pays per config). A warm-up call first (numba compilation excluded); medians of
``--repeat`` runs, the two sides alternated in one process.

Run: ``python benchmarks/bench_position.py [--repeat N] [--fast-step S]`` (needs arch).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from strategies import Param, position_strategy
from strategies.sma_cross import SmaCross
from sweep import evaluate_batch, make_panel, panel_fingerprint, resolve, spec_from_dict
from sweep.spec._resolve import ResolvedSweep, full_grid

SUB_BATCH = 64


def _sma(prices: np.ndarray, window: int) -> np.ndarray:
    running = np.cumsum(prices, axis=0)
    out = np.full_like(prices, np.nan)
    out[window - 1] = running[window - 1] / window
    out[window:] = (running[window:] - running[:-window]) / window
    return out


@position_strategy(
    name="sma_position",
    long_only=True,
    params=[Param("fast", "int", window=True), Param("slow", "int", window=True)],
)
def sma_position(prices: np.ndarray, fast: int, slow: int) -> np.ndarray:
    """Long (all in) while the fast SMA is above the slow one."""
    with np.errstate(invalid="ignore"):
        return (_sma(prices, fast) > _sma(prices, slow)).astype(np.float64)


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--fast-step", type=int, default=3, help="step of the fast window grid")
    args = parser.parse_args()
    from arch.data import sp500

    close = sp500.load()["Adj Close"]
    panel = make_panel(close.index.to_numpy(), ["SP500"], close.to_numpy()[:, np.newaxis])
    pairs = np.array(
        [(f, s) for f in range(5, 51, args.fast_step) for s in range(10, 201, 5) if f < s]
    )
    n = pairs.shape[0]
    fees = 0.001
    kernel = SmaCross()

    def kernel_evaluate() -> None:
        for lo in range(0, n, SUB_BATCH):
            chunk = pairs[lo : lo + SUB_BATCH]
            m = chunk.shape[0]
            kernel.evaluate(
                panel,
                {
                    "fast": chunk[:, 0].copy(),
                    "slow": chunk[:, 1].copy(),
                    "fees": np.full(m, fees),
                    "asset": np.zeros(m, dtype=np.int64),
                },
                [],
            )

    def position_evaluate() -> None:
        for lo in range(0, n, SUB_BATCH):
            chunk = pairs[lo : lo + SUB_BATCH]
            m = chunk.shape[0]
            params = {p.name: np.full(m, p.default) for p in sma_position.params if p.default}
            params.update(fast=chunk[:, 0].copy(), slow=chunk[:, 1].copy())
            params["fee_bps"] = np.full(m, fees * 1e4)
            sma_position.evaluate(panel, params, [])

    metrics = {"bootstrap_reps": 200, "block_length": 21, "pbo_blocks": 16}
    grid = {"fast": pairs[:, 0].tolist(), "slow": pairs[:, 1].tolist(), "zip": [["fast", "slow"]]}
    doc = {"name": "bench", "seed": 1, "grid": grid, "metrics": metrics}
    kernel_sweep = resolve(
        spec_from_dict({**doc, "strategy": {"name": "sma_cross"}, "costs": {"fees": fees}}),
        panel,
    )
    # The function is defined in this script (__main__): no import path for a spec to name,
    # so the resolved sweep is assembled around the object (the engine evaluates objects).
    position_spec = spec_from_dict(
        {**doc, "strategy": {"name": "sma_position"}, "costs": {"fee_bps": fees * 1e4}}
    )
    position_sweep = ResolvedSweep(
        position_spec,
        sma_position,
        full_grid(position_spec, sma_position),
        panel,
        panel_fingerprint(panel),
    )
    everything = np.arange(n, dtype=np.int64)
    rows: dict[str, list[float]] = {"kernel": [], "position": [], "k_batch": [], "p_batch": []}
    for _ in range(args.repeat):  # alternate the sides so drift in machine load hits both
        rows["kernel"] += timed(kernel_evaluate, 1)
        rows["position"] += timed(position_evaluate, 1)
        rows["k_batch"] += timed(lambda: evaluate_batch(kernel_sweep, everything), 1)
        rows["p_batch"] += timed(lambda: evaluate_batch(position_sweep, everything), 1)
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"S&P 500: {panel.n_periods} dates; grid {n} configs (fast < slow), fees 10 bps")
    print(f"load (uptime): {os.getloadavg()}")
    print(
        f"strategy evaluate only   batch kernel {med['kernel']:.3f} s "
        f"({n / med['kernel']:,.0f} configs/s)   position function {med['position']:.3f} s "
        f"({n / med['position']:,.0f} configs/s)   ratio {med['position'] / med['kernel']:.2f}x"
    )
    print(
        f"evaluate_batch (metrics) batch kernel {med['k_batch']:.3f} s "
        f"({n / med['k_batch']:,.0f} configs/s)   position function {med['p_batch']:.3f} s "
        f"({n / med['p_batch']:,.0f} configs/s)   ratio {med['p_batch'] / med['k_batch']:.2f}x"
    )


if __name__ == "__main__":
    main()
