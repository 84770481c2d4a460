"""What a driver needs of a run's parts at its start, from one read of each part.

:func:`survey_parts` checks every part (:meth:`RunStore.inspect_part_footer`: its bytes
against its sha256 name, its contents, its footer), judges conflicts between them, and keeps
of each good part only its grid positions and the environment record that computed it. The
driver then has the configs done (the to-do list is their complement) and the run's library
versions without reading any part again: before, a resume read each part's footer three more
times (done ranges, environments, the end-of-session check).

The per-part reads are :func:`survey_group`, a function of a folder location and some part
names, so a :class:`sweep.store._part_mapper.PartMapper` runs them here or as Ray tasks
(``sweep run/resume --address``, ``sweep status --address``): reading and hashing every part
is the only pass of a session's start whose cost grows with the configs done. What comes
back per part is its check, a few ranges and an environment record; the conflicts between
parts are judged here, from the ranges (:meth:`RunStore.judge_conflicts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sweep.common._range_set import RangeSet
from sweep.store._part_environment import (
    EnvironmentUse,
    PartEnvironment,
    environment_of,
    group_environments,
)
from sweep.store._part_mapper import PartMapper, map_here
from sweep.store._record import PartInfo
from sweep.store._run_store import PartCheck, RunStore


@dataclass(frozen=True)
class SurveyedPart:
    """What one read of a part leaves behind (:func:`survey_group`).

    Attributes
    ----------
    check : PartCheck
        The part's own check (conflicts with other parts not judged yet).
    positions : RangeSet or None
        A good part's grid positions; None for a bad part.
    environment : PartEnvironment or None
        The environment record a good part carries (None: bad, or written before records).
    """

    check: PartCheck
    positions: RangeSet | None
    environment: PartEnvironment | None


@dataclass(frozen=True)
class PartSurvey:
    """Every part checked once (see the module docstring).

    Attributes
    ----------
    checks : list of PartInfo
        Each part's check, conflicts judged, in the order of the part names.
    done : RangeSet
        The grid positions the good parts hold.
    environments : tuple of EnvironmentUse
        The environments that computed the good parts (:func:`group_environments`).
    """

    checks: list[PartInfo]
    done: RangeSet
    environments: tuple[EnvironmentUse, ...]


def survey_group(location: str, names: list[str]) -> list[SurveyedPart]:
    """Read and check ``names`` of the folder at ``location``, one part at a time.

    A Ray task's body (importable, of a location): one part's footer, with its null summary,
    is in memory at a time, and each part leaves a :class:`SurveyedPart`.

    Parameters
    ----------
    location : str
        The run folder, as this process opens it.
    names : list of str
        Part file names in ``parts/``.

    Returns
    -------
    list of SurveyedPart
        In the order of ``names``.
    """
    store = RunStore(location)
    found = []
    for name in names:
        check, positions, schema = store.inspect_part_footer(name)
        env = None if schema is None else environment_of(schema)
        found.append(SurveyedPart(check, positions, env))
    return found


def survey_parts(store: RunStore, mapper: PartMapper = map_here) -> PartSurvey:
    """Check every part of ``store`` once; see :class:`PartSurvey`.

    Parameters
    ----------
    store : RunStore
        The run folder.
    mapper : PartMapper
        Where the per-part reads run (:func:`survey_group`): here by default, or Ray tasks
        (``sweep.runner._pass_executor.PassExecutor.map_parts``). The survey is the same.

    Returns
    -------
    PartSurvey
    """
    surveyed = _flatten(mapper(survey_group, store, store.part_names(), ()))
    checks = store.judge_conflicts([(p.check, p.positions) for p in surveyed])
    good = {c.name for c in checks if c.ok}
    kept = [p for p in surveyed if p.check.name in good]
    done = RangeSet.union_all(p.positions for p in kept if p.positions is not None)
    uses = group_environments((p.environment, p.check.rows) for p in kept)
    return PartSurvey(checks, done, uses)


def _flatten(groups: Sequence[list[SurveyedPart]]) -> list[SurveyedPart]:
    return [part for group in groups for part in group]
