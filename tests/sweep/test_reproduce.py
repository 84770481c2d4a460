"""``sweep reproduce``: a sample of configs and whole parts re-computed, compared bit for bit."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import sweep
from sweep import run_sweep, spec_from_dict
from sweep.cli._app import app
from sweep.common._range_set import RangeSet
from sweep.errors import RunFolderError
from sweep.runner._reproduce import (
    ReproduceSettings,
    compare_rows,
    drawn_parts,
    fresh_seed,
    reproduce_run,
    sample_positions,
)
from sweep.store._null_summary import SUMMARY_KEY, decode_summary, encode_summary
from sweep.store._run_store import RunStore, read_run
from tests.helpers import read_part_table, rewrite_part, run_main, small_spec_dict

runner = CliRunner()

VALIDATION = {"walk_forward": {"train": "1y", "test": "3m", "purge": "5d"}}


@pytest.fixture(scope="module")
def done_run(tmp_path_factory) -> Path:
    """A complete run with bootstrap and walk-forward folds: 60 configs in parts of 25, 25, 10."""
    run = tmp_path_factory.mktemp("repro") / "run"
    doc = small_spec_dict(validation=VALIDATION)
    doc["metrics"] = {**doc["metrics"], "benchmark": "buy_and_hold"}
    run_sweep(spec_from_dict(doc), run, batch_size=25, progress=False)
    return run


def _parts(run: Path) -> list[Path]:
    return sorted((run / "parts").glob("part-*.parquet"))


def _copy(run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    return copy


def test_a_clean_run_reproduces_exit_0(done_run):
    result = runner.invoke(app, ["reproduce", str(done_run), "--sample", "20", "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert "20 of 20 configs match bit for bit in every column" in result.output
    assert "repeat with:  --seed 3 (the same configs and parts)" in result.output
    assert result.output.count("null summary: match; fold summary: match") == 2
    assert "full match" in result.output and "mismatch:" not in result.output


def test_the_python_api_returns_the_typed_record(done_run):
    found = sweep.reproduce(done_run, sweep.ReproduceSettings(sample=8, seed=1, parts=1))
    assert isinstance(found, sweep.Reproduction) and found.full_match
    assert (found.sampled, found.matched, found.executor) == (8, 8, "local")
    [part] = found.parts
    [drawn] = drawn_parts(read_run(done_run), 1, 1)
    assert part.name == drawn and part.configs == part.configs_matched
    assert part.configs == pq.read_metadata(done_run / "parts" / drawn).num_rows
    assert part.null_summary == "match" and part.fold_summary == "match"
    [recorded] = found.recorded
    assert recorded.parts == 3 and recorded.configs == 60
    assert [u.environment for u in found.recomputed] == [recorded.environment]


def test_a_tampered_value_is_named_with_both_values_exit_1(done_run, tmp_path):
    run = _copy(done_run, tmp_path)
    victim = max(_parts(run), key=lambda p: pq.read_metadata(p).num_rows)
    table = read_part_table(victim)
    values = table.column("excess_sharpe").to_numpy().copy()
    old = float(values[3])
    values[3] = np.nextafter(old, np.inf)  # one ULP: only a bitwise comparison sees it
    col = table.schema.get_field_index("excess_sharpe")
    table = table.set_column(col, table.schema.field(col), pa.array(values))
    rewrite_part(victim, table)
    assert all(c.ok for c in RunStore(run).verify_parts())  # a valid part: not quarantined
    config = table.column("config_id")[3].as_py()
    result = runner.invoke(app, ["reproduce", str(run), "--sample", "60"])
    assert result.exit_code == 1, result.output
    assert "59 of 60 configs match" in result.output
    assert f"config {config}" in result.output and "column excess_sharpe" in result.output
    assert f"recorded {float(values[3])!r}, recomputed {old!r}" in result.output
    assert "MISMATCH" in result.output


def test_a_tampered_null_summary_is_found_in_a_whole_part(done_run, tmp_path):
    run = _copy(done_run, tmp_path)
    smallest = min(_parts(run), key=lambda p: (pq.read_metadata(p).num_rows, p.name))
    table = read_part_table(smallest)
    summary = decode_summary(table.schema.metadata[SUMMARY_KEY])
    summary.spa[2] += 1.0
    meta = {**table.schema.metadata, SUMMARY_KEY: encode_summary(summary)}
    rewrite_part(smallest, table.replace_schema_metadata(meta))
    found = reproduce_run(run, ReproduceSettings(sample=4, parts=3))  # every part
    assert not found.full_match and found.matched == found.sampled == 4
    [part] = [p for p in found.parts if not p.ok]
    assert part.null_summary == "differs" and part.configs_matched == part.configs
    [mismatch] = found.mismatches
    assert mismatch.config_id is None and mismatch.column == "null_summary.spa[2]"
    assert mismatch.recorded == repr(float(summary.spa[2]))


def test_the_sample_is_seeded_sorted_and_drawn_among_done_configs():
    rng = np.random.default_rng(5)
    mask = rng.random(3_000_000) < 0.3  # a done set of many ranges
    done = RangeSet.from_positions(np.flatnonzero(mask))
    a = sample_positions(done, 64, 11)
    assert np.array_equal(a, sample_positions(done, 64, 11))
    assert not np.array_equal(a, sample_positions(done, 64, 12))
    assert np.all(np.diff(a) > 0) and mask[a].all()
    ranks = np.sort(np.random.default_rng(11).choice(int(mask.sum()), 64, replace=False))
    assert np.array_equal(a, np.flatnonzero(mask)[ranks])  # the draw of the byte-mask version
    assert sample_positions(RangeSet.empty(), 5, 0).size == 0
    assert sample_positions(RangeSet.from_positions([0, 2]), 64, 0).tolist() == [0, 2]


def test_compare_rows_is_bitwise_and_nan_aware():
    nan_a = np.float64(np.nan)
    nan_b = np.frombuffer(np.uint64(0x7FF8000000000001).tobytes(), dtype=np.float64)[0]
    base = {
        "config_id": ["a", "b", "c", "d"],
        "grid_index": [0, 1, 2, 3],
        "x": [1.0, nan_a, 0.0, 2.0],
        "error": [None, "boom", None, None],
    }
    other = {**base, "x": [1.0, nan_a, -0.0, 2.0], "error": [None, "boom", None, "new"]}
    found, matched = compare_rows(pa.table(base), pa.table(other), ["p"] * 4)
    assert matched.tolist() == [True, True, False, False]
    assert [(m.config_id, m.column) for m in found] == [("c", "x"), ("d", "error")]
    assert (found[0].recorded, found[0].recomputed) == ("0.0", "-0.0")
    payload = {**base, "x": [1.0, nan_b, 0.0, 2.0]}
    [m], _ = compare_rows(pa.table(base), pa.table(payload), ["p"] * 4)
    assert m.recorded == "nan (0x7ff8000000000000)"
    assert m.recomputed == "nan (0x7ff8000000000001)"


def test_reproduce_refuses_a_folder_without_results_and_another_spec(tmp_path, done_run):
    from sweep.spec._resolve import resolve

    with pytest.raises(RunFolderError, match="differs in"):
        reproduce_run(done_run, sweep=resolve(spec_from_dict(small_spec_dict(seed=99))))
    empty = _copy(done_run, tmp_path)
    for path in _parts(empty):
        path.unlink()
    result = runner.invoke(app, ["reproduce", str(empty)])
    assert isinstance(result.exception, RunFolderError)
    assert "no finished configs" in str(result.exception)


def test_whole_parts_and_the_seed_are_drawn_at_random(done_run):
    """No part is spared by the draw, the seed is fresh unless given, and it repeats."""
    record = read_run(done_run)
    names = sorted(p.name for p in record.parts)
    drawn = {tuple(drawn_parts(record, 1, seed)) for seed in range(40)}
    assert drawn == {(n,) for n in names}  # each of the 3 parts is drawn by some seed
    assert drawn_parts(record, 2, 7) == drawn_parts(record, 2, 7)
    assert drawn_parts(record, 5, 7) == names
    seeds = {fresh_seed() for _ in range(8)}
    assert len(seeds) == 8 and all(0 <= s < 2**63 for s in seeds)
    first = reproduce_run(done_run, ReproduceSettings(sample=3, parts=1))
    again = reproduce_run(done_run, ReproduceSettings(sample=3, parts=1, seed=first.seed))
    assert [p.name for p in first.parts] == [p.name for p in again.parts]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sample", "0", "--parts", "0"], "nothing would be compared"),
        (["--seed", "-1"], "--seed"),
        (["--seed", str(2**63)], "--seed"),
    ],
)
def test_an_audit_that_would_compare_nothing_or_a_bad_seed_exit_2(
    done_run, args, message, monkeypatch, capsys
):
    exit_code, out, err = run_main(monkeypatch, capsys, "reproduce", done_run, *args)
    assert exit_code == 2, (out, err)
    assert message in err and "Traceback" not in err and "full match" not in out
