"""A hostile or damaged run folder, round three (issue 28): files that are not what their
names say, parts that disagree, a manifest that disagrees with itself, a full disk.

Each test builds a small real run, damages it with real files, and drives the command line
(in this process through ``main()``, or as a subprocess with a timeout and a memory cap
where the damage could hang or exhaust the process), checking the exit code and that the
screen shows one line.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import sweep
from sweep import results_hash, run_sweep, spec_from_dict
from sweep.common._fs import LocalFilesystem, parquet_bytes
from sweep.errors import RunFolderError
from sweep.store._null_summary import SUMMARY_KEY, decode_summary, encode_summary
from sweep.store._row_set_hash import with_part_digest
from sweep.store._run_store import BINDING_KEY, RunStore, _sha256
from tests.helpers import (
    StopAfter,
    batch_again,
    read_part_table,
    run_main,
    small_spec_dict,
    small_tmpfs,
    write_spec,
)

A64 = "a" * 64
#: The address space a subprocess CLI may use: a verify needs well under 2 GiB; reading a
#: FIFO or /dev/zero whole would go far beyond it (MemoryError instead of an exhausted box).
CLI_ADDRESS_SPACE = 4 << 30


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CLI_ADDRESS_SPACE, CLI_ADDRESS_SPACE))


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The real entry point as a subprocess, with a timeout and a memory cap."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "sweep", *map(str, args)],
            capture_output=True,
            text=True,
            timeout=90,
            preexec_fn=_capped,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"sweep {' '.join(map(str, args))} hung: {exc}")


def one_error_line(stderr: str) -> str:
    """The one line a refusal prints (and nothing else: no traceback)."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run A (60 configs, seed 7) and run C (the same grid, seed 8): both complete."""
    base = tmp_path_factory.mktemp("runs")
    run_sweep(spec_from_dict(small_spec_dict()), base / "a", batch_size=20, progress=False)
    run_sweep(spec_from_dict(small_spec_dict(seed=8)), base / "c", batch_size=20, progress=False)
    return base / "a", base / "c", results_hash(base / "a")


