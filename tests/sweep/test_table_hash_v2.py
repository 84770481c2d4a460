"""The v2 table hash (issue 24, point 1): combined from per-part digests, never the table.

Same configs in any part layout and any part order give the same hash; a changed, missing,
foreign or differently repeated row changes it, an identical repeat does not; ``sweep
verify`` recomputes from the rows and names a part whose stored digest is stale; a v1 folder
still verifies with v1 and says so.
"""

from __future__ import annotations

import itertools
import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from typer.testing import CliRunner

from sweep import results_hash, results_table, run_sweep, spec_from_dict, table_hash
from sweep.cli._app import app
from sweep.errors import RunFolderError
from sweep.runner._status import run_status, verify_run
from sweep.store import _row_set_hash
from sweep.store._parts_hash import overlaps, parts_hash
from sweep.store._record import TaskTelemetry
from sweep.store._row_set_hash import (
    DIGEST_KEY,
    TABLE_HASH_V2,
    row_bytes,
    stored_digest,
    table_hash_v2,
)
from sweep.store._run_store import RunStore
from sweep.store._table_hash import TABLE_HASH_V1
from tests.helpers import read_part_table, small_spec_dict

#: 240 configs: four blocks of the v2 hash (64, 64, 64 and a last one of 48).
GRID = {"lookback": {"start": 5, "stop": 125, "step": 2}, "band": [0.0, 0.005, 0.01, 0.02]}
TOTAL = 240


