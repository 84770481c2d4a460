"""docker/entrypoint as real processes (no Docker): head, workers and drivers on 127.0.0.1.

One cluster for the module: ``entrypoint head`` (0 CPUs, dashboard on loopback) and
``entrypoint worker`` (2 CPUs), token auth and Ray's files in temporary folders, the loopback
guard checked when the test attaches. Drivers are ``entrypoint driver`` processes, as the
compose ``driver`` service and the KubeRay RayJob run them. A worker killed mid-sweep is
replaced and the sweep ends with the hash of a local run; a driver SIGKILLed mid-sweep, then
started again (as a 0-CPU node) and stopped with SIGTERM, then started a third time, resumes
each time and ends with the same hash; a driver facing a live lock retries, then gives up.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from sweep import results_hash, run_sweep, spec_from_dict
from sweep.store._run_store import RunStore
from tests.conftest import assert_loopback_only
from tests.docker.test_entrypoint_cleanup import make_stdlib_python
from tests.helpers import small_spec_dict, write_spec

pytestmark = [pytest.mark.ray, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
ENTRYPOINT = REPO / "docker" / "entrypoint"
SLOW = "tests.strategies_for_tests:SlowMomentum"
# Ports the entrypoint pins for containers; empty = Ray picks (several nodes share 127.0.0.1).
PER_NODE_PORTS = (
    "RAY_NODE_MANAGER_PORT",
    "RAY_OBJECT_MANAGER_PORT",
    "RAY_RUNTIME_ENV_AGENT_PORT",
    "RAY_DASHBOARD_AGENT_GRPC_PORT",
    "RAY_METRICS_EXPORT_PORT",
    "RAY_MIN_WORKER_PORT",
    "RAY_MAX_WORKER_PORT",
)
TOTAL, TASKS = 300, 50  # 60 lookbacks x 5 bands, 6 configs per task
SLEEP = "0.01"  # seconds per config in SlowMomentum: 1.5 s of sleeping for 2 CPUs


def slow_doc() -> dict[str, Any]:
    return small_spec_dict(
        strategy={"name": SLOW},
        grid={
            "lookback": {"start": 5, "stop": 245, "step": 4},
            "band": [0.0, 0.004, 0.008, 0.012, 0.016],
        },
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a process started in its own session, its group and all its descendants."""
    victims: list[psutil.Process] = []
    with contextlib.suppress(psutil.NoSuchProcess):
        victims = psutil.Process(proc.pid).children(recursive=True)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for p in victims:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    proc.wait(timeout=30)
    psutil.wait_procs(victims, timeout=10)


def processes_naming(mark: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            if any(mark in arg for arg in p.info["cmdline"] or []):
                found.append(p)
    return found


class EntrypointCluster:
    """Processes started from docker/entrypoint, killed (with all they started) at the end."""

    def __init__(self, ray_tmp: Path, logs: Path) -> None:
        self.ray_tmp, self.logs = ray_tmp, logs
        self.port, self.dashboard_port = free_port(), free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "RAYSWEEP_PYTHON": sys.executable,
            "RAY_NODE_IP": "127.0.0.1",
            "RAY_TMPDIR": str(ray_tmp),
            "RAY_PORT": str(self.port),
            "RAY_HEAD_ADDRESS": self.address,
            "RAY_WAIT_TIMEOUT": "60",
            # Declare a killed node dead after ~3 s instead of ~15 s (Ray's defaults: 3 s x 5).
            "RAY_health_check_period_ms": "1000",
            "RAY_health_check_failure_threshold": "3",
            **dict.fromkeys(PER_NODE_PORTS, ""),
        }
        self.env.pop("RAY_ADDRESS", None)
        self.procs: list[subprocess.Popen[bytes]] = []
        self.workers: list[subprocess.Popen[bytes]] = []
        self.count = 0

    def start(self, mode: str, **env: str) -> subprocess.Popen[bytes]:
        self.count += 1
        log = self.logs / f"{self.count:02d}-{mode}.log"
        full = {**self.env, "RAY_DASHBOARD_AGENT_LISTEN_PORT": str(free_port()), **env}
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(ENTRYPOINT), mode],
                env=full,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        proc.log = log  # type: ignore[attr-defined]
        self.procs.append(proc)
        return proc

    def head(self) -> subprocess.Popen[bytes]:
        return self.start(
            "head",
            RAY_NUM_CPUS="0",
            RAY_DASHBOARD_HOST="127.0.0.1",
            RAY_DASHBOARD_PORT=str(self.dashboard_port),
            RAY_CLIENT_SERVER_PORT=str(free_port()),
        )

    def worker(self) -> subprocess.Popen[bytes]:
        # SlowMomentum reads its sleep where it is built (the driver); the worker gets it too.
        return self.start("worker", RAY_NUM_CPUS="2", RAYSWEEP_TEST_SLEEP=SLEEP)

    def driver(self, run_dir: Path, spec: Path, **env: str) -> subprocess.Popen[bytes]:
        settings = {
            "SWEEP_BATCH_SIZE": "6",
            "SWEEP_MIN_CPUS": "0",
            "SWEEP_LOCK_WAIT": "30",
            "SWEEP_REPORT": "0",
            "RAYSWEEP_TEST_SLEEP": SLEEP,
            **env,
        }
        return self.start(
            "driver", RAY_ADDRESS=self.address, RUN_DIR=str(run_dir), SPEC=str(spec), **settings
        )

    def close(self) -> None:
        for proc in self.procs:
            with contextlib.suppress(Exception):
                kill_tree(proc)
        # Anything left that runs from this cluster's temp folder (a scoped `ray stop`).
        for p in processes_naming(str(self.ray_tmp)):
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()


