"""The report's reader holds few columns per config and reads the rest back for the rows shown."""

from __future__ import annotations

import math
import shutil
from fractions import Fraction

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep import load_results, results_hash
from sweep.engine._metrics import block_columns
from sweep.report._load import (
    CATEGORICAL_COLUMNS,
    WHOLE_COLUMNS,
    _CategoryCodes,
    load_run,
    values_of,
)
from sweep.report._ranking import max_by, ranked
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
    squares = (omega[live] / (np.sqrt(n[live]) * sd[live])) ** 2
    assert run.facts.null_sharpe_std == pytest.approx(np.sqrt(np.mean(squares)), rel=1e-15)
    # The mean is exact: the squares' sum as a fraction, divided and rounded once.
    exact = sum(Fraction(float(v)) for v in squares) / len(squares)
    assert run.facts.null_sharpe_std == math.sqrt(float(exact))
    if name == "failing":
        assert (whole["status"] != "ok").any()


def test_ids_this_engine_would_not_write_are_ordered_by_their_strings(runs, monkeypatch):
    # The reader sorts 128-bit keys of the ids; an id that is not 32 lower-case hex digits
    # sends it back to sorting the strings, with the same result.
    keyed = load_run(runs["resumed"])
    monkeypatch.setattr("sweep.report._load.config_id_keys", lambda ids: None)
    strings = load_run(runs["resumed"])
    pd.testing.assert_frame_equal(strings.results, keyed.results)
    everything = np.arange(len(keyed.results))
    assert strings.config_ids(everything) == keyed.config_ids(everything)


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    n=st.integers(1, 300),
    a_values=st.lists(st.integers(-5, 50), min_size=1, max_size=6, unique=True),
    b_values=st.lists(st.sampled_from([0.5, 0.1, -0.0, 2.0, 1e-9]), min_size=1, unique=True),
)
def test_max_by_is_the_group_by_maximum_of_the_plain_values(data, n, a_values, b_values):
    # Categories in any order, some unused, a few configs with no key or a NaN metric.
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = pd.Categorical(rng.choice(a_values, n), categories=[*rng.permutation(a_values), 999])
    b = pd.Categorical(rng.choice(b_values, n))
    metric = np.where(rng.random(n) < 0.3, np.nan, rng.normal(size=n))
    frame = pd.DataFrame({"a": a, "b": b, "s": rng.choice(["x", "y"], n), "m": metric})
    frame.loc[rng.random(n) < 0.05, "a"] = np.nan
    for keys in (["a", "b"], ["b", "a"], ["a"], ["s", "b"]):
        keyed = frame.dropna(subset=keys)  # the group-by leaves out a config with no key
        plain = pd.DataFrame({c: values_of(keyed, c) for c in [*keys, "m"]})
        expect = plain.groupby(keys, sort=True)["m"].max()
        got, _ = max_by(frame, keys, "m")
        pd.testing.assert_series_equal(got, expect, check_names=False)


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    kind=st.sampled_from(["int64", "float64", "bool"]),
    parts=st.lists(st.integers(0, 40), min_size=1, max_size=5),
)
def test_category_codes_part_by_part_are_astype_category_of_the_whole_column(data, kind, parts):
    # Values arrive a part at a time, scattered to their rows (a repeated row skipped):
    # the categorical is the one pandas makes of the whole column.
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    pool = {"int64": [7, -3, 0, 12], "float64": [0.25, -1.5, 3.0, np.nan], "bool": [True, False]}
    chunks = [np.asarray(rng.choice(pool[kind], size), dtype=kind) for size in parts]
    repeated = rng.random(sum(parts)) < 0.1  # second copies of a repeated config
    dest = np.full(len(repeated), -1)
    dest[~repeated] = rng.permutation(int((~repeated).sum()))
    whole = np.empty(int((~repeated).sum()), dtype=kind)
    whole[dest[~repeated]] = np.concatenate(chunks)[~repeated]
    codes = _CategoryCodes(len(whole))
    start = 0
    for chunk in chunks:
        to = dest[start : start + len(chunk)]
        codes.add(chunk, to, to >= 0)
        start += len(chunk)
    expect = pd.Series(whole).astype("category")
    pd.testing.assert_series_equal(codes.series(), expect)


@settings(max_examples=100, deadline=None)
@given(
    values=st.lists(st.integers(-1000, 1000), min_size=1, max_size=60, unique=True),
    limit=st.integers(3, 8),  # "b" (3 values) stays one value per cell
    seed=st.integers(0, 2**32 - 1),
)
def test_an_axis_with_more_values_than_cells_is_cut_into_runs_of_consecutive_values(
    values, limit, seed
):
    # Brute force: rank the distinct values, cell k * cells // m, the maximum in each cell.
    rng = np.random.default_rng(seed)
    n = 200
    frame = pd.DataFrame(
        {
            "a": pd.Categorical(rng.choice(values, n), categories=rng.permutation(values)),
            "b": pd.Categorical(rng.choice([1, 2, 3], n)),
            "m": rng.normal(size=n),
        }
    )
    present = sorted(set(frame["a"].astype(int)))
    cells = min(len(present), limit)
    cell_of = {v: k * cells // len(present) for k, v in enumerate(present)}
    first = {c: min(v for v in present if cell_of[v] == c) for c in range(cells)}
    plain = pd.DataFrame(
        {
            "a": [first[cell_of[v]] for v in frame["a"].astype(int)],
            "b": frame["b"].astype(int),
            "m": frame["m"],
        }
    )
    for keys in (["a", "b"], ["a"]):
        got, axes = max_by(frame, keys, "m", limit=limit)
        expect = plain.groupby(keys, sort=True)["m"].max()
        np.testing.assert_array_equal(got.to_numpy(), expect.to_numpy())
        assert got.index.tolist() == expect.index.tolist()
        cut = axes[0]
        assert cut.values == len(present) and cut.grouped == (len(present) > limit)
        assert cut.first.tolist() == [first[c] for c in range(cells)]
        assert cut.last.tolist() == [
            max(v for v in present if cell_of[v] == c) for c in range(cells)
        ]
