"""The report's passes fold their answers as they come, into states bounded by what it shows.

Each fold is checked against its batch-free definition on random data cut into parts and
groups merged in any order: the error messages' tally (exact counts of a bottom-k of the
messages, the rest counted), the axes' values as bitmaps, the samples cut inside a task.
A report whose part mapper yields its answers one at a time (a generator, iterable once)
is the same report.
"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
import shutil
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.executors._part_tasks import part_groups
from sweep.report._axis_values import AxisValues, recorded_axes
from sweep.report._blocks import num
from sweep.report._config_scan import ScanSettings
from sweep.report._document import MAX_ROWS, error_rows
from sweep.report._error_tally import NO_MESSAGE, ErrorTally
from sweep.report._load import ReadPlan, load_run, read_part_group
from sweep.report._sections import ErrorGroup
from sweep.store._run_store import RunStore
from tests.report.test_report_load import same_reductions


def _pieces(rng: np.random.Generator, items: list, pieces: int) -> list[list]:
    """``items`` shuffled and cut into ``pieces`` runs (some may be empty)."""
    order = rng.permutation(len(items))
    cuts = np.sort(rng.integers(0, len(items) + 1, size=pieces - 1))
    return [[items[i] for i in run] for run in np.split(order, cuts)]


def _sha_key(message: str) -> tuple[int, str]:
    return int.from_bytes(hashlib.sha256(message.encode()).digest()[:8], "big"), message


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    distinct=st.integers(1, 60),
    kept=st.integers(1, 25),
    groups=st.integers(1, 6),
)
def test_the_error_tally_keeps_exact_counts_of_a_bottom_k_whatever_the_grouping(
    seed, distinct, kept, groups
):
    rng = np.random.default_rng(seed)
    messages = [f"error {k}" for k in range(distinct - 1)] + [None]
    failed = [messages[i] for i in rng.integers(0, distinct, size=300)]
    truth = Counter(NO_MESSAGE if m is None else m for m in failed)
    tallies = []
    for group in _pieces(rng, failed, groups):  # each group a task, its parts one by one
        tally = ErrorTally(kept)
        for part in _pieces(rng, group, 3):
            tally.add(Counter(part).items())
        tallies.append(tally)
    total = ErrorTally(kept)
    for k in rng.permutation(len(tallies)):
        total.merge(tallies[k])
    counts, others = total.result()
    chosen = sorted(truth, key=_sha_key)[:kept]
    assert counts == {m: truth[m] for m in chosen}
    assert others == sum(truth.values()) - sum(counts.values())
    assert (others == 0) == (len(truth) <= kept)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), groups=st.integers(1, 5), recorded=st.booleans())
def test_the_axis_values_seen_are_the_distinct_values_whatever_the_parts(seed, groups, recorded):
    rng = np.random.default_rng(seed)
    axis = rng.permutation(np.round(rng.normal(size=40), 3))  # recorded in grid order
    rows = list(rng.choice(axis, size=120))
    rows += [None, math.nan, 12345.5]  # null, NaN: never listed; a value the record lacks
    truth = sorted({v for v in rows if v is not None and v == v})
    reducers = []
    for group in _pieces(rng, rows, groups):
        reducer = AxisValues(axis if recorded else None)
        for part in _pieces(rng, group, 3):
            reducer.add(pa.chunked_array([pa.array(part, type=pa.float64())]))
        reducers.append(reducer)
    total = AxisValues(axis if recorded else None)
    for k in rng.permutation(len(reducers)):
        total.merge(reducers[k])
    found = total.result()
    assert found == truth and all(type(v) is float for v in found)
    if recorded:  # only the value outside the record is held as an object
        assert total.extra == {12345.5} & set(truth)


def test_axis_values_come_back_as_the_column_gives_them():
    reducer = AxisValues(np.array([3.0, 1.0, 2.0]))  # an integer column, a float record
    reducer.add(pa.array([2, 3, 2], type=pa.int64()))
    assert reducer.result() == [2, 3] and all(type(v) is int for v in reducer.result())
    words = AxisValues(np.array(["b", "a", "c"]))
    words.add(pa.array(["c", "a", None]))
    assert words.result() == ["a", "c"] and not words.extra


def test_a_tasks_answer_carries_at_most_each_samples_size(runs):
    store = RunStore(runs["failing"])
    settings_ = ScanSettings(top=3, pbo=4, returns=2, checked=1, seed=3)
    run = load_run(runs["failing"], settings=settings_)
    plan_names = list(run.owned)
    plan = ReadPlan(
        run.owned,
        frozenset(run.columns),
        settings_,
        run.total,
        run.param_names,
        run.null_summary,
        recorded_axes(run.manifest.grid),
    )
    answer = read_part_group(store.location, plan_names, plan)
    assert answer.scan._pbo._held <= 4 and answer.scan._returns._held <= 2
    assert answer.scan._checked._held <= 1
    # One part's answer and every part's are about the same size: nothing grows per part.
    one = len(pickle.dumps(read_part_group(store.location, plan_names[:1], plan)))
    assert len(pickle.dumps(answer)) < 2 * one + 4096


def _yielding(groups: int):
    """A part mapper that yields each group's answer as it is computed (iterable once)."""

    def mapper(body, store, names, args):
        for group in part_groups(names, groups):
            yield body(store.location, group, *args)

    return mapper


@pytest.mark.parametrize("name", ["resumed", "failing"])
def test_a_mapper_yielding_answers_one_at_a_time_gives_the_same_report(runs, name):
    from sweep.report import build_report
    from tests.report.conftest import FAST

    settings_ = ScanSettings(top=4, pbo=9, returns=5, checked=3, seed=11)
    whole = load_run(runs[name], settings=settings_)
    lazily = load_run(runs[name], settings=settings_, mapper=_yielding(4))
    assert same_reductions(whole, lazily)

    def doc(report):
        out = report.to_json()
        out.pop("generated")
        return out

    assert doc(build_report(runs[name], FAST, mapper=_yielding(3))) == doc(
        build_report(runs[name], FAST)
    )


def test_the_markdown_lists_the_first_error_groups_and_counts_the_rest():
    groups = tuple(ErrorGroup(error=f"e{k}", count=100 - k) for k in range(MAX_ROWS + 5))
    rows = error_rows(groups)
    assert rows[:MAX_ROWS] == [[num(g.count), g.error] for g in groups[:MAX_ROWS]]
    assert rows[MAX_ROWS:] == [[num(sum(g.count for g in groups[MAX_ROWS:])), "(5 other groups)"]]
    assert error_rows(groups[:MAX_ROWS]) == rows[:MAX_ROWS]  # none cut: no row added


def test_a_folder_whose_manifest_lists_no_axis_values_reads_the_same_values(runs, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(runs["failing"], run_dir)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    for axis in manifest["grid"]["axes"]:  # as a folder written before values were recorded
        axis.pop("values", None)
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    old, new = load_run(run_dir), load_run(runs["failing"])
    assert not recorded_axes(old.manifest.grid) and recorded_axes(new.manifest.grid)
    assert old.scan.axis_values == new.scan.axis_values
    assert any(len(v) > 1 for v in new.scan.axis_values.values())
