"""Dask as a peer of Ray: the same hashes, a killed worker loses nothing, Ray -> Dask resume.

One local Dask cluster of 2 worker processes (127.0.0.1 only) is shared by the module and
joined by its scheduler's address, as a cluster started by ``dask scheduler`` / ``dask
worker`` or dask-jobqueue would be; one test starts its own ``LocalCluster`` through
``--executor dask`` without an address.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sweep import results_hash, run_sweep, spec_from_dict
from sweep.executors import cluster_named, make_executor
from sweep.executors._part_tasks import map_part_groups
from sweep.runner._pass_executor import PassExecutor
from sweep.runner._status import verify_run
from sweep.store._part_audit import audit_here
from sweep.store._run_store import RunStore
from tests.helpers import loopback_dask_cluster, small_spec_dict, write_spec
from tests.part_task_helpers import audit_or_die_once

pytestmark = [pytest.mark.dask, pytest.mark.slow]
SLOW = "tests.strategies_for_tests:SlowMomentum"
SWEEP = [sys.executable, "-m", "sweep"]


def slow_doc() -> dict:
    return small_spec_dict(
        strategy={"name": SLOW},
        grid={"lookback": {"start": 5, "stop": 245, "step": 8}, "band": [0.0, 0.006, 0.012]},
    )


@pytest.fixture(scope="module")
def dask_address():
    """A local Dask cluster of 2 one-thread worker processes on loopback; its address."""
    with loopback_dask_cluster(2) as address:
        yield address


@pytest.fixture(scope="module")
def local_hash(tmp_path_factory) -> str:
    os.environ["RAYSWEEP_TEST_SLEEP"] = "0"
    try:
        summary = run_sweep(
            spec_from_dict(slow_doc()), tmp_path_factory.mktemp("l") / "r", progress=False
        )
    finally:
        del os.environ["RAYSWEEP_TEST_SLEEP"]
    assert summary.table_hash
    return summary.table_hash


def test_an_address_names_its_engine():
    assert cluster_named("auto", "tcp://127.0.0.1:8786") == "dask"
    assert cluster_named("auto", "127.0.0.1:6379") == "ray"
    assert cluster_named("auto", None) is None
    assert cluster_named("dask", None) == "dask"


def test_a_sweep_on_dask_gives_the_in_process_and_ray_hash(
    dask_address, tmp_path, local_hash, monkeypatch
):
    # auto joins the scheduler an address names; the telemetry shows both workers.
    monkeypatch.setenv("RAYSWEEP_TEST_SLEEP", "0")
    summary = run_sweep(
        spec_from_dict(slow_doc()), tmp_path / "r", address=dask_address, batch_size=6,
        progress=False,
    )  # fmt: skip
    assert summary.table_hash == local_hash
    assert summary.executor_choice is not None and summary.executor_choice.chosen == "dask"
    store = RunStore(tmp_path / "r")
    telemetry = store.read_telemetry().to_pandas()
    assert telemetry["n_configs"].sum() == 90 and telemetry["worker"].nunique() == 2
    info = store.read_manifest()["sessions"][-1]["executor_info"]
    assert info["kind"] == "dask" and info["address"] == dask_address
    assert info["workers"] == 2 and info["backend_version"]


def test_a_dask_worker_killed_mid_sweep_loses_nothing(
    dask_address, tmp_path, local_hash, monkeypatch
):
    busy = tmp_path / "busy"
    busy.mkdir()
    monkeypatch.setenv("RAYSWEEP_TEST_BUSY_DIR", str(busy))
    monkeypatch.setenv("RAYSWEEP_TEST_SLEEP", "0.03")
    killed: list[int] = []
    sweep_over = threading.Event()

    def kill_a_busy_worker() -> None:
        while not sweep_over.is_set() and not killed:
            for marker in busy.glob("worker.*"):
                pid = int(marker.name.rsplit(".", 1)[1])
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                killed.append(pid)
                break
            time.sleep(0.01)

    killer = threading.Thread(target=kill_a_busy_worker)
    killer.start()
    try:
        summary = run_sweep(
            spec_from_dict(slow_doc()),
            tmp_path / "r",
            executor=make_executor("dask", address=dask_address),
            batch_size=6,
            progress=False,
        )
    finally:
        sweep_over.set()
        killer.join()
    assert killed, "no worker was caught running a task"
    assert summary.table_hash == local_hash
    telemetry = RunStore(tmp_path / "r").read_telemetry().to_pandas()
    # Nothing lost, nothing twice: 15 tasks of 6 configs, none recorded from the dead worker
    # (its task ran again on a live one).
    assert telemetry["n_configs"].sum() == 90 and len(telemetry) == 15
    assert str(killed[0]) not in set(telemetry["worker"])


def test_a_sweep_killed_on_ray_resumes_on_dask_to_the_same_hash(
    ray_local, dask_address, tmp_path, local_hash
):
    spec = write_spec(tmp_path / "s.toml", slow_doc())
    run_dir = tmp_path / "run"
    env = {**os.environ, "RAYSWEEP_TEST_SLEEP": "0.05"}
    ray_address = ray_local.get_runtime_context().gcs_address
    driver = subprocess.Popen(
        [*SWEEP, "run", str(spec), "--run-dir", str(run_dir), "--batch-size", "3", "--quiet",
         "--executor", "ray", "--address", ray_address],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.time() + 120
    while time.time() < deadline and len(list((run_dir / "parts").glob("part-*"))) < 3:
        time.sleep(0.05)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    done = RunStore(run_dir).done_mask(90).sum()
    assert 0 < done < 90
    proc = subprocess.run(
        [*SWEEP, "resume", str(run_dir), "--executor", "dask", "--address", dask_address,
         "--quiet"],
        env={**env, "RAYSWEEP_TEST_SLEEP": "0"}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert results_hash(run_dir) == local_hash
    sessions = RunStore(run_dir).read_manifest()["sessions"]
    assert [s["status"] for s in sessions] == ["killed", "completed"]
    assert [s["executor"] for s in sessions] == ["ray", "dask"]


def test_verify_on_dask_gives_the_in_process_record(small_run_parts_of_one, dask_address):
    with PassExecutor("dask", dask_address) as passes:
        there = verify_run(small_run_parts_of_one, auditor=passes.audit)
    assert there.to_json() == verify_run(small_run_parts_of_one).to_json()


def test_a_dask_worker_killed_mid_pass_is_retried(small_run_parts_of_one, dask_address, tmp_path):
    store = RunStore(small_run_parts_of_one)
    store.load_manifest()
    names = store.part_names()
    marker = tmp_path / "killed-once"
    backend = make_executor("dask", address=dask_address)
    try:
        groups = list(
            map_part_groups(backend, audit_or_die_once, store, names, (True, str(marker)))
        )
    finally:
        backend.close()
    assert marker.exists()  # a worker did die
    audits = [a for group in groups for a in group]
    here = audit_here(store, names, True)
    assert [a.check for a in audits] == [a.check for a in here]


def test_executor_dask_without_an_address_starts_a_local_cluster(tmp_path, local_hash):
    spec = write_spec(tmp_path / "s.toml", slow_doc())
    env = {k: v for k, v in os.environ.items() if k != "DASK_SCHEDULER_ADDRESS"}
    proc = subprocess.run(
        [*SWEEP, "run", str(spec), "--run-dir", str(tmp_path / "r"), "--executor", "dask",
         "--workers", "2", "--quiet"],
        env={**env, "RAYSWEEP_TEST_SLEEP": "0"}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert results_hash(tmp_path / "r") == local_hash
    info = RunStore(tmp_path / "r").read_manifest()["sessions"][-1]["executor_info"]
    assert info["kind"] == "dask" and info["address"] == "local" and info["workers"] == 2
    assert Path(tmp_path / "r").exists()


STAND_IN = """
from distributed import LocalCluster