def fresh(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def part_files(run: Path) -> list[Path]:
    return sorted((run / "parts").glob("part-*.parquet"))


def write_part(run: Path, table: pa.Table) -> Path:
    """Write ``table`` as a part of ``run``, bound to it and named by its sha256.

    Written as a forger would: its v2 row digest recomputed for the rows it now holds.
    """
    manifest = RunStore(run).load_manifest()
    binding = manifest.run_key.binding().encode()
    table = with_part_digest(table, manifest.grid.size)
    meta = {**(table.schema.metadata or {}), BINDING_KEY: binding}
    data = parquet_bytes(table.replace_schema_metadata(meta))
    path = run / "parts" / f"part-{_sha256(data)}.parquet"
    path.write_bytes(data)
    return path


def edit_manifest(run: Path, edit) -> None:
    doc = json.loads((run / "manifest.json").read_text())
    edit(doc)
    (run / "manifest.json").write_text(json.dumps(doc))


# --- point 2: files that are not regular, or larger than a part can be -----------------


@pytest.mark.parametrize("kind", ["link to /dev/zero", "fifo", "link to a fifo"])
def test_a_part_that_is_not_a_regular_file_is_refused_unread_and_quarantined(
    tmp_path, runs, monkeypatch, capsys, kind
):
    a, _, hash_a = runs
    run = fresh(a, tmp_path / "run")
    victim = run / "parts" / f"part-{A64}.parquet"
    if kind == "link to /dev/zero":
        victim.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(victim)
    else:
        os.mkfifo(tmp_path / "pipe")
        victim.symlink_to(tmp_path / "pipe")

    verify = cli("verify", run)
    assert verify.returncode == 1, verify.stdout + verify.stderr
    bad = [line for line in verify.stderr.splitlines() if line.startswith("BAD PART")]
    assert len(bad) == 1 and bad[0].startswith(f"BAD PART parts/{victim.name}: not a regular file")
    assert ("FIFO" if "fifo" in kind else "character device (/dev/zero)") in bad[0]
    assert "Traceback" not in verify.stderr

    status = cli("status", run, "--json")
    assert status.returncode == 0, status.stderr
    info = json.loads(status.stdout)
    assert info["done"] == 60 and info["table_hash"] == hash_a
    assert [b["name"] for b in info["bad_parts"]] == [victim.name]

    code, out, err = run_main(monkeypatch, capsys, "resume", run, "--quiet")
    assert code == 0, err
    assert "recomputed: 1 corrupt part(s) moved to quarantine/" in out
    assert os.path.lexists(run / "quarantine" / victim.name)  # moved as it is, never opened
    assert not os.path.lexists(victim)
    assert cli("verify", run).returncode == 0


def test_a_sparse_file_named_like_a_part_is_refused_by_its_size(
    tmp_path, runs, monkeypatch, capsys
):
    a, _, hash_a = runs
    run = fresh(a, tmp_path / "run")
    victim = run / "parts" / f"part-{A64}.parquet"
    with victim.open("wb") as fh:
        fh.truncate(256 << 20)  # sparse: no disk used, 256 MiB to read
    check = RunStore(run).check_part(victim.name)
    assert not check.ok and check.reason.startswith("too large: 268,435,456 bytes or more")
    assert "a part of this run can hold (a grid of 60 configs); not read" in check.reason

    code, out, err = run_main(monkeypatch, capsys, "verify", run)
    assert code == 1 and f"BAD PART parts/{victim.name}: too large" in err
    code, out, err = run_main(monkeypatch, capsys, "status", run, "--json")
    assert code == 0 and json.loads(out)["table_hash"] == hash_a


def test_a_telemetry_fifo_is_reported_and_quarantined(tmp_path, runs, monkeypatch, capsys):
    a, _, _ = runs
    run = fresh(a, tmp_path / "run")
    victim = run / "telemetry" / f"task-{A64}.parquet"
    os.mkfifo(victim)
    verify = cli("verify", run)
    assert verify.returncode == 0, verify.stderr
    assert f"bad telemetry telemetry/{victim.name}: not a regular file: a FIFO" in verify.stderr
    code, _, err = run_main(monkeypatch, capsys, "resume", run, "--quiet")
    assert code == 0, err
    assert (run / "quarantine" / victim.name).is_fifo()


@pytest.fixture
def in_memory_run(tmp_path):
    """A run on a panel handed over from Python: its folder keeps data/panel.parquet."""
    spec = spec_from_dict(small_spec_dict(grid={"lookback": [5, 25], "band": [0.0]}))
    panel = sweep.synthetic_panel(seed=1, years=4)
    summary = run_sweep(sweep.resolve(spec, panel), tmp_path / "r", progress=False)
    return tmp_path / "r", panel, summary.table_hash


@pytest.mark.parametrize("kind", ["sparse", "fifo"])
def test_a_panel_copy_that_is_not_one_is_refused_unread_then_replaced(in_memory_run, kind):
    run, panel, table_hash = in_memory_run
    copy = run / "data" / "panel.parquet"
    copy.unlink()
    if kind == "fifo":
        os.mkfifo(copy)
    else:
        with copy.open("wb") as fh:
            fh.truncate(256 << 20)
    (part_files(run)[0]).unlink()  # something to resume
    resume = cli("resume", run, "--quiet")
    assert resume.returncode == 2, resume.stdout + resume.stderr
    line = one_error_line(resume.stderr)
    expected = "is a FIFO, not a regular file" if kind == "fifo" else "bytes or more, over the"
    assert "data/panel.parquet" in line and expected in line and "sweep.resume" in line
    # From Python, with the same panel: the bad copy is set aside unread and written again.
    assert sweep.resume(run, data=panel).table_hash == table_hash
    assert copy.is_file() and copy.stat().st_size < 1 << 20
    assert os.path.lexists(run / "quarantine" / "panel.parquet")


@pytest.mark.parametrize("kind", ["fifo", "sparse"])
def test_a_manifest_that_is_not_a_manifest_is_refused_unread_in_one_line(tmp_path, runs, kind):
    a, _, _ = runs
    run = fresh(a, tmp_path / "run")
    manifest = run / "manifest.json"
    manifest.unlink()
    if kind == "fifo":
        os.mkfifo(manifest)
    else:
        with manifest.open("wb") as fh:
            fh.truncate(1 << 30)
    status = cli("status", run)
    assert status.returncode == 2, status.stdout + status.stderr
    line = one_error_line(status.stderr)
    assert "manifest.json" in line and ("FIFO" if kind == "fifo" else "over the largest") in line


# --- point 3: two parts holding one config with different rows --------------------------


def forge_from(other_run: Path, run: Path, which: int = 0) -> Path:
    """A part of another run (same grid, another seed), bound to ``run``, renamed by sha256."""
    return write_part(run, read_part_table(part_files(other_run)[which]))


def test_a_config_held_twice_with_different_rows_is_a_conflict_never_served(
    tmp_path, runs, monkeypatch, capsys
):
    a, c, hash_a = runs
    run = fresh(a, tmp_path / "run")
    forged = forge_from(c, run)
    forged_index = set(read_part_table(forged, columns=["grid_index"]).column(0).to_pylist())
    genuine = next(
        p
        for p in part_files(run)
        if p != forged
        and set(read_part_table(p, columns=["grid_index"]).column(0).to_pylist()) == forged_index
    )

    code, out, err = run_main(monkeypatch, capsys, "verify", run)
    assert code == 1, out + err
    bad = sorted(line for line in err.splitlines() if line.startswith("BAD PART"))
    # Rows the two seeds give identically (same strategy output and bootstrap p-value) are an
    # identical repeat, not a conflict: count the ones that differ.
    forged_rows, genuine_rows = (
        read_part_table(p).sort_by("grid_index").to_pylist() for p in (forged, genuine)
    )
    differ = sum(f != g for f, g in zip(forged_rows, genuine_rows, strict=True))
    assert 0 < differ <= 20
    message = f": conflict: {differ} of its configs are also in"
    assert len(bad) == 2 and all(message in b for b in bad), bad
    assert f"parts/{forged.name}" in " ".join(bad) and f"parts/{genuine.name}" in " ".join(bad)
    assert "table hash" not in out

    code, out, err = run_main(monkeypatch, capsys, "status", run, "--json")
    info = json.loads(out)
    assert code == 0 and info["done"] == 40 and info["table_hash"] is None
    assert sorted(b["name"] for b in info["bad_parts"]) == sorted([forged.name, genuine.name])

    code, out, err = run_main(monkeypatch, capsys, "results", run, "--format", "csv")
    assert code == 0 and len(out.strip().splitlines()) == 41  # neither copy is served
    assert "conflict" in err

    from sweep.report import ReportOptions, build_report

    integrity = build_report(run, ReportOptions(progress=False)).data.integrity
    assert integrity.table_hash is None
    assert {b.name for b in integrity.parts.bad} == {forged.name, genuine.name}
    assert all(b.reason.startswith("conflict") for b in integrity.parts.bad)

    code, out, err = run_main(monkeypatch, capsys, "resume", run, "--quiet")
    assert code == 0, err
    assert results_hash(run) == hash_a  # both set aside, the configs recomputed
    assert {p.name for p in (run / "quarantine").iterdir()} >= {forged.name, genuine.name}


def test_the_drivers_one_read_of_the_parts_finds_what_separate_reads_find(tmp_path, runs):
    # The driver surveys every part once at its start (checks, conflicts, done positions,
    # environments); with a conflict and a truncated part, it agrees with the separate reads.
    from sweep.runner._status import failed_count
    from sweep.store._part_environment import environment_uses
    from sweep.store._survey import survey_parts

    a, c, _ = runs
    run = fresh(a, tmp_path / "run")
    forged = forge_from(c, run)

    def positions(path: Path) -> set[int]:
        return set(read_part_table(path, columns=["grid_index"]).column(0).to_pylist())

    cut = next(p for p in part_files(run) if not positions(p) & positions(forged))
    cut.write_bytes(cut.read_bytes()[:-10])
    store = RunStore(run)
    store.load_manifest()
    survey = survey_parts(store)
    checks = store.verify_parts()
    assert survey.checks == checks and sum(not c.ok for c in checks) == 3
    good = [c.name for c in checks if c.ok]
    assert survey.done == store.done_ranges(good) and len(survey.done) < 60
    assert survey.environments == environment_uses(store, checks)
    # The survey's sums give the hash and failed count of the good parts: the forged part
    # passed its own check, was summed by its group, and came back out for its conflict.
    assert survey.hashing is not None and set(survey.hashing.shares) == set(good)
    assert survey.hashing.digest(store) == results_hash(run, good)
    assert survey.failed == failed_count(store, good) == 0


def _without_grid_values(run: Path) -> None:
    """The manifest as a folder written before its grid's values were recorded."""
    path = run / "manifest.json"
    doc = json.loads(path.read_text())
    for axis in doc["grid"]["axes"]:
        del axis["values"]
    path.write_text(json.dumps(doc))


def _forged_positions(run: Path) -> tuple[Path, Path, pa.Table]:
    """A forged part whose rows claim other grid positions for the configs of a good part.

    Returns the good part, the forged one and the good part's rows.
    """
    first, second = part_files(run)[:2]
    table = read_part_table(first)
    taken = set(read_part_table(second, columns=["grid_index"]).column(0).to_pylist())
    second.unlink()  # free the positions the forged rows claim
    moved = sorted(taken)[: table.num_rows]
    shifted = table.set_column(1, table.schema.field(1), pa.array(moved, pa.int64()))
    # a forger's null summary names the positions its rows now claim (else the part check
    # refuses the footer before the keys are compared)
    meta = dict(shifted.schema.metadata)
    summary = decode_summary(meta[SUMMARY_KEY])
    old = table.column("grid_index").to_pylist()
    to = dict(zip(old, moved, strict=True)) | {-1: -1}
    index = np.vectorize(to.__getitem__, otypes=[np.int64])(summary.top_index)
    meta[SUMMARY_KEY] = encode_summary(replace(summary, top_index=index))
    return first, write_part(run, shifted.replace_schema_metadata(meta)), table


def test_a_config_id_at_another_grid_position_is_foreign(tmp_path, runs):
    """Each row's config_id is checked against its grid_index: the forged part alone fails."""
    a, _, _ = runs
    run = fresh(a, tmp_path / "run")
    first, forged, table = _forged_positions(run)
    checks = {c.name: c for c in RunStore(run).verify_parts()}
    assert checks[first.name].ok
    assert not checks[forged.name].ok
    assert checks[forged.name].reason.startswith(
        f"foreign: {table.num_rows} of its {table.num_rows} rows hold a config_id that is not "
        "the config at their grid_index (first: grid_index "
    )
    # One row is enough; a config_id twice in one part is named as such.
    column = table.column_names.index("config_id")
    ids = table.column(column).to_pylist()
    for changed, reason in (
        (["0" * 32, *ids[1:]], f"foreign: 1 of its {table.num_rows} rows hold a config_id "),
        ([ids[1], *ids[1:]], "repeats a config_id"),
    ):
        edited = table.set_column(column, table.schema.field(column), pa.array(changed))
        assert RunStore(run).check_part(write_part(run, edited).name).reason.startswith(reason)


def test_without_the_grid_values_a_config_id_at_two_positions_is_a_conflict(tmp_path, runs):
    """A folder whose manifest lists no grid values: the ids are compared across parts."""
    a, _, _ = runs
    run = fresh(a, tmp_path / "run")
    _without_grid_values(run)
    assert RunStore(run).expectations().identity is None
    first, forged, _ = _forged_positions(run)
    checks = {c.name: c for c in RunStore(run).verify_parts()}
    for name in (forged.name, first.name):
        assert not checks[name].ok
        assert checks[name].reason.startswith("conflict: 20 of its configs")
        assert "(first: config_id " in checks[name].reason


def test_an_identical_repeat_is_fine(tmp_path, runs, monkeypatch, capsys):
    a, _, hash_a = runs
    run = fresh(a, tmp_path / "run")
    write_part(run, batch_again(run, part_files(run)[0], 0, 7))  # a batch written twice
    code, out, err = run_main(monkeypatch, capsys, "verify", run)
    assert code == 0, err
    assert "4 good, 0 bad" in out and f"table hash: {hash_a}" in out


# --- point 4: a manifest that disagrees with itself ---------------------------------------

EDITS = {
    "spec.costs": lambda d: d["spec"].__setitem__("costs", {"cost": 0.01}),
    "spec.seed": lambda d: d["spec"].__setitem__("seed", 8),
    "grid.size": lambda d: d["grid"].__setitem__("size", 6_000_000_000),
    "identity.root_seed": lambda d: d["identity"].__setitem__("root_seed", 8),
}


@pytest.mark.parametrize("edit", list(EDITS))
@pytest.mark.parametrize("command", ["verify", "status", "report"])
def test_a_manifest_that_disagrees_with_itself_is_refused(
    tmp_path, runs, monkeypatch, capsys, edit, command
):
    a, _, _ = runs
    run = fresh(a, tmp_path / "run")
    edit_manifest(run, EDITS[edit])
    args = [command, run] + (["--quiet", "--out", tmp_path / "rep"] if command == "report" else [])
    code, out, err = run_main(monkeypatch, capsys, *args)
    assert code == 2, out + err
    line = one_error_line(err)
    assert "manifest.json disagrees with itself" in line, line
    expected = {
        "grid.size": "grid has 60 configs, its grid.size records 6,000,000,000",
        "identity.root_seed": "seed is 7, its identity records 8",
    }.get(edit, "its spec hashes to")
    assert expected in line
    assert not (tmp_path / "rep").exists()


def test_the_manifest_check_uses_the_one_spec_hash(tmp_path, runs, monkeypatch):
    """The spec hash is recomputed by SweepSpec.spec_hash, the one definition."""
    from sweep.spec._models import SweepSpec

    a, _, _ = runs
    calls = []
    real = SweepSpec.spec_hash.fget
    monkeypatch.setattr(SweepSpec, "spec_hash", property(lambda s: calls.append(1) or real(s)))
    RunStore(a).expectations()
    assert calls


# --- point 9: malformed folders: one line, exit 2 ----------------------------------------


def _deep(run: Path) -> None:
    (run / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)


def _parts_file(run: Path) -> None:
    shutil.rmtree(run / "parts")
    (run / "parts").write_text("x")


def _telemetry_file(run: Path) -> None:
    shutil.rmtree(run / "telemetry")
    (run / "telemetry").write_text("x")


def _lock_dir(run: Path) -> None:
    (run / "lock").mkdir()


def _huge_grid(run: Path) -> None:
    edit_manifest(run, lambda d: d["grid"].__setitem__("size", 10**12))


def _bad_schema(run: Path) -> None:
    edit_manifest(run, lambda d: d["results_schema"].__setitem__(3, []))


ALL = ("status", "verify", "report", "resume")
MALFORMED = {  # the damage, the commands it broke, what the one line says
    "manifest nested 100k deep": (_deep, ALL, "nested too deeply"),
    "parts is a file": (_parts_file, ALL, "parts is a file, not a folder"),
    "telemetry is a file": (
        _telemetry_file,
        ("verify", "report", "resume"),
        "telemetry is a file, not a folder",
    ),
    "lock is a directory": (
        _lock_dir,
        ("status", "resume"),
        "lock is a directory, not a regular file",
    ),
    "grid.size 1e12": (_huge_grid, ALL, "1,000,000,000,000"),
    "results_schema edited": (_bad_schema, ALL, "no valid 'results_schema'"),
}


@pytest.mark.parametrize(
    ("case", "command"), [(case, c) for case, (_, cs, _) in MALFORMED.items() for c in cs]
)
def test_a_malformed_folder_is_refused_in_one_line(
    tmp_path, runs, monkeypatch, capsys, case, command
):
    damage, _, message = MALFORMED[case]
    a, _, _ = runs
    run = fresh(a, tmp_path / "run")
    damage(run)
    args = [command, run, "--quiet"] if command in ("report", "resume") else [command, run]
    if command == "report":
        args += ["--out", tmp_path / "rep"]
    code, out, err = run_main(monkeypatch, capsys, *args)
    assert code == 2, (out, err)
    assert message in one_error_line(err)


def test_a_session_left_running_by_a_dead_driver_is_not_shown_running(
    tmp_path, monkeypatch, capsys
):
    """A driver that could not record how its session ended (it died, the disk was full)."""
    run = tmp_path / "run"
    run_sweep(
        spec_from_dict(small_spec_dict()), run, batch_size=20, progress=False, executor=StopAfter(1)
    )
    real = RunStore.record_session

    def full_at_the_end(self, session):
        if session.end is not None:
            raise RunFolderError("cannot write manifest.json: No space left on device")
        return real(self, session)

    monkeypatch.setattr(RunStore, "record_session", full_at_the_end)
    run_main(monkeypatch, capsys, "resume", run, "--quiet")
    monkeypatch.setattr(RunStore, "record_session", real)
    recorded = [s.status for s in RunStore(run).load_manifest().sessions]
    assert recorded[-1] == "running"  # what the folder says ...
    code, out, _err = run_main(monkeypatch, capsys, "status", run, "--json")
    assert code == 0 and [s["status"] for s in json.loads(out)["sessions"]][-1] == "killed"
    code, out, _ = run_main(monkeypatch, capsys, "status", run)
    sessions = out[out.index("start (UTC)") :]
    assert "killed" in sessions and "running" not in sessions


# --- point 10: a full disk while writing the lock or the manifest -------------------------


def fill(mount: Path) -> None:
    with (mount / "filler").open("wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def test_a_full_disk_while_taking_the_lock_exits_2_in_one_line(tmp_path, runs):
    a, _, _ = runs
    with small_tmpfs(tmp_path / "small", "1m") as mount:
        run = mount / "run"
        run.mkdir()
        shutil.copy(a / "manifest.json", run / "manifest.json")
        fill(mount)
        resume = cli("resume", run, "--quiet")
        assert resume.returncode == 2, resume.stderr
        line = one_error_line(resume.stderr)
        assert "cannot take the lock: No space left on device; free some space" in line
        assert not (run / "lock").exists() and not list(run.glob(".tmp-*"))


def test_a_full_disk_while_creating_the_manifest_exits_2_in_one_line(tmp_path):
    spec = write_spec(tmp_path / "s.toml", small_spec_dict())
    with small_tmpfs(tmp_path / "small", "1m") as mount:
        (mount / "run").mkdir()
        fill(mount)
        proc = cli("run", spec, "--run-dir", mount / "run", "--quiet")
        assert proc.returncode == 2, proc.stderr
        line = one_error_line(proc.stderr)
        assert "No space left on device; free some space" in line
        assert not (mount / "run" / "manifest.json").exists()


def test_a_full_disk_while_recording_a_session_exits_2_and_releases_the_lock(
    tmp_path, runs, monkeypatch, capsys
):
    a, _, _ = runs
    run = fresh(a, tmp_path / "run")
    part_files(run)[0].unlink()
    real = LocalFilesystem.write_atomic

    def full(self, path, data):
        if path.endswith("manifest.json"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        return real(self, path, data)

    monkeypatch.setattr(LocalFilesystem, "write_atomic", full)
    code, out, err = run_main(monkeypatch, capsys, "resume", run, "--quiet")
    assert code == 2, (out, err)
    assert "cannot write manifest.json: No space left on device" in one_error_line(err)
    assert not (run / "lock").exists()
