import itertools
import tracemalloc

import numpy as np
import pytest

from sweep import Grid
from sweep.errors import GridError


def test_seed_grid_is_a_few_lines_and_canonical():
    # The 10,000-config grid of seed 003: lookback in range(20, 320, 3) x band in linspace(0, 0.02, 100).
    grid = Grid.from_definition(
        {"lookback": {"start": 20, "stop": 320, "step": 3}, "band": {"linspace": [0.0, 0.02, 100]}}
    )
    assert len(grid) == 10_000
    expected = list(itertools.product(range(20, 320, 3), np.linspace(0.0, 0.02, 100)))
    got = [(c["lookback"], c["band"]) for c in grid]
    assert got == [(lb, float(b)) for lb, b in expected]
    assert grid[-1] == {"lookback": 317, "band": 0.02}


def test_constraints_filter_in_product_order():
    grid = Grid.from_definition(
        {
            "fast": {"start": 5, "stop": 51},
            "slow": {"start": 10, "stop": 201},
            "where": ["fast < slow"],
        }
    )
    expected = [(f, s) for f, s in itertools.product(range(5, 51), range(10, 201)) if f < s]
    assert len(grid) == len(expected) == 7925
    params = grid.params_at(np.arange(len(grid)))
    assert list(zip(params["fast"].tolist(), params["slow"].tolist(), strict=True)) == expected


def test_zip_groups_advance_together():
    grid = Grid.from_definition(
        {"a": [1, 2, 3], "x": [0.1, 0.2], "b": [10, 20, 30], "zip": [["a", "b"]]}
    )
    assert len(grid) == 6
    assert [(c["a"], c["b"], c["x"]) for c in grid] == [
        (1, 10, 0.1),
        (1, 10, 0.2),
        (2, 20, 0.1),
        (2, 20, 0.2),
        (3, 30, 0.1),
        (3, 30, 0.2),
    ]


def test_ten_million_configs_are_cheap_to_create_and_index():
    # Measured in bytes allocated, not seconds (a loaded machine makes any clock lie): even
    # one byte per config would be 10^7 bytes, over the 8 MiB bound; the lazy grid peaks at
    # about 0.3 MB (tracemalloc sees Python objects and numpy buffers alike).
    tracemalloc.start()
    try:
        grid = Grid.from_definition(
            {"a": {"start": 0, "stop": 10_000}, "b": {"linspace": [0, 1, 1000]}}
        )
        assert len(grid) == 10_000_000
        assert grid[9_999_999] == {"a": 9999, "b": 1.0}
        chunk = next(grid.chunks(1000))
        assert chunk.shape == (1000,)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, f"{peak} bytes: something proportional to the grid's 10^7 configs"


def test_constrained_random_access_matches_iteration():
    grid = Grid.from_definition(
        {
            "a": {"start": 0, "stop": 400},
            "b": {"start": 0, "stop": 400},
            "where": "a * 2 < b and b - a != 7",
        }
    )
    full = [
        (a, b) for a, b in itertools.product(range(400), range(400)) if a * 2 < b and b - a != 7
    ]
    assert len(grid) == len(full)
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(full), 500)
    params = grid.params_at(picks)
    assert list(zip(params["a"].tolist(), params["b"].tolist(), strict=True)) == [
        full[i] for i in picks
    ]


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ({}, "at least one parameter"),
        ({"a": []}, "empty list"),
        ({"a": {"start": 5, "stop": 5}}, "is empty"),
        ({"a": {"start": 0.5, "stop": 5}}, "expected an integer"),
        ({"a": [1.0, float("nan")]}, "finite"),
        ({"a": [1.0, float("inf")]}, "finite"),
        ({"a": {"linspace": [0, 1]}}, "[start, stop, num]"),
        ({"a": {"linspace": [0, float("nan"), 3]}}, "finite"),
        ({"a": {"begin": 1}}, "got keys"),
        ({"a": [1, "x"]}, "share one type"),
        ({"a": [1, 2], "where": ["a < b"]}, "not a grid parameter"),
        ({"fast": [1, 2], "slow": [3], "where": ["fsat < slow"]}, "Did you mean 'fast'"),
        ({"a": [1, 2], "where": ["__import__('os')"]}, "unsupported"),
        ({"a": [1, 2], "where": ["a > 5"]}, "no config satisfies"),
        ({"a": [1, 2], "b": [1], "zip": [["a", "b"]]}, "equal lengths"),
    ],
)
def test_bad_grids_are_refused_with_a_clear_message(definition, message):
    with pytest.raises(GridError, match=None) as info:
        Grid.from_definition(definition)
    assert message in str(info.value)


