"""Ray on three simulated nodes: same hash, a node removed mid-sweep, a killed driver."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sweep import results_hash, run_sweep, spec_from_dict
from sweep.store._run_store import RunStore
from tests.conftest import assert_loopback_only
from tests.helpers import small_spec_dict, write_spec

pytestmark = [pytest.mark.ray, pytest.mark.slow]
SLOW = "tests.strategies_for_tests:SlowMomentum"


def slow_doc():
    return small_spec_dict(
        strategy={"name": SLOW},
        grid={
            "lookback": {"start": 5, "stop": 245, "step": 4},
            "band": [0.0, 0.004, 0.008, 0.012, 0.016],
        },
    )


@pytest.fixture(scope="module")
def local_hash(tmp_path_factory) -> str:
    os.environ["RAYSWEEP_TEST_SLEEP"] = "0"
    try:
        summary = run_sweep(
            spec_from_dict(slow_doc()), tmp_path_factory.mktemp("l") / "r", progress=False
        )
    finally:
        del os.environ["RAYSWEEP_TEST_SLEEP"]
    return summary.table_hash


@pytest.fixture(scope="module")
def cluster(ray_env):
    import ray
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    workers = [c.add_node(num_cpus=1) for _ in range(2)]
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False)
    assert_loopback_only()
    yield c, workers
    ray.shutdown()
    c.shutdown()


def test_three_nodes_give_the_local_hash(cluster, tmp_path, local_hash, monkeypatch):
    monkeypatch.setenv("RAYSWEEP_TEST_SLEEP", "0")
    summary = run_sweep(
        spec_from_dict(slow_doc()), tmp_path / "r", executor="ray", batch_size=9, progress=False
    )
    assert summary.table_hash == local_hash
    telemetry = RunStore(tmp_path / "r").read_telemetry().to_pandas()
    assert telemetry["node"].nunique() == 3


def test_removing_a_node_mid_sweep_retries_its_tasks_and_keeps_the_hash(
    cluster, tmp_path, local_hash, monkeypatch
):
    c, workers = cluster
    monkeypatch.setenv("RAYSWEEP_TEST_SLEEP", "0.05")
    busy = tmp_path / "busy"
    busy.mkdir()
    monkeypatch.setenv("RAYSWEEP_TEST_BUSY_DIR", str(busy))
    victim = workers[0]
    sweep_over = threading.Event()

    def remove_while_it_runs_a_task() -> None:
        # Not after a count of parts: on a loaded machine the victim's worker can start late
        # or sit between leases, and removing an idle node retries nothing.
        running: list[Path] = []
        while not sweep_over.is_set():
            running = list(busy.glob(f"{victim.node_id}.*"))
            if running:
                break
            time.sleep(0.005)
        c.remove_node(victim, allow_graceful=False)
        # A lost machine loses its workers with it. On one host Ray's simulated node leaves
        # its worker to notice the dead raylet on its own, and a worker that notices late
        # finishes the task it holds (no retry to see): kill it as the machine's loss would.
        for marker in running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(marker.name.rsplit(".", 1)[1]), signal.SIGKILL)

    killer = threading.Thread(target=remove_while_it_runs_a_task)
    killer.start()
    try:
        summary = run_sweep(
            spec_from_dict(slow_doc()), tmp_path / "r", executor="ray", batch_size=6, progress=False
        )
    finally:
        sweep_over.set()
        killer.join()
    assert summary.table_hash == local_hash
    telemetry = RunStore(tmp_path / "r").read_telemetry().to_pandas()
    assert (
        telemetry["n_configs"].sum() == 300 and len(telemetry) == 50
    )  # nothing lost, nothing twice
    assert (telemetry["attempt"] >= 1).any(), "a task on the removed node should show a retry"
    workers[0] = c.add_node(num_cpus=1)
    c.wait_for_nodes()


def test_driver_killed_mid_sweep_resumes_under_ray(cluster, tmp_path, local_hash):
    c, _ = cluster
    spec = write_spec(tmp_path / "s.toml", slow_doc())
    run_dir = tmp_path / "run"
    env = {**os.environ, "RAYSWEEP_TEST_SLEEP": "0.02"}
    base = [sys.executable, "-m", "sweep"]
    ray_args = ["--executor", "ray", "--address", c.address, "--quiet"]
    driver = subprocess.Popen(
        [*base, "run", str(spec), "--run-dir", str(run_dir), "--batch-size", "6", *ray_args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 90
    while time.time() < deadline and len(list((run_dir / "parts").glob("part-*"))) < 5:
        time.sleep(0.1)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    done = RunStore(run_dir).done_mask(300).sum()
    assert 0 < done < 300
    proc = subprocess.run(
        [*base, "resume", str(run_dir), *ray_args],
        env={**env, "RAYSWEEP_TEST_SLEEP": "0"},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert results_hash(run_dir) == local_hash
    sessions = RunStore(run_dir).read_manifest()["sessions"]
    assert [s["status"] for s in sessions] == ["killed", "completed"]
    assert sessions[-1]["executor"] == "ray"