def _doc(**overrides):
    return small_spec_dict(
        **{"grid": GRID, "metrics": {"bootstrap_reps": 0, "pbo_blocks": 4}, **overrides}
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[Path, pa.Table, str]:
    run_dir = tmp_path_factory.mktemp("v2") / "ref"
    summary = run_sweep(spec_from_dict(_doc()), run_dir, batch_size=37, progress=False)
    assert summary.table_hash_version == TABLE_HASH_V2 and summary.table_hash
    table = results_table(run_dir).replace_schema_metadata(None).sort_by("grid_index")
    return run_dir, table, summary.table_hash  # row i of ``table`` is grid position i


def _telemetry(n: int) -> TaskTelemetry:
    return TaskTelemetry(0.0, 0.0, 0.0, 0.0, 0.0, n, "w", "n", "h", 0)


def _layout(reference_dir: Path, dest: Path, tables: list[pa.Table]) -> RunStore:
    """A copy of the reference folder whose parts are ``tables`` (written as the driver does)."""
    dest.mkdir(parents=True)
    shutil.copy(reference_dir / "manifest.json", dest / "manifest.json")
    store = RunStore(dest)
    store.ensure_folders()
    for t in tables:
        store.write_part(t.replace_schema_metadata(None), _telemetry(t.num_rows), 1)
    return store


def _groups(n: int, seed: int, k: int) -> list[np.ndarray]:
    """Row positions of ``n`` rows cut into ``k`` parts at random, scattered, not contiguous."""
    rng = np.random.default_rng(seed)
    owner = rng.integers(0, k, size=n)
    return [np.flatnonzero(owner == j) for j in range(k) if (owner == j).any()]


def test_batch_sizes_give_one_hash_equal_to_the_in_memory_hash(reference, tmp_path):
    run_dir, table, digest = reference
    for batch in (1, 64, 100):
        again = run_sweep(
            spec_from_dict(_doc()), tmp_path / f"b{batch}", batch_size=batch, progress=False
        )
        assert again.table_hash == digest, batch
    assert table_hash(table) == table_hash_v2(table) == digest
    assert table_hash(table.take(np.random.default_rng(0).permutation(TOTAL))) == digest
    store = RunStore(run_dir)
    names = store.good_parts()[0]
    assert parts_hash(store, names, TOTAL, recompute=True).digest == digest
    assert parts_hash(store, names[::-1], TOTAL).digest == digest


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_any_part_layout_read_in_any_order_gives_the_same_hash(reference, tmp_path, seed):
    run_dir, table, digest = reference
    rng = np.random.default_rng(seed)
    scattered = [table.take(g) for g in _groups(TOTAL, seed, 5)]  # blocks split 5 ways
    cuts = np.sort(rng.choice(np.arange(1, TOTAL), size=6, replace=False))
    runs = [table.slice(a, b - a) for a, b in zip([0, *cuts], [*cuts, TOTAL], strict=True)]
    for name, tables in (("scattered", scattered), ("runs", runs)):
        store = _layout(run_dir, tmp_path / name, tables)
        names = store.good_parts()[0]
        assert len(names) == len(tables)
        for order in (names, list(rng.permutation(names))):
            assert parts_hash(store, order, TOTAL).digest == digest, name
        assert results_hash(tmp_path / name) == digest
        found = verify_run(tmp_path / name)
        assert found.table_hash == digest and found.digest_mismatches == ()


def _replaced(table: pa.Table, column: str, values: np.ndarray) -> pa.Table:
    """``table`` with ``column``'s values replaced (its field, nullability included, kept)."""
    at = table.schema.get_field_index(column)
    return table.set_column(at, table.schema.field(at), pa.array(values))


def test_an_identical_repeat_counts_once_and_a_different_one_does_not(reference, tmp_path):
    run_dir, table, digest = reference
    whole = table.slice(0, 128)  # blocks 0 and 1 whole
    rest = table.slice(128)
    again = table.slice(50, 100)  # repeats the end of block 0 and all of block 1
    store = _layout(run_dir, tmp_path / "same", [whole, rest, again])
    shared = overlaps([store.part_positions(n) for n in store.good_parts()[0]])
    assert list(shared.ranges()) == [(50, 150)]
    assert results_hash(tmp_path / "same") == digest
    assert table_hash(pa.concat_tables([table, again])) == digest

    sharpe = again.column("sharpe").to_numpy().copy()
    sharpe[7] = np.nextafter(sharpe[7], np.inf)  # the config at row 57, one ulp apart
    other = _replaced(again, "sharpe", sharpe)
    differs = _layout(run_dir, tmp_path / "differs", [whole, rest, other])
    held_twice = parts_hash(differs, differs.part_names(), TOTAL).digest
    assert held_twice != digest
    assert held_twice == table_hash(pa.concat_tables([table, other]))
    replaced = pa.concat_tables([table.slice(0, 50), other, table.slice(150)])
    assert held_twice != table_hash(replaced)  # not either version alone: both rows count
    assert table_hash(replaced) != digest
    # A folder does not hash both copies: the two parts in conflict fail (issue 28), and
    # the folder's hash is that of the part it can trust.
    good, bad = differs.good_parts()
    assert len(good) == 1 and len(bad) == 2
    assert all(check.reason.startswith("conflict:") for check in bad)
    assert results_hash(tmp_path / "differs") == table_hash(rest)


def _with_value(table: pa.Table, column: str, row: int, value: float) -> pa.Table:
    values = table.column(column).to_numpy().copy()
    values[row] = value
    return _replaced(table, column, values)


def test_changed_missing_foreign_and_moved_rows_change_the_hash(reference, tmp_path):
    run_dir, table, digest = reference
    sharpe = table.column("sharpe").to_numpy()
    bigger = run_sweep(
        spec_from_dict(_doc(grid={**GRID, "band": [0.0, 0.005, 0.01, 0.02, 0.03]})),
        tmp_path / "bigger",
        progress=False,
    )
    assert bigger.table_hash
    foreign = results_table(tmp_path / "bigger").replace_schema_metadata(None)
    stranger = foreign.filter(pc.greater_equal(foreign.column("grid_index"), TOTAL))
    cases = {
        "changed": _with_value(table, "sharpe", 3, np.nextafter(sharpe[3], np.inf)),
        "nan payload": _with_value(
            table,
            "sharpe",
            3,
            np.frombuffer(np.uint64(0x7FF8000000000001).tobytes(), dtype=np.float64)[0],
        ),
        "missing": table.slice(1),
        "foreign": pa.concat_tables([table, stranger.slice(0, 1)]),
        "moved": _with_value(_with_value(table, "sharpe", 3, sharpe[4]), "sharpe", 4, sharpe[3]),
    }
    found = {name: table_hash(t) for name, t in cases.items()}
    assert digest not in found.values()
    assert len(set(found.values())) == len(found)
    for name in ("changed", "missing"):  # the same from parts (a foreign part is refused)
        store = _layout(run_dir, tmp_path / name, [cases[name].slice(0, 90), cases[name].slice(90)])
        assert parts_hash(store, store.good_parts()[0], TOTAL).digest == found[name], name


def test_reading_a_part_in_small_batches_gives_the_same_digest(reference, monkeypatch):
    run_dir, table, digest = reference
    store = RunStore(run_dir)
    names = store.good_parts()[0]
    monkeypatch.setattr(_row_set_hash, "ROWS_AT_ONCE", 5)
    import sweep.store._run_store as store_module  # the one part reader's batch size

    monkeypatch.setattr(store_module, "ROWS_AT_ONCE", 5)
    assert parts_hash(store, names, TOTAL, recompute=True).digest == digest
    assert table_hash_v2(table) == digest


def test_the_worker_stores_each_part_s_digest(reference):
    run_dir, _, _ = reference
    store = RunStore(run_dir)
    for name in store.good_parts()[0]:
        stored = stored_digest(store.read_part_schema(name))
        assert stored is not None and stored.version == TABLE_HASH_V2
        assert stored.positions == store.part_positions(name)
        assert stored.rows == len(stored.positions)
        assert len(stored.partial_index) <= 2 * 63


def _rewrite_part(path: Path, table: pa.Table) -> Path:
    """Write ``table`` (metadata kept as given) as a part named by its sha256; drop ``path``."""
    import hashlib

    from sweep.common._fs import parquet_bytes

    data = parquet_bytes(table)
    new = path.parent / f"part-{hashlib.sha256(data).hexdigest()}.parquet"
    path.unlink()
    new.write_bytes(data)
    return new


def test_verify_recomputes_and_names_a_part_whose_stored_digest_is_stale(reference, tmp_path):
    run_dir, _, digest = reference
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    victim = sorted((copy / "parts").glob("part-*.parquet"))[0]
    table = read_part_table(victim)  # its metadata: binding, environment, the digest of its rows
    sharpe = table.column("sharpe").to_numpy().copy()
    sharpe[0] = np.nextafter(sharpe[0], np.inf)
    forged = _rewrite_part(victim, _replaced(table, "sharpe", sharpe))
    assert results_hash(copy) == digest  # the fast path adds the digests the parts carry
    found = verify_run(copy)
    true_hash = table_hash(results_table(copy))
    assert true_hash != digest and found.table_hash == true_hash
    assert found.digest_mismatches == (forged.name,)
    cli = CliRunner().invoke(app, ["verify", str(copy)])
    assert cli.exit_code == 1
    assert f"BAD DIGEST parts/{forged.name}" in cli.output and true_hash in cli.output


def _as_v1_folder(run_dir: Path) -> None:
    """Make a folder look as an engine before v2 wrote it: no version key, no part digests."""
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest.pop("table_hash_version")
    (run_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))
    for path in sorted((run_dir / "parts").glob("part-*.parquet")):
        table = read_part_table(path)
        meta = {k: v for k, v in (table.schema.metadata or {}).items() if k != DIGEST_KEY}
        _rewrite_part(path, table.replace_schema_metadata(meta))
    v1 = results_hash(run_dir)  # what that engine's driver recorded when it completed
    for session in manifest["sessions"]:
        if session.get("table_hash"):
            session["table_hash"] = v1
    (run_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))


