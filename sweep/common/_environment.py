"""What code and environment a driver session or a report ran with."""

from __future__ import annotations

import functools
import importlib.metadata
import platform
import subprocess
from pathlib import Path
from typing import Any

#: Libraries whose versions the report records (those installed).
LIBRARIES = ("numpy", "pandas", "pyarrow", "scipy", "numba", "ray", "matplotlib", "arch")


def git_commit(path: Path | None = None) -> str | None:
    """Return ``git rev-parse HEAD`` of the checkout holding ``path``, or None.

    Parameters
    ----------
    path : Path, optional
        A folder inside the checkout; default: the folder above the ``sweep`` package (an
        editable install or a source checkout).

    Returns
    -------
    str or None
        The 40-hex commit, or None when the code is not in a git checkout (an installed
        wheel) or git is unavailable.
    """
    root = path or Path(__file__).resolve().parents[2]  # sweep/common/ -> the checkout
    if not (root / ".git").exists():
        return None
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = proc.stdout.strip()
    return commit if proc.returncode == 0 and len(commit) == 40 else None


@functools.cache
def _installed_versions() -> tuple[tuple[str, str | None], ...]:
    """The versions, read once per process.

    The libraries a running process uses do not change under it (an upgrade installed
    meanwhile is not the code it has imported), and reading package metadata costs about
    35 ms, paid by every driver session otherwise.
    """
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return tuple(out.items())


def library_versions() -> dict[str, str | None]:
    """Python's and each library's installed version (None when not installed)."""
    return dict(_installed_versions())


def environment() -> dict[str, Any]:
    """Git commit (when the code is a checkout), Python and library versions, platform."""
    return {
        "git_commit": git_commit(),
        "versions": library_versions(),
        "platform": platform.platform(),
    }
