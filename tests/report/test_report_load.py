"""The report's reader holds few columns per config and reads the rest back for the rows shown."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from sweep import load_results, results_hash
from sweep.engine._metrics import block_columns
from sweep.report._load import CATEGORICAL_COLUMNS, WHOLE_COLUMNS, load_run, values_of
from sweep.report._ranking import ranked
from sweep.report._sweep_facts import REDUCED_COLUMNS
from tests.sweep.test_hostile_folder_files import part_files, write_part


def _block_columns(run) -> set[str]:
    sums, sums_sq = block_columns(run.manifest.run_key.pbo_blocks)
    return {*sums, *sums_sq}


def _whole_table(run_dir) -> pd.DataFrame:
    """Every column of every config, by the public reader (config_id order)."""
    return load_results(run_dir).reset_index(drop=True)


@pytest.mark.parametrize("name", ["complete", "resumed", "failing"])
def test_the_reader_holds_the_whole_columns_and_the_hash_of_the_rows(runs, name):
    run = load_run(runs[name], extra_columns=("turnover",))
    whole = _whole_table(runs[name])
    params = run.varying or run.param_names
    assert list(run.results.columns) == [
        c for c in run.columns if c in {*WHOLE_COLUMNS, *params, "turnover"}
    ]
    assert "config_id" not in run.results.columns and set(run.varying) < set(run.param_names)
    held = run.results.copy()
    for column in [*CATEGORICAL_COLUMNS, *params]:  # held as categoricals, the same values
        assert isinstance(held[column].dtype, pd.CategoricalDtype)
        held[column] = values_of(held, column).astype(whole[column].dtype)
    assert values_of(run.results, params[0]).dtype == whole[params[0]].dtype
    pd.testing.assert_frame_equal(held, whole[list(held.columns)])
    everything = np.arange(len(run.results))
    assert run.config_ids(everything[::-1]) == whole["config_id"].tolist()[::-1]
    assert run.table_hash == results_hash(runs[name])
    blocks = _block_columns(run)
    assert set(run.columns) == set(whole.columns) and blocks <= set(run.columns)


@pytest.mark.parametrize("name", ["complete", "resumed"])
def test_complete_rows_are_the_whole_table_rows_in_the_order_asked(runs, name):
    run = load_run(runs[name])
    whole = _whole_table(runs[name])
    shown = ranked(run.results, head=9)
    complete = run.complete_rows(shown)
    blocks = _block_columns(run)
    expect = whole.iloc[shown.index][[c for c in run.columns if c not in blocks]]
    pd.testing.assert_frame_equal(complete, expect)
    counts, sums, sums_sq = run.block_statistics(np.asarray(shown.index[::-1], dtype=np.int64))
    sums_cols, sq_cols = block_columns(run.manifest.run_key.pbo_blocks)
    back = whole.iloc[shown.index[::-1]]
    np.testing.assert_array_equal(counts, back["blk_n"].to_numpy())
    np.testing.assert_array_equal(sums, back[sums_cols].to_numpy())
    np.testing.assert_array_equal(sums_sq, back[sq_cols].to_numpy())


def test_a_repeated_batch_is_read_back_once(runs, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(runs["complete"], run_dir)
    first = part_files(run_dir)[0]
    write_part(run_dir, pq.read_table(first).slice(0, 7))  # a batch written twice
    run = load_run(run_dir)
    assert run.rows_in_parts == len(run.results) + 7
    assert run.table_hash == results_hash(runs["complete"])
    whole = _whole_table(runs["complete"])
    everything = np.arange(len(run.results), dtype=np.int64)
    complete = run.complete_rows(run.results.iloc[everything[::-1]])
    expect = whole.iloc[everything[::-1]][list(complete.columns)]
    pd.testing.assert_frame_equal(complete, expect)


def test_a_bad_part_leaves_its_rows_out_of_the_reads_back(runs, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(runs["complete"], run_dir)
    victim = part_files(run_dir)[0]
    victim.write_bytes(victim.read_bytes()[:-9])  # bytes no longer match the name
    run = load_run(run_dir)
    assert not all(c.ok for c in run.part_checks)
    good_rows = sum(c.rows for c in run.part_checks if c.ok)
    assert len(run.results) == good_rows < run.total
    complete = run.complete_rows(run.results)
    assert complete["grid_index"].tolist() == run.results["grid_index"].tolist()


@pytest.mark.parametrize("name", ["complete", "failing"])
def test_the_reduced_columns_give_the_facts_of_the_whole_table(runs, name):
    run = load_run(runs[name])
    whole = _whole_table(runs[name])
    ok = whole[whole["status"] == "ok"]
    assert not set(REDUCED_COLUMNS) & set(run.results.columns)
    assert run.facts.first_n_obs == int(ok["n_obs"].iloc[0])
    assert run.facts.max_n_obs == int(ok["n_obs"].max())
    assert run.facts.constant_configs == int((~np.isfinite(ok["sharpe"])).sum())
    n, omega, sd = (ok[c].to_numpy(dtype=np.float64) for c in ("n_obs", "omega", "excess_std"))
    live = (sd > 0) & np.isfinite(omega)
    expect = np.sqrt(np.mean((omega[live] / (np.sqrt(n[live]) * sd[live])) ** 2))
    assert run.facts.null_sharpe_std == pytest.approx(expect, rel=1e-15)
    if name == "failing":
        assert (whole["status"] != "ok").any()
