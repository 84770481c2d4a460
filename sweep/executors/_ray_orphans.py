"""Find and stop the Ray agents a killed local session left behind.

A driver SIGKILLed while its local Ray node starts can orphan the node's dashboard and
runtime-env agents (``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``): their raylet is gone,
their parent is init, and they hold ~100 MB each until Ray's reconnect timeout (alive 40 s
after the kill, gone by 80 s, on this project's test machine with Ray 2.60). Nothing in the
dead session can stop them, so the next local start does.

A process is an orphan of a dead session when all of these hold:

- its title starts with ``ray::`` (Ray renames its agents and workers so);
- its parent is not a raylet (Ray's agents and workers are the raylet's children, so the
  parent is init or a container's subreaper once the raylet is gone; the environment's
  ``RAY_RAYLET_PID`` cannot be trusted, as the retitling can overwrite it);
- one of its open files lies in a session folder under Ray's temp root, so only sessions
  of the Ray temp folder this process would use (:func:`ray_temp_root`) are touched.

Processes of a live session, other users' processes (their ``/proc`` entries cannot be read)
and anything not started by Ray are never signalled. Linux only: without ``/proc`` nothing
is done.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from pathlib import Path

_PROC = Path("/proc")
_log = logging.getLogger(__name__)


def ray_temp_root() -> Path:
    """The folder a local Ray start puts its sessions in, as Ray 2.60 chooses it.

    ``$RAY_TMPDIR/ray``, else ``$TMPDIR/ray``, else ``/tmp/ray`` (Linux).
    """
    base = os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or "/tmp"
    return Path(base, "ray").resolve()


def _argv0(pid: str) -> bytes:
    with contextlib.suppress(OSError):
        return (_PROC / pid / "cmdline").read_bytes().split(b"\0", 1)[0]
    return b""


def _parent(pid: str) -> str:
    with contextlib.suppress(OSError, IndexError):
        # The field after the parenthesised name, which may itself hold spaces or ")".
        return (_PROC / pid / "stat").read_text().rsplit(")", 1)[1].split()[1]
    return ""


def _runs_a_raylet(pid: str) -> bool:
    # A reused pid is not the raylet: the running program must be one.
    return pid.isdigit() and _argv0(pid).endswith(b"/raylet")


def _uses_session_under(pid: str, root: Path) -> bool:
    fd_dir = _PROC / pid / "fd"
    with contextlib.suppress(OSError):
        for fd in os.listdir(fd_dir):
            with contextlib.suppress(OSError):
                target = Path(os.readlink(fd_dir / fd))
                if target.is_relative_to(root):
                    parts = target.relative_to(root).parts
                    if parts and parts[0].startswith("session_"):
                        return True
    return False


def orphaned_ray_processes(root: Path | None = None) -> list[int]:
    """Pids of Ray processes whose raylet is dead, in sessions under ``root``.

    Parameters
    ----------
    root : Path, optional
        Ray's temp root; :func:`ray_temp_root` when omitted.

    Returns
    -------
    list of int
        Sorted pids; empty where ``/proc`` does not exist.
    """
    root = (root or ray_temp_root()).resolve()
    if not _PROC.is_dir():
        return []
    found = []
    for pid in os.listdir(_PROC):
        if not pid.isdigit() or not _argv0(pid).startswith(b"ray::"):
            continue
        if _runs_a_raylet(_parent(pid)):
            continue
        if _uses_session_under(pid, root):
            found.append(int(pid))
    return sorted(found)


def reap_orphaned_ray_processes(root: Path | None = None) -> list[int]:
    """SIGKILL the processes :func:`orphaned_ray_processes` finds; return their pids.

    SIGKILL rather than SIGTERM: an orphaned agent waits on a GCS that is gone and has no
    state worth flushing. A process that exits between finding and signalling is skipped.

    Parameters
    ----------
    root : Path, optional
        Ray's temp root; :func:`ray_temp_root` when omitted.

    Returns
    -------
    list of int
        The pids signalled.
    """
    killed = []
    for pid in orphaned_ray_processes(root):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed


def before_local_ray_start() -> None:
    """Stop what killed local sessions left running, and say so; call before ``ray.init``."""
    reaped = reap_orphaned_ray_processes()
    if reaped:
        _log.warning(
            "raysweep: stopped %d Ray process(es) left by a killed local session (pids %s)",
            len(reaped),
            ", ".join(map(str, reaped)),
        )