def output(proc: subprocess.Popen[bytes]) -> str:
    return proc.log.read_text(errors="replace")  # type: ignore[attr-defined]


def wait_for(what: str, check: Any, timeout: float, *procs: subprocess.Popen[bytes]) -> None:
    deadline = time.time() + timeout
    while not check():
        for proc in procs:
            if proc.poll() is not None:
                pytest.fail(
                    f"waiting for {what}: {proc.args} exited {proc.returncode}:\n{output(proc)[-3000:]}"
                )
        if time.time() > deadline:
            logs = "\n".join(output(p)[-1500:] for p in procs)
            pytest.fail(f"timed out waiting for {what}\n{logs}")
        time.sleep(0.05)


def n_parts(run_dir: Path) -> int:
    return len(list((run_dir / "parts").glob("part-*")))


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """The sweep run in-process with the local executor: the reference hash."""
    run_dir = tmp_path_factory.mktemp("local") / "r"
    os.environ["RAYSWEEP_TEST_SLEEP"] = "0"
    try:
        run_sweep(spec_from_dict(slow_doc()), run_dir, progress=False)
    finally:
        del os.environ["RAYSWEEP_TEST_SLEEP"]
    return run_dir


@pytest.fixture(scope="module")
def local_hash(local_run) -> str:  # type: ignore[no-untyped-def]
    return results_hash(local_run)


@pytest.fixture(scope="module")
def cluster(ray_env, tmp_path_factory) -> Iterator[EntrypointCluster]:  # type: ignore[no-untyped-def]
    import ray

    # A short folder: Ray's unix-socket paths under it must stay below 108 bytes.
    ray_tmp = Path(tempfile.mkdtemp(prefix="rs-", dir="/tmp"))
    c = EntrypointCluster(ray_tmp, tmp_path_factory.mktemp("logs"))
    try:
        head = c.head()
        c.workers.append(c.worker())
        wait_for("the head's GCS", lambda: _accepts(c.port), 60, head)
        if ray.is_initialized():
            ray.shutdown()
        ray.init(address=c.address, log_to_driver=False)
        assert_loopback_only()
        wait_for(
            "2 worker CPUs",
            lambda: ray.cluster_resources().get("CPU", 0) >= 2,
            60,
            head,
            *c.workers,
        )
        assert ray.cluster_resources().get("CPU", 0) == 2, "the head runs no tasks (RAY_NUM_CPUS=0)"
        assert_loopback_only()
        yield c
    finally:
        ray.shutdown()
        c.close()
        shutil.rmtree(ray_tmp, ignore_errors=True)


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _all_loopback(addresses: list[str]) -> bool:
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


