"""Digests of the kernels' outputs, to check that a faster kernel gives the same bits.

Each workload is evaluated through ``sweep.evaluate_batch`` (rows, null summary, fold
summary) in two batchings: one batch of 1,000 configs at a time in grid order, and a
shuffled order in uneven batches (so a row is computed among different neighbours). Both
must give the same table hash, and every digest must equal the one recorded for the base
commit (``benchmarks/bits_oracle.json``).

Workloads: the main job (``examples/momentum.toml``, 10,000 configs, 200 replications,
walk-forward folds) and the same grid without bootstrap; ``sma_cross`` on GOOG daily (7,925
configs, fees 0.001, 16 PBO blocks, 50 replications); ``xs_momentum`` (a position strategy)
on the synthetic panel.

Run: ``python benchmarks/bits_oracle.py [--record]`` (``--record`` writes the json; about
a minute on one core).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "benchmarks" / "bits_oracle.json"
sys.path.insert(0, str(REPO))

from sweep import evaluate_batch, load_spec, resolve, spec_from_dict  # noqa: E402
from sweep.store._fold_summary import folds_digest, merged_folds  # noqa: E402
from sweep.store._null_summary import merged_summary, summary_digest  # noqa: E402
from sweep.store._table_hash import table_hash  # noqa: E402


def _workloads() -> dict[str, Any]:

    main = resolve(load_spec(REPO / "examples" / "momentum.toml"))
    doc = main.spec.to_dict()
    doc["metrics"]["bootstrap_reps"] = 0
    plain = resolve(spec_from_dict(doc), main.panel)
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_sma_cross import goog

    close = goog()
    sma_doc = {
        "name": "oracle-sma",
        "seed": 11,
        "data": {"source": "memory"},
        "strategy": {"name": "sma_cross"},
        "grid": {
            "fast": {"start": 5, "stop": 51},
            "slow": {"start": 10, "stop": 201},
            "where": "fast < slow",
        },
        "costs": {"fees": 0.001},
        "metrics": {"bootstrap_reps": 50, "block_length": 10, "pbo_blocks": 16},
    }
    from sweep.data._panels import make_panel

    panel = make_panel(close.index, ["GOOG"], close.to_numpy()[:, np.newaxis])
    sma = resolve(spec_from_dict(sma_doc), panel)
    xs = resolve(
        spec_from_dict(
            {
                "name": "oracle-xs",
                "seed": 5,
                "data": {"source": "synthetic", "years": 8},
                "strategy": {"name": "xs_momentum"},
                "grid": {"lookback": [20, 60, 120], "skip": [0, 5], "top_k": [1, 2]},
                "costs": {"fee_bps": 5.0, "slippage_bps": 2.0},
                "metrics": {"bootstrap_reps": 30, "block_length": 10, "pbo_blocks": 8},
            }
        )
    )
    return {"momentum": main, "momentum_no_bootstrap": plain, "sma_cross": sma, "xs": xs}


def _digests(sweep: Any, batches: list[np.ndarray]) -> str:
    import pyarrow as pa

    results = [evaluate_batch(sweep, b) for b in batches]
    table = pa.concat_tables([r.table for r in results])
    schemas = [r.table.schema for r in results]
    null = merged_summary(schemas)
    folds = merged_folds(schemas)
    return " ".join(
        [
            table_hash(table),
            summary_digest(null) if null is not None else "-",
            folds_digest(folds) if folds is not None else "-",
        ]
    )


def measure() -> dict[str, str]:
    """Every workload's digests in both batchings (they must agree)."""
    out: dict[str, str] = {}
    for name, sweep in _workloads().items():
        n = len(sweep.grid)
        idx = np.arange(n, dtype=np.int64)
        in_order = [idx[lo : lo + 1000] for lo in range(0, n, 1000)]
        shuffled = np.random.default_rng(0).permutation(idx)
        cuts = np.cumsum(np.random.default_rng(1).integers(1, 700, size=n))
        cuts = cuts[cuts < n]
        uneven = np.split(shuffled, cuts)
        a, b = _digests(sweep, in_order), _digests(sweep, uneven)
        out[name] = a if a == b else f"BATCH-DEPENDENT {a} != {b}"
        print(name, out[name], flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="write bits_oracle.json")
    args = parser.parse_args()
    got = measure()
    if args.record:
        RECORD.write_text(json.dumps(got, indent=1) + "\n")
        return
    want = json.loads(RECORD.read_text())
    bad = [k for k in want if got.get(k) != want[k]]
    print("SAME BITS" if not bad else f"DIFFERENT BITS: {bad}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
