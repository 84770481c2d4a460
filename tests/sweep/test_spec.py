import subprocess
import sys

import pytest

from sweep import load_spec, resolve, spec_from_dict
from sweep.errors import SweepError
from tests.helpers import small_spec_dict, write_spec


def _error(doc, panel) -> str:
    with pytest.raises(SweepError) as info:
        resolve(spec_from_dict(doc), panel)
    return str(info.value)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            {"strategy": {"name": "momentm"}},
            "unknown strategy 'momentm'; built-ins are ['bollinger_reversion', 'momentum', 'rsi_reversion', 'sma_cross', 'trend_filter', 'wma_trend', 'xs_momentum'], or give an import path 'package.module:Name'. Did you mean 'momentum' or 'xs_momentum'?",
        ),
        ({"strategy": {"name": "nosuchmodule:Thing"}}, "cannot import module 'nosuchmodule'"),
        (
            {"grid": {"lookbak": [5], "band": [0.0]}},
            "grid.lookbak: strategy 'momentum' has no parameter 'lookbak' (parameters: ['band', 'cost', 'lookback']). Did you mean 'lookback'?",
        ),
        ({"grid": {"band": [0.0]}}, "needs parameter 'lookback'"),
        (
            {"grid": {"lookback": [5.5], "band": [0.0]}},
            "grid.lookback: expected integers, got float64",
        ),
        ({"grid": {"lookback": [5], "band": ["wide"]}}, "grid.band: expected numbers"),
        (
            {"grid": {"lookback": [], "band": [0.0]}},
            "grid.lookback: expected at least one value, got an empty list",
        ),
        ({"grid": {"lookback": [5], "band": [float("nan")]}}, "grid.band: expected finite values"),
        (
            {"grid": {"lookback": [0, 5], "band": [0.0]}},
            "grid.lookback: a window must be at least 1 period, got 0",
        ),
        (
            {"grid": {"lookback": [5, 5000], "band": [0.0]}},
            "grid.lookback: a window must be shorter than the data (1044 periods), got 5000",
        ),
        (
            {"grid": {"lookback": [5], "band": [-0.1]}},
            "grid.band: expected values >= 0.0, got -0.1",
        ),
        ({"metrics": {"pbo_blocks": 7}}, "metrics.pbo_blocks: must be even"),
        ({"metrics": {"pbo_blocks": 22}}, "metrics.pbo_blocks: must be at most 20"),
        (
            {"metrics": {"pbo_blocks": 20, "block_length": 2000}},
            "metrics.block_length: expected fewer than 1043",
        ),
        (
            {"metrics": {"bootstrap_repz": 5}},
            "metrics.bootstrap_repz: unknown key 'bootstrap_repz'. Did you mean 'bootstrap_reps'",
        ),
        (
            {"metrics": {"periods_per_year": -1}},
            "metrics.periods_per_year: Input should be greater than 0",
        ),
        ({"seed": -3}, "seed: Input should be greater than or equal to 0"),
        ({"seed": "abc"}, "seed: Input should be a valid integer"),
        ({"strategi": {"name": "momentum"}}, "unknown key 'strategi'. Did you mean 'strategy'?"),
        ({"costs": {"cost": float("inf")}}, "expected a finite number"),
        ({"costs": {"cots": 0.1}}, "costs.cots: strategy 'momentum' has no parameter 'cots'"),
        ({"costs": {"cots": 0.1}}, "Did you mean 'cost'?"),
        (
            {"costs": {"fee_bps": 1.0}},
            "'fee_bps' belongs to the cost model of position-function strategies; 'momentum' is a batch kernel",
        ),
        ({"costs": {"band": 0.1}}, "also appear in [grid]"),
        ({"data": {"path": "/nonexistent/prices.csv"}}, "does not exist"),
    ],
)
def test_bad_specs_name_field_expected_and_given(overrides, expected, small_panel):
    doc = small_spec_dict(**overrides)
    panel = None if "data" in overrides else small_panel
    assert expected in _error(doc, panel)


def test_toml_round_trip_and_syntax_errors(tmp_path):
    path = write_spec(tmp_path / "s.toml", small_spec_dict())
    spec = load_spec(path)
    assert spec.name == "small" and spec.metrics.pbo_blocks == 8
    assert spec.spec_hash == spec_from_dict(small_spec_dict()).spec_hash
    (tmp_path / "bad.toml").write_text("name = 'x'\nseed = \n")
    with pytest.raises(SweepError, match="not valid TOML"):
        load_spec(tmp_path / "bad.toml")
    with pytest.raises(SweepError, match="cannot read"):
        load_spec(tmp_path / "missing.toml")


