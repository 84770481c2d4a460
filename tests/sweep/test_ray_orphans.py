"""Agents orphaned by a killed local Ray session are stopped by the next local start.

The window in which a driver's SIGKILL orphans its node's agents is narrow (about 1 kill in
10 during start-up); the test opens it for certain: a real local Ray node starts in a
subprocess, its agents are frozen with SIGSTOP (so they cannot notice anything), and the
driver, GCS and raylet are SIGKILLed. The agents are then orphans exactly as after the
unlucky kill: raylet gone, parent init. A live session's processes are never touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from sweep.executors._ray_orphans import orphaned_ray_processes, reap_orphaned_ray_processes
from tests.helpers import small_spec_dict, write_spec

pytestmark = pytest.mark.ray

_DRIVER = """
import sys, time, ray
ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
print("ready", flush=True)
time.sleep(600)
"""


def _argv(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _session_processes(root: Path) -> dict[int, list[bytes]]:
    """Every process whose command line or open files name a session under ``root``."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        argv = _argv(pid)
        named = any(str(root).encode() in part for part in argv)
        if not named and argv and argv[0].startswith(b"ray::"):
            fds = Path(f"/proc/{pid}/fd")
            try:
                named = any(str(root) in os.readlink(fds / fd) for fd in os.listdir(fds))
            except OSError:
                named = False
        if named:
            found[pid] = argv
    return found


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state == "Z"


