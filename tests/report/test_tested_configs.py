"""Section 5 from the per-part reductions equals the tests run on the whole table's arrays.

The report no longer holds ``t_stat``, ``p_value`` and ``excess_mean`` per config: the
sweep-wide tests run from counts reduced as the parts are read, and the configs they name
are read back from the parts that can hold them. The oracle here is the array form of each
test (``stats.data_snooping_tests``, ``stats.fdp_stepm``, ``stats.multiple_testing_summary``)
on every ok config of the whole table, read by the public reader, over a folder of many
parts with a batch written twice and planted edges (so every list is long).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from stats import data_snooping_tests, fdp_stepm, multiple_testing_summary
from sweep import load_results, run_sweep, spec_from_dict
from sweep.report._hypothesis_tests import corrections
from sweep.report._inference import LISTED_DISCOVERIES, LISTED_IDS, discoveries, sweep_wide_tests
from sweep.report._load import load_run
from sweep.report._tested_configs import TESTED_COLUMNS
from tests.helpers import batch_again, small_spec_dict
from tests.sweep.test_hostile_folder_files import part_files, write_part

ALPHA, GAMMA = 0.05, 0.1


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """80 configs, half with an edge, B = 1599 (Holm needs B + 1 >= m / alpha), 10 parts."""
    spec = spec_from_dict(
        small_spec_dict(
            strategy={"name": "tests.strategies_for_tests:PlantedEdge"},
            grid={"member": {"start": 0, "stop": 40}, "edge": [0.0, 0.12]},
            metrics={"bootstrap_reps": 1599, "block_length": 10, "pbo_blocks": 8},
        )
    )
    run_dir = tmp_path_factory.mktemp("planted") / "run"
    run_sweep(spec, run_dir, batch_size=8, progress=False)
    write_part(run_dir, batch_again(run_dir, part_files(run_dir)[3], 2, 5))  # a repeated batch
    return run_dir


def _ok_arrays(run_dir):
    whole = load_results(run_dir).reset_index(drop=True)
    ok = whole[whole["status"] == "ok"].reset_index(drop=True)  # config_id order
    return ok, ok["grid_index"].to_numpy(np.int64), ok["t_stat"].to_numpy(np.float64)


def test_a_repeated_batch_counts_once_in_the_tests(planted):
    run = load_run(planted)
    assert set(TESTED_COLUMNS) <= set(run.columns)
    assert run.rows_in_parts == run.scan.done + 5
    assert run.tested.finite_p == run.scan.done == 80


def test_stepm_reality_check_and_spa_equal_the_whole_tables_arrays(planted):
    run = load_run(planted)
    ok, index, t = _ok_arrays(planted)
    want = data_snooping_tests(
        run.null_summary, index, ok["excess_mean"].to_numpy(), t, int(ok["n_obs"].iloc[0]), ALPHA
    )
    got = sweep_wide_tests(run, None, ALPHA, int(ok["n_obs"].iloc[0]))
    assert want.stepm.rejected is not None and want.stepm.rejected.size > LISTED_IDS
    assert got.configs == want.n_configs == 80
    assert (got.reality_check_pvalue, got.spa_pvalue) == (
        want.reality_check_pvalue,
        want.spa_pvalue,
    )
    assert got.best_t_config_id == ok["config_id"][index == want.best_index].iloc[0]
    rejected = ok[np.isin(index, want.stepm.rejected)]
    assert got.stepm.count == len(rejected) and got.stepm.steps == want.stepm.steps
    assert list(got.stepm.config_ids) == rejected["config_id"].tolist()[:LISTED_IDS]


def test_fdp_stepm_lists_the_largest_t_of_the_whole_tables_rejections(planted):
    run = load_run(planted)
    ok, index, t = _ok_arrays(planted)
    want = fdp_stepm(run.null_summary, index, t, GAMMA, ALPHA)
    got = discoveries(run, ["member", "edge"], ALPHA, GAMMA)
    assert want.rejected is not None and want.rejected.size > LISTED_DISCOVERIES
    assert (got.count, got.k, got.k_counts, got.configs) == (
        want.rejected.size,
        want.k,
        want.counts,
        80,
    )
    called = ok[np.isin(index, want.rejected)]
    order = np.lexsort((called["grid_index"].to_numpy(), -called["t_stat"].to_numpy()))
    first = called.iloc[order[:LISTED_DISCOVERIES]]
    assert [d.config_id for d in got.first] == first["config_id"].tolist()
    assert [d.t_stat for d in got.first] == first["t_stat"].tolist()
    assert [d.params["edge"] for d in got.first] == first["edge"].tolist()
    assert [d.rank for d in got.first] == list(range(1, LISTED_DISCOVERIES + 1))


def test_holm_and_bh_equal_the_whole_tables_p_values(planted):
    run = load_run(planted)
    ok, _, _ = _ok_arrays(planted)
    p = ok["p_value"].to_numpy(np.float64)
    want = multiple_testing_summary(p, ALPHA)
    got = corrections(run, None, 1599, ALPHA)
    assert want.n_holm > 20
    assert (got.tests, got.raw, got.holm, got.benjamini_hochberg) == (
        want.n_tests,
        want.n_raw,
        want.n_holm,
        want.n_bh,
    )
    survivors = ok["config_id"][want.holm_adjusted <= ALPHA].tolist()
    assert list(got.holm_survivors) == survivors[:20]


def test_the_listings_read_only_the_parts_that_can_hold_a_config_named(planted, tmp_path):
    run = load_run(planted)
    assert run.tested.parts_above_t(run.good_parts, 1e9) == []
    # Every part holds a counted config but the repeated batch (its configs count once,
    # in the part read first).
    assert len(run.tested.parts_above_t(run.good_parts, -np.inf)) == len(run.good_parts) - 1
    copy = tmp_path / "run"
    shutil.copytree(planted, copy)
    read: list[str] = []
    run = load_run(copy)
    original = run.store.read_part_columns

    def counting(name, columns):
        read.append(name)
        return original(name, columns)

    run.store.read_part_columns = counting  # type: ignore[method-assign]
    sweep_wide_tests(run, None, ALPHA, 1000)
    wanted = {n for n, v in run.tested.part_max_t.items() if v >= run.tested.extremes.best_t}
    assert wanted <= set(read) <= set(run.good_parts)