def test_axes_compare_and_hash_by_value():
    import pickle

    from sweep import Axis

    a = Axis("x", np.array([1, 2, 3]))
    same = Axis("x", np.arange(1, 4))
    assert a == same and hash(a) == hash(same) and len({a, same}) == 1
    assert a != Axis("y", np.array([1, 2, 3]))  # another name
    assert a != Axis("x", np.array([1.0, 2.0, 3.0]))  # another kind of value
    assert a != Axis("x", np.array([1, 3, 2]))  # another order
    assert a != Axis("x", np.array([1, 2]))  # another length
    assert a != (1, 2, 3)
    # -0.0 == 0.0, so their hashes agree too.
    assert Axis("z", np.array([0.0])) == Axis("z", np.array([-0.0]))
    assert hash(Axis("z", np.array([0.0]))) == hash(Axis("z", np.array([-0.0])))
    assert pickle.loads(pickle.dumps(a)) == a
    # The values cannot change under a hash: they are a read-only view.
    with pytest.raises(ValueError, match="read-only"):
        a.values[0] = 9
    grid = Grid.from_definition({"x": [1, 2, 3], "y": ["a", "b"]})
    assert grid.axes == Grid.from_definition({"x": [1, 2, 3], "y": ["a", "b"]}).axes


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtypes and values, floats compared by their bits (-0.0 is not 0.0)."""
    if a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        return bool(np.array_equal(a.view(np.int64), b.view(np.int64)))
    return bool(np.array_equal(a, b))


def test_a_description_read_back_as_json_rebuilds_the_same_grid():
    import json

    grid = Grid.from_definition(
        {
            "a": [1, 2, 3, -(2**62)],
            "band": {"linspace": [0.0, 0.1, 7]},
            "tiny": [-0.0, 5e-324, 0.1, 1e300],
            "name": ["x", "yy", "z\u00e9"],
            "flag": [True, False, True],
            "zip": [["name", "flag"]],
            "where": ["a < 3"],
        }
    )
    rebuilt = Grid.from_description(json.loads(json.dumps(grid.describe())))
    assert rebuilt is not None and len(rebuilt) == len(grid) == 252
    every = np.arange(len(grid))
    before, after = grid.params_at(every), rebuilt.params_at(every)
    assert list(before) == list(after)
    assert all(_same_bits(before[k], after[k]) for k in before)
    assert rebuilt.zip_groups == grid.zip_groups
    assert [c.text for c in rebuilt.constraints] == ["a < 3"]


def test_a_description_lists_values_only_up_to_the_limit():
    from sweep.spec._grid import MAX_DESCRIBED_VALUES

    small = Grid.from_definition({"a": list(range(MAX_DESCRIBED_VALUES - 1)), "b": [1]})
    assert all("values" in axis for axis in small.describe()["axes"])
    large = Grid.from_definition({"a": list(range(MAX_DESCRIBED_VALUES)), "b": [1]})
    description = large.describe()
    assert not any("values" in axis for axis in description["axes"])
    assert Grid.from_description(description) is None
    with pytest.raises(GridError, match="list of axes"):
        Grid.from_description({"axes": "a"})
    with pytest.raises(GridError, match="not usable"):
        Grid.from_description({"axes": [{"name": "a", "dtype": "int64", "values": ["x"]}]})
