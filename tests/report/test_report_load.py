"""The report's reader keeps nothing per config: its reductions equal the whole table's figures.

Every figure is checked against the whole table read by the public reader
(``sweep.load_results``, config_id order), and each reducer against its batch-free
definition on random data split into parts in any order.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
from fractions import Fraction

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep import load_results, results_hash
from sweep.common._range_set import RangeSet
from sweep.engine._metrics import block_columns
from sweep.executors._part_tasks import part_groups
from sweep.report._config_scan import (
    ExactMoments,
    RankReducer,
    SampleReducer,
    ScanSettings,
    sample_keys,
)
from sweep.report._load import RunData, load_run, owner_of
from sweep.report._ranking import CellMaxima, max_by
from tests.helpers import batch_again
from tests.sweep.test_hostile_folder_files import part_files, write_part


def _whole_table(run_dir) -> pd.DataFrame:
    """Every column of every config, by the public reader (config_id order)."""
    return load_results(run_dir).reset_index(drop=True)


def _same(a, b) -> bool:
    """Two Ranked results hold the same configs, ids and metric (NaN equal to NaN)."""
    return (
        np.array_equal(a.grid_index, b.grid_index)
        and a.config_id == b.config_id
        and np.array_equal(a.metric, b.metric, equal_nan=True)
    )


def _ranked(frame: pd.DataFrame) -> pd.DataFrame:
    """By excess Sharpe, best first, NaN last; ties by config_id (the frame's order)."""
    key = frame["excess_sharpe"].to_numpy(dtype=np.float64)
    return frame.iloc[np.argsort(np.where(np.isnan(key), np.inf, -key), kind="stable")]


@pytest.mark.parametrize("name", ["complete", "resumed", "failing"])
def test_the_reductions_are_the_whole_tables_figures(runs, name):
    run = load_run(runs[name], settings=ScanSettings(top=7))
    whole = _whole_table(runs[name])
    ok = whole[whole["status"] == "ok"]
    scan = run.scan
    assert run.table_hash == results_hash(runs[name])
    assert (scan.done, scan.failed, scan.ok) == (len(whole), len(whole) - len(ok), len(ok))
    assert scan.outside_grid == 0 and run.rows_in_parts == len(whole)
    failed = whole.loc[whole["status"] != "ok", "error"].fillna("(no message)")
    assert scan.errors == failed.value_counts().to_dict()
    for param in run.param_names:
        assert scan.axis_values[param] == sorted(ok[param].unique().tolist())
    best = _ranked(ok).head(7)
    assert scan.ranked.config_id == best["config_id"].tolist()
    assert scan.ranked.grid_index.tolist() == best["grid_index"].tolist()
    sharpe = ok["excess_sharpe"].to_numpy(dtype=np.float64)
    finite = sharpe[np.isfinite(sharpe)]
    assert scan.sharpe.count == finite.size
    assert scan.sharpe.variance == pytest.approx(np.var(finite, ddof=1), rel=1e-12)
    exact = [Fraction(float(v)) for v in finite]
    mean = sum(exact) / len(exact)
    assert scan.sharpe.variance == float(sum((v - mean) ** 2 for v in exact) / (len(exact) - 1))
    assert scan.pbo.grid_index.tolist() == sorted(ok["grid_index"].tolist())  # no sample
    if name == "failing":
        assert scan.failed > 0


@pytest.mark.parametrize("name", ["complete", "resumed"])
def test_rows_read_back_are_the_whole_table_rows_in_the_order_asked(runs, name):
    run = load_run(runs[name])
    whole = _whole_table(runs[name]).set_index("grid_index", drop=False)
    asked = whole["grid_index"].to_numpy()[::-3]
    sums_cols, sq_cols = block_columns(run.manifest.run_key.pbo_blocks)
    blocks = {*sums_cols, *sq_cols}
    complete = run.complete_rows_at(asked)
    expect = whole.loc[asked, [c for c in run.columns if c not in blocks]].reset_index(drop=True)
    pd.testing.assert_frame_equal(complete, expect)


def test_a_repeated_batch_counts_once(runs, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(runs["complete"], run_dir)
    first = part_files(run_dir)[0]
    write_part(run_dir, batch_again(run_dir, first, 0, 7))  # a batch written twice
    run = load_run(run_dir)
    reference = load_run(runs["complete"])
    assert run.rows_in_parts == run.scan.done + 7 and run.scan.done == run.total
    assert run.table_hash == results_hash(runs["complete"])
    assert _same(run.scan.ranked, reference.scan.ranked)
    assert run.scan.sharpe == reference.scan.sharpe
    assert run.tested.finite_p == reference.tested.finite_p
    assert sum(len(r) for r in run.owned.values()) == run.total
    everything = np.arange(run.total)[::-1]
    pd.testing.assert_frame_equal(
        run.complete_rows_at(everything), reference.complete_rows_at(everything)
    )


def _equal(x, y) -> bool:
    """Deep equality of records holding arrays (NaN equal to NaN, dtypes and shapes too)."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return type(x) is type(y) and _equal(dataclasses.asdict(x), dataclasses.asdict(y))
    if isinstance(x, dict):
        return isinstance(y, dict) and x.keys() == y.keys() and all(_equal(x[k], y[k]) for k in x)
    if isinstance(x, list | tuple):
        return type(x) is type(y) and len(x) == len(y) and all(map(_equal, x, y))
    if isinstance(x, np.ndarray):
        return (
            isinstance(y, np.ndarray)
            and x.dtype == y.dtype
            and np.array_equal(x, y, equal_nan=x.dtype.kind in "fc")
        )
    if isinstance(x, float) and isinstance(y, float):
        return x == y or (math.isnan(x) and math.isnan(y))
    return bool(type(x) is type(y) and x == y)


def same_reductions(a: RunData, b: RunData) -> bool:
    """Two reads of a folder reduced its rows to the same figures, samples and lists."""
    return (
        a.rows_in_parts == b.rows_in_parts
        and _equal(a.facts, b.facts)
        and _equal(a.scan, b.scan)
        and _equal(a.tested, b.tested)
        and _equal(a.null_summary, b.null_summary)
    )


def _in_groups(groups: int, reverse: bool = False):
    """A part mapper running the groups here, one after another (results reversed if asked:
    the merge must not depend on their order)."""

    def mapper(body, store, names, args):
        done = [body(store.location, group, *args) for group in part_groups(names, groups)]
        return done[::-1] if reverse else done

    return mapper


@pytest.mark.parametrize("name", ["resumed", "failing", "repeated"])
@pytest.mark.parametrize(("groups", "reverse"), [(2, False), (3, True), (1000, False)])
def test_the_read_pass_in_groups_reduces_to_the_same_figures(runs, tmp_path, name, groups, reverse):
    run_dir = runs.get(name)
    if run_dir is None:  # a batch written twice: its rows count once, in the first part
        run_dir = tmp_path / "run"
        shutil.copytree(runs["complete"], run_dir)
        write_part(run_dir, batch_again(run_dir, part_files(run_dir)[1], 2, 5))
    settings = ScanSettings(top=4, pbo=9, returns=5, checked=3, seed=11)
    whole = load_run(run_dir, settings=settings)
    grouped = load_run(run_dir, settings=settings, mapper=_in_groups(groups, reverse))
    assert len(whole.owned) > 1 and whole.scan.pbo.sampled
    assert same_reductions(whole, grouped)


def test_a_bad_part_leaves_its_rows_out(runs, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(runs["complete"], run_dir)
    victim = part_files(run_dir)[0]
    victim.write_bytes(victim.read_bytes()[:-9])  # bytes no longer match the name
    run = load_run(run_dir)
    assert not all(c.ok for c in run.part_checks)
    good_rows = sum(c.rows for c in run.part_checks if c.ok)
    assert run.scan.done == good_rows < run.total
    assert set(run.owned) == {c.name for c in run.part_checks if c.ok}


@pytest.mark.parametrize("name", ["complete", "failing"])
def test_the_reduced_columns_give_the_facts_of_the_whole_table(runs, name):
    run = load_run(runs[name])
    whole = _whole_table(runs[name])
    ok = whole[whole["status"] == "ok"]
    first = ok.sort_values("grid_index").iloc[0]
    assert run.facts.first_n_obs == int(first["n_obs"])
    assert run.facts.max_n_obs == int(ok["n_obs"].max())
    assert run.facts.constant_configs == int((~np.isfinite(ok["sharpe"])).sum())
    n, omega, sd = (ok[c].to_numpy(dtype=np.float64) for c in ("n_obs", "omega", "excess_std"))
    live = (sd > 0) & np.isfinite(omega)
    squares = (omega[live] / (np.sqrt(n[live]) * sd[live])) ** 2
    assert run.facts.null_sharpe_std == pytest.approx(np.sqrt(np.mean(squares)), rel=1e-15)
    # The mean is exact: the squares' sum as a fraction, divided and rounded once.
    exact = sum(Fraction(float(v)) for v in squares) / len(squares)
    assert run.facts.null_sharpe_std == math.sqrt(float(exact))


def _parts(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """``0..n-1`` cut at random places, the pieces in random order."""
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(n - 1, 5), replace=False)) if n > 1 else []
    pieces = np.split(rng.permutation(n), cuts)
    return [pieces[i] for i in rng.permutation(len(pieces))]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 400), k=st.integers(1, 12))
def test_the_reducers_do_not_depend_on_the_parts(seed, n, k):
    rng = np.random.default_rng(seed)
    metric = rng.choice([0.5, 0.25, -1.0, np.nan, 2.0, 0.125], n)  # many ties, some NaN
    ids = np.array([f"{v:032x}" for v in rng.permutation(10 * n)[:n]])
    index = rng.permutation(5 * n)[:n].astype(np.int64)
    keep = rng.random(n) < 0.9
    ranks, moments, samples = [], [], []
    for _ in range(3):
        rank, moment, sample = RankReducer(k), ExactMoments(), SampleReducer(k, 3, 1)
        for rows in _parts(rng, n):
            rank.add(index[rows], pa.array(ids[rows]), metric[rows], keep[rows])
            moment.add(metric[rows][keep[rows]])
            sample.add(index[rows], keep[rows])
        ranks.append(rank.result())
        moments.append(moment.result())
        samples.append(sample.result())
    assert _same(ranks[0], ranks[1]) and _same(ranks[0], ranks[2])
    assert moments[0] == moments[1] == moments[2]
    assert all(np.array_equal(s, samples[0]) for s in samples)
    # The definitions: the best by (metric desc, NaN last, id); the k smallest keys.
    order = np.lexsort((ids[keep], np.where(np.isnan(metric[keep]), np.inf, -metric[keep])))
    assert ranks[0].config_id == ids[keep][order][:k].tolist()
    keys = sample_keys(index[keep], 3, 1)
    assert samples[0].tolist() == sorted(index[keep][np.argsort(keys)][:k].tolist())
    finite = metric[keep][np.isfinite(metric[keep])]
    if finite.size > 1:
        assert moments[0].variance == pytest.approx(np.var(finite, ddof=1), rel=1e-12, abs=1e-300)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), parts=st.integers(0, 12), n=st.integers(1, 300))
def test_the_owner_of_a_position_is_the_one_part_whose_ranges_hold_it(seed, parts, n):
    rng = np.random.default_rng(seed)
    sets = {
        f"p{k:02d}": RangeSet.from_positions(rng.choice(n, size=rng.integers(0, n + 1)))
        for k in range(parts)
    }
    owned = {name: ranges for name, ranges in sets.items()}
    seen = RangeSet.empty()
    for name, ranges in sets.items():  # disjoint, as owned_positions makes them
        owned[name] = ranges.difference(seen)
        seen = seen.union(ranges)
    positions = rng.integers(-3, n + 3, size=200)
    expected = np.full(positions.size, -1)
    for k, ranges in enumerate(owned.values()):
        expected[ranges.contains(positions)] = k
    np.testing.assert_array_equal(owner_of(owned, positions), expected)


def test_a_bottom_k_sample_is_uniform():
    # Each of 50 configs is drawn with probability 10/50 over 2,000 seeds (binomial check).
    hits = np.zeros(50)
    for seed in range(2000):
        sample = SampleReducer(10, seed, 0)
        sample.add(np.arange(50), np.ones(50, dtype=bool))
        hits[sample.result()] += 1
    assert np.all(np.abs(hits / 2000 - 0.2) < 5 * math.sqrt(0.2 * 0.8 / 2000))


def _chunks(frame: pd.DataFrame, rng: np.random.Generator, columns: list[str]):
    return [{c: frame[c].to_numpy()[rows] for c in columns} for rows in _parts(rng, len(frame))]


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    n=st.integers(1, 300),
    a_values=st.lists(st.integers(-5, 50), min_size=1, max_size=6, unique=True),
    b_values=st.lists(st.sampled_from([0.5, 0.1, -0.0, 2.0, 1e-9]), min_size=1, unique=True),
)
def test_max_by_is_the_group_by_maximum_of_the_plain_values(data, n, a_values, b_values):
    # Parts in any order, a few configs with no key or a NaN metric.
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = rng.choice(a_values, n).astype(np.float64)
    a[rng.random(n) < 0.05] = np.nan
    metric = np.where(rng.random(n) < 0.3, np.nan, rng.normal(size=n))
    frame = pd.DataFrame(
        {"a": a, "b": rng.choice(b_values, n), "s": rng.choice(["x", "y"], n), "m": metric}
    )
    values = {c: sorted(frame[c].dropna().unique().tolist()) for c in ("a", "b", "s")}
    for keys in (["a", "b"], ["b", "a"], ["a"], ["s", "b"]):
        expect = frame.dropna(subset=keys).groupby(keys, sort=True)["m"].max()
        got, _ = max_by(_chunks(frame, rng, [*keys, "m"]), keys, values, "m")
        pd.testing.assert_series_equal(got, expect, check_names=False, check_index_type=False)
        # Fresh copies fed groups of the chunks, merged in any order: the same maxima.
        template = CellMaxima(keys, values, "m")
        copies = [template.fresh() for _ in range(3)]
        for k, chunk in enumerate(_chunks(frame, rng, [*keys, "m"])):
            copies[k % 3].add(chunk)
        for copy in reversed(copies):
            template.merge(copy)
        merged, _ = template.result()
        pd.testing.assert_series_equal(merged, got)


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
        {"a": rng.choice(values, n), "b": rng.choice([1, 2, 3], n), "m": rng.normal(size=n)}
    )
    present = sorted(set(frame["a"]))
    cells = min(len(present), limit)
    cell_of = {v: k * cells // len(present) for k, v in enumerate(present)}
    first = {c: min(v for v in present if cell_of[v] == c) for c in range(cells)}
    plain = pd.DataFrame(
        {"a": [first[cell_of[v]] for v in frame["a"]], "b": frame["b"], "m": frame["m"]}
    )
    axis_values = {"a": present, "b": [1, 2, 3]}
    for keys in (["a", "b"], ["a"]):
        got, axes = max_by(_chunks(frame, rng, [*keys, "m"]), keys, axis_values, "m", limit)
        expect = plain.groupby(keys, sort=True)["m"].max()
        np.testing.assert_array_equal(got.to_numpy(), expect.to_numpy())
        assert got.index.tolist() == expect.index.tolist()
        cut = axes[0]
        assert cut.values == len(present) and cut.grouped == (len(present) > limit)
        assert cut.first.tolist() == [first[c] for c in range(cells)]
        assert cut.last.tolist() == [
            max(v for v in present if cell_of[v] == c) for c in range(cells)
        ]


@pytest.mark.parametrize("name", ["resumed", "failing"])
def test_a_report_from_passes_over_groups_merged_in_any_order_is_the_same(runs, name):
    from sweep.report import build_report
    from tests.report.conftest import FAST

    def doc(report):
        out = report.to_json()
        out.pop("generated")
        return out

    here = build_report(runs[name], FAST)
    grouped = build_report(runs[name], FAST, mapper=_in_groups(3, reverse=True))
    assert doc(grouped) == doc(here)
    assert grouped.figures == here.figures  # the PNG bytes
