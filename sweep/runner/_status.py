"""Read-only views of a run folder: status, verification, ranked results.

:class:`RunStatus` and :class:`Verification` are frozen records; their JSON (``--json``) is
the engine's one serialisation (:mod:`sweep.common._serial`: fields in order, NaN as null).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from sweep.common._range_set import RangeSet
from sweep.common._serial import JSONRecord
from sweep.errors import RunFolderError, SweepError, close_matches
from sweep.plan._eta import eta
from sweep.runner._pass_executor import PassExecutor
from sweep.store._fold_summary import folds_digest, merged_folds
from sweep.store._null_summary import summary_digest
from sweep.store._part_audit import (
    PartAudit,
    PartAuditor,
    audit_here,
    audited_environments,
    audited_hash,
    merged_null_summary,
)
from sweep.store._part_environment import EnvironmentUse
from sweep.store._part_mapper import PartMapper, map_here
from sweep.store._record import LockInfo, PartInfo, RecordedHash, Session
from sweep.store._results import results_hash, results_table
from sweep.store._run_store import RunRecord, RunStore, read_run
from sweep.store._survey import PartSurvey, failed_rows, survey_parts
from sweep.store._table_hash import TABLE_HASH_V1
from sweep.store._top_rows import best_of_parts, top_rows


def failed_count(store: RunStore, parts: list[str]) -> int:
    """Configs whose status is not ``ok`` in these (checked) parts."""
    return sum(failed_rows(store.read_part_columns(name, ["status"])) for name in parts)


@dataclass(frozen=True)
class LiveRate(JSONRecord):
    """The running session's throughput and time left (:func:`sweep.plan._eta.eta`).

    Attributes
    ----------
    session : int
        The running session's id.
    executor : str or None
        Its executor.
    configs : int
        Configs it has written since its first task was submitted (telemetry rows).
    seconds : float
        From its first task's submission to now.
    configs_per_second, seconds_left : float
        NaN until a task has finished.
    """

    session: int
    executor: str | None
    configs: int
    seconds: float
    configs_per_second: float
    seconds_left: float


def live_rate(run: RunRecord, remaining: int, now: float | None = None) -> LiveRate | None:
    """Throughput of the session a live driver is running, from its telemetry (read-only).

    Parameters
    ----------
    run : RunRecord
        The folder, read.
    remaining : int
        Configs not done.
    now : float, optional
        Epoch seconds (default: the clock).

    Returns
    -------
    LiveRate or None
        None when no session is ``running`` or no driver holds the lock.
    """
    running = [s for s in run.manifest.sessions if s.status == "running"]
    if not running or not run.store.read_lock():
        return None
    session = max(running, key=lambda s: s.id)
    table = run.store.read_telemetry()
    configs, first = 0, math.nan
    if table is not None and "session" in table.column_names:
        frame = table.select(["session", "submit_time", "n_configs"]).to_pandas()
        mine = frame[frame["session"] == session.id]
        if len(mine):
            configs, first = int(mine["n_configs"].sum()), float(mine["submit_time"].min())
    seconds = (time.time() if now is None else now) - first
    estimate = eta(configs, seconds, remaining)
    return LiveRate(
        session.id,
        session.executor,
        configs,
        seconds,
        estimate.configs_per_second,
        estimate.seconds_left,
    )


@dataclass(frozen=True)
class RunStatus(JSONRecord):
    """What ``sweep status`` shows (:func:`run_status`); ``to_json`` is ``--json``.

    Attributes
    ----------
    run_dir, name, spec_hash : str
        The folder, the spec's name and hash.
    total, done, failed, remaining, parts : int
        Configs in the grid, done, failed and not done; good parts.
    bad_parts : list of PartInfo
        Parts left out (their configs count as not done).
    sessions : tuple of Session
        The driver sessions.
    last_activity : str or None
        The latest session start/end or part write (ISO UTC).
    table_hash : str or None
        None until complete.
    recorded : RecordedHash or None
        The table hash the last session that completed the grid recorded.
    lock : LockInfo or None
        The lock file (None when no driver holds the folder).
    live : LiveRate or None
        The running session's configs/s and time left (while a driver runs).
    environments : tuple of EnvironmentUse
        Every environment that computed the good parts, with part and config counts
        (parts written before parts recorded one are grouped as ``environment = None``).
    table_hash_version : str or None
        The table hash the folder carries (``raysweep-table-v1`` or ``-v2``).
    """

    run_dir: str
    name: str | None
    spec_hash: str
    total: int
    done: int
    failed: int
    remaining: int
    parts: int
    bad_parts: list[PartInfo]
    sessions: tuple[Session, ...]
    last_activity: str | None
    table_hash: str | None
    lock: LockInfo | None
    live: LiveRate | None = None
    environments: tuple[EnvironmentUse, ...] = ()
    table_hash_version: str | None = None
    recorded: RecordedHash | None = None


def run_status(
    run_dir: str | os.PathLike[str], *, with_hash: bool = True, mapper: PartMapper = map_here
) -> RunStatus:
    """Summarise a run folder, counting only parts that pass their check.

    Parameters
    ----------
    run_dir : str or path
        The run folder.
    with_hash : bool
        Compute the table hash when every config is done.
    mapper : PartMapper
        Where each part is read and checked: here (default), or Ray tasks
        (``sweep.runner._pass_executor.PassExecutor.map_parts``); the status is the same.

    Returns
    -------
    RunStatus
        Counts, parts, sessions, last activity, table hash and lock.
    """
    store = RunStore(run_dir)
    manifest = store.load_manifest()
    store.expectations()  # the manifest agrees with itself, or the folder is refused
    survey = survey_parts(store, mapper)  # one read of each part: checks, done, environments
    run = RunRecord(store, manifest, tuple(sorted(survey.checks, key=lambda c: c.name)))
    total, parts, done = run.total, run.good, len(survey.done)
    times = [s.end or s.start for s in manifest.sessions]
    files = [store.fs.join("parts", n) for n in parts]
    if files:
        latest = max(store.fs.mtime(f) for f in files)
        times.append(datetime.fromtimestamp(latest, UTC).isoformat(timespec="milliseconds"))
    complete = with_hash and done == total and total > 0
    lock = store.read_lock()
    return RunStatus(
        run_dir=str(run_dir),
        name=manifest.spec.get("name"),
        spec_hash=manifest.run_key.spec_hash,
        total=total,
        done=done,
        failed=survey.failed,
        remaining=total - done,
        parts=len(parts),
        bad_parts=run.bad,
        sessions=_as_ended(manifest.sessions, store.held_by_live_driver(lock)),
        last_activity=max((t for t in times if t), default=None),
        table_hash=_table_hash(store, survey, parts) if complete else None,
        lock=lock,
        live=live_rate(run, total - done),
        environments=survey.environments,
        table_hash_version=manifest.hash_version,
        recorded=manifest.recorded_hash,
    )


def _table_hash(store: RunStore, survey: PartSurvey, parts: list[str]) -> str:
    """The table hash of the good parts: v2 finished from the survey's sums, v1 streamed."""
    if survey.hashing is not None:
        return survey.hashing.digest(store)
    return results_hash(store.location, parts)


