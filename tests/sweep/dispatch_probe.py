"""Print one digest per workload, for ``test_same_bits_under_every_dispatch.py``.

Run as ``python -m tests.sweep.dispatch_probe REPORT_RUN_DIR`` in a child process whose
environment selects a CPU dispatch level (``NPY_DISABLE_CPU_FEATURES``, ``NUMBA_CPU_NAME``,
``GLIBC_TUNABLES``, ``OPENBLAS_CORETYPE``). Each workload's rows, null summary and fold
summary are hashed; the report of an existing run folder is hashed without its
``generated`` block. The parent asserts every child prints the same lines.
"""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np

from stats import norm_cdf, norm_ppf
from strategies import panel_fingerprint
from sweep import evaluate_batch, resolve, spec_from_dict, table_hash
from sweep.data._panels import synthetic_panel
from sweep.report import ReportOptions, build_report
from sweep.store._fold_summary import folds_digest, merged_folds
from sweep.store._null_summary import merged_summary, summary_digest

MAIN_JOB_SLICE = {
    "name": "probe-momentum",
    "seed": 20260501,
    "data": {"source": "synthetic"},
    "strategy": {"name": "momentum"},
    "grid": {"lookback": [20, 41, 62, 119, 251, 317], "band": [0.0, 0.0101, 0.02]},
    "metrics": {
        "benchmark": "buy_and_hold",
        "bootstrap_reps": 50,
        "block_length": 21,
        "pbo_blocks": 16,
    },
    "validation": {
        "metric": "sharpe",
        "walk_forward": {"train": "3y", "test": "6m", "anchored": False, "purge": "5d"},
    },
}
SMA_CROSS = {
    "name": "probe-sma",
    "seed": 3,
    "data": {"source": "synthetic", "years": 8},
    "strategy": {"name": "sma_cross"},
    "grid": {"fast": [5, 10, 20], "slow": [50, 100]},
    "costs": {"fees": 0.001},
    "metrics": {"bootstrap_reps": 30, "block_length": 10, "pbo_blocks": 8},
}
POSITION = {
    "name": "probe-xs",
    "seed": 5,
    "data": {"source": "synthetic", "years": 8},
    "strategy": {"name": "xs_momentum"},
    "grid": {"lookback": [20, 60], "skip": [0, 5], "top_k": [1, 2]},
    "costs": {"fee_bps": 5.0, "slippage_bps": 2.0},
    "metrics": {"bootstrap_reps": 30, "block_length": 10, "pbo_blocks": 8},
}

#: Stops and take-profits filled inside the bar on the synthetic panel's bars (the bar book).
STOPS = {
    "name": "probe-stops",
    "seed": 7,
    "data": {"source": "synthetic", "years": 8, "ohlcv": True},
    "strategy": {"name": "xs_momentum"},
    "grid": {"lookback": [20, 60], "stop_loss": [0.0, 0.03], "take_profit": [0.05]},
    "costs": {"fee_bps": 5.0, "slippage_bps": 2.0, "trailing_stop": 0.04},
    "metrics": {"bootstrap_reps": 30, "block_length": 10, "pbo_blocks": 8},
}


def _digest(doc: dict) -> str:
    sweep = resolve(spec_from_dict(doc))
    result = evaluate_batch(sweep, np.arange(len(sweep.grid), dtype=np.int64))
    schema = result.table.schema
    null = merged_summary([schema])
    folds = merged_folds([schema])
    return " ".join(
        [
            table_hash(result.table),
            summary_digest(null) if null is not None else "-",
            folds_digest(folds) if folds is not None else "-",
        ]
    )


def _report_digest(run_dir: str) -> str:
    doc = build_report(run_dir, ReportOptions()).to_json()
    doc.pop("generated", None)
    # The descriptive dimensionality runs through BLAS/LAPACK (a Gram matrix and its
    # eigenvalues): the one part of the report allowed to move in its last bits; the parent
    # compares it to a relative 1e-5 (its Gram matrix is float32) instead.
    dims = doc["multiple_testing"].pop("dimensionality")
    digest = hashlib.sha256(json.dumps(doc, sort_keys=True, default=repr).encode()).hexdigest()
    return f"{digest} {json.dumps(dims, sort_keys=True, default=repr)}"


def make_run(run_dir: str) -> None:
    """Run the main job's slice into ``run_dir`` (the folder every child reports on)."""
    from sweep import run_sweep

    run_sweep(spec_from_dict(MAIN_JOB_SLICE), run_dir, executor="local", progress=False)


def main() -> None:
    """Print the digests (one line per workload)."""
    ohlcv = synthetic_panel(years=8, ohlcv=True)  # open, high, low, volume: fixed math too
    print("panel", panel_fingerprint(synthetic_panel()), panel_fingerprint(ohlcv))
    workloads = (
        ("momentum", MAIN_JOB_SLICE),
        ("sma_cross", SMA_CROSS),
        ("xs", POSITION),
        ("stops", STOPS),
    )
    for name, doc in workloads:
        print(name, _digest(doc))
    points = np.linspace(-9.0, 9.0, 37)
    quantiles = [norm_ppf(p) for p in (1e-12, 0.01, 0.3, 0.5, 0.95, 1 - 1e-9)]
    cdfs = [norm_cdf(x) for x in points]
    print("normal", hashlib.sha256(np.array(cdfs + quantiles).tobytes()).hexdigest())
    if len(sys.argv) > 1:
        print("report", _report_digest(sys.argv[1]))


if __name__ == "__main__":
    main()
