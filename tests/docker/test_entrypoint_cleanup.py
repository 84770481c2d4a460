"""docker/entrypoint's driver-node cleanup with exactly the image's packages.

The image installs docker/requirements.lock and nothing else; the lock has no psutil (Ray
bundles a copy that is importable only after ``import ray``). The cleanup must therefore run
on the standard library alone. These tests run it with a Python in which every import outside
the standard library raises ImportError (a ``sitecustomize`` on PYTHONPATH), against real
processes that name the driver node's temp folder, and check that they are gone, that a
process not naming it is left alone, and that the log says what happened.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ENTRYPOINT = REPO / "docker" / "entrypoint"

BLOCKER = '''\
import sys

ALLOWED = set(sys.stdlib_module_names) | set(sys.builtin_module_names)


class StdlibOnly:
    """Only the standard library imports: the image has no psutil, and nothing else helps."""

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top == "psutil" or top not in ALLOWED:
            raise ImportError(f"{name} is not importable in this test (stdlib only)")
        return None


sys.meta_path.insert(0, StdlibOnly())
'''

# Each says "ready" once it is set up (the stubborn one: after ignoring SIGTERM), then waits.
SLEEP = "import time; print('ready', flush=True); time.sleep(600)"
STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(600)"
)


def make_stdlib_python(folder: Path) -> Path:
    """An interpreter (a wrapper of this one) that can import the standard library only."""
    site = folder / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    wrapper = folder / "python-stdlib-only"
    wrapper.write_text(
        f'#!/bin/sh\nPYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n'
    )
    wrapper.chmod(0o755)
    for module in ("psutil", "ray", "numpy"):
        probe = subprocess.run([str(wrapper), "-c", f"import {module}"], capture_output=True)
        assert probe.returncode != 0, f"{module} should not be importable by {wrapper}"
    assert subprocess.run([str(wrapper), "-c", "import os, signal, time"]).returncode == 0
    return wrapper


@pytest.fixture
def stdlib_python(tmp_path: Path) -> Path:
    return make_stdlib_python(tmp_path)


def stop_driver_node(python: Path, node_dir: Path) -> subprocess.CompletedProcess[str]:
    """Source the entrypoint (which then runs nothing) and call its cleanup on node_dir."""
    return subprocess.run(
        [
            "bash",
            "-c",
            'source "$0" && driver_node_dir=$1 && stop_driver_node',
            ENTRYPOINT,
            node_dir,
        ],
        env={**os.environ, "RAYSWEEP_PYTHON": str(python)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def start(code: str, *args: str) -> subprocess.Popen[bytes]:
    """Start ``code`` and return once it has said it is ready (its handlers are set)."""
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the test's timeout bounds this wait
    assert line == b"ready\n", f"{args}: exited {proc.poll()} before it was ready"
    return proc


@pytest.mark.timeout(60)
def test_cleanup_stops_the_processes_naming_the_node_with_the_standard_library_only(
    stdlib_python, tmp_path
):
    node_dir = tmp_path / "raysweep-driver-node.abc123"
    node_dir.mkdir()
    (node_dir / "session_latest").mkdir()
    node = [
        start(SLEEP, f"--temp-dir={node_dir}"),
        start(SLEEP, str(node_dir / "session_latest" / "sockets" / "raylet")),
        start(STUBBORN, f"--temp-dir={node_dir}"),  # ignores SIGTERM: needs the SIGKILL
    ]
    bystander = start(SLEEP, str(tmp_path / "raysweep-driver-node.other"))
    try:
        result = stop_driver_node(stdlib_python, node_dir)
        assert result.returncode == 0, result.stderr
        assert "driver: stopped the driver node (3 processes)" in result.stderr, result.stderr
        assert [p.wait(timeout=5) for p in node] == [
            -signal.SIGTERM,
            -signal.SIGTERM,
            -signal.SIGKILL,
        ]
        assert bystander.poll() is None, "a process not naming the node's folder was stopped"
        assert not node_dir.exists(), "the node's temp folder is removed once it is stopped"
    finally:
        for p in (*node, bystander):
            if p.poll() is None:
                p.kill()
                p.wait()
            if p.stdout is not None:
                p.stdout.close()


@pytest.mark.timeout(60)
def test_cleanup_that_fails_says_so_and_keeps_the_folder(tmp_path):
    failing = tmp_path / "python-that-fails"
    failing.write_text("#!/bin/sh\necho 'cannot read /proc' >&2\nexit 1\n")
    failing.chmod(0o755)
    node_dir = tmp_path / "raysweep-driver-node.xyz"
    node_dir.mkdir()
    result = stop_driver_node(failing, node_dir)
    assert result.returncode == 0, "the cleanup runs on EXIT: it must not change the exit code"
    assert "stopped the driver node" not in result.stderr
    assert (
        f"could not stop the driver node (its processes name {node_dir}): cannot read /proc"
        in result.stderr
    )
    assert node_dir.exists(), "kept: its processes may still use it"


def test_sourcing_the_entrypoint_runs_no_mode(tmp_path):
    result = subprocess.run(
        [
            "bash",
            "-c",
            'source "$0" && type stop_driver_node >/dev/null && echo sourced',
            ENTRYPOINT,
        ],
        env={**os.environ, "RAYSWEEP_PYTHON": "false"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0 and result.stdout == "sourced\n", result.stderr
