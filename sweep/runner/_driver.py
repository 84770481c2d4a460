"""The driver: open the run folder, plan, stream batches through an executor, write parts.

The driver never holds more than the in-flight batches' results: the configs done and the work
still to do are sets of ranges of grid positions (:class:`sweep.common._range_set.RangeSet`, a
few ranges per part, never a byte per config), and the to-do list is drawn a batch at a time;
each finished batch is written as a part as soon as it arrives. A SIGKILL loses at most the
batches in flight; Ctrl-C (or SIGTERM, raised as :class:`sweep.common._signals.Terminated`)
stops after the part being written, records the session as interrupted and releases the
lock; the CLI exits 130 (143).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Unpack

from sweep._version import ENGINE_VERSION
from sweep.common._environment import environment
from sweep.common._range_set import RangeSet
from sweep.common._signals import sigterm_as_interrupt
from sweep.engine._evaluate import results_schema
from sweep.errors import ConfigFailedError, ExecutionError, RunFolderError
from sweep.executors import (
    LOCAL,
    BatchOutcome,
    Executor,
    clean_up_dead_sessions,
    cluster_named,
    make_executor,
)
from sweep.plan._auto import address_reason, choose_executor
from sweep.plan._planner import plan_batches, small_plan
from sweep.plan._planning_stream import PlanningStream
from sweep.runner._environment_check import (
    EnvironmentChange,
    PartGuard,
    check_environment,
    check_resume,
    check_sample,
)
from sweep.runner._pass_executor import PassExecutor
from sweep.runner._run_settings import RunOptions, RunSettings
from sweep.runner._status import failed_count
from sweep.runner._sweep_progress import SweepProgress
from sweep.spec._models import SweepSpec
from sweep.spec._resolve import ResolvedSweep, resolve
from sweep.store._parts_hash import table_digest
from sweep.store._record import ExecutorChoice, LockInfo, Plan, Session
from sweep.store._results import results_hash
from sweep.store._run_store import TELEMETRY, RunRecord, RunStore, utc_now
from sweep.store._survey import PartSurvey, survey_parts
from sweep.store._table_hash import CURRENT_TABLE_HASH, hash_version


@dataclass(frozen=True)
class RunSummary:
    """What a driver session did.

    Attributes
    ----------
    run_dir : str
        The run folder.
    total, done, failed : int
        Configs in the grid, configs with results, configs whose status is ``error``.
    computed : int
        Configs evaluated by this session.
    quarantined : list of str
        Parts that failed their self-check and were moved aside.
    table_hash : str or None
        The results table hash once every config is done.
    plan : Plan
        The batch plan.
    executor_choice : ExecutorChoice or None
        Which executor ran the batches and why (None when there was nothing to run).
    status : str
        How the session ended: ``completed`` (every config done), ``incomplete`` (the
        executor stopped before every config was done; a resume continues), ``interrupted``
        or ``failed``.
    table_hash_version : str or None
        The version of ``table_hash`` (the folder's: ``raysweep-table-v2`` for new runs).
    """

    run_dir: str
    total: int
    done: int
    failed: int
    computed: int
    quarantined: list[str]
    table_hash: str | None
    plan: Plan
    status: str
    executor_choice: ExecutorChoice | None = None
    table_hash_version: str | None = None


def _check_hash_version(store: RunStore, wanted: str | None) -> None:
    """Refuse to continue a folder under another table hash version than the one named."""
    if wanted is None:
        return
    have = store.load_manifest().hash_version
    if hash_version(wanted) != have:
        raise RunFolderError(
            f"run folder {store.location!r} carries table hash {have}; it cannot change to "
            f"{hash_version(wanted)} (leave the version out to continue it, or use a new "
            "--run-dir)"
        )


def _open_store(store: RunStore, sweep: ResolvedSweep, hash_wanted: str | None) -> None:
    if store.exists():
        store.check_compatible(sweep)
        _check_hash_version(store, hash_wanted)
        return
    if not store.is_fresh():
        raise RunFolderError(
            f"run folder {store.location!r} exists, is not empty and has no manifest.json; "
            "choose an empty or new folder"
        )
    version = CURRENT_TABLE_HASH if hash_wanted is None else hash_version(hash_wanted)
    try:
        store.create(sweep, results_schema(sweep), version)
    except RunFolderError:
        if not store.exists():
            raise
        store.check_compatible(sweep)  # another driver created it just now: join it
        _check_hash_version(store, hash_wanted)


def run_sweep(
    spec: SweepSpec | ResolvedSweep,
    run_dir: str | os.PathLike[str],
    settings: RunSettings | None = None,
    **options: Unpack[RunOptions],
) -> RunSummary:
    """Run (or continue) a sweep in a run folder.

    Parameters
    ----------
    spec : SweepSpec or ResolvedSweep
        What to run.
    run_dir : str or path
        The run folder; created if new, continued if it holds this sweep, refused if it holds
        another (:class:`sweep.errors.RunFolderError`).
    settings : RunSettings, optional
        How to run it (default :class:`RunSettings()`).
    **options
        Any field of :class:`RunSettings` (:class:`RunOptions`: ``executor``, ``address``,
        ``workers``, ``batch_size``, ``on_error``, ``progress``, ...), overriding
        ``settings``.

    Returns
    -------
    RunSummary
        What this session did and, when complete, the table hash.

    Raises
    ------
    EnvironmentChangedError
        When the run's parts were computed with other library versions and the change is
        not allowed, or a sample re-computed here does not match (exit 2).
    """
    sweep = spec if isinstance(spec, ResolvedSweep) else resolve(spec)
    settings = replace(settings or RunSettings(), **options)
    settings.check()
    with sigterm_as_interrupt() as rearm:
        store = RunStore(run_dir)
        _open_store(store, sweep, settings.table_hash_version)
        with store.locked() as took_over:
            quarantined, record, survey = _clean_folder(store, settings)
            rearm()  # a survey on Ray replaced the SIGTERM handler
            change, recorded = check_environment(
                record, settings.allow_environment_change, survey.environments
            )
            session, exe = _start_session(store, settings, took_over)
            run = _SessionRun(store, sweep, exe, session, settings, rearm)
            run.prepare(quarantined, record, change, PartGuard(recorded, change is not None))
            run.survey = survey
            return run.run()


def _clean_folder(
    store: RunStore, settings: RunSettings
) -> tuple[list[str], RunRecord, PartSurvey]:
    """Remove temp files; quarantine bad parts and telemetry.

    Returns the parts moved aside, the folder as it is then (every part left is good) and
    what the one read of every part found (:func:`sweep.store._survey.survey_parts`), read
    where :func:`survey_executor` says.
    """
    store.ensure_folders()
    store.remove_temp_files()
    with survey_executor(settings) as passes:
        survey = survey_parts(store, passes.map_parts)
    checks = survey.checks
    quarantined = [c.name for c in checks if not c.ok]
    for name in quarantined:
        store.quarantine(name)
    for check in store.check_telemetry():
        if not check.ok:
            store.quarantine(check.name, TELEMETRY)
    good = tuple(sorted((c for c in checks if c.ok), key=lambda c: c.name))
    return quarantined, RunRecord(store, store.load_manifest(), good), survey


def survey_executor(settings: RunSettings) -> PassExecutor:
    """Where a session's start reads its parts: Ray tasks when the sweep may run on Ray.

    ``--executor local`` (or an in-process executor object) reads them here. Otherwise the
    rule of ``sweep verify --executor auto`` (:class:`PassExecutor`): on the cluster at
    ``--address``; without one, the first parts are read here and timed, and the rest runs
    on a local Ray cluster only where the amortization law predicts it ends first (a folder
    of many large parts), else here. The survey is the same either way.
    """
    executor = settings.executor
    address = settings.address if isinstance(executor, str) else executor.address
    name = executor if isinstance(executor, str) else executor.name
    return PassExecutor(LOCAL if name == LOCAL else "auto", address, settings.workers)


def _start_session(
    store: RunStore, settings: RunSettings, took_over: LockInfo | None
) -> tuple[Session, Executor]:
    """Mark dead sessions killed, make the executor, record a running session.

    What a killed session of this run left running on this machine is stopped first.
    """
    manifest = store.load_manifest()
    clean_up_dead_sessions(manifest.sessions)
    sessions = tuple(
        replace(s, status="killed") if s.status == "running" else s for s in manifest.sessions
    )
    executor = settings.executor
    if executor == "auto":  # the cluster an address names; else in-process first, and
        executor = cluster_named("auto", settings.address) or LOCAL  # _SessionRun may move
    exe = (
        make_executor(executor, address=settings.address, workers=settings.workers)
        if isinstance(executor, str)
        else executor
    )
    session = Session.begin(
        len(sessions) + 1,
        start=utc_now(),
        engine_version=ENGINE_VERSION,
        executor=exe.name,
        environment=environment(),
        took_over_lock=None if took_over is None else took_over.to_json(),
    )
    store.write_manifest(replace(manifest, sessions=(*sessions, session)))
    return session, exe


class _SessionRun:
    """One driver session: clean the folder, plan, stream batches, record how it ended.

    It holds the session's record and the counts the record is updated with.
    """

    def __init__(
        self,
        store: RunStore,
        sweep: ResolvedSweep,
        exe: Executor,
        session: Session,
        settings: RunSettings,
        rearm_sigterm: Callable[[], bool],
    ) -> None:
        self.store, self.sweep, self.exe = store, sweep, exe
        self.session, self.settings, self.rearm_sigterm = session, settings, rearm_sigterm
        self.total = len(sweep.grid)
        self.computed = 0
        self.failed = 0
        self.plan = Plan(batch_size=0, source="nothing to do")
        self.choice: ExecutorChoice | None = None
        self.started = time.perf_counter()
        self.quarantined: list[str] = []
        self.record: RunRecord | None = None
        self.survey: PartSurvey | None = None  # the parts as the session's start found them
        self.written: list[str] = []  # the parts this session wrote
        self.change: EnvironmentChange | None = None
        self.guard = PartGuard((), allow=False)

    def prepare(
        self,
        quarantined: list[str],
        record: RunRecord,
        change: EnvironmentChange | None,
        guard: PartGuard,
    ) -> None:
        """Hand over what the driver found before the session.

        The parts moved aside, the folder, the allowed change of library versions (a
        sample is checked first) and the guard that refuses a batch of other versions.
        """
        self.quarantined, self.record, self.change, self.guard = quarantined, record, change, guard

    def _record(self, **changes: Any) -> None:
        """Update this session's record in the manifest."""
        self.session = replace(self.session, **changes)
        self.store.record_session(self.session)

    def write(self, outcome: BatchOutcome) -> float:
        """Write one finished batch as a part; the seconds that took."""
        if outcome.result.n_errors and self.settings.on_error == "raise":
            raise ConfigFailedError(
                f"a config failed and on_error is 'raise': {outcome.result.first_error} "
                "(its batch was not written; rerun with on_error='record', --on-error "
                "record on the command line, to keep going)"
            )
        self.guard.check(outcome.result.table)
        t0 = time.perf_counter()
        try:
            name = self.store.write_part(outcome.result.table, outcome.telemetry, self.session.id)
        except OSError as exc:
            raise ExecutionError(
                f"cannot write a part in {self.store.location!r}: {exc.strerror or exc}. "
                "Finished parts are intact; fix the cause (e.g. free disk space) and run: "
                f"sweep resume {self.store.location}"
            ) from exc
        self.written.append(name)
        if self.survey is not None and self.survey.hashing is not None:
            table = outcome.result.table
            self.survey.hashing.add(name, table_digest(table, self.total), table.schema)
        self.store.heartbeat()
        self.computed += int(outcome.indices.shape[0])
        self.failed += outcome.result.n_errors
        return time.perf_counter() - t0

    def _stream(self, todo: RangeSet, bar: SweepProgress) -> None:
        """Plan on the started executor, then run every remaining batch.

        In-process (or with a fixed batch size) the planner's pilots run first and the rest
        follows in planned batches; on several workers the plan is made while the batches
        run (:class:`sweep.plan._planning_stream.PlanningStream`), so no worker waits for it.
        """

        def on_pilot(outcome: BatchOutcome) -> float:
            seconds = self.write(outcome)
            bar.advance(int(outcome.indices.shape[0]))
            return seconds

        settings = self.settings
        t0 = time.perf_counter()
        if self.exe.workers == 1 or settings.batch_size is not None:
            self.plan, todo = plan_batches(
                self.exe, todo, settings.batch_size, on_pilot, settings.planner
            )
        choice = self._choose(todo)
        if choice.chosen != self.exe.name:  # auto: a local cluster finishes first
            choice = self._move(choice)
        self.choice = choice
        if settings.batch_size is None and self.exe.workers > 1:
            streamed = small_plan(len(todo), self.exe.workers, settings.planner)
            if streamed is None:
                self._run_planning_stream(todo, bar, t0)
                return
            self.plan = streamed
        self.plan = replace(self.plan, planning_seconds=time.perf_counter() - t0)
        self._record(plan=self.plan, executor_info=self.exe.describe(), executor_choice=self.choice)
        bar.start_timing()
        for outcome in self.exe.run(todo.batches(self.plan.batch_size)):
            self.write(outcome)
            bar.advance(int(outcome.indices.shape[0]))

    def _run_planning_stream(self, todo: RangeSet, bar: SweepProgress, t0: float) -> None:
        """Run every batch through a planning stream; record the plan as soon as it is made."""

        def on_plan(plan: Plan) -> None:
            self.plan = replace(plan, planning_seconds=time.perf_counter() - t0)
            self._record(plan=self.plan, executor_choice=self.choice)
            bar.start_timing()

        self._record(executor_info=self.exe.describe(), executor_choice=self.choice)
        stream = PlanningStream(todo, self.exe.workers, self.settings.planner, on_plan)
        for outcome in self.exe.run(stream.batches()):
            seconds = self.write(outcome)
            bar.advance(int(outcome.indices.shape[0]))
            stream.observe(outcome, seconds)
        if stream.plan is None:  # the pilots were the whole sweep
            stream.finish()

    def _move(self, choice: ExecutorChoice) -> ExecutorChoice:
        """Move the rest of the sweep to the chosen executor (it plans there as it runs).

        If it does not start, the sweep stays in-process and the choice says why.
        """
        settings = self.settings
        other = make_executor(choice.chosen, address=settings.address, workers=settings.workers)
        try:
            other.start(self.sweep)
        except ExecutionError as exc:
            with contextlib.suppress(Exception):  # best effort: nothing may have started
                other.close()
            return replace(
                choice,
                chosen=self.exe.name,
                reason=f"{choice.reason}; but {other.name} did not start ({exc}), so "
                f"{self.exe.name} ran the sweep",
            )
        finally:
            self.rearm_sigterm()  # an engine's start may install its own SIGTERM handler
        self.exe.close()
        self.exe = other
        self._record(executor=other.name, executor_choice=choice)
        return choice

    def _choose(self, todo: RangeSet) -> ExecutorChoice:
        """The executor for the configs left after planning (see :mod:`sweep.plan._auto`)."""
        settings = self.settings
        if settings.executor != "auto":
            named = settings.executor if isinstance(settings.executor, str) else self.exe.name
            return ExecutorChoice(named, self.exe.name, f"named: --executor {named}")
        if self.exe.name != LOCAL:  # auto joined the cluster an address names
            where = settings.address or "in the environment"
            return ExecutorChoice("auto", self.exe.name, address_reason(self.exe.name, where))
        return choose_executor(
            self.plan, len(todo), address=None, workers=settings.workers, settings=settings.planner
        )

    def _check_sample(self, resuming: bool) -> None:
        """Finished configs re-computed before any new one (the change checked is recorded).

        Allowed to change library versions: a sample must match first. Otherwise, resuming:
        a few must (:func:`sweep.runner._environment_check.check_resume`).
        """
        if self.record is None:
            return
        if self.change is None:
            if resuming:
                check_resume(self.record, self.sweep, self.exe)
            return
        found = check_sample(self.record, self.sweep, self.exe, self.change)
        checked = {
            **self.change.to_json(),
            "sample": found.sampled,
            "matched": found.matched,
            "seed": found.seed,
        }
        self._record(environment={**self.session.environment, "environment_change": checked})

    def run(self) -> RunSummary:
        """Run the session to its end; what it did."""
        quarantined = self.quarantined
        status = "failed"
        try:
            surveyed = None if self.survey is None else self.survey.done
            todo, done = _todo(self.store, self.total, surveyed)
            with SweepProgress(self.total, done, self.settings.progress) as bar:
                if todo or self.change is not None:
                    self.exe.start(self.sweep)
                    self.rearm_sigterm()  # an engine's start may install its own SIGTERM handler
                    try:
                        self._check_sample(resuming=done > 0 and bool(todo))
                        if todo:
                            self._stream(todo, bar)
                    finally:
                        self.exe.close()
            status = "completed" if done + self.computed >= self.total else "incomplete"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            with contextlib.suppress(OSError, RunFolderError):  # best effort: disk full?
                self._record(
                    end=utc_now(),
                    status=status,
                    configs_computed=self.computed,
                    configs_failed=self.failed,
                    quarantined=tuple(quarantined),
                    wall_seconds=time.perf_counter() - self.started,
                )
        return self._summary(done, quarantined, status)

    def _good_parts(self) -> list[str]:
        """The good parts at the session's end: those checked at its start and its own.

        The folder is locked for the session, its parts checked at the start, and the parts
        it wrote cover configs no good part held, so neither needs checking again (``sweep
        verify`` checks every part). Without a start survey, every part is checked.
        """
        if self.record is None or self.survey is None:
            return self.store.good_parts()[0]
        return sorted({*self.record.good, *self.written})

    def _table_hash(self) -> str:
        """The table hash of the good parts: a v2 one finished from the parts' digests.

        The start's survey summed the good parts' digests and :meth:`write` added each part
        the session wrote, so no part is read again (but the blocks overlapping parts share);
        a v1 hash streams the parts' columns.
        """
        if self.survey is not None and self.survey.hashing is not None:
            return self.survey.hashing.digest(self.store)
        return results_hash(self.store.location, self._good_parts())

    def _failed_before(self) -> int:
        """Failed configs in the parts the session found (counted by the survey)."""
        if self.survey is not None:
            return self.survey.failed
        return failed_count(self.store, self._good_parts())

    def _summary(self, done: int, quarantined: list[str], status: str) -> RunSummary:
        """The summary, with the table hash (recorded) once every config is done."""
        store, total = self.store, self.total
        done_now = done + self.computed
        table_hash = self._table_hash() if done_now >= total else None
        failed_total = self.failed + self._failed_before()
        if table_hash is not None:
            self._record(table_hash=table_hash)
        version = store.load_manifest().hash_version
        return RunSummary(
            store.location,
            total,
            done_now,
            failed_total,
            self.computed,
            quarantined,
            table_hash,
            self.plan,
            status,
            self.choice,
            version,
        )


def _todo(store: RunStore, total: int, done: RangeSet | None = None) -> tuple[RangeSet, int]:
    """Grid positions still to do (ranges), and the count of configs done.

    The done set is the union of the good parts' positions: surveyed at the start (``done``),
    else read a part at a time; both sets hold a few ranges per part, whatever the grid size.
    """
    done = store.done_ranges() if done is None else done
    return done.complement(total), len(done)