def _as_ended(sessions: tuple[Session, ...], driver_alive: bool) -> tuple[Session, ...]:
    """The sessions, a ``running`` one shown ``killed`` when no live driver holds the lock.

    A driver that died before recording how its session ended (killed, or crashed while
    the disk was full) leaves it ``running``; the next driver records it ``killed``, and
    status, which writes nothing, says so already.
    """
    if driver_alive:
        return sessions
    return tuple(replace(s, status="killed") if s.status == "running" else s for s in sessions)


def first_error(run_dir: str | os.PathLike[str]) -> str | None:
    """The error message of the first failed config found in the parts, or None.

    Parameters
    ----------
    run_dir : str or path
        The run folder.

    Returns
    -------
    str or None
        The ``error`` of one config whose status is not ``ok`` (parts read in name order).
    """
    store = RunStore(run_dir)
    for name in store.part_names():
        table = store.read_part_columns(name, ["status", "error"])
        failed = table.filter(pc.not_equal(table.column("status"), "ok"))
        if failed.num_rows:
            return str(failed.column("error")[0].as_py() or "(no message)")
    return None


@dataclass(frozen=True)
class Verification(JSONRecord):
    """What ``sweep verify`` found (:func:`verify_run`).

    Attributes
    ----------
    good_parts : int
        Parts that pass their check.
    bad_parts, bad_telemetry : list of PartInfo
        Parts (their configs count as not done) and telemetry files (results unaffected)
        that fail it.
    done, total : int
        Configs the good parts hold, and in the grid.
    table_hash : str or None
        Of the good parts, when they cover the grid and no part is bad.
    null_summary_hash : str or None
        :func:`sweep.store._null_summary.summary_digest` of the merged null summaries, likewise
        (and when the sweep has bootstrap replications).
    fold_summary_hash : str or None
        :func:`sweep.store._fold_summary.folds_digest` of the merged fold summaries (each
        walk-forward fold's in-sample best, the input of the out-of-sample result), likewise
        (and when the sweep has a ``[validation]``).
    recorded : RecordedHash or None
        The table hash the last session that completed the grid recorded (None: none did).
    environments : tuple of EnvironmentUse
        Every environment that computed the good parts (see :class:`RunStatus`).
    table_hash_version : str or None
        The version of ``table_hash``: the one the folder carries.
    digest_mismatches : tuple of str
        Good parts (v2) whose stored row digest does not match their rows, hashed again
        here; ``table_hash`` is computed from the rows, not from those digests.
    """

    good_parts: int
    bad_parts: list[PartInfo]
    bad_telemetry: list[PartInfo]
    done: int
    total: int
    table_hash: str | None
    null_summary_hash: str | None
    environments: tuple[EnvironmentUse, ...] = ()
    table_hash_version: str | None = None
    digest_mismatches: tuple[str, ...] = ()
    fold_summary_hash: str | None = None
    recorded: RecordedHash | None = None


