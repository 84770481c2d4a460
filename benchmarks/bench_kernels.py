"""Kernel + metrics throughput on the 10,000-config momentum grid, and the config-id cost.

Measured in one process on one core, side by side in one run:

1. configs/s of ``evaluate_batch`` (strategy kernel, per-config metrics against the
   buy-and-hold benchmark, ids and seeds, arrow table, walk-forward fold values) on the
   3-asset, 25-year synthetic panel of ``examples/momentum.toml``: without bootstrap and
   with the main job's 200 joint circular block-bootstrap replications, alternated, best of
   ``--rounds`` rounds (batches of 1,000 configs). Goals: >= 10,000 configs/s/core without
   bootstrap (issue 15), >= 5,000 with 200 replications (issue 11).
2. config ids of the 10,000 main-grid configs: the previous ``config_ids`` (one
   ``json.dumps`` per value per config; kept verbatim below as the baseline) vs the
   vectorised one (each column's distinct values encoded once), alternated, best of rounds;
   the ids are checked identical. Also their share of ``sma_cross``'s ``evaluate_batch``
   time on ``examples/sma_cross.toml`` (issue 15 measured about 24% before).
3. peak memory traced per 1,000 configs with bootstrap.

Run: ``python benchmarks/bench_kernels.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
import tracemalloc
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from sweep import config_ids, evaluate_batch, load_spec, resolve, spec_from_dict
from sweep.spec._config_identity import _encoded, _encoder

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def previous_config_ids(
    strategy: str, version: str, params: Mapping[str, Sequence[object]]
) -> list[str]:
    """The ids as computed before issue 15 (per config, per value ``json.dumps``)."""
    names = sorted(params)
    encode = _encoder(strategy, version, names)
    columns = [list(_encoded(params[n])) for n in names]
    return [
        hashlib.sha256(encode(values)).digest()[:16].hex() for values in zip(*columns, strict=True)
    ]


def batch_seconds(sweep, idx: np.ndarray, size: int = 1000) -> float:
    t0 = time.perf_counter()
    for lo in range(0, idx.shape[0], size):
        evaluate_batch(sweep, idx[lo : lo + size])
    return time.perf_counter() - t0


def best_alternated(fns: dict, rounds: int) -> dict[str, float]:
    best = dict.fromkeys(fns, np.inf)
    for _ in range(rounds):
        for label, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[label] = min(best[label], time.perf_counter() - t0)
    return best


def peak_mib_per_1000(sweep) -> float:
    idx = np.arange(1000, dtype=np.int64)
    tracemalloc.start()
    evaluate_batch(sweep, idx)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    base = resolve(load_spec(EXAMPLES / "momentum.toml"))
    doc = base.spec.to_dict()
    doc["metrics"]["bootstrap_reps"] = 0
    no_boot = resolve(spec_from_dict(doc), base.panel)
    idx = np.arange(len(base.grid), dtype=np.int64)
    reps = base.spec.metrics.bootstrap_reps
    for sweep in (no_boot, base):
        evaluate_batch(sweep, idx[:64])  # compile / warm up
    best = best_alternated(
        {
            "no_bootstrap": lambda: batch_seconds(no_boot, idx),
            "bootstrap": lambda: batch_seconds(base, idx),
        },
        args.rounds,
    )
    n = idx.shape[0]
    rate = {k: n / v for k, v in best.items()}
    print(
        f"momentum main grid, {n:,} configs, panel {base.panel.n_periods} x {base.panel.n_assets}"
    )
    print(
        f"  evaluate_batch without bootstrap: {rate['no_bootstrap']:8,.0f} configs/s/core "
        f"(goal 10,000: {rate['no_bootstrap'] / 10_000:.2f}x of it)"
    )
    print(
        f"  evaluate_batch with {reps} reps:     {rate['bootstrap']:8,.0f} configs/s/core "
        f"(goal 5,000: {rate['bootstrap'] / 5_000:.2f}x of it)"
    )

    params = base.grid.params_at(idx)
    lists = {k: v.tolist() for k, v in params.items()}
    new_ids = config_ids("momentum", "1", params)
    assert new_ids == previous_config_ids("momentum", "1", lists), "ids changed"
    ids = best_alternated(
        {
            "previous": lambda: previous_config_ids(
                "momentum", "1", {k: v.tolist() for k, v in params.items()}
            ),
            "vectorised": lambda: config_ids("momentum", "1", params),
        },
        args.rounds,
    )
    print(
        f"config ids of {n:,} configs: previous {ids['previous'] * 1e3:.1f} ms, vectorised "
        f"{ids['vectorised'] * 1e3:.1f} ms: {ids['previous'] / ids['vectorised']:.1f}x faster, "
        "identical ids"
    )

    sma = resolve(load_spec(EXAMPLES / "sma_cross.toml"))
    sidx = np.arange(len(sma.grid), dtype=np.int64)
    sparams = sma.grid.params_at(sidx)
    evaluate_batch(sma, sidx[:64])
    sma_best = best_alternated(
        {
            "evaluate": lambda: batch_seconds(sma, sidx),
            "ids_previous": lambda: [
                previous_config_ids(
                    "sma_cross", "1", {k: v[lo : lo + 64].tolist() for k, v in sparams.items()}
                )
                for lo in range(0, sidx.shape[0], 64)
            ],
            "ids_vectorised": lambda: [
                config_ids("sma_cross", "1", {k: v[lo : lo + 64] for k, v in sparams.items()})
                for lo in range(0, sidx.shape[0], 64)
            ],
        },
        args.rounds,
    )
    ev = sma_best["evaluate"]
    print(
        f"sma_cross ({sidx.shape[0]:,} configs, {sma.spec.metrics.bootstrap_reps} reps): "
        f"evaluate_batch {ev:.3f} s; ids in it now {sma_best['ids_vectorised'] / ev:.1%} of it "
        f"(previous recipe would add {sma_best['ids_previous'] / ev:.1%})"
    )
    print(f"peak traced memory per 1,000 configs ({reps} reps): {peak_mib_per_1000(base):.1f} MiB")
    print(json.dumps({"rates": rate, "ids_seconds": ids, "sma_cross_seconds": sma_best}))


if __name__ == "__main__":
    main()
