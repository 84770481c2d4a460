"""The inspect pod's command stops on SIGTERM as PID 1 (``kubectl delete`` returns at once).

PID 1 of a PID namespace (a container) gets only the signals it has a handler for: ``sleep``
as PID 1 ignores SIGTERM, so a pod running it takes its whole grace period (30 s) to delete.
The command runs here as PID 1 of a new PID namespace (``unshare -pf``, root), through the
entrypoint, as in the pod.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ENTRYPOINT = REPO / "docker" / "entrypoint"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare -p"
)


def inspect_pod_args() -> list[str]:
    pod = yaml.safe_load((REPO / "docker" / "kuberay" / "inspect-pod.yaml").read_text())
    args: list[str] = pod["spec"]["containers"][0]["args"]
    return args


def seconds_to_stop_as_pid1(command: list[str]) -> float | None:
    """SIGTERM to command running as PID 1 of a new PID namespace; seconds until it exits, or
    None if it still runs 3 s later (then it is SIGKILLed)."""
    outer = subprocess.Popen(
        ["unshare", "-pf", *command],
        env={**os.environ, "RAYSWEEP_PYTHON": sys.executable},
        start_new_session=True,
    )
    try:
        deadline = time.time() + 10
        while not (children := psutil.Process(outer.pid).children()):
            assert time.time() < deadline, "unshare started nothing"
            time.sleep(0.05)
        pid1 = children[0]
        time.sleep(1.0)  # the entrypoint has exec'd the command and it has set its traps
        start = time.time()
        pid1.send_signal(signal.SIGTERM)
        try:
            outer.wait(timeout=3)
        except subprocess.TimeoutExpired:
            return None
        return time.time() - start
    finally:
        if outer.poll() is None:
            os.killpg(outer.pid, signal.SIGKILL)  # unshare and the namespace's PID 1
            outer.wait(timeout=10)


def test_sleep_as_pid1_ignores_sigterm():
    """The premise: what the pod used to run does not stop on SIGTERM."""
    assert seconds_to_stop_as_pid1(["sleep", "infinity"]) is None


@pytest.mark.timeout(60)
def test_the_inspect_pods_command_stops_on_sigterm_as_pid1():
    took = seconds_to_stop_as_pid1([str(ENTRYPOINT), *inspect_pod_args()])
    assert took is not None and took < 2, "the inspect pod would wait for its grace period"
