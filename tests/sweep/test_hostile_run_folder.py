"""A hostile or damaged run folder (issue 12): foreign parts, bad files, lock races.

Each test sets up the damage with real files and drives the real CLI (or the store) on it.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from sweep import results_hash, run_sweep, spec_from_dict
from sweep.engine._evaluate import results_schema
from sweep.errors import RunFolderError, RunLockedError
from sweep.store._record import LockInfo
from sweep.store._run_store import RunStore
from tests.helpers import read_part_table, small_spec_dict, small_tmpfs, write_spec


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sweep", *args], capture_output=True, text=True, cwd=cwd
    )


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Run A (60 configs) and run B (another seed, a 90-config grid): both complete."""
    base = tmp_path_factory.mktemp("two_runs")
    a = base / "a"
    run_sweep(spec_from_dict(small_spec_dict()), a, batch_size=20, progress=False)
    grid_b = {
        "lookback": {"start": 5, "stop": 125, "step": 8},
        "band": [0.0, 0.005, 0.01, 0.02, 0.03, 0.04],
    }
    b = base / "b"
    run_sweep(
        spec_from_dict(small_spec_dict(seed=8, grid=grid_b)), b, batch_size=45, progress=False
    )
    return a, b, results_hash(a)


def fresh_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def part_files(run: Path) -> list[Path]:
    return sorted((run / "parts").glob("part-*.parquet"))


@pytest.mark.parametrize("which", ["in range", "out of range"])
def test_a_valid_part_from_another_run_is_refused_and_quarantined(tmp_path, two_runs, which):
    a, b, hash_a = two_runs
    run = fresh_copy(a, tmp_path / "run")
    # B's parts hold 45 configs each: the first has grid indices 0..44 (all in A's grid of
    # 60); the second 45..89 (mostly outside A's grid).
    by_index = {
        p: read_part_table(p, columns=["grid_index"]).column(0).to_pylist() for p in part_files(b)
    }
    foreign = next(p for p, idx in by_index.items() if (max(idx) < 60) == (which == "in range"))
    shutil.copy(foreign, run / "parts" / foreign.name)

    verify = cli("verify", str(run))
    assert verify.returncode == 1, verify.stdout + verify.stderr
    assert f"BAD PART parts/{foreign.name}" in verify.stderr and "foreign" in verify.stderr
    assert "Traceback" not in verify.stderr

    status = cli("status", str(run), "--json")
    assert status.returncode == 0, status.stderr
    info = json.loads(status.stdout)
    assert info["done"] == 60 and info["table_hash"] == hash_a
    assert [b_["name"] for b_ in info["bad_parts"]] == [foreign.name]

    results = cli("results", str(run), "--format", "csv")
    assert results.returncode == 0 and len(results.stdout.strip().splitlines()) == 61
    assert "left out" in results.stderr

    resume = cli("resume", str(run), "--quiet")
    assert resume.returncode == 0, resume.stderr
    assert (run / "quarantine" / foreign.name).exists()
    assert results_hash(run) == hash_a


def test_a_part_without_a_binding_is_foreign(tmp_path, two_runs):
    """A part written without the run binding (a hand-made or pre-binding part) is refused."""
    a, _, _ = two_runs
    run = fresh_copy(a, tmp_path / "run")
    victim = part_files(run)[0]
    table = read_part_table(victim)
    victim.unlink()
    meta = {k: v for k, v in (table.schema.metadata or {}).items() if k != b"raysweep.run"}
    from sweep.common._fs import parquet_bytes
    from sweep.store._run_store import _sha256

    data = parquet_bytes(table.replace_schema_metadata(meta))
    (run / "parts" / f"part-{_sha256(data)}.parquet").write_bytes(data)
    checks = RunStore(run).verify_parts()
    assert [c.ok for c in checks].count(False) == 1
    assert "carries no run binding" in next(c.reason for c in checks if not c.ok)


