"""The momentum and sma_cross kernels against the base commit's, same inputs, same bits.

Each kernel evaluates its whole grid the way the engine feeds it (``evaluate`` on
sub-batches of 64 configs in grid order, one panel object): momentum on the main job's
panel (``examples/momentum.toml``: 3 assets, 6,524 returns, 100 lookbacks x 100 bands),
sma_cross on GOOG daily (1,047 closes; fast 5..50 x slow 10..200, fast < slow: 7,925
configs; fees 0.001). The base versions are the files of commit ``--base`` (default
``76bdab2``, ``git show``), loaded beside the current ones. The two are timed alternately,
best of ``--rounds``; every output (returns, turnover, n_trades) must be bitwise equal.

Run: ``python benchmarks/bench_strategy_kernels.py [--rounds N] [--base COMMIT]
[--kernels momentum sma_cross]`` (e.g. ``--base fef7ba3 --kernels momentum`` for the
banded-positions kernel against the commit that memoised the signals).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_against_base import base_module  # noqa: E402

from strategies._panel import Panel, frozen_panel  # noqa: E402
from strategies.momentum import Momentum  # noqa: E402
from strategies.sma_cross import SmaCross  # noqa: E402

BASE = "76bdab2"
SUB_BATCH = 64


def _momentum_job() -> tuple[Panel, list[dict[str, np.ndarray]]]:
    from sweep import load_spec, resolve

    panel = frozen_panel(resolve(load_spec(REPO / "examples" / "momentum.toml")).panel)
    lookback, band = np.meshgrid(
        np.arange(20, 320, 3, dtype=np.int64), np.linspace(0.0, 0.02, 100), indexing="ij"
    )
    lookback, band = lookback.ravel(), band.ravel()
    batches = [
        {
            "lookback": lookback[lo : lo + SUB_BATCH],
            "band": band[lo : lo + SUB_BATCH],
            "cost": np.zeros(min(SUB_BATCH, lookback.shape[0] - lo)),
        }
        for lo in range(0, lookback.shape[0], SUB_BATCH)
    ]
    return panel, batches


def _sma_job() -> tuple[Panel, list[dict[str, np.ndarray]]]:
    from bench_sma_cross import goog, grid

    from sweep.data._panels import make_panel

    close = goog()
    panel = frozen_panel(make_panel(close.index, ["GOOG"], close.to_numpy()[:, np.newaxis]))
    pairs = grid()
    batches = [
        {
            "fast": pairs[lo : lo + SUB_BATCH, 0].astype(np.int64),
            "slow": pairs[lo : lo + SUB_BATCH, 1].astype(np.int64),
            "fees": np.full(min(SUB_BATCH, pairs.shape[0] - lo), 0.001),
            "asset": np.zeros(min(SUB_BATCH, pairs.shape[0] - lo), dtype=np.int64),
        }
        for lo in range(0, pairs.shape[0], SUB_BATCH)
    ]
    return panel, batches


def _run(kernel: Any, panel: Panel, batches: list[dict[str, np.ndarray]]) -> None:
    for params in batches:
        kernel.evaluate(panel, params, [])


def _same(base: Any, new: Any, panel: Panel, batches: list[dict[str, np.ndarray]]) -> bool:
    """Whether every sub-batch's outputs are bitwise equal (compared batch by batch)."""
    for params in batches:
        x, y = base.evaluate(panel, params, []), new.evaluate(panel, params, [])
        if not (
            x.returns.tobytes() == y.returns.tobytes()
            and x.turnover.tobytes() == y.turnover.tobytes()
            and x.n_trades.tobytes() == y.n_trades.tobytes()
        ):
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternated timed rounds")
    parser.add_argument("--base", default=BASE, help="the commit to compare against")
    parser.add_argument(
        "--kernels",
        nargs="+",
        choices=("momentum", "sma_cross"),
        default=["momentum", "sma_cross"],
        help="which kernels to time",
    )
    args = parser.parse_args()
    jobs = {}
    if "momentum" in args.kernels:
        base_momentum = base_module(args.base, "strategies/momentum.py", "_base_momentum")
        jobs["momentum"] = (base_momentum.Momentum(), Momentum(), *_momentum_job())
    if "sma_cross" in args.kernels:
        base_sma = base_module(args.base, "strategies/sma_cross.py", "_base_sma_cross")
        jobs["sma_cross"] = (base_sma.SmaCross(), SmaCross(), *_sma_job())
    print(f"base {args.base}, best of {args.rounds} alternated rounds")
    print(f"{'kernel':10s} {'configs':>8s} {'base s':>8s} {'new s':>8s} {'ratio':>6s}  bits")
    for name, (base, new, panel, batches) in jobs.items():
        n = sum(b[next(iter(b))].shape[0] for b in batches)
        same = _same(base, new, panel, batches)
        best = {"base": np.inf, "new": np.inf}
        for _ in range(args.rounds):
            for label, kernel in (("base", base), ("new", new)):
                t0 = time.perf_counter()
                _run(kernel, panel, batches)
                best[label] = min(best[label], time.perf_counter() - t0)
        same = same and _same(base, new, panel, batches)
        ratio = best["base"] / best["new"]
        verdict = "same" if same else "DIFFERENT"
        print(f"{name:10s} {n:8d} {best['base']:8.3f} {best['new']:8.3f} {ratio:6.2f}  {verdict}")
        assert same, f"{name}: outputs differ from the base"


if __name__ == "__main__":
    main()
