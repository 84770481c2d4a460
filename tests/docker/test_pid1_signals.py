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


def ready_to_be_signalled(pid1: psutil.Process, command: list[str]) -> bool:
    """PID 1 runs ``command`` and has set its traps, seen from /proc, not from a clock.

    ``sleep`` sets none: it is ready once it is exec'd. The inspect pod's bash sets its trap
    before it starts its ``sleep`` child, so a child means the trap is in place.
    """
    try:
        if command[0] == "sleep":
            return pid1.cmdline()[:1] == ["sleep"]
        return pid1.cmdline()[:1] == ["bash"] and any(c.name() == "sleep" for c in pid1.children())
    except psutil.NoSuchProcess:
        return False


def stops_on_sigterm_as_pid1(command: list[str], patience: float) -> bool:
    """SIGTERM to command running as PID 1 of a new PID namespace, once it is ready: whether
    it exits within ``patience`` seconds (if not, it is SIGKILLed).

    ``patience`` is a deadline, not a measurement: a PID 1 that ignores SIGTERM never exits,
    and one that handles it exits whenever a loaded machine lets it run.
    """
    outer = subprocess.Popen(
        ["unshare", "-pf", *command],
        env={**os.environ, "RAYSWEEP_PYTHON": sys.executable},
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (children := psutil.Process(outer.pid).children()):
            assert time.monotonic() < deadline, "unshare started nothing"
            time.sleep(0.05)
        pid1 = children[0]
        while not ready_to_be_signalled(pid1, command):
            assert outer.poll() is None, f"{command} exited before it was signalled"
            assert time.monotonic() < deadline, f"{command} never got ready"
            time.sleep(0.05)
        pid1.send_signal(signal.SIGTERM)
        try:
            outer.wait(timeout=patience)
        except subprocess.TimeoutExpired:
            return False
        return True
    finally:
        if outer.poll() is None:
            os.killpg(outer.pid, signal.SIGKILL)  # unshare and the namespace's PID 1
            outer.wait(timeout=10)


def test_sleep_as_pid1_ignores_sigterm():
    """The premise: what the pod used to run does not stop on SIGTERM."""
    assert not stops_on_sigterm_as_pid1(["sleep", "infinity"], patience=3)


@pytest.mark.timeout(120)
def test_the_inspect_pods_command_stops_on_sigterm_as_pid1():
    # 20 s: well inside the pod's 30 s grace period, however loaded the machine.
    stopped = stops_on_sigterm_as_pid1([str(ENTRYPOINT), *inspect_pod_args()], patience=20)
    assert stopped, "the inspect pod would wait for its grace period"
