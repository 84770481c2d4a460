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

A run folder knows its own dead sessions, so ``sweep status`` and ``sweep resume`` on it
stop their leftovers too, before any other local start (:func:`stop_leftovers_of`). A local
Ray start names its session folder ``session_<local date and time>_<pid>`` after the
process that started it, the driver; a driver session recorded on this host with that pid,
whose span contains that time, owns the folder, and only orphans using files in the
folders of the run's own sessions are stopped: never another session's, another run's or
another user's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from pathlib import Path

from sweep.store._record import Session

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


def _sessions_used(pid: str, root: Path) -> set[str]:
    """The session folders under ``root`` (their names) that a process has files open in."""
    found: set[str] = set()
    fd_dir = _PROC / pid / "fd"
    with contextlib.suppress(OSError):
        for fd in os.listdir(fd_dir):
            with contextlib.suppress(OSError):
                target = Path(os.readlink(fd_dir / fd))
                if target.is_relative_to(root):
                    parts = target.relative_to(root).parts
                    if parts and parts[0].startswith("session_"):
                        found.add(parts[0])
    return found


def orphaned_ray_processes(
    root: Path | None = None, sessions: Collection[str] | None = None
) -> list[int]:
    """Pids of Ray processes whose raylet is dead, in sessions under ``root``.

    Parameters
    ----------
    root : Path, optional
        Ray's temp root; :func:`ray_temp_root` when omitted.
    sessions : collection of str, optional
        Only processes using these session folders (names under ``root``); every session
        when omitted.

    Returns
    -------
    list of int
        Sorted pids; empty where ``/proc`` does not exist.
    """
    root = (root or ray_temp_root()).resolve()
    if not _PROC.is_dir() or (sessions is not None and not sessions):
        return []
    found = []
    for pid in os.listdir(_PROC):
        if not pid.isdigit() or not _argv0(pid).startswith(b"ray::"):
            continue
        if _runs_a_raylet(_parent(pid)):
            continue
        used = _sessions_used(pid, root)
        if used and (sessions is None or not used.isdisjoint(sessions)):
            found.append(int(pid))
    return sorted(found)


def reap_orphaned_ray_processes(
    root: Path | None = None, sessions: Collection[str] | None = None
) -> list[int]:
    """SIGKILL the processes :func:`orphaned_ray_processes` finds; return their pids.

    SIGKILL rather than SIGTERM: an orphaned agent waits on a GCS that is gone and has no
    state worth flushing. A process that exits between finding and signalling is skipped.

    Parameters
    ----------
    root : Path, optional
        Ray's temp root; :func:`ray_temp_root` when omitted.
    sessions : collection of str, optional
        Only these session folders (see :func:`orphaned_ray_processes`).

    Returns
    -------
    list of int
        The pids signalled.
    """
    killed = []
    for pid in orphaned_ray_processes(root, sessions):
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


def _started(folder: str) -> datetime | None:
    """When a session folder ``session_%Y-%m-%d_%H-%M-%S_%f_<pid>`` was made (local time)."""
    stamp = folder.removeprefix("session_").rsplit("_", 1)[0]
    try:
        return datetime.strptime(stamp, "%Y-%m-%d_%H-%M-%S_%f").astimezone()
    except ValueError:
        return None


def _local(stamp: str | None) -> datetime | None:
    """An ISO 8601 time of the run record, as an aware datetime (None when absent or bad)."""
    if not stamp:
        return None
    with contextlib.suppress(ValueError):
        return datetime.fromisoformat(stamp).astimezone()
    return None


def session_folders(sessions: Sequence[Session], root: Path | None = None) -> list[str]:
    """The Ray session folders under ``root`` that these driver sessions started.

    A folder ``session_<time>_<pid>`` belongs to a session recorded on this host with that
    pid whose span (its start to its end, else to the next session's start, else now)
    contains that time, give or take a second.

    Parameters
    ----------
    sessions : sequence of Session
        A run folder's driver sessions, in order.
    root : Path, optional
        Ray's temp root; :func:`ray_temp_root` when omitted.

    Returns
    -------
    list of str
        Folder names, sorted.
    """
    root = (root or ray_temp_root()).resolve()
    host = socket.gethostname()
    try:
        folders = [f for f in os.listdir(root) if f.startswith("session_") and f[-1].isdigit()]
    except OSError:
        return []
    slack = timedelta(seconds=1)
    now = datetime.now().astimezone()
    owned = set()
    for i, session in enumerate(sessions):
        start = _local(session.start)
        if session.host != host or session.pid is None or start is None:
            continue
        following = sessions[i + 1].start if i + 1 < len(sessions) else None
        end = _local(session.end) or _local(following) or now
        suffix = f"_{session.pid}"
        for folder in folders:
            made = _started(folder) if folder.endswith(suffix) else None
            if made is not None and start - slack <= made <= end + slack:
                owned.add(folder)
    return sorted(owned)


def stop_leftovers_of(sessions: Sequence[Session]) -> list[int]:
    """Stop the orphaned Ray processes of a run folder's own dead sessions, and say so.

    Parameters
    ----------
    sessions : sequence of Session
        The run folder's driver sessions (``manifest.sessions``).

    Returns
    -------
    list of int
        The pids signalled.
    """
    root = ray_temp_root()
    reaped = reap_orphaned_ray_processes(root, session_folders(sessions, root))
    if reaped:
        _log.warning(
            "raysweep: stopped %d Ray process(es) left by a killed session of this run (pids %s)",
            len(reaped),
            ", ".join(map(str, reaped)),
        )
    return reaped
