"""PBO in passes over the parts equals PBO over the sample's block statistics, bit for bit."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from stats import pbo_from_block_stats
from sweep import load_results, run_sweep, spec_from_dict
from sweep.cli._app import app
from sweep.engine._metrics import block_columns
from sweep.errors import SweepError
from sweep.executors._part_tasks import part_groups
from sweep.report import ReportOptions, build_report
from sweep.report._config_scan import ScanSettings
from sweep.report._hypothesis_tests import pbo_sample
from sweep.report._load import load_run, scan_settings
from sweep.report._pbo_passes import pbo_over_parts
from sweep.store._part_mapper import map_here
from tests.helpers import small_spec_dict

TIED = small_spec_dict(
    name="tied",
    strategy={"name": "tests.strategies_for_tests:TiedNoise"},
    grid={"member": {"start": 0, "stop": 8}, "copy": [0, 1, 2]},
)


@pytest.fixture(scope="module")
def tied_run(tmp_path_factory):
    """24 configs in parts of 5: 8 noises x 3 exact copies, member 0 constant (NaN Sharpe),
    and no config with a Sharpe ratio over the first half of the blocks."""
    run = tmp_path_factory.mktemp("tied") / "run"
    run_sweep(spec_from_dict(TIED), run, batch_size=5, progress=False)
    return run


def _in_groups(groups: int, reverse: bool):
    """A part mapper running groups of parts here, answers in reverse order if asked."""

    def mapper(body, store, names, args):
        done = (body(store.location, group, *args) for group in part_groups(names, groups))
        return reversed(list(done)) if reverse else done  # an iterator, as the lead's will be

    return mapper


def _in_memory(run_dir, grid_index, n_blocks):
    """PBO over the configs at ``grid_index`` (ascending) from the whole table, as before."""
    whole = load_results(run_dir).set_index("grid_index", drop=False).loc[grid_index]
    sums_cols, sq_cols = block_columns(n_blocks)
    counts = whole["blk_n"].to_numpy()
    assert (counts == counts[0]).all()
    return pbo_from_block_stats(
        np.full(n_blocks, counts[0]), whole[sums_cols].to_numpy(), whole[sq_cols].to_numpy()
    )


@pytest.mark.parametrize("name", ["tied", "failing", "resumed"])
@pytest.mark.parametrize("size", [1000, 9])  # every ok config; a seeded sample of them
@pytest.mark.parametrize(("groups", "reverse"), [(1, False), (3, True), (1000, False)])
def test_the_passes_give_the_in_memory_kernels_result_bit_for_bit(
    runs, tied_run, name, size, groups, reverse
):
    run_dir = tied_run if name == "tied" else runs[name]
    mapper = map_here if groups == 1 else _in_groups(groups, reverse)
    run = load_run(run_dir, settings=ScanSettings(pbo=size, seed=3), mapper=mapper)
    sample = run.scan.pbo
    assert sample.sampled == (size == 9)
    found = pbo_over_parts(run, sample.rule, len(sample.grid_index))
    expected = _in_memory(run_dir, sample.grid_index, run.manifest.run_key.pbo_blocks)
    got = found.result
    np.testing.assert_array_equal(got.best_in_sample, sample.grid_index[expected.best_in_sample])
    for field in dataclasses.fields(expected):
        if field.name != "best_in_sample":
            a, b = getattr(got, field.name), getattr(expected, field.name)
            same = np.array_equal(a, b, equal_nan=True) if isinstance(a, np.ndarray) else a == b
            assert same or (a != a and b != b), field.name
    ids = load_results(run_dir).set_index("grid_index")["config_id"]
    assert found.best_ids == {int(i): ids[i] for i in np.unique(got.best_in_sample)}
    assert found.periods_per_block == int(load_results(run_dir)["blk_n"].iloc[0])


def test_the_tied_folder_exercises_ties_nan_and_a_split_without_a_best(tied_run):
    run = load_run(tied_run)
    found = pbo_over_parts(run, run.scan.pbo.rule, run.scan.ok)
    whole = load_results(tied_run).set_index("grid_index")
    first = int(whole.index.min())
    assert np.isnan(whole.loc[whole["member"] == 0, "excess_sharpe"]).all()
    assert found.result.best_in_sample[0] == first  # split 0: no config has a key
    bests = whole.loc[np.unique(found.result.best_in_sample)]
    lowest_copy = whole.reset_index().groupby("member")["grid_index"].min()
    assert set(bests.index) - {first} <= set(lowest_copy)  # ties go to the lowest grid index


def test_passes_that_find_other_configs_than_the_read_are_refused(tied_run):
    run = load_run(tied_run)
    with pytest.raises(SweepError, match="changed while the report read it"):
        pbo_over_parts(run, run.scan.pbo.rule, run.scan.ok + 1)


def test_all_takes_every_ok_config_and_keeps_no_sample(runs):
    every = ReportOptions(progress=False, max_pbo_configs=None)
    run = load_run(runs["failing"], settings=scan_settings(every))
    rule, configs, sampled = pbo_sample(run, every)
    assert rule.bound is None and configs == run.scan.ok and not sampled
    assert not run.scan.pbo.grid_index.size  # nothing per config held for PBO
    capped = build_report(runs["failing"], ReportOptions(progress=False)).to_json()
    doc = build_report(runs["failing"], every).to_json()
    assert doc["options"]["max_pbo_configs"] is None
    assert doc["multiple_testing"]["pbo"] == capped["multiple_testing"]["pbo"]


def test_cli_pbo_sample_takes_a_number_or_all(runs, tmp_path):
    out = tmp_path / "a"
    ran = CliRunner().invoke(
        app,
        ["report", str(runs["complete"]), "--out", str(out), "--quiet", "--executor", "local",
         "--pbo-sample", "7"],
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    doc = json.loads((out / "report.json").read_text())
    assert doc["options"]["max_pbo_configs"] == 7
    assert doc["multiple_testing"]["pbo"]["configs"] == 7
    assert doc["multiple_testing"]["pbo"]["sampled"] is True
    for bad in ("1", "ten", "-5", "1e6"):
        ran = CliRunner().invoke(app, ["report", str(runs["complete"]), "--pbo-sample", bad])
        assert ran.exit_code == 2 and "--pbo-sample" in ran.output, bad
