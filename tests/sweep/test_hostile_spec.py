"""Hostile specs (issue 12): duplicates, constraint bombs, escaping names, sizes, non-finite.

Bad input exits 2 with a one-paragraph message naming the field, what was expected and what
was given, and writes nothing. The CLI runs here under a 4 GiB address-space limit, so a spec
that would allocate gigabytes fails (instead of swapping the machine) when a check is missing.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sweep import evaluate_batch, resolve, spec_from_dict
from sweep.errors import GridError, SweepError
from sweep.spec._grid import MAX_AXIS_SIZE, MAX_GRID_SIZE, Grid, axis_from_definition
from tests.helpers import small_spec_dict, write_spec

ADDRESS_SPACE = 4 << 30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _cli(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sweep", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        preexec_fn=_limit_memory,
    )


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _run_bad_spec(tmp_path: Path, doc: dict[str, Any], *needles: str) -> str:
    """``sweep run`` a spec: exit 2, one paragraph naming ``needles``, nothing written."""
    spec = write_spec(tmp_path / "s.toml", doc)
    before = _files(tmp_path)
    proc = _cli(tmp_path, "run", str(spec), "-q")
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    message = proc.stderr.strip()
    assert message.startswith("error:") and "\n\n" not in message, message
    for needle in needles:
        assert needle in message, (needle, message)
    assert _files(tmp_path) == before
    return message


def _grid_error(doc: dict[str, Any], small_panel: Any) -> str:
    with pytest.raises(GridError) as info:
        resolve(spec_from_dict(doc), small_panel)
    return str(info.value)


# --- point 2: duplicates break batch independence ---------------------------------------


def test_cli_refuses_a_repeated_axis_value(tmp_path):
    doc = small_spec_dict(grid={"lookback": [20, 30, 20, 40], "band": [0.0, 0.01]})
    _run_bad_spec(tmp_path, doc, "grid.lookback", "20", "positions 0 and 2")


@pytest.mark.parametrize(
    ("grid", "needles"),
    [
        ({"lookback": [5], "band": {"linspace": [0.01, 0.01, 3]}}, ["grid.band", "0.01"]),
        # a float range whose steps round to the same float
        ({"lookback": [5], "band": {"linspace": [1.0, 1.0 + 2.2e-16, 3]}}, ["grid.band", "1.0"]),
        # -0.0 == 0.0: the same value for every strategy, written twice
        ({"lookback": [5], "band": [-0.0, 0.0]}, ["grid.band", "-0.0", "0.0"]),
        # distinct integers that become one float for a float parameter
        (
            {"lookback": [5], "band": [9007199254740993, 9007199254740992]},
            ["grid.band", "9007199254740992.0"],
        ),
        ({"lookback": {"values": [7, 9, 7]}, "band": [0.0]}, ["grid.lookback", "7"]),
    ],
)
def test_duplicates_from_lists_float_ranges_and_coercion_are_refused(grid, needles, small_panel):
    message = _grid_error(small_spec_dict(grid=grid), small_panel)
    assert "appears more than once" in message
    for needle in needles:
        assert needle in message, (needle, message)


def test_a_zipped_group_may_not_repeat_a_tuple(tmp_path, small_panel):
    sma = {"strategy": {"name": "sma_cross"}}
    repeated = {"fast": [5, 5, 10], "slow": [20, 20, 30], "zip": [["fast", "slow"]]}
    _run_bad_spec(
        tmp_path, small_spec_dict(**sma, grid=repeated), "grid.zip", "fast=5, slow=20", "0 and 1"
    )
    # repeated values inside one zipped axis are fine while the tuples differ
    ok = {"fast": [5, 5, 10], "slow": [20, 30, 30], "zip": [["fast", "slow"]]}
    sweep = resolve(spec_from_dict(small_spec_dict(**sma, grid=ok)), small_panel)
    assert len(sweep.grid) == 3


def test_every_grid_point_of_a_valid_grid_has_its_own_config_id(small_panel):
    from sweep.engine._evaluate import config_ids_at

    doc = small_spec_dict(
        strategy={"name": "sma_cross"},
        grid={
            "fast": [5, 5, 10, 10],
            "slow": [20, 30, 20, 30],
            "fees": [0.0, 0.001],
            "zip": [["fast", "slow"]],
        },
    )
    sweep = resolve(spec_from_dict(doc), small_panel)
    ids = config_ids_at(sweep, sweep.grid.params_at(np.arange(len(sweep.grid))))
    assert len(ids) == 8 and len(set(ids)) == 8


# --- point 6: constraint evaluation has bounds ----------------------------------------


@pytest.mark.parametrize(
    ("where", "needles"),
    [
        ("lookback < 9**9**9", ["exponent"]),
        ("lookback < 2 ** 10000", ["exponent"]),
        ("1/0 < lookback", ["cannot be evaluated", "divide by zero"]),
        ("lookback % 0 < 1", ["cannot be evaluated"]),
        ("lookback < 1" + "0" * 400, ["literal", "1e+15"]),
        ("lookback < 1e999", ["literal"]),
        ("lookback" + " + 1" * 100_000 + " > 0", ["characters"]),
        ("-" * 60 + "lookback < 5", ["nested", "deep"]),
        ("lookback > 0 and " + "1 < 2 and " * 80 + "1 < 2", ["parts"]),
    ],
)
def test_cli_bounds_constraints_and_names_them(tmp_path, where, needles):
    doc = small_spec_dict()
    doc["grid"] = {**doc["grid"], "where": [where]}
    message = _run_bad_spec(tmp_path, doc, "grid.where", *needles)
    assert (where if len(where) < 60 else where[:40]) in message


def test_a_constraint_with_a_null_byte_is_refused():
    with pytest.raises(GridError, match="cannot parse constraint"):
        Grid.from_definition({"a": [1, 2], "where": ["a < 5\x00"]})


def test_integer_parameters_take_negative_powers_and_keep_exact_comparisons():
    grid = Grid.from_definition({"a": [1, 2, 4], "where": ["a ** -1 < 0.6"]})
    assert [c["a"] for c in grid] == [2, 4]
    big = Grid.from_definition(
        {"a": [2**62, 2**62 + 1], "b": [2**62 + 1], "where": ["a < b", "a // 1 >= 0"]}
    )
    assert [c["a"] for c in big] == [2**62]


# --- point 7: the spec name cannot escape the runs folder -----------------------------


@pytest.mark.parametrize(
    "name", ["../../../elsewhere/x", "ABSOLUTE", ".", "..", "a/b", "a\\b", "with space", "-x"]
)
def test_cli_refuses_names_that_are_not_a_folder_slug(tmp_path, name):
    cwd = tmp_path / "a" / "b" / "c" / "d"
    cwd.mkdir(parents=True)
    name = str(tmp_path / "abs") if name == "ABSOLUTE" else name
    spec = write_spec(cwd / "s.toml", small_spec_dict(name=name))
    proc = _cli(cwd, "run", str(spec), "-q")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "name:" in proc.stderr and "letters, digits" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert _files(tmp_path) == ["a", "a/b", "a/b/c", "a/b/c/d", "a/b/c/d/s.toml"]


def test_slug_names_are_accepted():
    for name in ["momentum-demo", "a.b_c-1", "X" * 100]:
        assert spec_from_dict(small_spec_dict(name=name)).name == name
    with pytest.raises(SweepError, match="at most 100 characters"):
        spec_from_dict(small_spec_dict(name="X" * 101))


# --- point 11: sizes are checked before anything is allocated -------------------------


@pytest.mark.parametrize(
    "definition",
    [
        {"start": 0, "stop": 10**12},
        {"start": 0, "stop": 10**8},
        {"start": 10**8, "stop": 0, "step": -1},
        {"linspace": [0.0, 1.0, 10**8]},
        {"linspace": [0.0, 1.0, 10**12]},
    ],
)
def test_a_huge_axis_is_refused_from_its_arithmetic_before_allocation(definition):
    tracemalloc.start()
    try:
        with pytest.raises(GridError) as info:
            axis_from_definition("a", definition)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    assert f"at most {MAX_AXIS_SIZE:,} values" in str(info.value)
    assert "grid.a" in str(info.value)


def test_cli_refuses_a_grid_larger_than_its_positions_allow(tmp_path):
    doc = small_spec_dict(
        grid={
            "lookback": {"start": 1, "stop": 1_000_001},
            "band": {"linspace": [0.0, 0.02, 1_000_000]},
            "cost": {"linspace": [0.0, 0.001, 1_000_000]},
        }
    )
    _run_bad_spec(
        tmp_path,
        doc,
        "grid",
        "1,000,000,000,000,000,000 configs",
        f"at most {MAX_GRID_SIZE:,}",
        "2^53",
    )


# --- point 14: non-finite values ------------------------------------------------------


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_cli_refuses_a_non_finite_periods_per_year(tmp_path, value):
    doc = small_spec_dict()
    doc["metrics"] = {**doc["metrics"], "periods_per_year": value}
    _run_bad_spec(tmp_path, doc, "metrics.periods_per_year", "finite")


def _table(sweep: Any, indices: Any) -> Any:
    return evaluate_batch(sweep, np.asarray(indices, dtype=np.int64)).table


def test_non_finite_returns_fail_the_config_naming_the_first_bad_period(small_panel):
    doc = small_spec_dict(grid={"lookback": [5, 10], "band": [0.0], "cost": [0.0, 1e306, 1e308]})
    sweep = resolve(spec_from_dict(doc), small_panel)
    rows = _table(sweep, range(len(sweep.grid))).to_pandas().set_index("grid_index")
    ok = rows["cost"] == 0.0
    assert (rows.loc[ok, "status"] == "ok").all()
    assert (rows.loc[~ok, "status"] == "error").all()
    assert rows.loc[ok, "error"].isna().all()
    big = rows.loc[rows["cost"] == 1e308, "error"]
    assert big.str.contains(r"return of period \d+ \(\d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d\)").all()
    overflow = rows.loc[rows["cost"] == 1e306, "error"]
    assert overflow.str.contains("mean").all() and overflow.str.contains("finite").all()
    assert rows.loc[~ok, "mean"].isna().all()


def test_failed_rows_are_bitwise_identical_in_any_batch(small_panel):
    doc = small_spec_dict(grid={"lookback": [5, 10, 20], "band": [0.0, 0.01], "cost": [0.0, 1e308]})
    sweep = resolve(spec_from_dict(doc), small_panel)
    n = len(sweep.grid)
    together = _table(sweep, np.arange(n)[::-1])
    by_index = {i: k for k, i in enumerate(together.column("grid_index").to_pylist())}
    for i in range(n):
        alone = _table(sweep, [i])
        row = together.slice(by_index[i], 1)
        for name in alone.column_names:
            a = alone.column(name).to_numpy(zero_copy_only=False)
            b = row.column(name).to_numpy(zero_copy_only=False)
            assert (a.tobytes() == b.tobytes()) if a.dtype.kind == "f" else a.tolist() == b.tolist()


def test_all_nan_returns_are_not_ok(small_panel):
    doc = small_spec_dict(
        strategy={"name": "tests.hostile_strategies:NanMomentum"},
        grid={"lookback": [5, 10, 20, 25], "band": [0.0]},
    )
    sweep = resolve(spec_from_dict(doc), small_panel)
    rows = _table(sweep, range(4)).to_pandas()
    assert rows["status"].tolist() == ["ok", "error", "error", "ok"]
    assert rows["error"][1].startswith("the return of period 0 (")
    assert "is nan" in rows["error"][1]


def test_cli_exits_1_when_every_config_failed(tmp_path):
    doc = small_spec_dict(strategy={"name": "tests.hostile_strategies:NanEverywhere"})
    spec = write_spec(tmp_path / "s.toml", doc)
    proc = _cli(tmp_path, "run", str(spec), "-q")
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert "every config failed (60 of 60)" in proc.stderr
    assert "is nan" in proc.stderr
    assert "configs:    60 / 60 done" in proc.stdout
    again = _cli(tmp_path, "resume", "runs/small", "-q")
    assert again.returncode == 1 and "every config failed (60 of 60)" in again.stderr
    assert _cli(tmp_path, "status", "runs/small").returncode == 0


def test_a_validator_message_does_not_repeat_what_it_got():
    from sweep import spec_from_dict
    from sweep.errors import SpecError

    doc = small_spec_dict()
    doc["metrics"] = {**doc["metrics"], "pbo_blocks": 7}
    with pytest.raises(SpecError) as err:
        spec_from_dict(doc)
    assert str(err.value).count("got 7") == 1


def test_the_first_non_finite_period_of_each_row_is_found_exactly():
    from sweep.engine._evaluate import _first_non_finite

    x = np.random.default_rng(0).standard_normal((6, 300))
    for row, period, value in [(0, 0, np.nan), (1, 299, np.inf), (2, 130, -np.inf), (3, 7, 1e308)]:
        x[row, period] = value
    x[4, [64, 65]] = [np.nan, np.inf]
    finite = np.isfinite(x)
    expected = np.where(finite.all(axis=1), -1, np.argmin(finite, axis=1))
    assert _first_non_finite(x).tolist() == expected.tolist() == [0, 299, 130, -1, 64, -1]
