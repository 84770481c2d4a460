"""Report section 1: what was run, on what data, by which code."""

from __future__ import annotations

from typing import Any

from sweep._environment import git_commit, library_versions
from sweep.report._load import RunData


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
        "session_environments": [
            {"session": s.get("id"), **(s.get("environment") or {})} for s in sessions
        ],
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
