"""What a driver needs of a run's parts at its start, from one read of each part.

:func:`survey_parts` checks every part (:meth:`RunStore.inspect_part_footer`: its bytes
against its sha256 name, its contents, its footer), judges conflicts between them, and keeps
of each good part only its grid positions and the environment record that computed it. The
driver then has the configs done (the to-do list is their complement) and the run's library
versions without reading any part again: before, a resume read each part's footer three more
times (done ranges, environments, the end-of-session check).
"""

from __future__ import annotations

from dataclasses import dataclass

from sweep.common._range_set import RangeSet
from sweep.store._part_environment import EnvironmentUse, environment_of, group_environments
from sweep.store._record import PartInfo
from sweep.store._run_store import RunStore


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


def survey_parts(store: RunStore) -> PartSurvey:
    """Check every part of ``store`` once; see :class:`PartSurvey`.

    One part's footer (with its null summary) is in memory at a time; what is kept is its
    check, its positions as ranges and its environment record.
    """
    found = []
    environments = {}
    for name in store.part_names():
        check, positions, schema = store.inspect_part_footer(name)
        found.append((check, positions))
        if schema is not None:
            environments[name] = environment_of(schema)
    checks = store.judge_conflicts(found)
    good = {c.name for c in checks if c.ok}
    done = RangeSet.union_all(p for (c, p) in found if c.name in good and p is not None)
    uses = group_environments((environments[c.name], c.rows) for c in checks if c.ok)
    return PartSurvey(checks, done, uses)
