"""`sweep plan` end to end (in-process and on a real local Ray cluster), `--executor auto`
recorded in the session, and the live rate of `sweep status`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from sweep import run_sweep, spec_from_dict
from sweep.plan._forecast import CostModel, Scaling, crossover, predict_wall
from sweep.runner._status import live_rate, run_status
from sweep.store._run_store import RunStore, read_run
from tests.helpers import small_spec_dict, write_spec


def _spec_480(**overrides):  # type: ignore[no-untyped-def]
    """480 configs: enough for the planner's pilots (it needs 256)."""
    grid = {
        "lookback": {"start": 5, "stop": 125, "step": 2},
        "band": [0.0, 0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02],
    }
    return small_spec_dict(grid=grid, **overrides)


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    return subprocess.run(
        [sys.executable, "-m", "sweep", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


def _model(doc, scaling):  # type: ignore[no-untyped-def]
    return CostModel(
        doc["per_config_seconds"],
        doc["overhead_seconds"],
        doc["startup_seconds"],
        doc["workers"],
        scaling if doc["executor"] == "ray" else Scaling(),
    )


def test_plan_in_process_end_to_end(tmp_path):
    spec = write_spec(tmp_path / "s.toml", _spec_480())
    work = tmp_path / "cwd"
    work.mkdir()
    proc = _cli(work, "plan", str(spec), "--executor", "local", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["format"] == "raysweep-plan-v2" and doc["configs"] == 480
    assert doc["axes"] == [
        {"name": "lookback", "size": 60},
        {"name": "band", "size": 8},
        {"name": "cost", "size": 1},
    ]
    local = doc["local"]
    assert local["executor"] == "local" and local["workers"] == 1
    assert local["per_config_seconds"] > 0 and local["overhead_seconds"] > 0
    assert local["pilot_configs"] >= 1 + 32  # warm-up and a first pilot at least
    assert doc["cluster"] is None and doc["crossover_configs"] is None
    assert doc["choice"]["chosen"] == "local"
    # the printed prediction is the model's, from the printed measurements
    (row,) = doc["predictions"]
    expected = predict_wall(480, _model(local, Scaling()))
    assert row["seconds"] == pytest.approx(expected.seconds, rel=1e-12)
    assert row["batch_size"] == expected.batch_size
    assert "linear scaling" in doc["scaling"]["source"]
    assert list(work.iterdir()) == []  # a plan leaves nothing behind

    text = _cli(work, "plan", str(spec), "--executor", "local")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, text.stdout
    assert any(line.startswith("auto:        local") for line in lines)
    assert "480 configs (lookback 60 x band 8 x cost 1)" in text.stdout


def test_plan_refuses_contradictory_options(tmp_path):
    spec = write_spec(tmp_path / "s.toml", _spec_480())
    proc = _cli(tmp_path, "plan", str(spec), "--executor", "local", "--workers", "2")
    assert proc.returncode == 2 and "--executor local" in proc.stderr


@pytest.mark.ray
def test_plan_on_a_local_ray_cluster(ray_env, tmp_path):
    spec = write_spec(tmp_path / "s.toml", _spec_480())
    proc = _cli(tmp_path, "plan", str(spec), "--workers", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    ray = doc["cluster"]
    assert ray["executor"] == "ray" and ray["workers"] == 2
    assert ray["describe"]["address"] == "local"
    assert all(a.startswith("127.") for a in ray["describe"]["node_addresses"])
    assert ray["startup_seconds"] > 0.1  # ray.init and two worker processes at least
    assert [(p["executor"], p["workers"]) for p in doc["predictions"]] == [
        ("local", 1),
        ("ray", 1),
        ("ray", 2),
    ]
    scaling = Scaling(doc["scaling"]["sigma"], doc["scaling"]["kappa"], doc["scaling"]["source"])
    local_m, ray_m = _model(doc["local"], scaling), _model(ray, scaling)
    assert doc["crossover_configs"] == crossover(local_m, ray_m)
    for p in doc["predictions"][1:]:
        assert p["seconds"] == pytest.approx(predict_wall(480, ray_m, p["workers"]).seconds)
    faster = (
        "ray" if doc["predictions"][2]["seconds"] < doc["predictions"][0]["seconds"] else "local"
    )
    assert doc["choice"]["chosen"] == faster


def test_auto_is_the_default_and_its_choice_is_recorded(tmp_path):
    summary = run_sweep(spec_from_dict(_spec_480()), tmp_path / "auto", progress=False)
    choice = summary.executor_choice
    assert choice is not None and choice.requested == "auto" and choice.chosen == "local"
    session = RunStore(tmp_path / "auto").load_manifest().sessions[-1]
    assert session.executor == "local" and session.executor_choice == choice
    # the prediction was made from the in-process pilot, for the configs it left
    assert choice.configs == 480 - summary.plan.warmup_configs - sum(
        int(p.configs) for p in summary.plan.pilot
    )
    assert choice.local_seconds > 0 and choice.ray_workers >= 1
    named = run_sweep(
        spec_from_dict(_spec_480()), tmp_path / "named", executor="local", progress=False
    )
    assert named.executor_choice is not None
    assert (named.executor_choice.requested, named.executor_choice.chosen) == ("local", "local")
    assert named.table_hash == summary.table_hash


@pytest.mark.ray
def test_auto_moves_to_ray_when_ray_is_predicted_first(ray_env, tmp_path, monkeypatch):
    from sweep import executors

    local = run_sweep(spec_from_dict(_spec_480()), tmp_path / "local", progress=False)
    # Ray free to start and to schedule: 2 workers must then be predicted to win
    monkeypatch.setitem(executors._ASSUMED_COSTS, "ray", (0.0, 0.0))
    moved = run_sweep(spec_from_dict(_spec_480()), tmp_path / "ray", workers=2, progress=False)
    assert moved.executor_choice is not None and moved.executor_choice.chosen == "ray"
    assert moved.table_hash == local.table_hash
    session = RunStore(tmp_path / "ray").load_manifest().sessions[-1]
    info = session.executor_info
    assert session.executor == "ray" and info is not None and info.workers == 2
    assert info.node_addresses and all(a.startswith("127.") for a in info.node_addresses)
    tel = RunStore(tmp_path / "ray").read_telemetry().to_pandas()
    assert tel["n_configs"].sum() == 480  # in-process pilots and Ray batches, each config once


def test_status_shows_the_running_sessions_rate_read_only(tmp_path):
    run_dir = tmp_path / "run"
    run_sweep(spec_from_dict(_spec_480()), run_dir, batch_size=60, progress=False)
    store = RunStore(run_dir)
    manifest = store.load_manifest()
    # the state a live driver leaves: its session running, the lock held
    store.write_manifest(
        replace(manifest, sessions=(replace(manifest.sessions[-1], status="running"),))
    )
    tel = store.read_telemetry().to_pandas()
    first = float(tel["submit_time"].min())
    with store.locked():
        live = live_rate(read_run(run_dir), remaining=120, now=first + 10.0)
        assert live is not None and live.session == 1 and live.configs == 480
        assert live.configs_per_second == pytest.approx(48.0)
        assert live.seconds_left == pytest.approx(2.5)
        assert run_status(run_dir).live is not None
        before = sorted((p, p.stat().st_mtime_ns) for p in run_dir.rglob("*"))
        proc = _cli(tmp_path, "status", str(run_dir))
        after = sorted((p, p.stat().st_mtime_ns) for p in run_dir.rglob("*"))
    assert proc.returncode == 0, proc.stderr
    assert "rate:" in proc.stdout and "configs/s (session 1, local" in proc.stdout
    assert "time left:     0s at that rate" in proc.stdout
    assert before == after  # read-only while a driver runs
    assert run_status(run_dir).live is None  # lock released: no live rate


@pytest.mark.ray
# Ray's failed ray.init leaves a finished helper process's Popen un-waited (Ray-internal)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_auto_stays_in_process_when_ray_does_not_start(ray_env, tmp_path, monkeypatch):
    from sweep import executors

    monkeypatch.setitem(executors._ASSUMED_COSTS, "ray", (0.0, 0.0))
    # a real failure: token authentication with a token file that does not exist
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "no-such-token"))
    summary = run_sweep(spec_from_dict(_spec_480()), tmp_path / "run", workers=2, progress=False)
    choice = summary.executor_choice
    assert choice is not None and choice.chosen == "local" and "did not start" in choice.reason
    assert summary.done == 480 and summary.table_hash is not None
    session = RunStore(tmp_path / "run").load_manifest().sessions[-1]
    assert session.executor == "local" and session.status == "completed"
