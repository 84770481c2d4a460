"""Report section 2: hashes, part checks, done and failed configs, sessions, environments."""

from __future__ import annotations

from sweep.report._error_tally import ERROR_MESSAGES_KEPT
from sweep.report._load import RunData
from sweep.report._sections import (
    BadPart,
    ConfigCounts,
    ErrorGroup,
    IntegritySection,
    PartCounts,
    SessionRow,
)
from sweep.store._fold_summary import folds_digest
from sweep.store._null_summary import summary_digest
from sweep.store._record import SESSION_STATUSES, Manifest


def error_groups(run: RunData) -> tuple[ErrorGroup, ...]:
    """Failed configs grouped by error message, most frequent first (then by message).

    The messages are those the read kept (:class:`sweep.report._error_tally.ErrorTally`:
    all of them unless more are distinct than it keeps); the failed configs of the others,
    if any, are one last group, :func:`other_messages_text`.
    """
    groups = [ErrorGroup(error=msg, count=n) for msg, n in run.scan.errors.items()]
    ordered = sorted(groups, key=lambda g: (-g.count, g.error))
    if run.scan.other_errors:
        ordered.append(ErrorGroup(error=other_messages_text(), count=run.scan.other_errors))
    return tuple(ordered)


def other_messages_text() -> str:
    """The group of the failed configs whose messages were not kept."""
    return (
        f"(other messages: more than {ERROR_MESSAGES_KEPT:,} were distinct; those counted "
        "exactly are the ones with the smallest sha256)"
    )


def session_rows(manifest: Manifest) -> tuple[SessionRow, ...]:
    """One row per driver session, in session order, with how it ended."""
    return tuple(
        SessionRow(
            id=s.id,
            start=s.start,
            end=s.end,
            host=s.host,
            executor=s.executor,
            status=s.status,
            resumed=s.id > 1,
            took_over_lock=bool(s.took_over_lock),
            configs_computed=s.configs_computed,
            configs_failed=s.configs_failed,
            wall_seconds=s.wall_seconds,
            quarantined_parts=len(s.quarantined or ()),
            table_hash=s.table_hash,
        )
        for s in manifest.sessions_in_order()
    )


def integrity_section(run: RunData) -> IntegritySection:
    """Section 2 of the report.

    Parameters
    ----------
    run : RunData
        The run folder, read.

    Returns
    -------
    IntegritySection
        ``table_hash`` (of the verified parts, when they cover the grid), the hash a driver
        recorded last and whether they agree, the null summaries' digest (the input of the
        sweep-wide tests, also printed by ``sweep verify``), part checks, config counts,
        error groups, sessions, the command that re-checks the hash, every environment
        that computed the good parts (with part and config counts) and the command that
        re-computes a sample in the reader's environment (``sweep reproduce``).
    """
    checks = run.part_checks
    bad = tuple(BadPart(name=c.name, reason=c.reason) for c in checks if not c.ok)
    done, failed = run.scan.done, run.scan.failed
    complete = done == run.total and not bad
    sessions = session_rows(run.manifest)
    last = run.manifest.recorded_hash
    recorded = None if last is None else last.table_hash
    table_hash = run.table_hash if complete else None
    outside = run.scan.outside_grid
    endings = {k: sum(s.status == k for s in sessions) for k in SESSION_STATUSES}
    return IntegritySection(
        table_hash=table_hash,
        table_hash_of_partial_results=None if complete else run.table_hash,
        null_summary_hash=summary_digest(run.null_summary)
        if complete and run.null_summary is not None
        else None,
        fold_summary_hash=folds_digest(run.fold_summary)
        if complete and run.fold_summary is not None
        else None,
        recorded_table_hash=recorded,
        matches_recorded=None if table_hash is None or last is None else last.agrees(table_hash),
        parts=PartCounts(total=len(checks), good=len(checks) - len(bad), bad=bad),
        quarantined_files=tuple(run.quarantined),
        configs=ConfigCounts(
            total=run.total,
            done=done,
            ok=done - failed,
            failed=failed,
            missing=run.total - done,
            outside_grid=outside,
            complete=complete,
        ),
        errors=error_groups(run),
        sessions=sessions,
        session_endings={k: v for k, v in endings.items() if v},
        resumed=len(sessions) > 1,
        recheck=f"sweep verify {run.location}",
        environments=run.environments,
        reproduce=f"sweep reproduce {run.location}",
        table_hash_version=run.table_hash_version,
    )