def test_head_healthcheck_answers_with_the_token_only(cluster, tmp_path):
    check = [str(ENTRYPOINT), "healthcheck"]
    assert subprocess.run(check, env=cluster.env, timeout=60).returncode == 0
    wrong = tmp_path / "wrong_token"
    wrong.write_text("not-the-token")
    env = {**cluster.env, "RAY_AUTH_TOKEN_PATH": str(wrong)}
    assert subprocess.run(check, env=env, timeout=60).returncode != 0


def test_head_dashboard_is_on_loopback_and_wants_the_token(cluster):
    url = f"http://127.0.0.1:{cluster.dashboard_port}/api/version"
    deadline = time.time() + 30
    while True:  # the dashboard comes up a moment after the GCS
        try:
            urllib.request.urlopen(url, timeout=2)
        except urllib.error.HTTPError as exc:
            assert exc.code == 401, f"a request without the token got HTTP {exc.code}"
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)
        else:
            pytest.fail("the dashboard answered a request without the token")
    token = Path(os.environ["RAY_AUTH_TOKEN_PATH"]).read_text().strip()
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=5) as response:
        assert json.loads(response.read())["ray_version"]
    listening = {
        c.laddr.ip
        for c in psutil.net_connections("tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr.port == cluster.dashboard_port
    }
    assert listening and all(
        ipaddress.ip_address(a.removeprefix("::ffff:")).is_loopback for a in listening
    )


@pytest.mark.timeout(240)
def test_worker_killed_mid_sweep_is_replaced_and_the_hash_is_the_local_one(
    cluster, tmp_path, local_hash
):
    spec = write_spec(tmp_path / "s.toml", slow_doc())
    run_dir = tmp_path / "run"
    driver = cluster.driver(run_dir, spec, SWEEP_REPORT="1")  # verify, then `sweep report`
    wait_for("a fifth of the parts", lambda: n_parts(run_dir) >= TASKS // 5, 90, driver)
    kill_tree(cluster.workers[0])  # raylet, its task workers and agents: the node is gone
    assert n_parts(run_dir) < TASKS, "the sweep ended before the worker was killed"
    cluster.workers[0] = cluster.worker()
    assert driver.wait(timeout=180) == 0, output(driver)[-4000:]
    log = output(driver)
    assert f"table hash: {local_hash}" in log  # printed by `sweep verify`
    assert "parts verified: " in log and "0 bad" in log
    assert results_hash(run_dir) == local_hash
    telemetry = RunStore(run_dir).read_telemetry().to_pandas()
    assert (
        telemetry["n_configs"].sum() == TOTAL and len(telemetry) == TASKS
    )  # nothing lost, nothing twice
    assert telemetry["node"].nunique() == 2, "the old and the new worker node both ran tasks"
    assert (telemetry["attempt"] >= 1).any(), "a task of the killed worker should show a retry"
    sessions = RunStore(run_dir).read_manifest()["sessions"]
    assert [s["status"] for s in sessions] == ["completed"]
    assert _all_loopback(sessions[0]["executor_info"]["node_addresses"])


@pytest.mark.timeout(300)
def test_driver_killed_or_stopped_mid_sweep_then_run_again_resumes_to_the_local_hash(
    cluster, tmp_path, local_hash
):
    spec = write_spec(tmp_path / "s.toml", slow_doc())
    run_dir = tmp_path / "run"
    store = RunStore(run_dir)
    first = cluster.driver(run_dir, spec)
    wait_for("a few parts", lambda: n_parts(run_dir) >= 5, 90, first)
    kill_tree(first)  # a preempted driver: its container or pod is gone, sweep process and all
    done = int(store.done_mask(TOTAL).sum())
    assert 0 < done < TOTAL
    assert (run_dir / "lock").exists(), "a SIGKILLed driver leaves its lock behind"

    # Run the driver again, as the compose driver service does: it joins as a 0-CPU node and
    # waits for the cluster's CPUs. Then stop it as `docker stop` does: SIGTERM to the
    # entrypoint alone, which hands it on to sweep as SIGINT.
    # Its driver node's folder goes under a TMPDIR of this test's own, so that what is
    # checked below is this node and no other process on the machine (another suite's, or
    # the four that test_entrypoint_cleanup starts, which name "raysweep-driver-node" too).
    # Short: Ray's unix-socket paths under it must stay below 108 bytes, and they are
    # <TMPDIR>/raysweep-driver-node.XXXXXX/session_<date>_<time>_<us>_<pid>/sockets/plasma_store:
    # 14 + 28 + 36 + 7 + 21 = 106 bytes with /tmp/nXXXXXXXX and a pid of 7 digits.
    node_tmp = Path(tempfile.mkdtemp(prefix="n", dir="/tmp"))
    second = cluster.driver(
        run_dir, spec, DRIVER_START_NODE="1", SWEEP_MIN_CPUS="2", TMPDIR=str(node_tmp)
    )
    parts_before = n_parts(run_dir)
    wait_for("parts of the second driver", lambda: n_parts(run_dir) >= parts_before + 5, 90, second)
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=60) == 130, output(second)[-4000:]
    log = output(second)
    assert "has a manifest: resuming it" in log and "cluster ready: 2 CPUs on 3 nodes" in log
    assert "interrupted: finished parts are saved" in log
    assert not (run_dir / "lock").exists(), "a driver stopped by SIGTERM releases its lock"
    # The entrypoint waits for its node's processes before it exits (stop_driver_node on
    # EXIT), so they are gone now: checked once, at once, as `docker stop` would leave them.
    assert "driver: stopped the driver node (" in log, log[-4000:]
    assert not processes_naming(str(node_tmp)), "the driver node outlived its driver"
    assert list(node_tmp.iterdir()) == [], "the node's folder is removed with it"
    node_tmp.rmdir()
    assert all(p.poll() is None for p in (cluster.procs[0], *cluster.workers)), (
        "head or worker died"
    )
    done2 = int(store.done_mask(TOTAL).sum())
    assert done < done2 < TOTAL

    third = cluster.driver(run_dir, spec)
    assert third.wait(timeout=180) == 0, output(third)[-4000:]
    log = output(third)
    assert "has a manifest: resuming it" in log
    assert f"table hash: {local_hash}" in log  # printed by `sweep verify`
    assert results_hash(run_dir) == local_hash
    sessions = store.read_manifest()["sessions"]
    assert [s["status"] for s in sessions] == ["killed", "interrupted", "completed"]
    assert sessions[1]["took_over_lock"], "the dead driver's stale lock is taken over"
    assert not sessions[2]["took_over_lock"]
    assert sessions[2]["configs_computed"] == TOTAL - done2
    assert all(
        _all_loopback(s.get("executor_info", {}).get("node_addresses", ["?"])) for s in sessions
    )
    status = subprocess.run(
        [sys.executable, "-m", "sweep", "status", str(run_dir), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    info = json.loads(status.stdout)
    assert (info["done"], info["remaining"], info["table_hash"]) == (TOTAL, 0, local_hash)


@pytest.mark.timeout(180)
def test_the_driver_node_is_stopped_by_a_cleanup_without_psutil(cluster, tmp_path):
    """start_driver_node joins a real 0-CPU node; stop_driver_node, run by a Python that has
    the standard library only (the image has no psutil), stops every process of it."""
    import ray

    def alive_nodes() -> int:
        return sum(n["Alive"] for n in ray.nodes())

    before = alive_nodes()
    log = tmp_path / "driver-node.log"
    script = (
        'source "$0" && start_driver_node "$RAY_ADDRESS" && echo "node_dir=$driver_node_dir" '
        "&& sleep 2 && PY=$STDLIB_PYTHON && stop_driver_node"
    )
    env = {
        **cluster.env,
        "RAY_ADDRESS": cluster.address,
        "RAY_DASHBOARD_AGENT_LISTEN_PORT": str(free_port()),
        "STDLIB_PYTHON": str(make_stdlib_python(tmp_path)),
    }
    with log.open("wb") as out:
        rc = subprocess.run(
            ["bash", "-c", script, str(ENTRYPOINT)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=150,
        ).returncode
    text = log.read_text(errors="replace")
    assert rc == 0, text[-4000:]
    node_dir = text.split("node_dir=", 1)[1].split()[0]
    assert "joining" in text and "driver: stopped the driver node (" in text, text[-4000:]
    assert "could not stop" not in text
    assert not processes_naming(node_dir), "processes of the driver node outlived the cleanup"
    assert not Path(node_dir).exists()
    deadline = time.time() + 30
    while alive_nodes() > before and time.time() < deadline:
        time.sleep(0.2)
    assert alive_nodes() == before, "the cluster still lists the driver node as alive"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("retry", ["0.5", "0"])  # "0": the stop lands in an attempt, not a sleep
def test_stop_driver_sigterms_the_driver_of_its_run_dir_only(local_run, ray_env, tmp_path, retry):
    """KubeRay's preStop hook: `entrypoint stop-driver` stops `entrypoint driver` (here one that
    waits for a foreign lock, no Ray needed) of its RUN_DIR, and leaves another run's alone.

    Stopped while it retries the locked folder, the driver exits 143 whether the SIGTERM finds
    it sleeping between attempts or inside one (sweep starting up, handed SIGINT: 130)."""
    drivers = []
    for name in ("run", "other"):
        run_dir = tmp_path / name
        shutil.copytree(local_run, run_dir)
        (run_dir / "lock").write_text(
            json.dumps({"pid": 1, "host": "elsewhere", "proc_start": "1", "since": "2026-01-01"})
        )
        env = {
            **os.environ,
            "RAYSWEEP_PYTHON": sys.executable,
            "RUN_DIR": str(run_dir),
            "RAY_ADDRESS": "auto",
            "SWEEP_MIN_CPUS": "0",
            "SWEEP_LOCK_WAIT": "90",
            "SWEEP_LOCK_RETRY": retry,
        }
        log = tmp_path / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(ENTRYPOINT), "driver"], env=env, stdout=out, stderr=subprocess.STDOUT
            )
        proc.log = log  # type: ignore[attr-defined]
        drivers.append((proc, env))
    try:
        for proc, _ in drivers:
            wait_for("a retry", lambda p=proc: f"retrying in {retry}s" in output(p), 60, proc)
        (driver, env), (other, _) = drivers
        stop = subprocess.run(
            [str(ENTRYPOINT), "stop-driver"], env=env, capture_output=True, text=True, timeout=60
        )
        assert stop.returncode == 0, stop.stderr
        assert f"stop-driver: stopped 1 driver of {env['RUN_DIR']}" in stop.stderr
        assert driver.wait(timeout=5) == 143, output(driver)
        assert other.poll() is None, "a driver of another RUN_DIR was stopped"
        again = subprocess.run(
            [str(ENTRYPOINT), "stop-driver"], env=env, capture_output=True, text=True, timeout=60
        )
        assert again.returncode == 0 and "no driver of" in again.stderr
    finally:
        for proc, _ in drivers:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)


def test_driver_waits_for_a_foreign_lock_then_gives_up(local_run, ray_env, tmp_path):
    """A lock refreshed by a driver on another host: retry, then exit 2 (no Ray needed)."""
    run_dir = tmp_path / "run"
    shutil.copytree(local_run, run_dir)
    (run_dir / "lock").write_text(
        json.dumps(
            {
                "pid": 1,
                "host": "another-host",
                "proc_start": "1",
                "since": "2026-01-01T00:00:00+00:00",
            }
        )
    )
    env = {
        **os.environ,
        "RAYSWEEP_PYTHON": sys.executable,
        "RUN_DIR": str(run_dir),
        "RAY_ADDRESS": "auto",
        "SWEEP_MIN_CPUS": "0",
        "SWEEP_LOCK_WAIT": "1",
        "SWEEP_LOCK_RETRY": "0.2",
    }
    proc = subprocess.run(
        [str(ENTRYPOINT), "driver"], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("in use by another driver") == 2, (
        proc.stderr
    )  # refused, retried, refused
    assert proc.stderr.count("retrying in 0.2s") == 1
    assert "has a manifest: resuming it" in proc.stderr
    assert json.loads((run_dir / "lock").read_text())["host"] == "another-host", (
        "the live lock is kept"
    )
