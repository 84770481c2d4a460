"""A run folder on an S3-compatible object store (moto's server on loopback, real HTTP)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from sweep import results_hash, run_sweep, spec_from_dict
from sweep.store._run_store import RunStore
from tests.helpers import small_spec_dict, write_spec

SLOW = "tests.strategies_for_tests:SlowMomentum"


def _doc():
    return small_spec_dict(
        strategy={"name": SLOW},
        grid={"lookback": {"start": 5, "stop": 125, "step": 2}, "band": [0.0, 0.01]},
    )


def test_run_kill_resume_verify_on_s3_gives_the_local_hash(s3_server, tmp_path, monkeypatch):
    monkeypatch.setenv("RAYSWEEP_TEST_SLEEP", "0")
    local = run_sweep(spec_from_dict(_doc()), tmp_path / "local", progress=False).table_hash
    uri = f"s3://sweeps/runs/{tmp_path.name}?endpoint_override={s3_server}&scheme=http&region=us-east-1"
    spec = write_spec(tmp_path / "s.toml", _doc())
    cmd = [sys.executable, "-m", "sweep"]
    env = {**os.environ, "RAYSWEEP_TEST_SLEEP": "0.02"}
    driver = subprocess.Popen(
        [*cmd, "run", str(spec), "--run-dir", uri, "--batch-size", "6", "--quiet"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    store = RunStore(uri)
    deadline = time.time() + 60
    while time.time() < deadline and len(store.part_names()) < 4:
        time.sleep(0.05)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    assert 0 < store.done_mask(120).sum() < 120
    assert store.read_lock() is not None  # the dead driver's lock is left behind
    resumed = subprocess.run(
        [*cmd, "resume", uri, "--quiet"],
        env={**env, "RAYSWEEP_TEST_SLEEP": "0"},
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    verify = subprocess.run([*cmd, "verify", uri], env=env, capture_output=True, text=True)
    assert verify.returncode == 0, verify.stderr
    assert f"table hash: {local}" in verify.stdout
    assert results_hash(uri) == local
    sessions = store.read_manifest()["sessions"]
    assert [s["status"] for s in sessions] == ["killed", "completed"]
