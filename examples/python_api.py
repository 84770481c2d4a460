"""Evaluate the two example grids through the Python API (no CLI, no run folder).

python examples/python_api.py
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from sweep import evaluate_batch, load_spec, resolve, run_sweep

HERE = Path(__file__).resolve().parent

for name in ("momentum.toml", "sma_cross.toml"):
    sweep = resolve(load_spec(HERE / name))
    t0 = time.perf_counter()
    table = evaluate_batch(sweep, np.arange(len(sweep.grid), dtype=np.int64)).table
    seconds = time.perf_counter() - t0
    frame = table.to_pandas().sort_values("sharpe", ascending=False)
    best = frame.iloc[0]
    params = {n: best[n].item() for n in sweep.grid.names}
    print(
        f"{name}: {len(frame):,} configs in {seconds:.1f} s; best {params} "
        f"annualised Sharpe {best['sharpe_ann']:.3f}"
    )

# The same, checkpointed and resumable, in a run folder:
summary = run_sweep(load_spec(HERE / "sma_cross.toml"), "runs/sma-cross-demo", progress=False)
print(f"run folder {summary.run_dir}: {summary.done:,} configs, table hash {summary.table_hash}")
