"""The per-config metric passes at the base commit and now, side by side, on the same rows.

Stages (issue 43; ``docs/benchmarks/roofline.md`` section 5): ``path_statistics`` of the returns
(equity path, no blocks) and of the excess returns (16 PBO blocks, no equity path),
``fold_values`` of the excess returns on the main job's walk-forward folds, and the whole of
``config_metrics`` without bootstrap draws (the bootstrap stages are timed elsewhere). The
rows are the main job's (``examples/momentum.toml``): strategy outputs of sub-batches of 64
configs, as ``sweep/engine/_evaluate.py`` makes them. The base versions of
``stats/_row_kernel.py``, ``stats/_folds.py`` and ``sweep/engine/_metrics.py`` are read from
git (``BASE``) and loaded beside the current ones; every output is checked bit for bit.

Run: ``python benchmarks/bench_metric_passes.py [--batches 4] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

BASE = "76bdab2"
SUB_BATCH = 64

from bench_against_base import base_module  # noqa: E402

import sweep  # noqa: E402
from stats import _folds as new_folds  # noqa: E402
from stats import _row_kernel as new_kernel  # noqa: E402
from sweep.data._benchmark import benchmark_returns  # noqa: E402
from sweep.engine import _metrics as new_metrics  # noqa: E402
from sweep.engine._evaluate import (  # noqa: E402
    _LazyGenerators,
    _run_strategy,
    config_ids_at,
)


def _same(a: Any, b: Any) -> bool:
    """Bitwise equality of two arrays (float or int), or of two dicts / tuples of them."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if a is None or isinstance(a, int):
        return a == b
    x, y = np.asarray(a), np.asarray(b)
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def _path_fields(p: Any) -> tuple[Any, ...]:
    return (
        p.mean,
        p.m2,
        p.m3,
        p.m4,
        p.total_return,
        p.max_drawdown,
        p.block_count,
        p.block_sum,
        p.block_sumsq,
    )


def _best(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    """Time each stage at the base and now (best of ``--repeat``, alternating); check bits."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=4, help="sub-batches of 64 configs")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    sw = sweep.resolve(sweep.load_spec(REPO / "examples" / "momentum.toml"))
    bench = benchmark_returns(sw.spec.metrics.benchmark, sw.panel)
    settings = sw.spec.metrics
    plan = sw.fold_plan
    assert plan is not None
    rng = np.random.default_rng(43)
    outputs = []
    for lo in rng.choice(len(sw.grid) // SUB_BATCH, args.batches, replace=False) * SUB_BATCH:
        idx = np.arange(lo, lo + SUB_BATCH, dtype=np.int64)
        params = sw.grid.params_at(idx)
        output, _ = _run_strategy(
            sw, params, _LazyGenerators(sw.spec.seed, config_ids_at(sw, params))
        )
        outputs.append(output)
    n_configs = SUB_BATCH * len(outputs)
    excess = [np.ascontiguousarray(o.returns - bench[np.newaxis, :]) for o in outputs]

    base_kernel = base_module(BASE, "stats/_row_kernel.py", "base_row_kernel")
    base_folds = base_module(BASE, "stats/_folds.py", "base_folds")
    base_metrics = base_module(BASE, "sweep/engine/_metrics.py", "base_metrics")
    base_metrics.path_statistics = base_kernel.path_statistics  # type: ignore[attr-defined]
    base_metrics.fold_values = base_folds.fold_values  # type: ignore[attr-defined]

    stages: dict[str, tuple[Callable[[Any], Callable[[], Any]], ModuleType, ModuleType]] = {
        "path_statistics(returns, 0 blocks)": (
            lambda m: lambda: [_path_fields(m.path_statistics(o.returns, 0)) for o in outputs],
            base_kernel,
            new_kernel,
        ),
        "path_statistics(excess, 16 blocks, no equity)": (
            lambda m: (
                lambda: [_path_fields(m.path_statistics(e, 16, equity_path=False)) for e in excess]
            ),
            base_kernel,
            new_kernel,
        ),
        "fold_values(excess, walk-forward, sharpe)": (
            lambda m: lambda: [m.fold_values(e, plan, "sharpe") for e in excess],
            base_folds,
            new_folds,
        ),
        "config_metrics (no bootstrap)": (
            lambda m: (
                lambda: [
                    (lambda c: (c.columns, c.fold_values))(
                        m.config_metrics(o, bench, None, settings, plan, "sharpe")
                    )
                    for o in outputs
                ]
            ),
            base_metrics,
            new_metrics,
        ),
    }
    print(f"momentum main job: {n_configs} configs, sub-batches of {SUB_BATCH}, T {bench.size}")
    print(f"{'stage':48s} {'base us/cfg':>12s} {'new us/cfg':>11s} {'speed-up':>9s}")
    for name, (make, base_mod, new_mod) in stages.items():
        base_fn, new_fn = make(base_mod), make(new_mod)
        assert _same(base_fn(), new_fn()), f"{name}: the bits differ"
        times = {"base": float("inf"), "new": float("inf")}
        for _ in range(args.repeat):  # alternate, best of each
            times["base"] = min(times["base"], _best(base_fn, 1))
            times["new"] = min(times["new"], _best(new_fn, 1))
        b, n = (times[k] / n_configs * 1e6 for k in ("base", "new"))
        print(f"{name:48s} {b:12.2f} {n:11.2f} {b / n:8.2f}x")
    print("outputs bitwise equal: yes")


if __name__ == "__main__":
    main()
