"""Grids past the old 2^30 limit (issue 24, point 2): tracked by ranges, refused by arithmetic.

The driver keeps the configs done and to do as ranges of grid positions, so a grid of 2^31
configs starts, writes a part and is read back holding a few ranges; the grid's size is the
product of its axis lengths in Python integers, refused in one line past 2^53 (2^30 product
positions with constraints) before anything per config is built.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from sweep import run_sweep, spec_from_dict
from sweep.common._range_set import RangeSet
from sweep.errors import GridError
from sweep.runner._driver import _todo
from sweep.runner._status import run_status
from sweep.spec._grid import MAX_CONSTRAINED_PRODUCT, MAX_GRID_SIZE, Axis, Grid
from sweep.store._run_store import RunStore
from tests.helpers import StopAfter, small_spec_dict


def _axes(*sizes: int) -> list[Axis]:
    return [Axis(f"p{k}", np.arange(n, dtype=np.int64)) for k, n in enumerate(sizes)]


def test_the_limits():
    assert MAX_GRID_SIZE == 2**53 and MAX_CONSTRAINED_PRODUCT == 2**30


def test_a_grid_of_2_53_configs_is_indexed_lazily_and_one_more_is_refused():
    grid = Grid(_axes(2**20, 2**20, 2**13))
    assert len(grid) == MAX_GRID_SIZE
    assert grid[len(grid) - 1] == {"p0": 2**20 - 1, "p1": 2**20 - 1, "p2": 2**13 - 1}
    with pytest.raises(GridError) as info:
        Grid(_axes(2**20, 2**20, 2**13 + 1))
    message = str(info.value)
    assert "\n" not in message and f"at most {MAX_GRID_SIZE:,} configs" in message
    assert f"got {2**53 + 2**40:,} configs (1,048,576 x 1,048,576 x 8,193)" in message


def test_a_product_past_int64_is_refused_from_python_integers_before_allocation():
    axes = _axes(*[1000] * 8)  # 10^24 configs: an int64 product would wrap around
    tracemalloc.start()
    try:
        with pytest.raises(GridError) as info:
            Grid(axes)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    assert "got 1,000,000,000,000,000,000,000,000 configs" in str(info.value)


def test_a_constrained_grid_is_refused_past_2_30_product_positions():
    with pytest.raises(GridError, match="with constraints") as info:
        Grid(_axes(2**16, 2**15), where=["p0 < p1"])
    assert "\n" not in str(info.value)
    assert len(Grid(_axes(2**16, 2**14))) == 2**30  # unconstrained, the same product is fine


def test_a_sweep_past_the_old_limit_starts_and_is_tracked_by_ranges(tmp_path):
    total = 2**31
    doc = small_spec_dict(
        grid={
            "lookback": [20],
            "band": {"linspace": [0.0, 0.02, 2**20]},
            "cost": {"linspace": [0.0, 0.001, 2**11]},
        },
        metrics={"bootstrap_reps": 0, "pbo_blocks": 4},
    )
    tracemalloc.start()
    try:
        summary = run_sweep(
            spec_from_dict(doc),
            tmp_path / "r",
            executor=StopAfter(2),
            batch_size=64,
            progress=False,
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the old driver held a byte of done mask and 8 of to-do per config: 18 GiB here
    assert peak < 256 << 20, peak
    assert (summary.total, summary.done, summary.status) == (total, 128, "incomplete")
    store = RunStore(tmp_path / "r")
    assert store.done_ranges() == RangeSet.full(128)
    todo, done = _todo(store, total)
    assert done == 128 and list(todo.ranges()) == [(128, total)]
    status = run_status(tmp_path / "r")
    assert (status.done, status.remaining, status.table_hash) == (128, total - 128, None)
