"""Invariant 1: a config's row is bitwise identical alone or in any batch, in any order."""

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep import evaluate_batch, resolve, spec_from_dict, synthetic_panel
from tests.helpers import small_spec_dict

PANEL = synthetic_panel(years=4)
SWEEPS = {
    name: resolve(spec_from_dict(small_spec_dict(**overrides)), PANEL)
    for name, overrides in {
        "momentum": {},
        "wma_trend": {
            "strategy": {"name": "wma_trend"},
            "grid": {"window": {"start": 2, "stop": 200, "step": 7}},
            "costs": {"cost": 0.001},
            "metrics": {
                "bootstrap_reps": 10,
                "block_length": 7,
                "bootstrap_method": "stationary",
                "pbo_blocks": 6,
            },
        },
    }.items()
}
ALONE = {
    name: {i: evaluate_batch(s, np.array([i])).table for i in range(len(s.grid))}
    for name, s in SWEEPS.items()
}


def _rows_by_index(table: pa.Table) -> dict[int, pa.Table]:
    idx = table.column("grid_index").to_pylist()
    return {i: table.slice(k, 1) for k, i in enumerate(idx)}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), name=st.sampled_from(sorted(SWEEPS)))
def test_rows_do_not_depend_on_batch_composition_or_order(data, name):
    sweep = SWEEPS[name]
    n = len(sweep.grid)
    subset = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    batch = evaluate_batch(sweep, np.array(subset, dtype=np.int64)).table
    for i, row in _rows_by_index(batch).items():
        alone = ALONE[name][i]
        for col in alone.column_names:
            a, b = (
                alone.column(col).to_numpy(zero_copy_only=False),
                row.column(col).to_numpy(zero_copy_only=False),
            )
            if a.dtype.kind == "f":
                assert a.tobytes() == b.tobytes(), (name, i, col)
            else:
                assert a.tolist() == b.tolist(), (name, i, col)