def test_a_v1_folder_still_verifies_and_says_v1(reference, tmp_path):
    run_dir, table, v2 = reference
    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    _as_v1_folder(old)
    assert all(c.ok for c in RunStore(old).verify_parts())
    assert "table_hash_version" not in json.loads((old / "manifest.json").read_text())
    v1 = table_hash(table, version="v1")
    assert v1 != v2
    found = verify_run(old)
    assert (found.table_hash, found.table_hash_version) == (v1, TABLE_HASH_V1)
    assert results_hash(old) == v1 and run_status(old).table_hash_version == TABLE_HASH_V1
    cli = CliRunner().invoke(app, ["verify", str(old)])
    assert cli.exit_code == 0, cli.output
    assert f"table hash: {v1}" in cli.output and "hash version: raysweep-table-v1" in cli.output
    status = CliRunner().invoke(app, ["status", str(old)])
    assert "hash version:  raysweep-table-v1" in status.output
    # a resume keeps the folder's version; asking for another is refused
    with pytest.raises(RunFolderError, match="carries table hash raysweep-table-v1"):
        run_sweep(spec_from_dict(_doc()), old, progress=False, table_hash_version="v2")
    assert run_sweep(spec_from_dict(_doc()), old, progress=False).table_hash == v1


def test_new_runs_record_v2_and_a_run_may_ask_for_v1(reference, tmp_path):
    run_dir, table, _ = reference
    assert json.loads((run_dir / "manifest.json").read_text())["table_hash_version"] == (
        TABLE_HASH_V2
    )
    asked = run_sweep(
        spec_from_dict(_doc()), tmp_path / "v1", progress=False, table_hash_version="v1"
    )
    assert asked.table_hash == table_hash(table, version="v1")
    assert asked.table_hash_version == TABLE_HASH_V1
    with pytest.raises(RunFolderError, match="table hash version"):
        run_sweep(spec_from_dict(_doc()), tmp_path / "v3", progress=False, table_hash_version="v3")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["table_hash_version"] = "raysweep-table-v9"
    bad = tmp_path / "v9"
    bad.mkdir()
    (bad / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunFolderError, match="raysweep-table-v9"):
        RunStore(bad).load_manifest()
    cli = CliRunner().invoke(app, ["run", str(tmp_path / "missing.toml"), "--table-hash", "v7"])
    assert cli.exit_code == 2