def test_status_and_results_verify_what_they_read(tmp_path, two_runs):
    a, _, hash_a = two_runs
    run = fresh_copy(a, tmp_path / "run")
    flipped, appended = part_files(run)[:2]
    data = bytearray(flipped.read_bytes())
    data[len(data) // 2] ^= 0xFF
    flipped.write_bytes(bytes(data))
    with appended.open("ab") as fh:
        fh.write(b"garbage")

    status = cli("status", str(run), "--json")
    assert status.returncode == 0, status.stderr
    info = json.loads(status.stdout)
    assert info["table_hash"] is None and info["done"] == 20
    assert sorted(b["name"] for b in info["bad_parts"]) == sorted([flipped.name, appended.name])
    assert "1 good, 2 bad (left out)" in cli("status", str(run)).stdout

    results = cli("results", str(run), "--format", "csv")
    assert results.returncode == 0, results.stderr
    assert "Traceback" not in results.stderr and "ArrowInvalid" not in results.stderr
    assert len(results.stdout.strip().splitlines()) == 21  # header + the good part's 20
    assert "the results cover 20 of 60 configs" in results.stderr
    assert flipped.name in results.stderr and appended.name in results.stderr

    assert cli("resume", str(run), "--quiet").returncode == 0
    assert results_hash(run) == hash_a


def test_results_on_an_unfinished_folder_say_what_is_missing(tmp_path):
    from tests.helpers import StopAfter

    run = tmp_path / "run"
    run_sweep(
        spec_from_dict(small_spec_dict()), run, batch_size=20, progress=False, executor=StopAfter(1)
    )
    results = cli("results", str(run), "--format", "csv")
    assert results.returncode == 0
    assert "cover 20 of 60 configs (40 not done yet)" in results.stderr
    assert f"sweep resume {run}" in results.stderr


def test_a_folder_killed_before_its_manifest_is_accepted(tmp_path):
    """Empty parts/ and telemetry/ without a manifest (a driver killed while creating)."""
    spec = write_spec(tmp_path / "s.toml", small_spec_dict())
    run = tmp_path / "run"
    (run / "parts").mkdir(parents=True)
    (run / "telemetry").mkdir()
    (run / "parts" / ".tmp-0123456789abcdef").write_bytes(b"half a part")
    proc = cli("run", str(spec), "--run-dir", str(run), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert not list(run.rglob(".tmp-*"))


def test_a_folder_killed_after_its_manifest_resumes(tmp_path, two_runs):
    """The manifest is written first: a folder holding only it resumes to the same hash."""
    a, _, hash_a = two_runs
    run = tmp_path / "run"
    run.mkdir()
    manifest = json.loads((a / "manifest.json").read_text())
    manifest["sessions"] = []
    (run / "manifest.json").write_text(json.dumps(manifest))
    proc = cli("resume", str(run), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert results_hash(run) == hash_a


def test_create_writes_the_manifest_before_anything_else(tmp_path, monkeypatch):
    """Killed right after the manifest: the folder holds it and nothing else."""
    from sweep import resolve

    store = RunStore(tmp_path / "run")

    def die(self):
        raise KeyboardInterrupt  # where a SIGKILL would land

    monkeypatch.setattr(RunStore, "ensure_folders", die)
    with pytest.raises(KeyboardInterrupt):
        _sweep = resolve(spec_from_dict(small_spec_dict()))
        store.create(_sweep, results_schema(_sweep))
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["manifest.json"]


def test_two_drivers_creating_one_folder_agree(tmp_path):
    from sweep import resolve

    sweep = resolve(spec_from_dict(small_spec_dict()))
    RunStore(tmp_path / "run").create(sweep, results_schema(sweep))
    with pytest.raises(RunFolderError, match="created by another driver at the same time"):
        RunStore(tmp_path / "run").create(sweep, results_schema(sweep))


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ([], "manifest format"),
        (
            {"format": "raysweep-run-v0", "identity": {}},
            "manifest format 'raysweep-run-v0', expected 'raysweep-run-v1'",
        ),
        ({"format": "raysweep-run-v1"}, "no valid 'identity'"),
        ("NOSPEC", "no valid 'spec'"),
        ("NOGRID", "no valid 'grid'"),
        ("BADSIZE", "non-negative integer 'size'"),
        ("WRONGSIZE", "the grid size (manifest 61, spec 60)"),
    ],
)
def test_a_malformed_manifest_is_refused_clearly(tmp_path, two_runs, manifest, message):
    a, _, _ = two_runs
    run = fresh_copy(a, tmp_path / "run")
    doc = json.loads((run / "manifest.json").read_text())
    if manifest == "NOSPEC":
        del doc["spec"]
    elif manifest == "NOGRID":
        del doc["grid"]
    elif manifest == "BADSIZE":
        doc["grid"]["size"] = "sixty"
    elif manifest == "WRONGSIZE":
        doc["grid"]["size"] = 61
    else:
        doc = manifest
    (run / "manifest.json").write_text(json.dumps(doc))
    for command in (["resume", str(run)], ["status", str(run)], ["report", str(run)]):
        if manifest == "WRONGSIZE" and command[0] != "resume":
            continue
        proc = cli(*command)
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert message in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr


def test_unusable_files_in_parts_are_reported_and_quarantined(tmp_path, two_runs):
    a, _, hash_a = two_runs
    run = fresh_copy(a, tmp_path / "run")
    parts = run / "parts"
    empty_sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    (parts / f"part-{empty_sha}.parquet").write_bytes(b"")  # 0 bytes, a valid name
    other = pa.table({"x": [1, 2, 3]})
    from sweep.common._fs import parquet_bytes
    from sweep.store._run_store import _sha256

    data = parquet_bytes(other)
    (parts / f"part-{_sha256(data)}.parquet").write_bytes(data)  # another schema
    (parts / "part-loop.parquet").symlink_to(parts / "part-loop.parquet")
    (parts / "part-dir.parquet").mkdir()
    verify = cli("verify", str(run))
    assert verify.returncode == 1 and "Traceback" not in verify.stderr
    assert verify.stderr.count("BAD PART") == 4, verify.stderr
    resume = cli("resume", str(run), "--quiet")
    assert resume.returncode == 0, resume.stderr
    assert len(list((run / "quarantine").iterdir())) == 4
    assert results_hash(run) == hash_a and cli("verify", str(run)).returncode == 0


def test_a_corrupt_telemetry_file_is_reported_and_the_report_still_builds(tmp_path, two_runs):
    a, _, _ = two_runs
    run = fresh_copy(a, tmp_path / "run")
    victim = sorted((run / "telemetry").glob("task-*.parquet"))[0]
    victim.write_bytes(b"not parquet")
    verify = cli("verify", str(run))
    assert verify.returncode == 0, verify.stderr
    assert f"bad telemetry telemetry/{victim.name}" in verify.stderr
    report = cli("report", str(run), "--quiet", "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    assert cli("resume", str(run), "--quiet").returncode == 0
    assert (run / "quarantine" / victim.name).exists()


# --- the lock -------------------------------------------------------------------------


def test_a_full_disk_while_locking_leaves_no_lock(tmp_path, two_runs):
    a, _, _ = two_runs
    with small_tmpfs(tmp_path / "small", "1m") as mount:
        run = mount / "run"
        run.mkdir()
        shutil.copy(a / "manifest.json", run / "manifest.json")
        with (mount / "filler").open("wb", buffering=0) as fh:  # fill every byte left
            with pytest.raises(OSError) as full:
                while True:
                    fh.write(b"\0" * 4096)
            assert full.value.errno == errno.ENOSPC
        store = RunStore(run)
        full_disk = pytest.raises(RunFolderError, match="cannot take the lock: No space left")
        with full_disk, store.locked():
            pass
        assert not (run / "lock").exists()
        assert not list(run.glob(".tmp-*"))
        (mount / "filler").unlink()
        with store.locked():  # and the next driver gets it at once
            assert (run / "lock").exists()


def test_an_unreadable_lock_is_taken_over_at_once(tmp_path, two_runs):
    a, _, _ = two_runs
    run = fresh_copy(a, tmp_path / "run")
    (run / "lock").write_bytes(b"")
    with RunStore(run).locked() as took_over:
        assert took_over == LockInfo() and took_over.to_json() == {}


def test_a_stale_lock_taken_over_by_another_driver_first_is_not_taken_twice(tmp_path, two_runs):
    """Two drivers find the same stale lock; the slower must not displace the faster."""
    a, _, _ = two_runs
    run = fresh_copy(a, tmp_path / "run")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = {"pid": dead.pid, "host": os.uname().nodename, "since": "then"}
    from sweep.store._run_store import pid_namespace

    stale["machine"] = pid_namespace()
    stale["proc_start"] = "1"
    (run / "lock").write_text(json.dumps(stale))

    fast, slow = RunStore(run), RunStore(run)
    judge = RunStore._lock_is_stale
    fast_lock = None

    def slow_check(self, info):
        nonlocal fast_lock
        verdict = judge(self, info)  # stale, as it really is ...
        fast_lock = fast.locked()  # ... and meanwhile the faster driver takes over
        fast_lock.__enter__()
        return verdict

    slow._lock_is_stale = slow_check.__get__(slow)  # type: ignore[method-assign]
    with pytest.raises(RunLockedError, match="took the lock first"), slow.locked():
        pass
    assert fast_lock is not None
    owner = json.loads((run / "lock").read_text())
    assert owner["pid"] == os.getpid() and owner["token"] == json.loads(fast._lock_bytes)["token"]
    fast.heartbeat()  # still the owner
    fast_lock.__exit__(None, None, None)
    assert not (run / "lock").exists()


def test_a_driver_whose_lock_was_taken_stops(tmp_path, two_runs):
    a, _, _ = two_runs
    run = fresh_copy(a, tmp_path / "run")
    store = RunStore(run)
    with store.locked():
        (run / "lock").write_text(json.dumps({"pid": 1, "host": "elsewhere"}))
        with pytest.raises(RunLockedError, match="lock was removed or taken"):
            store.heartbeat()
    assert json.loads((run / "lock").read_text())["host"] == "elsewhere"  # not removed


# --- opening a run folder runs no code --------------------------------------------------

PAYLOAD = """
from pathlib import Path
Path(__file__).with_name("IMPORTED").write_text("code from the run folder ran")
from strategies.momentum import Momentum as Payload
"""


@pytest.fixture
def booby_trapped(tmp_path, two_runs):
    """Run A whose manifest now names ``evil:Payload``, with ``evil.py`` inside the folder.

    Forged with care, as an attacker would: the identity's spec hash is the edited spec's
    (a manifest that disagrees with itself is refused before anything else) and every part
    is bound again to that identity and renamed by its sha256.
    """
    from sweep.common._fs import parquet_bytes
    from sweep.spec._models import spec_from_dict as validate
    from sweep.store._run_store import BINDING_KEY, _sha256

    a, _, _ = two_runs
    run = fresh_copy(a, tmp_path / "run")
    doc = json.loads((run / "manifest.json").read_text())
    doc["spec"]["strategy"]["name"] = "evil:Payload"
    doc["identity"]["spec_hash"] = validate(doc["spec"]).spec_hash
    (run / "manifest.json").write_text(json.dumps(doc))
    binding = RunStore(run).load_manifest().run_key.binding().encode()
    for part in part_files(run):
        table = read_part_table(part)
        meta = {**(table.schema.metadata or {}), BINDING_KEY: binding}
        data = parquet_bytes(table.replace_schema_metadata(meta))
        part.unlink()
        (run / "parts" / f"part-{_sha256(data)}.parquet").write_bytes(data)
    (run / "evil.py").write_text(PAYLOAD)
    return run


def untrusting_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "RAYSWEEP_ALLOW_IMPORT"}


@pytest.mark.parametrize("command", ["resume", "report"])
def test_opening_a_run_folder_imports_nothing_it_names(booby_trapped, command):
    run = booby_trapped
    proc = subprocess.run(
        [sys.executable, "-m", "sweep", command, ".", "--quiet"],
        capture_output=True,
        text=True,
        cwd=run,  # python -m puts the working directory on sys.path
        env=untrusting_env(),
    )
    assert not (run / "IMPORTED").exists()
    assert "Traceback" not in proc.stderr
    if command == "resume":
        assert proc.returncode == 2, proc.stderr
        assert "not built in" in proc.stderr and "--allow-import evil" in proc.stderr
    else:  # the report is built, without recomputed returns, and says why
        assert proc.returncode == 0, proc.stderr
        returns = json.loads((run / "report" / "report.json").read_text())["multiple_testing"]
        assert "--allow-import evil" in returns["returns"]["reason"]
        assert returns["sweep_wide"]["available"]  # what needs no import is all there


def test_an_allowed_module_is_still_not_imported_from_the_run_folder(booby_trapped):
    run = booby_trapped
    # Consistent, as an attacker would make it: an edited spec is refused before any import.
    doc = json.loads((run / "manifest.json").read_text())
    doc["identity"]["spec_hash"] = spec_from_dict(doc["spec"]).spec_hash
    (run / "manifest.json").write_text(json.dumps(doc))
    proc = subprocess.run(
        [sys.executable, "-m", "sweep", "resume", ".", "--quiet", "--allow-import", "evil"],
        capture_output=True,
        text=True,
        cwd=run,
        env=untrusting_env(),
    )
    assert not (run / "IMPORTED").exists()
    assert proc.returncode == 2 and "cannot import module 'evil'" in proc.stderr, proc.stderr


def test_a_class_without_strategy_members_is_not_instantiated(tmp_path, monkeypatch):
    from strategies import get_strategy
    from sweep.errors import StrategyError

    (tmp_path / "gadget.py").write_text(
        "from pathlib import Path\n"
        "class Gadget:\n"
        "    def __init__(self):\n"
        f"        Path({str(tmp_path / 'BUILT')!r}).write_text('constructed')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(StrategyError, match="without the Strategy members"):
        get_strategy("gadget:Gadget")
    assert not (tmp_path / "BUILT").exists()
