"""Report section 1: what was run, on what data, by which code."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
from pathlib import Path
from typing import Any

from sweep.report._load import RunData

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
    root = path or Path(__file__).resolve().parents[2]
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


def library_versions() -> dict[str, str | None]:
    """Python's and each library's installed version (None when not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def identity_section(run: RunData) -> dict[str, Any]:
    """Section 1 of the report: run name, hashes, spec, data, strategy, versions, grid.

    Parameters
    ----------
    run : RunData
        The run folder, read.

    Returns
    -------
    dict
        JSON-ready. ``code`` describes the code building the report (git commit and library
        versions); the manifest records the engine version of each driver session.
    """
    manifest = run.manifest
    ident = manifest.get("identity", {})
    sessions = manifest.get("sessions", [])
    return {
        "run_name": manifest["spec"]["name"],
        "run_dir": run.location,
        "created": manifest.get("created"),
        "spec_hash": ident.get("spec_hash"),
        "spec": manifest["spec"],
        "data": manifest.get("data", {}),
        "strategy": ident.get("strategy", {}),
        "engine_version": manifest.get("engine_version"),
        "session_engine_versions": sorted(
            {str(s.get("engine_version")) for s in sessions if s.get("engine_version")}
        ),
        "root_seed": ident.get("root_seed"),
        "metrics": ident.get("metrics", manifest["spec"].get("metrics", {})),
        "grid": manifest["grid"],
        "code": {
            "git_commit": git_commit(),
            "versions": library_versions(),
            "note": (
                "git commit and versions are those of the code building this report; the run "
                "folder records the engine version of each driver session"
            ),
        },
    }
