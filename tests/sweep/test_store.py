"""The run folder with real processes and real files: kills, resumes, corruption, locks."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from sweep import load_results, results_hash, run_sweep, spec_from_dict
from sweep.runner._status import verify_run
from sweep.store._run_store import RunStore
from tests.helpers import StopAfter, small_spec_dict, small_tmpfs, write_spec

SLOW = "tests.strategies_for_tests:SlowMomentum"


def slow_spec(**overrides):
    doc = small_spec_dict(
        strategy={"name": SLOW},
        grid={
            "lookback": {"start": 5, "stop": 245, "step": 4},
            "band": [0.0, 0.004, 0.008, 0.012, 0.016],
        },
    )
    doc.update(overrides)
    return doc  # 300 configs


def sweep_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "sweep", *args]


def run_cli(*args: str, env=None, check=True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(sweep_cmd(*args), capture_output=True, text=True, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr}")
    return proc


def folder_snapshot(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("ref") / "run"
    os.environ["RAYSWEEP_TEST_SLEEP"] = "0"
    try:
        summary = run_sweep(spec_from_dict(slow_spec()), run_dir, progress=False)
    finally:
        del os.environ["RAYSWEEP_TEST_SLEEP"]
    assert summary.table_hash is not None and summary.done == 300
    return run_dir


@pytest.fixture(scope="module")
def reference_hash(reference_run) -> str:
    return results_hash(reference_run)


@pytest.fixture(scope="module")
def reference_null_hash(reference_run) -> str:
    digest = verify_run(reference_run).null_summary_hash
    assert digest is not None
    return digest


def part_count(run_dir: Path) -> int:
    return len(RunStore(run_dir).part_names())


def wait_for_new_part(run_dir: Path, proc: subprocess.Popen[bytes], limit: float = 120.0) -> None:
    before = part_count(run_dir)
    deadline = time.monotonic() + limit
    while proc.poll() is None and part_count(run_dir) == before:
        if time.monotonic() > deadline:
            raise AssertionError("the sweep wrote no part within the time limit")
        time.sleep(0.02)


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_gives_the_same_hash(
    tmp_path, reference_hash, reference_null_hash
):
    spec = write_spec(tmp_path / "s.toml", slow_spec())
    run_dir = tmp_path / "run"
    rng = random.Random(1130)
    env = {**os.environ, "RAYSWEEP_TEST_SLEEP": "0.01"}
    kills = 0
    for _ in range(4):
        proc = subprocess.Popen(
            sweep_cmd("run", str(spec), "--run-dir", str(run_dir), "--batch-size", "7", "--quiet"),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # Kill at a random moment after this session has written at least one new part,
        # however slowly the machine starts Python (CI runners take seconds to import).
        wait_for_new_part(run_dir, proc)
        time.sleep(rng.uniform(0.0, 0.3))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills >= 3
    done_before = RunStore(run_dir).done_mask(300).sum()
    assert 0 < done_before < 300
    run_cli("resume", str(run_dir), "--quiet", env=env)
    assert results_hash(run_dir) == reference_hash
    assert verify_run(run_dir).null_summary_hash == reference_null_hash
    manifest = RunStore(run_dir).read_manifest()
    statuses = [s["status"] for s in manifest["sessions"]]
    assert statuses.count("killed") >= 3 and statuses[-1] == "completed"
    assert len(load_results(run_dir)) == 300


def test_changing_batch_size_between_sessions_keeps_the_hash(
    tmp_path, reference_hash, reference_null_hash, monkeypatch
):
    monkeypatch.setenv("RAYSWEEP_TEST_SLEEP", "0")
    spec = spec_from_dict(slow_spec())
    run_dir = tmp_path / "run"
    first = run_sweep(spec, run_dir, batch_size=11, progress=False, executor=StopAfter(3))
    assert first.status == "incomplete" and 0 < first.done < 300
    second = run_sweep(spec, run_dir, batch_size=40, progress=False)
    assert second.computed == 300 - first.done
    assert second.table_hash == reference_hash
    assert verify_run(run_dir).null_summary_hash == reference_null_hash


@pytest.mark.parametrize("batch_size", [1, 7, None])
def test_null_summaries_do_not_depend_on_the_batch_size(
    tmp_path, reference_null_hash, monkeypatch, batch_size
):
    monkeypatch.setenv("RAYSWEEP_TEST_SLEEP", "0")
    run_sweep(spec_from_dict(slow_spec()), tmp_path / "run", batch_size=batch_size, progress=False)
    assert verify_run(tmp_path / "run").null_summary_hash == reference_null_hash


def test_truncated_and_altered_parts_are_named_and_only_their_configs_recomputed(
    tmp_path, reference_hash, monkeypatch
):
    monkeypatch.setenv("RAYSWEEP_TEST_SLEEP", "0")
    run_dir = tmp_path / "run"
    run_sweep(spec_from_dict(slow_spec()), run_dir, batch_size=50, progress=False)
    parts = sorted((run_dir / "parts").iterdir())
    truncated, altered = parts[1], parts[4]
    lost = sum(
        len(RunStore(run_dir).read_part_columns(p.name, ["grid_index"]))
        for p in (truncated, altered)
    )
    truncated.write_bytes(truncated.read_bytes()[:-100])
    data = bytearray(altered.read_bytes())
    data[len(data) // 2] ^= 0x01
    altered.write_bytes(bytes(data))
    proc = run_cli("verify", str(run_dir), check=False)
    assert proc.returncode == 1
    assert truncated.name in proc.stderr and altered.name in proc.stderr
    assert (
        f"{truncated.name}: truncated" in proc.stderr and f"{altered.name}: altered" in proc.stderr
    )
    summary = run_sweep(spec_from_dict(slow_spec()), run_dir, batch_size=50, progress=False)
    assert summary.computed == lost == 100
    assert sorted(summary.quarantined) == sorted([truncated.name, altered.name])
    assert summary.table_hash == reference_hash
    assert run_cli("verify", str(run_dir)).returncode == 0


@pytest.mark.parametrize("change", ["spec", "data", "strategy_version", "metric"])
def test_resume_with_a_different_sweep_is_refused_and_touches_nothing(
    tmp_path, change, monkeypatch
):
    monkeypatch.setenv("RAYSWEEP_TEST_SLEEP", "0")
    prices = tmp_path / "prices.csv"
    import pandas as pd

    rng = np.random.default_rng(3)
    close = 100 * np.exp(np.cumsum(rng.standard_normal((400, 2)) * 0.01, axis=0))
    pd.DataFrame(
        {"date": pd.bdate_range("2020-01-01", periods=400), "A": close[:, 0], "B": close[:, 1]}
    ).to_csv(prices, index=False)
    doc = slow_spec(data={"path": str(prices)}, grid={"lookback": [5, 10, 20], "band": [0.0, 0.01]})
    spec_path = write_spec(tmp_path / "s.toml", doc)
    run_dir = tmp_path / "run"
    run_cli("run", str(spec_path), "--run-dir", str(run_dir), "--quiet")
    before = folder_snapshot(run_dir)
    env = dict(os.environ)
    args = ["resume", str(run_dir), "--quiet"]
    if change == "spec":
        write_spec(spec_path, {**doc, "grid": {"lookback": [5, 10, 21], "band": [0.0, 0.01]}})
        args = ["run", str(spec_path), "--run-dir", str(run_dir), "--quiet"]
        expected = "the spec"
    elif change == "data":
        frame = pd.read_csv(prices)
        frame.loc[100, "A"] *= 1.0000001
        frame.to_csv(prices, index=False)
        expected = "the data (fingerprint)"
    elif change == "strategy_version":
        env["RAYSWEEP_TEST_STRATEGY_VERSION"] = "2"
        expected = "version: '1' -> '2'"
    else:
        write_spec(spec_path, {**doc, "metrics": {**doc["metrics"], "block_length": 11}})
        args = ["run", str(spec_path), "--run-dir", str(run_dir), "--quiet"]
        expected = "block_length: 10 -> 11"
    proc = run_cli(*args, env=env, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "belongs to another sweep" in proc.stderr and expected in proc.stderr.replace("\n", " ")
    assert folder_snapshot(run_dir) == before


@pytest.mark.slow
def test_second_driver_is_refused_and_a_dead_drivers_lock_is_taken_over(tmp_path, reference_hash):
    spec = write_spec(tmp_path / "s.toml", slow_spec())
    run_dir = tmp_path / "run"
    # The first driver holds its lock and waits at the gate (SlowMomentum) until it is killed:
    # it is running when the second one starts, however slow or fast the machine.
    gate = tmp_path / "gate"
    gate.touch()
    env = {**os.environ, "RAYSWEEP_TEST_SLEEP": "0"}
    first = subprocess.Popen(
        sweep_cmd("run", str(spec), "--run-dir", str(run_dir), "--batch-size", "5", "--quiet"),
        env={**env, "RAYSWEEP_TEST_GATE": str(gate)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not (run_dir / "lock").exists():
        assert first.poll() is None, f"the first driver exited {first.returncode}"
        assert time.monotonic() < deadline, "the first driver took no lock"
        time.sleep(0.05)
    second = run_cli("run", str(spec), "--run-dir", str(run_dir), "--quiet", env=env, check=False)
    assert first.poll() is None, "the first driver must still hold the folder"
    assert second.returncode == 2 and "in use by another driver" in second.stderr
    first.send_signal(signal.SIGKILL)
    first.wait()
    gate.unlink()  # releases any evaluation process the dead driver left behind
    lock = json.loads((run_dir / "lock").read_text())
    assert lock["pid"] == first.pid  # the dead driver's lock is still there
    run_cli("resume", str(run_dir), "--quiet", env=env)
    manifest = RunStore(run_dir).read_manifest()
    assert manifest["sessions"][-1]["took_over_lock"]["pid"] == first.pid
    assert results_hash(run_dir) == reference_hash
    assert not (run_dir / "lock").exists()


def test_full_disk_leaves_no_partial_part_and_resume_completes(tmp_path, reference_hash):
    with small_tmpfs(tmp_path / "small", "160k") as mount:
        spec = write_spec(tmp_path / "s.toml", slow_spec())
        run_dir = mount / "run"
        env = {**os.environ, "RAYSWEEP_TEST_SLEEP": "0"}
        proc = run_cli(
            "run",
            str(spec),
            "--run-dir",
            str(run_dir),
            "--batch-size",
            "10",
            "--quiet",
            env=env,
            check=False,
        )
        assert proc.returncode == 1, proc.stderr
        assert "cannot write a part" in proc.stderr and "No space left on device" in proc.stderr
        assert "Traceback" not in proc.stderr
        leftovers = [p.name for p in run_dir.rglob(".tmp-*")]
        assert leftovers == []
        assert all(c.ok for c in RunStore(run_dir).verify_parts())
        assert 0 < RunStore(run_dir).done_mask(300).sum() < 300
        subprocess.run(["mount", "-o", "remount,size=64m", str(mount)], check=True)
        run_cli("resume", str(run_dir), "--quiet", env=env)
        assert results_hash(run_dir) == reference_hash


def test_ctrl_c_stops_cleanly_and_resume_completes(tmp_path, reference_hash):
    spec = write_spec(tmp_path / "s.toml", slow_spec())
    run_dir = tmp_path / "run"
    env = {**os.environ, "RAYSWEEP_TEST_SLEEP": "0.01"}
    proc = subprocess.Popen(
        sweep_cmd("run", str(spec), "--run-dir", str(run_dir), "--batch-size", "5", "--quiet"),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # A suite started in the background inherits an ignored SIGINT; a terminal's Ctrl-C
        # reaches a driver whose SIGINT has its default disposition, so give it that.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 60
    while time.time() < deadline and len(list((run_dir / "parts").glob("part-*"))) < 3:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "sweep resume" in stderr and "Traceback" not in stderr
    store = RunStore(run_dir)
    assert store.read_manifest()["sessions"][-1]["status"] == "interrupted"
    assert all(c.ok for c in store.verify_parts()) and not list(run_dir.glob("parts/.tmp-*"))
    assert not (run_dir / "lock").exists()
    run_cli("resume", str(run_dir), "--quiet", env=env)
    assert results_hash(run_dir) == reference_hash


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"", {}),
        (b"[1, 2]", {}),
        (b'{"pid": true, "host": "h"}', {"host": "h"}),
        (b'{"pid": 7, "host": 3}', {"pid": 7}),
        (b'{"pid": 7, "host": "h", "extra": 1}', {"pid": 7, "host": "h"}),
    ],
)
def test_a_lock_file_reads_into_the_typed_record(raw, expected):
    from sweep.store._record import LockInfo

    lock = LockInfo.from_bytes(raw)
    assert lock.to_json() == expected
    assert lock.usable is (expected.keys() >= {"pid", "host"})
    assert LockInfo.from_bytes(lock.to_bytes()) == lock


def test_results_hash_is_the_same_whatever_columns_are_read_together(reference_run, monkeypatch):
    import pyarrow.dataset as ds

    from sweep import results_table
    from sweep.store import _results
    from sweep.store._table_hash import table_hash

    store = RunStore(reference_run)
    dataset = ds.dataset([store.fs.join("parts", n) for n in store.part_names()])
    whole = _results.column_groups(dataset, 2**40)
    single = _results.column_groups(dataset, 1)
    assert len(whole) == 1 and whole[0] == dataset.schema.names
    assert single == [[name] for name in dataset.schema.names]
    digests = set()
    for budget in (1, 4096, 2**40):  # one column per read, a few at a time, all at once
        monkeypatch.setattr(_results, "HASH_READ_BYTES", budget)
        digests.add(results_hash(reference_run, version="v1"))  # v1 streams column groups
    assert digests == {table_hash(results_table(reference_run), version="v1")}


def test_a_part_keeps_its_summary_once_in_its_footer_and_reads_as_before(reference_run, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sweep.common._fs import ARROW_SCHEMA_KEY, footer_schema, parquet_bytes
    from sweep.store._null_summary import SUMMARY_KEY
    from tests.helpers import read_part_table

    store = RunStore(reference_run)
    name = store.part_names()[0]
    path = reference_run / "parts" / name
    footer = pq.ParquetFile(path).metadata.metadata
    # Written by the store: in the footer's key-value metadata, not in the Arrow schema.
    assert SUMMARY_KEY in footer and ARROW_SCHEMA_KEY in footer
    assert SUMMARY_KEY not in (pq.read_schema(path).metadata or {})
    schema = store.read_part_schema(name)
    assert schema.metadata[SUMMARY_KEY] == footer[SUMMARY_KEY]
    table = read_part_table(path)
    assert store.read_part_columns(name, ["sharpe"]).schema.metadata == schema.metadata
    # The same rows and metadata with the summary in both places (as parts were written
    # before): the same schema read back, and twice the footer.
    both = parquet_bytes(table)
    again = footer_schema(pq.ParquetFile(pa.BufferReader(both)))
    assert again.equals(schema, check_metadata=True)
    # (the part's size depends on its row count, which the planner picks from timings)
    assert len(both) - path.stat().st_size > 0.9 * len(footer[SUMMARY_KEY])
    assert parquet_bytes(table, footer_only=[SUMMARY_KEY]) == path.read_bytes()
    # Without footer-only keys, the bytes are pq.write_table's (telemetry and panel copies).
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", use_dictionary=False, write_statistics=False)
    assert both == sink.getvalue().to_pybytes()
