"""Report section 2: hashes, part checks, done and failed configs, driver sessions."""

from __future__ import annotations

from typing import Any

from sweep._null_summary import summary_digest
from sweep.report._load import RunData

#: How a driver session can end (``running`` while a driver holds the folder).
SESSION_ENDINGS = ("completed", "interrupted", "failed", "killed", "running")


def error_groups(run: RunData) -> list[dict[str, Any]]:
    """Failed configs grouped by error message, most frequent first (then by message)."""
    frame = run.results
    if frame.empty:
        return []
    failed = frame.loc[frame["status"] != "ok", "error"].fillna("(no message)").astype(str)
    counts = failed.value_counts()
    groups = [{"error": str(msg), "count": int(n)} for msg, n in counts.items()]
    return sorted(groups, key=lambda g: (-g["count"], g["error"]))


def session_rows(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per driver session, in session order, with how it ended."""
    rows = []
    for s in sorted(manifest.get("sessions", []), key=lambda s: int(s["id"])):
        rows.append(
            {
                "id": int(s["id"]),
                "start": s.get("start"),
                "end": s.get("end"),
                "host": s.get("host"),
                "executor": s.get("executor"),
                "status": s.get("status"),
                "resumed": int(s["id"]) > 1,
                "took_over_lock": bool(s.get("took_over_lock")),
                "configs_computed": s.get("configs_computed"),
                "configs_failed": s.get("configs_failed"),
                "wall_seconds": s.get("wall_seconds"),
                "quarantined_parts": len(s.get("quarantined") or []),
                "table_hash": s.get("table_hash"),
            }
        )
    return rows


def integrity_section(run: RunData) -> dict[str, Any]:
    """Section 2 of the report.

    Parameters
    ----------
    run : RunData
        The run folder, read.

    Returns
    -------
    dict
        ``table_hash`` (of the verified parts, when they cover the grid), the hash a driver
        recorded last and whether they agree, the null summaries' digest (the input of the
        sweep-wide tests, also printed by ``sweep verify``), part checks, config counts,
        error groups, sessions and the command that re-checks the hash.
    """
    checks = run.part_checks
    bad = [{"name": c.name, "reason": c.reason} for c in checks if not c.ok]
    frame = run.results
    done = len(frame)
    failed = int((frame["status"] != "ok").sum()) if done else 0
    complete = done == run.total and not bad
    sessions = session_rows(run.manifest)
    recorded = next((s["table_hash"] for s in reversed(sessions) if s["table_hash"]), None)
    table_hash = run.table_hash if complete else None
    outside = 0
    if done:
        idx = frame["grid_index"].to_numpy()
        outside = int(((idx < 0) | (idx >= run.total)).sum())
    endings = {k: sum(s["status"] == k for s in sessions) for k in SESSION_ENDINGS}
    return {
        "table_hash": table_hash,
        "table_hash_of_partial_results": None if complete else run.table_hash,
        "null_summary_hash": summary_digest(run.null_summary)
        if complete and run.null_summary is not None
        else None,
        "recorded_table_hash": recorded,
        "matches_recorded": None
        if table_hash is None or recorded is None
        else table_hash == recorded,
        "parts": {"total": len(checks), "good": len(checks) - len(bad), "bad": bad},
        "quarantined_files": run.quarantined,
        "configs": {
            "total": run.total,
            "done": done,
            "ok": done - failed,
            "failed": failed,
            "missing": run.total - done,
            "outside_grid": outside,
            "complete": complete,
        },
        "errors": error_groups(run),
        "sessions": sessions,
        "session_endings": {k: v for k, v in endings.items() if v},
        "resumed": len(sessions) > 1,
        "recheck": f"sweep verify {run.location}",
    }