def verify_run(
    run_dir: str | os.PathLike[str],
    *,
    auditor: PartAuditor | None = None,
) -> Verification:
    """Check every part and telemetry file against the manifest, a part at a time.

    Parameters
    ----------
    run_dir : str or path
        The run folder.
    auditor : PartAuditor, optional
        What audits the parts instead (``sweep verify`` passes
        :meth:`sweep.runner._pass_executor.PassExecutor.audit`, here or as a backend's tasks);
        default: here, one part after another.

    Returns
    -------
    Verification
        The good and bad parts, bad telemetry, done configs, and the table and null-summary
        hashes when complete; the same wherever the parts were checked. A v2 table hash is
        recomputed from every part's rows (a record batch at a time), not added up from the
        digests the parts carry; a part whose digest disagrees is named in
        ``digest_mismatches``. What is held at once is one
        :class:`sweep.store._part_audit.PartAudit` per part (its ranges, footer and digest),
        never the rows or the config ids of the run.
    """
    store = RunStore(run_dir)
    manifest = store.load_manifest()
    store.expectations()  # the manifest agrees with itself, or the folder is refused
    version = manifest.hash_version
    rehash = version != TABLE_HASH_V1
    audits = (auditor or audit_here)(store, store.part_names(), rehash)
    checks = store.judge_conflicts([(a.check, a.positions) for a in audits])
    passed = {c.name for c in checks if c.ok}
    good_audits = sorted((a for a in audits if a.check.name in passed), key=lambda a: a.check.name)
    good = [a.check.name for a in good_audits]
    bad = [c for c in sorted(checks, key=lambda c: c.name) if not c.ok]
    done = len(RangeSet.union_all(a.positions for a in good_audits if a.positions)) if good else 0
    total = manifest.grid.size
    complete = not bad and done == total
    summary = merged_null_summary(store, audits, passed) if complete else None
    table_hash: str | None = None
    mismatches: tuple[str, ...] = ()
    if complete and version == TABLE_HASH_V1:
        table_hash = results_hash(run_dir, good)
    elif complete:
        found = audited_hash(store, good_audits, total)
        table_hash, mismatches = found.digest, found.mismatched
    return Verification(
        good_parts=len(good),
        bad_parts=bad,
        bad_telemetry=[c for c in store.check_telemetry() if not c.ok],
        done=done,
        total=total,
        table_hash=table_hash,
        null_summary_hash=summary_digest(summary) if summary is not None else None,
        environments=audited_environments(good_audits),
        table_hash_version=version,
        digest_mismatches=mismatches,
        fold_summary_hash=_folds_hash(good_audits) if complete else None,
        recorded=manifest.recorded_hash,
    )


