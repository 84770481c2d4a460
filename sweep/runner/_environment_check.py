"""A run never changes library versions silently: the driver's checks of the environment.

Each part records the environment that computed it (:mod:`sweep.store._part_environment`).
A driver continuing a run (``sweep resume``, ``sweep run`` on an existing folder):

1. compares the library versions of this process (python, numpy, numba, llvmlite, pandas,
   pyarrow, scipy, raysweep) with those of the run's good parts (for parts written before
   they recorded one: the versions the driver sessions recorded) and stops with
   :class:`sweep.errors.EnvironmentChangedError` (exit 2) naming what changed, unless the
   user allows the change;
2. with the change allowed, first re-computes :data:`SAMPLE_ON_CHANGE` finished configs
   (drawn with a fresh seed, so no one knows in advance which) on the session's executor with
   :func:`sweep.runner._reproduce.reproduce_with` (the function of ``sweep reproduce``) and
   goes on only if every column matches bit for bit;
3. while it runs, refuses a batch a worker computed with versions the run has not accepted
   (:class:`PartGuard`: a Ray worker may have other versions than the driver); a fresh run
   accepts the versions of its first batch;
4. with the versions unchanged, still re-computes :data:`SAMPLE_ON_RESUME` finished configs
   (drawn with a fresh seed, so each resume draws others) before it computes anything
   and stops with :class:`sweep.errors.RunFolderError` if one differs
   (:func:`check_resume`): a strategy that is not deterministic (numpy's global generator,
   the clock) would otherwise write rows that differ from those it would give again, and
   the table would mix them silently.

CPU architecture and dispatch differences alone are not refused (results are meant to be
the same on every CPU; ``sweep reproduce`` checks that): they are recorded in each part and
listed by ``sweep status`` and the report.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from sweep.errors import EnvironmentChangedError, RunFolderError
from sweep.executors import Executor
from sweep.runner._reproduce import ReproduceSettings, Reproduction, mismatch_lines, reproduce_with
from sweep.spec._resolve import ResolvedSweep
from sweep.store import _part_environment
from sweep.store._part_environment import (
    EnvironmentUse,
    Versions,
    compared,
    environment_of,
    environment_uses,
    run_versions,
    version_changes,
)
from sweep.store._run_store import RunRecord

#: Finished configs re-computed before a run continues in another environment.
SAMPLE_ON_CHANGE = 16
#: Finished configs re-computed before any resume computes more (a few batches' worth of
#: work at most: they run as one small batch per worker).
SAMPLE_ON_RESUME = 4
#: The option that allows it, as the command line spells it.
ALLOW_FLAG = "--allow-environment-change"


@dataclass(frozen=True)
class EnvironmentChange:
    """The library versions of this process against those that computed a run.

    Attributes
    ----------
    changes : tuple of str
        What changed, ``"numpy 2.4.6 -> 2.3.5"`` (for every recorded set that differs).
    recorded : tuple of Versions
        The distinct versions the run's parts were computed with.
    current : Versions
        This process's.
    """

    changes: tuple[str, ...]
    recorded: tuple[Versions, ...]
    current: Versions

    def to_json(self) -> dict[str, object]:
        """``{"changes": [...]}``: what a session records once the change was checked."""
        # Hand-written: a session records only the changes, not the version sets compared.
        return {"changes": list(self.changes)}


def recorded_versions(
    record: RunRecord, uses: tuple[EnvironmentUse, ...] | None = None
) -> tuple[Versions, ...]:
    """The distinct library versions of a run's good parts (see ``run_versions``).

    ``uses``: the good parts' environments when already read (the driver's
    :func:`sweep.store._survey.survey_parts`); else each good part's footer is read.
    """
    if uses is None:
        uses = environment_uses(record.store, record.parts)
    return run_versions(uses, record.manifest)


def current_versions() -> Versions:
    """The compared library versions of this process (the store's cached record)."""
    return compared(_part_environment.current_environment().versions)


def environment_change(
    recorded: tuple[Versions, ...], current: Versions
) -> EnvironmentChange | None:
    """What differs between a run's recorded versions and ``current`` (None: nothing)."""
    changes: list[str] = []
    for versions in recorded:
        changes += [c for c in version_changes(versions, current) if c not in changes]
    return EnvironmentChange(tuple(changes), recorded, current) if changes else None


def check_environment(
    record: RunRecord, allow: bool, uses: tuple[EnvironmentUse, ...] | None = None
) -> tuple[EnvironmentChange | None, tuple[Versions, ...]]:
    """Refuse to continue a run under other library versions unless ``allow``.

    Parameters
    ----------
    record : RunRecord
        The run folder, its bad parts already moved aside.
    allow : bool
        ``--allow-environment-change``: return the change instead (the caller then checks
        a sample with :func:`check_sample`).
    uses : tuple of EnvironmentUse, optional
        The good parts' environments, when already read (see :func:`recorded_versions`).

    Returns
    -------
    change : EnvironmentChange or None
        None when the versions are the run's (or the run has no good part).
    recorded : tuple of Versions
        The run's versions (for :class:`PartGuard`).

    Raises
    ------
    EnvironmentChangedError
        When the versions differ and ``allow`` is False (naming what changed).
    """
    recorded = recorded_versions(record, uses)
    if not recorded:  # a fresh run: its first batch sets its versions (PartGuard)
        return None, recorded
    change = environment_change(recorded, current_versions())
    if change is not None and not allow:
        raise EnvironmentChangedError(
            f"run folder {record.store.location!r} was computed with other library versions "
            f"than this environment has: {'; '.join(change.changes)}. A run never mixes "
            "library versions silently (a result's bits may change with them). Continue it "
            f"where those versions are installed, or pass {ALLOW_FLAG} (Python: "
            f"allow_environment_change=True) to re-compute {SAMPLE_ON_CHANGE} finished "
            "configs here first and go on only if they match bit for bit"
        )
    return change, recorded


def check_sample(
    record: RunRecord, sweep: ResolvedSweep, exe: Executor, change: EnvironmentChange
) -> Reproduction:
    """Re-compute a sample of finished configs on ``exe`` (started); refuse a mismatch.

    Raises
    ------
    EnvironmentChangedError
        Naming the mismatches (at most ten), when a value differs.
    """
    found = reproduce_with(record, sweep, exe, ReproduceSettings(sample=SAMPLE_ON_CHANGE, parts=0))
    if not found.full_match:
        raise EnvironmentChangedError(
            f"run folder {record.store.location!r}: the library versions changed "
            f"({'; '.join(change.changes)}) and {found.sampled - found.matched} of "
            f"{found.sampled} finished configs re-computed here (seed {found.seed}) differ from "
            "the stored ones, so the run cannot continue in this environment: "
            + "; ".join(mismatch_lines(found, 10))
        )
    return found


def check_resume(record: RunRecord, sweep: ResolvedSweep, exe: Executor) -> Reproduction:
    """Re-compute a few finished configs on ``exe`` (started); refuse to go on if one differs.

    Parameters
    ----------
    record : RunRecord
        The run folder, with at least one good part.
    sweep : ResolvedSweep
        The run's sweep.
    exe : Executor
        The session's executor, started.

    Raises
    ------
    RunFolderError
        Naming the mismatches (at most three), when a value differs.
    """
    found = reproduce_with(record, sweep, exe, ReproduceSettings(sample=SAMPLE_ON_RESUME, parts=0))
    if not found.full_match:
        raise RunFolderError(
            f"run folder {record.store.location!r}: {found.sampled - found.matched} of "
            f"{found.sampled} finished configs re-computed before continuing (seed "
            f"{found.seed}) differ from "
            f"their stored rows, so the rows this session would write could not stand beside "
            f"them: strategy {sweep.strategy.name!r} is not deterministic (numpy's global "
            "random generator, the clock or state kept between calls; a random strategy "
            "takes the config's own rng argument), or this machine computes other bits than "
            "the one that wrote the parts (sweep reproduce lists every difference). Nothing "
            "was written; fix the strategy, change its version and start a new run folder. "
            + "; ".join(mismatch_lines(found, 3))
        )
    return found


class PartGuard:
    """Refuses a batch computed with library versions the run has not accepted.

    Parameters
    ----------
    recorded : tuple of Versions
        The run's versions (empty for a fresh run: its first batch's are accepted).
    allow : bool
        ``--allow-environment-change``: accept every batch (the sample already matched).
    """

    def __init__(self, recorded: tuple[Versions, ...], allow: bool) -> None:
        self._accepted = list(recorded)
        self._allow = allow

    def check(self, table: pa.Table) -> None:
        """Raise :class:`EnvironmentChangedError` if ``table``'s versions are not accepted."""
        env = environment_of(table.schema)
        if env is None or self._allow:
            return
        versions = compared(env.versions)
        if not self._accepted:
            self._accepted.append(versions)
            return
        if any(not version_changes(accepted, versions) for accepted in self._accepted):
            return
        changes = environment_change(tuple(self._accepted), versions)
        what = "; ".join(changes.changes) if changes is not None else "?"
        raise EnvironmentChangedError(
            f"a worker computed a batch with other library versions than the run's ({what}); "
            "the batch was not written, since a run never mixes library versions silently. "
            f"Install the run's versions on every worker, or pass {ALLOW_FLAG} to accept "
            "them after a sample check"
        )
