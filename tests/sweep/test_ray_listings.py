"""A real Ray run of a panel with listings and delistings (issue 14): one hash everywhere.

The panel is the real S&P 500 sample (skfolio's wheel) with masked listings; the sweep goes
through the Python API with an in-memory DataFrame, on Ray and in-process, and both run
folders must hold the same table; the Ray one is then resumed from its kept panel copy.
"""

from __future__ import annotations

import pandas as pd
import pytest

import sweep
from sweep.runner._status import verify_run
from tests.helpers import listed_sp500, sp500_path

pytestmark = pytest.mark.ray

GRID = {"lookback": [10, 40, 120], "top_k": [2, 4]}
METRICS = {"bootstrap_reps": 20, "block_length": 10, "pbo_blocks": 4, "benchmark": "buy_and_hold"}


def test_a_listed_real_panel_gives_one_hash_on_ray_and_locally(ray_local, tmp_path):
    raw = pd.read_csv(sp500_path(), index_col="Date", parse_dates=True)
    frame = listed_sp500(raw.loc["1993-01-01":"2001-12-31"])  # GE and AMD list inside it
    local = sweep.run("xs_momentum", GRID, frame, run_dir=tmp_path / "local", metrics=METRICS)
    on_ray = sweep.run(
        "xs_momentum",
        GRID,
        frame,
        run_dir=tmp_path / "ray",
        metrics=METRICS,
        executor="ray",
        batch_size=1,
    )
    assert local.table_hash is not None and on_ray.table_hash == local.table_hash
    assert (
        verify_run(tmp_path / "ray").null_summary_hash
        == verify_run(tmp_path / "local").null_summary_hash
    )
    assert on_ray.data.kind == "memory" and on_ray.fingerprint == local.fingerprint
    parts = sorted((tmp_path / "ray" / "parts").iterdir())
    for part in parts[:2]:
        part.unlink()
    resumed = sweep.resume(tmp_path / "ray", executor="ray", batch_size=1)  # the kept copy
    assert resumed.table_hash == local.table_hash and resumed.summary.computed == 2


def test_a_strategy_defined_in_a_function_runs_on_ray(ray_local, tmp_path):
    from tests.sweep.test_python_api import LiveTrend

    class Local(LiveTrend):  # no importable identity: Ray ships it by value
        name = "local_trend"

    raw = pd.read_csv(sp500_path(), index_col="Date", parse_dates=True)
    frame = listed_sp500(raw.loc["1993-01-01":"2001-12-31"])
    grid = {"lookback": [10, 40, 80], "band": [0.0]}
    local = sweep.run(Local(), grid, frame, run_dir=tmp_path / "local", metrics=METRICS)
    on_ray = sweep.run(
        Local(), grid, frame, run_dir=tmp_path / "ray", metrics=METRICS, executor="ray"
    )
    assert on_ray.strategy.import_path is None
    assert on_ray.table_hash == local.table_hash is not None