def test_costs_and_defaults_become_fixed_axes(small_panel):
    sweep = resolve(spec_from_dict(small_spec_dict(costs={"cost": 0.0005})), small_panel)
    assert sweep.grid.names == ("lookback", "band", "cost")
    assert sweep.grid[0]["cost"] == 0.0005
    sweep_int_band = resolve(
        spec_from_dict(small_spec_dict(grid={"lookback": [5], "band": [0, 1]})), small_panel
    )
    assert sweep_int_band.grid[1]["band"] == 1.0 and isinstance(
        sweep_int_band.grid[1]["band"], float
    )


def test_data_path_is_relative_to_the_spec_and_not_part_of_the_hash(tmp_path):
    import numpy as np
    import pandas as pd

    sub = tmp_path / "specs"
    sub.mkdir()
    pd.DataFrame(
        {"date": pd.bdate_range("2020-01-01", periods=300), "A": np.linspace(1, 2, 300)}
    ).to_csv(tmp_path / "p.csv", index=False)
    doc = small_spec_dict(data={"path": "../p.csv"}, grid={"lookback": [5, 10], "band": [0.0]})
    spec = load_spec(write_spec(sub / "s.toml", doc))
    assert spec.data.path == str((tmp_path / "p.csv").resolve())
    moved = spec_from_dict({**doc, "data": {"path": str(tmp_path / "elsewhere.csv")}})
    assert moved.spec_hash == spec.spec_hash


def test_cli_bad_input_exits_2_with_a_message_and_writes_nothing(tmp_path):
    spec = write_spec(tmp_path / "s.toml", small_spec_dict(strategy={"name": "momentm"}))
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "sweep", "run", str(spec), "--run-dir", str(run_dir)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert "Did you mean 'momentum' or 'xs_momentum'?" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not run_dir.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


def test_grid_order_is_part_of_the_spec_identity():
    a = spec_from_dict(small_spec_dict(grid={"lookback": [5, 10], "band": [0.0, 0.01]}))
    b = spec_from_dict(small_spec_dict(grid={"band": [0.0, 0.01], "lookback": [5, 10]}))
    assert a.spec_hash != b.spec_hash
    assert spec_from_dict(a.to_dict()).spec_hash == a.spec_hash


# --- the Python API's typed path: the same models, the same messages ----------------------
_GRID = {"lookback": [5, 10], "band": [0.0]}
_GOOD = {
    "name": "api",
    "seed": 3,
    "data": {"source": "file", "path": "prices.csv", "layout": "wide", "fill": "ffill"},
    "strategy": "momentum",
    "grid": _GRID,
    "metrics": {"bootstrap_reps": 20, "pbo_blocks": 8},
    "costs": {"cost": 0.001},
    "validation": {"walk_forward": {"train": "3y", "test": "6m"}},
}


def _as_table(values):
    doc = {k: v for k, v in values.items() if v is not None}
    doc["strategy"] = {"name": doc["strategy"]}
    return doc


def _message(call):
    with pytest.raises(SweepError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize(
    "change",
    [
        {"name": "no spaces"},
        {"seed": -1},
        {"data": {"source": "file", "path": "p.csv", "layout": "tall"}},
        {"data": {"source": "memory", "fill": "bfill"}},
        {"data": {"source": "file"}},
        {"metrics": {"bootstrap_repz": 3}},
        {"metrics": {"pbo_blocks": 7, "block_length": 0}},
        {"costs": {"cost": "free"}},
        {"validation": {"walk_forward": {"train": "3y"}, "metirc": "sharpe"}},
        # several sections wrong at once: one message, in the table's order
        {
            "name": "",
            "data": {"source": "file", "path": "p.csv", "fill": "x"},
            "metrics": {"bootstrap_reps": -2},
            "validation": {"cpcv": {"groups": 1, "test_groups": 1}},
        },
    ],
)
def test_a_spec_built_from_python_values_fails_as_its_table_does(tmp_path, change):
    from sweep.spec._models import build_spec

    values = {**_GOOD, **change}
    built = _message(lambda: build_spec(**values, base_dir=tmp_path))
    table = _message(lambda: spec_from_dict(_as_table(values), base_dir=tmp_path))
    assert built == table and built.count(";") == table.count(";")


def test_a_spec_built_from_python_values_equals_its_table(tmp_path):
    from sweep.spec._models import MetricOptions, build_spec

    built = build_spec(**_GOOD, base_dir=tmp_path)
    assert built == spec_from_dict(_as_table(_GOOD), base_dir=tmp_path)
    assert built.data.path == str((tmp_path / "prices.csv").resolve())
    typed = build_spec(**{**_GOOD, "metrics": MetricOptions(bootstrap_reps=20, pbo_blocks=8)})
    assert typed.metrics == built.metrics and typed.spec_hash != "" and built.spec_hash
