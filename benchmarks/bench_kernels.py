"""Kernel + metrics throughput on the 10,000-config momentum grid (issues: core engine, 11).

Measures, in one process on one core, configs/s of ``evaluate_batch`` (strategy kernel,
per-config metrics against the buy-and-hold benchmark, ids and seeds, arrow table and the
batch's joint-bootstrap null summary) on the 3-asset, 25-year synthetic panel: without
bootstrap and with the main job's 200 joint circular block-bootstrap replications, side by
side in one run, plus the peak memory traced per 1,000 configs. Goal (issue 11): at least
5,000 configs/s/core with 200 replications. Run: ``python benchmarks/bench_kernels.py``.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import numpy as np

from sweep import evaluate_batch, load_spec, resolve, spec_from_dict

SPEC = Path(__file__).resolve().parents[1] / "examples" / "momentum.toml"


def throughput(sweep, n_rounds: int = 3) -> float:
    idx = np.arange(len(sweep.grid), dtype=np.int64)
    evaluate_batch(sweep, idx[:64])  # compile / warm up
    best = np.inf
    for _ in range(n_rounds):
        t0 = time.perf_counter()
        for lo in range(0, idx.shape[0], 1000):
            evaluate_batch(sweep, idx[lo : lo + 1000])
        best = min(best, time.perf_counter() - t0)
    return idx.shape[0] / best


def peak_mib_per_1000(sweep) -> float:
    idx = np.arange(1000, dtype=np.int64)
    tracemalloc.start()
    evaluate_batch(sweep, idx)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    base = resolve(load_spec(SPEC))
    doc = base.spec.to_dict()
    doc["metrics"]["bootstrap_reps"] = 0
    no_boot = resolve(spec_from_dict(doc), base.panel)
    results = {
        "grid_configs": len(base.grid),
        "panel": [base.panel.n_periods, base.panel.n_assets],
        "configs_per_s_no_bootstrap": throughput(no_boot),
        f"configs_per_s_bootstrap_{base.spec.metrics.bootstrap_reps}": throughput(base),
        "peak_mib_per_1000_configs_bootstrap": peak_mib_per_1000(base),
    }
    results["bootstrap_cost_ratio"] = (
        results["configs_per_s_no_bootstrap"]
        / results[f"configs_per_s_bootstrap_{base.spec.metrics.bootstrap_reps}"]
    )
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
