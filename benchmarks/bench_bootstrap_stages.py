"""The bootstrap stages, this tree against the base commit, alternated in one run, same bits.

Stages (issue 43; ``docs/benchmarks/roofline.md`` section 5): ``bootstrap_long_run_sd``,
``centred_resample_means`` and ``summarize_null``, on the main job's excess returns
(``examples/momentum.toml``: T = 6,524, 200 replications, circular blocks of 21) for
``--configs`` configs (spread over the grid), in sub-batches of 64 rows as the engine calls
them (``sweep.engine._evaluate.SUB_BATCH``). The base versions of ``stats/_data_snooping.py``
and ``stats/_bootstrap_variance.py`` are read from ``git show BASE:path`` and loaded as
separate modules. Each stage is timed alternately (base, this tree), best of ``--rounds``,
after a warm-up (compilation excluded); every output is checked bit for bit against the base.

Run: ``python benchmarks/bench_bootstrap_stages.py [--base 76bdab2] [--configs 1000]
[--rounds 5]``.
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

from bench_against_base import base_module  # noqa: E402

from stats import _bootstrap_variance as new_variance  # noqa: E402
from stats import _data_snooping as new_snooping  # noqa: E402
from sweep import load_spec, resolve  # noqa: E402
from sweep.data._benchmark import benchmark_returns  # noqa: E402
from sweep.engine._evaluate import SUB_BATCH, config_returns, sweep_draws  # noqa: E402


def same_bits(a: Any, b: Any) -> bool:
    """Bitwise equality of arrays, or of every array field of two summaries."""
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    fields = ("n_configs", "reality_check", "spa", "null_sharpe", "top_value", "top_index")
    return all(same_bits(np.asarray(getattr(a, f)), np.asarray(getattr(b, f))) for f in fields)


def best_of(fn: Callable[[], Any], rounds: int) -> float:
    """Best wall time of ``rounds`` calls."""
    best = np.inf
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return float(best)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="76bdab2")
    parser.add_argument("--configs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    base_snooping = base_module(args.base, "stats/_data_snooping.py", "base_data_snooping")
    base_variance = base_module(args.base, "stats/_bootstrap_variance.py", "base_variance")

    sweep = resolve(load_spec(REPO / "examples" / "momentum.toml"))
    draws = sweep_draws(sweep)
    assert draws is not None
    idx = np.linspace(0, len(sweep.grid) - 1, args.configs).astype(np.int64)
    bench = benchmark_returns(sweep.spec.metrics.benchmark, sweep.panel)
    excess = np.ascontiguousarray(config_returns(sweep, idx) - bench[np.newaxis, :])
    batches = [excess[lo : lo + SUB_BATCH] for lo in range(0, excess.shape[0], SUB_BATCH)]
    n = draws.n_obs
    top_k = sweep.spec.metrics.stepm_top_k
    mean = [b.mean(axis=1) for b in batches]
    std = [b.std(axis=1, ddof=1) for b in batches]
    omega = [base_variance.bootstrap_long_run_sd(b, draws) for b in batches]
    centred = [base_snooping.centred_resample_means(b, draws) for b in batches]
    grid = [idx[lo : lo + SUB_BATCH] for lo in range(0, excess.shape[0], SUB_BATCH)]

    def stages(variance: ModuleType, snooping: ModuleType) -> dict[str, Callable[[], list[Any]]]:
        return {
            "bootstrap_long_run_sd": lambda: [
                variance.bootstrap_long_run_sd(b, draws) for b in batches
            ],
            "centred_resample_means": lambda: [
                snooping.centred_resample_means(b, draws) for b in batches
            ],
            "summarize_null": lambda: [
                snooping.summarize_null(g, mu, sd, om, c, n, top_k)
                for g, mu, sd, om, c in zip(grid, mean, std, omega, centred, strict=True)
            ],
        }

    base_stages = stages(base_variance, base_snooping)
    new_stages = stages(new_variance, new_snooping)
    print(f"{args.configs} configs, T = {n}, {draws.reps} reps, sub-batches of {SUB_BATCH}")
    print(f"{'stage':24s} {'base us/cfg':>12s} {'new us/cfg':>12s} {'ratio':>7s}  bits")
    total_base = total_new = 0.0
    for name in base_stages:
        old_out, new_out = base_stages[name](), new_stages[name]()  # warm-up, compile
        equal = all(same_bits(a, b) for a, b in zip(old_out, new_out, strict=True))
        assert equal, f"{name}: outputs differ from the base"
        t_base = t_new = np.inf
        for _ in range(args.rounds):
            t_base = min(t_base, best_of(base_stages[name], 1))
            t_new = min(t_new, best_of(new_stages[name], 1))
        total_base += t_base
        total_new += t_new
        per = 1e6 / args.configs
        print(
            f"{name:24s} {t_base * per:12.2f} {t_new * per:12.2f} "
            f"{t_base / t_new:7.2f}  {'same' if equal else 'DIFFER'}"
        )
    per = 1e6 / args.configs
    print(
        f"{'all three':24s} {total_base * per:12.2f} {total_new * per:12.2f} "
        f"{total_base / total_new:7.2f}"
    )


if __name__ == "__main__":
    main()