class SLURMCluster(LocalCluster):
    \"\"\"dask-jobqueue's SLURMCluster as far as raysweep sees it: a scheduler and workers.\"\"\"

    def __init__(self, **job):
        assert job["processes"] == job["cores"]  # one thread per worker, as the page says
        super().__init__(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                         dashboard_address=None,
                         scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})

    def scale(self, n=0, jobs=None, **kwargs):
        return super().scale(n if jobs is None else 2)  # jobs of workers: its 2 workers
"""


def test_the_dask_jobqueue_example_runs_with_a_stand_in_cluster(tmp_path, monkeypatch, capsys):
    from tests.test_docs import REPO, blocks

    (block,) = [
        b for b in blocks(REPO / "docs/how-to/dask.md") if b.marker == "dask-jobqueue-slurm"
    ]
    (tmp_path / "dask_jobqueue.py").write_text(STAND_IN)
    spec = write_spec(tmp_path / "s.toml", small_spec_dict())
    monkeypatch.syspath_prepend(str(tmp_path))
    code = block.body.replace("examples/momentum.toml", str(spec)).replace(
        "/shared/runs/momentum", str(tmp_path / "run")
    )
    exec(compile(code, block.label, "exec"), {"__name__": "__doc_block__"})
    printed = capsys.readouterr().out.strip()
    assert printed == results_hash(tmp_path / "run")
    sessions = RunStore(tmp_path / "run").read_manifest()["sessions"]
    assert sessions[-1]["executor"] == "dask"


def test_plan_measures_a_dask_cluster_like_a_ray_one(dask_address):
    from sweep import plan_sweep, resolve

    found = plan_sweep(resolve(spec_from_dict(small_spec_dict())), address=dask_address)
    cluster = found.cluster
    assert cluster is not None and cluster.executor == "dask" and cluster.workers == 2
    assert cluster.describe.kind == "dask" and cluster.describe.address == dask_address
    assert cluster.per_config_seconds > 0 and cluster.overhead_seconds > 0
    assert [(p.executor, p.wall.workers) for p in found.predictions] == [
        ("local", 1),
        ("dask", 1),
        ("dask", 2),
    ]
    assert found.to_json()["format"] == "raysweep-plan-v2"