def _encoded_by_hand(table: pa.Table) -> list[bytes]:
    """Each row's bytes by the documented recipe, one value at a time (no numpy layout)."""
    rows = []
    for row in table.to_pylist():
        out = b""
        for field in table.schema:
            value = row[field.name]
            if pa.types.is_string(field.type):
                text = None if value is None else value.encode()
                out += (-1 if text is None else len(text)).to_bytes(8, "little", signed=True)
                out += text or b""
            elif pa.types.is_boolean(field.type):
                out += bytes([int(value)])
            elif pa.types.is_int64(field.type):
                out += int(value).to_bytes(8, "little", signed=True)
            else:
                out += struct.pack("<d", value)
        rows.append(out)
    return rows


def test_row_bytes_are_the_documented_recipe_value_by_value(reference):
    mixed = pa.table(
        {
            "id": pa.array(["a", None, "héllo", "", "zz"]),
            "flag": pa.array([True, False, True, False, True]),
            "n": pa.array([1, -2, 3, 1 << 62, 0]),
            "x": pa.array([0.0, -0.0, float("nan"), float("inf"), 1e-310]),
            "note": pa.array([None, "q", None, "ünï", "ok"]),
        }
    )
    for table in (mixed, mixed.slice(1, 3), mixed.slice(0, 0), reference[1].slice(0, 40)):
        buffer, offsets = row_bytes(table)
        got = [buffer[a:b].tobytes() for a, b in itertools.pairwise(offsets.tolist())]
        assert got == _encoded_by_hand(table)