def _folds_hash(audits: list[PartAudit]) -> str | None:
    """The digest of the good parts' merged fold summaries (None: the run has no folds)."""
    folds = merged_folds(a.schema for a in audits if a.schema is not None)
    return folds_digest(folds) if folds is not None else None


def results_frame(
    run_dir: str | os.PathLike[str],
    sort: str,
    top: int | None,
    *,
    passes: PassExecutor | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Results sorted by a metric (descending, NaN last, ties by ``config_id``).

    Parameters
    ----------
    run_dir : str or path
        The run folder.
    sort : str
        The metric.
    top : int, optional
        Only the best ``top`` rows: the parts are read one at a time (``config_id`` and the
        metric), keeping the best ``top`` (:mod:`sweep.store._top_rows`), and only those
        rows are read whole; the table is never built. Without it every row is read into
        one table.
    passes : PassExecutor, optional
        With ``top``: where the best rows of the parts are found instead (``sweep results
        --executor``: here or as a backend's tasks); default: here.

    Returns
    -------
    frame : pandas.DataFrame
        The configs of the parts that pass their check.
    notes : list of str
        What a reader must know: parts left out, configs not done yet.
    """
    run = read_run(run_dir)
    if top is not None:
        return _top_frame(run, sort, top, passes), _notes(run, run.done())
    frame: pd.DataFrame = results_table(run_dir, run.good).to_pandas()
    _check_sort(sort, list(frame.columns))
    frame = frame.sort_values(sort, ascending=False, na_position="last", kind="stable")
    return frame, _notes(run, len(frame))


def _top_frame(run: RunRecord, sort: str, top: int, passes: PassExecutor | None) -> pd.DataFrame:
    """The best ``top`` rows, the parts streamed (see :func:`results_frame`)."""
    good = run.good
    if not good:
        raise RunFolderError(f"run folder {run.store.location!r} has no results yet")
    _check_sort(sort, run.store.read_part_schema(good[0]).names)
    candidates: Iterable[pa.Table] = (
        [best_of_parts(run.store.location, good, sort, top)]
        if passes is None
        else passes.map_parts(best_of_parts, run.store, good, (sort, top))
    )
    table = top_rows(run.store, [c for c in candidates if c.num_rows], sort, top)
    frame: pd.DataFrame = table.to_pandas()
    return frame


def _check_sort(sort: str, columns: list[str]) -> None:
    if sort not in columns:
        raise SweepError(
            f"--sort: unknown column {sort!r}; choose from "
            f"{[c for c in columns if not c.startswith('blk_')]}." + close_matches(sort, columns)
        )


def _notes(run: RunRecord, rows: int) -> list[str]:
    """Parts left out and configs not done yet, for a reader of the results."""
    total, run_dir = run.total, run.store.location
    notes = [
        f"part {b.name} is left out ({b.reason}); `sweep resume` recomputes its configs"
        for b in run.bad
    ]
    if rows < total:
        notes.append(
            f"the results cover {rows:,} of {total:,} configs "
            f"({total - rows:,} not done yet); continue with: sweep resume {run_dir}"
        )
    return notes
