"""The passes after a sweep, streamed over parts (issue 24): results --top, repeats, verify."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from stats import merge_null_summaries
from sweep import load_results, results_hash, run_sweep, spec_from_dict
from sweep.runner._status import results_frame, verify_run
from sweep.store._null_summary import SUMMARY_KEY, merged_summary, summary_of
from sweep.store._part_audit import audit_here, audit_part, merged_null_summary
from sweep.store._repeats import fingerprints, repeated_ids
from sweep.store._run_store import RunStore
from tests.helpers import small_spec_dict


@pytest.fixture(scope="module")
def many_parts(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("streamed") / "r"
    run_sweep(spec_from_dict(small_spec_dict()), run_dir, batch_size=7, progress=False)
    return run_dir


def _whole_table_top(run_dir, sort: str, top: int) -> pd.DataFrame:
    """The rule before streaming: the whole table by config_id, a stable sort, the head."""
    frame = load_results(run_dir)
    frame = frame.sort_values(sort, ascending=False, na_position="last", kind="stable")
    return frame.head(top).reset_index(drop=True)


@pytest.mark.parametrize("sort", ["excess_sharpe_ann", "n_trades", "band", "status", "config_id"])
@pytest.mark.parametrize("top", [1, 5, 60, 100])
def test_streamed_top_is_the_whole_table_top(many_parts, sort, top):
    # n_trades, band and status have many ties: they are broken by config_id either way.
    frame, notes = results_frame(many_parts, sort, top)
    assert notes == []
    pd.testing.assert_frame_equal(
        frame.reset_index(drop=True), _whole_table_top(many_parts, sort, top)
    )


def test_streamed_top_refuses_an_unknown_column_as_before(many_parts):
    with pytest.raises(Exception, match="--sort: unknown column 'sharp'") as streamed:
        results_frame(many_parts, "sharp", 3)
    with pytest.raises(Exception, match="--sort: unknown column 'sharp'") as whole:
        results_frame(many_parts, "sharp", None)
    assert str(streamed.value) == str(whole.value)


def test_streamed_top_notes_configs_not_done(many_parts, tmp_path):
    import shutil

    copy = tmp_path / "r"
    shutil.copytree(many_parts, copy)
    store = RunStore(copy)
    (copy / "parts" / store.part_names()[0]).unlink()
    streamed = results_frame(copy, "excess_sharpe_ann", 4)
    whole = results_frame(copy, "excess_sharpe_ann", None)
    assert streamed[1] == whole[1] and "not done yet" in streamed[1][0]
    pd.testing.assert_frame_equal(
        streamed[0].reset_index(drop=True), whole[0].head(4).reset_index(drop=True)
    )


def test_fingerprints_are_equal_for_equal_strings_only():
    ids = pa.array(["a", "a\x00", "", None, "abcdefgh", "abcdefghi", "abcdefgh", "x" * 70])
    found = fingerprints(ids)
    assert found[4] == found[6]
    assert found[2] == found[3]  # a null is the empty string
    assert len(set(found.tolist())) == 6


@pytest.mark.parametrize("at_once", [1, 3, 1000])
def test_repeated_ids_in_any_number_of_passes(at_once):
    parts = {
        "p1": [pa.array(["a", "b", "c"]), pa.array(["d"])],
        "p2": [pa.array(["e", "b"])],
        "p3": [pa.array(["f", "d", "g"])],
    }
    found = repeated_ids(list(parts), lambda name: parts[name], 9, at_once=at_once)
    assert sorted(found.to_pylist()) == ["b", "d"]


def test_repeated_ids_finds_nothing_among_distinct_ids():
    rng = np.random.default_rng(0)
    ids = [f"{v:032x}" for v in rng.integers(0, 2**62, 5000)]
    parts = {"p1": [pa.array(ids[:2500])], "p2": [pa.array(ids[2500:])]}
    assert len(repeated_ids(list(parts), lambda name: parts[name], 5000, at_once=700)) == 0


def test_an_audit_holds_the_part_ranges_footer_and_digest(many_parts):
    store = RunStore(many_parts)
    name = store.part_names()[0]
    audit = audit_part(store, name, rehash=True)
    assert audit.check.ok and audit.positions is not None and len(audit.positions) == 7
    assert audit.fresh is not None and audit.schema is not None
    assert audit_part(store, name, rehash=False).fresh is None


def test_verify_is_unchanged_by_streaming(many_parts):
    verification = verify_run(many_parts)
    assert verification.good_parts == 9 and verification.done == 60
    assert verification.table_hash == results_hash(many_parts)
    assert verification.digest_mismatches == () and verification.null_summary_hash


@pytest.mark.parametrize("group", [1, 2, 64])
def test_null_summaries_merged_in_groups_are_the_merge_of_all(many_parts, monkeypatch, group):
    # The report merges the parts' summaries a group at a time; maxima and the top k of a
    # union do not depend on the grouping, so the result is the all-at-once merge.
    store = RunStore(many_parts)
    schemas = [store.read_part_schema(name) for name in store.part_names()]
    whole = merge_null_summaries([summary_of(s) for s in schemas])
    monkeypatch.setattr("sweep.store._null_summary.MERGE_GROUP", group)
    grouped = merged_summary(schemas)
    assert len(schemas) == 9  # 60 configs in batches of 7
    for field in dataclasses.fields(whole):
        np.testing.assert_array_equal(getattr(grouped, field.name), getattr(whole, field.name))


def _assert_same_summary(got, want) -> None:
    assert got is not None and got.n_configs == want.n_configs
    for field in dataclasses.fields(want):
        np.testing.assert_array_equal(getattr(got, field.name), getattr(want, field.name))


@pytest.mark.parametrize("cuts", [(), (1,), (4, 5), tuple(range(1, 9))])
@pytest.mark.parametrize("group", [1, 2, 64])
def test_audits_carry_one_merged_summary_per_call_whatever_the_groups(
    many_parts, monkeypatch, cuts, group
):
    # A verify or report audits the parts in calls (one here, or one per Ray task); each
    # call's merged summary rides on its last good audit, and the summaries are left out of
    # the audits' schemas. Whatever the calls, the merge over them is the parts' merge.
    store = RunStore(many_parts)
    names = store.part_names()
    whole = merge_null_summaries([summary_of(store.read_part_schema(n)) for n in names])
    monkeypatch.setattr("sweep.store._part_audit.MERGE_GROUP", group)
    bounds = [0, *cuts, len(names)]
    audits = [
        audit
        for a, b in itertools.pairwise(bounds)
        for audit in audit_here(store, names[a:b], True)
    ]
    carriers = [a for a in audits if a.merged_parts]
    assert len(carriers) == len(bounds) - 1
    assert sorted(n for a in carriers for n in a.merged_parts) == sorted(names)
    assert all(SUMMARY_KEY not in (a.schema.metadata or {}) for a in audits)
    _assert_same_summary(merged_null_summary(store, audits, set(names)), whole)


def test_a_group_that_loses_a_part_reads_the_rest_again(many_parts):
    # A conflict judged after the audits fails a part that passed its own check: the merge
    # is then over the parts that passed, that group's summaries read again.
    store = RunStore(many_parts)
    names = store.part_names()
    audits = audit_here(store, names, True)
    passed = set(names) - {names[3]}
    kept = [summary_of(store.read_part_schema(n)) for n in names if n in passed]
    _assert_same_summary(merged_null_summary(store, audits, passed), merge_null_summaries(kept))
    assert merged_null_summary(store, audits, set()) is None


def test_a_sweep_without_bootstrap_merges_to_no_summary(tmp_path):
    spec = small_spec_dict()
    spec["metrics"] = {**spec.get("metrics", {}), "bootstrap_reps": 0}
    run_sweep(spec_from_dict(spec), tmp_path / "r", batch_size=20, progress=False)
    store = RunStore(tmp_path / "r")
    names = store.part_names()
    audits = audit_here(store, names, True)
    assert merged_null_summary(store, audits, set(names)) is None
    assert verify_run(tmp_path / "r").null_summary_hash is None
