"""A position-function strategy on Ray: the same table as in-process, failure rows kept."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sweep import load_results, results_hash, run_sweep, spec_from_dict

pytestmark = pytest.mark.ray


def test_position_strategy_on_ray_gives_the_local_table(ray_local, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    doc = {
        "name": "positions-ray",
        "seed": 3,
        "data": {"source": "synthetic", "years": 3},
        "strategy": {"name": "tests.position_strategies_for_tests:faulty"},
        "grid": {"mode": [0, 1, 2, 3, 4], "fee_bps": [0.0, 5.0]},
        "metrics": {"bootstrap_reps": 20, "block_length": 10, "pbo_blocks": 8},
    }
    local = run_sweep(spec_from_dict(doc), tmp_path / "local", batch_size=3, progress=False)
    remote = run_sweep(
        spec_from_dict(doc), tmp_path / "ray", executor="ray", batch_size=3, progress=False
    )
    assert local.table_hash == remote.table_hash == results_hash(tmp_path / "ray")
    frame = load_results(tmp_path / "ray")
    assert (frame["status"] == "error").sum() == 8
    assert np.isfinite(frame.loc[frame["mode"] == 0, "sharpe"]).all()