def _wait_until(condition, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def orphaned_agents(ray_env, tmp_path):  # type: ignore[no-untyped-def]
    """A dead local session's agents, frozen; yields (Ray temp root, agent pids)."""
    # A short root: Ray's socket paths under it must fit a unix socket's 107 bytes.
    root = Path(tempfile.mkdtemp(prefix="rs-orphans-", dir="/tmp"))
    env = dict(os.environ, RAY_TMPDIR=str(root))
    sessions = root / "ray"  # where Ray 2.60 puts sessions for this RAY_TMPDIR
    driver = subprocess.Popen(
        [sys.executable, "-c", _DRIVER],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert driver.stdout is not None and driver.stderr is not None
        if "ready" not in (line.strip() for line in driver.stdout):  # stops at "ready"
            pytest.fail(f"the Ray driver did not start: {driver.stderr.read()[-2000:]}")
        processes = _session_processes(root)
        agents = [p for p, argv in processes.items() if argv[0].endswith(b"Agent")]
        assert len(agents) == 2, processes  # DashboardAgent and RuntimeEnvAgent
        assert orphaned_ray_processes(sessions) == []  # a live session: nothing to reap
        for pid in agents:
            os.kill(pid, signal.SIGSTOP)
        driver.kill()
        for pid, argv in processes.items():
            if not argv[0].startswith(b"ray::"):  # GCS, raylet and monitors
                os.kill(pid, signal.SIGKILL)
        driver.wait(timeout=30)
        assert _wait_until(lambda: all(_gone(p) for p in processes if p not in agents))
        yield env, sessions, agents
    finally:
        for pid in _session_processes(root):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if driver.poll() is None:
            driver.kill()
        driver.communicate()
        shutil.rmtree(root, ignore_errors=True)


def test_reaper_finds_and_stops_exactly_the_orphans(orphaned_agents):
    _, root, agents = orphaned_agents
    assert set(agents) <= set(orphaned_ray_processes(root))
    assert orphaned_ray_processes(root.parent / "another-root") == []
    assert set(agents) <= set(reap_orphaned_ray_processes(root))
    assert _wait_until(lambda: all(_gone(p) for p in agents))
    assert orphaned_ray_processes(root) == []


def test_the_next_local_ray_run_stops_them_and_says_so(orphaned_agents, tmp_path):
    env, sessions, agents = orphaned_agents
    assert set(agents) <= set(orphaned_ray_processes(sessions))
    spec = write_spec(tmp_path / "s.toml", small_spec_dict())
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sweep",
            "run",
            str(spec),
            "--run-dir",
            str(tmp_path / "run"),
            "--executor",
            "ray",
            "--workers",
            "1",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "left by a killed local session" in proc.stderr
    assert _wait_until(lambda: all(_gone(p) for p in agents))


@pytest.mark.slow
def test_status_stops_what_a_killed_run_left(ray_env, tmp_path):
    """Issue 28, point 13: after a driver's SIGKILL mid-run its node's agents lived on (here
    6 kills of 6, still alive 10 s later) until the next local start; ``sweep status`` on
    the run folder now stops them, found by that session's folder under Ray's temp root."""
    root = Path(tempfile.mkdtemp(prefix="rs-killed-", dir="/tmp"))  # short: socket paths
    env = dict(os.environ, RAY_TMPDIR=str(root))
    grid = {"lookback": {"start": 5, "stop": 205, "step": 4}, "band": [0.0, 0.01]}
    spec = write_spec(tmp_path / "s.toml", small_spec_dict(grid=grid))
    run = tmp_path / "run"
    args = ["--run-dir", str(run), "--executor", "ray", "--workers", "1", "--batch-size", "4"]
    driver = subprocess.Popen(
        [sys.executable, "-m", "sweep", "run", str(spec), *args, "--quiet"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        started = _wait_until(lambda: any(run.glob("parts/part-*.parquet")), timeout=240)
        assert started, driver.stderr.read() if driver.poll() is not None else "no part"
        processes = _session_processes(root)
        assert any(argv[0].endswith(b"Agent") for argv in processes.values()), processes
        driver.kill()  # SIGKILL: no clean-up runs
        driver.wait(timeout=30)
        raylet_gone = _wait_until(
            lambda: all(_gone(p) for p, argv in processes.items() if b"raylet" in argv[0])
        )
        assert raylet_gone
        left = [p for p in processes if not _gone(p)]
        status = subprocess.run(
            [sys.executable, "-m", "sweep", "status", str(run)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert status.returncode == 0, status.stderr
        if left:
            assert "left by a killed session of this run" in status.stderr, status.stderr
        assert _wait_until(lambda: all(_gone(p) for p in processes), timeout=10), {
            p: processes[p] for p in processes if not _gone(p)
        }
    finally:
        for pid in _session_processes(root):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if driver.poll() is None:
            driver.kill()
        driver.communicate()
        shutil.rmtree(root, ignore_errors=True)


def test_a_run_owns_only_the_ray_sessions_its_drivers_started(tmp_path):
    """A session folder is ``session_<local time>_<driver pid>``: the pid and the span of a
    session recorded on this host pick its folders; another pid, time or host does not."""
    import socket
    from datetime import UTC, datetime, timedelta

    from sweep.executors._ray_orphans import session_folders
    from sweep.store._record import Session

    start = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)

    def folder(at: datetime, pid: int) -> str:
        name = f"session_{at.astimezone().strftime('%Y-%m-%d_%H-%M-%S_%f')}_{pid}"
        (tmp_path / name).mkdir()
        return name

    def session(i: int, pid: int, begin: datetime, host: str | None = None) -> Session:
        end = begin + timedelta(minutes=10)
        return Session(
            id=i,
            start=begin.isoformat(),
            end=end.isoformat(),
            host=host or socket.gethostname(),
            pid=pid,
        )

    mine = folder(start + timedelta(seconds=5), 4242)
    folder(start + timedelta(hours=1), 4242)  # the same pid, later: another process
    folder(start + timedelta(seconds=5), 4243)  # another driver at the same time
    elsewhere = folder(start + timedelta(hours=2, seconds=5), 777)
    sessions = [session(1, 4242, start), session(2, 777, start + timedelta(hours=2), "other")]
    assert session_folders(sessions, tmp_path) == [mine]
    assert elsewhere not in session_folders(sessions, tmp_path)
    assert session_folders([], tmp_path) == []
