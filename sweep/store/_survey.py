"""What a driver needs of a run's parts at its start, from one read of each part.

:func:`survey_parts` checks every part (:meth:`RunStore.inspect_part_footer`: its bytes
against its sha256 name, its contents, its footer), judges conflicts between them, and keeps
of each good part only its grid positions, the environment record that computed it, its
failed configs and its share of the v2 table hash. The driver then has the configs done (the
to-do list is their complement), the run's library versions, and at its end the failed count
and the table hash (the parts it wrote added as it wrote them) without reading any part
again: before, a resume read each part's footer three more times (done ranges, environments,
the end-of-session check), then every part's ``status`` column and digest at its end, and
``sweep status`` did the same.

The per-part reads are :func:`survey_group`, a function of a folder location and some part
names, so a :class:`sweep.store._part_mapper.PartMapper` runs them here or as Ray tasks
(``sweep run/resume --address``, ``sweep status --address``): reading and hashing every part
is the only pass of a session whose cost grows with the configs done. What comes back per
part is its check, a few ranges, an environment record and a count, and per group of parts
its summed hash (:class:`sweep.store._parts_hash.HashAccumulator`: 1,024 lanes, and per
part its ranges and the rows of the blocks it holds only in part); the conflicts between
parts are judged here, from the ranges (:meth:`RunStore.judge_conflicts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from sweep.common._range_set import RangeSet
from sweep.store._part_environment import (
    EnvironmentUse,
    PartEnvironment,
    environment_of,
    group_environments,
)
from sweep.store._part_mapper import PartMapper, map_here
from sweep.store._parts_hash import HashAccumulator, part_digest
from sweep.store._record import PartInfo
from sweep.store._row_set_hash import TABLE_HASH_V2
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
    failed : int
        A good part's rows whose status is not ``ok``.
    """

    check: PartCheck
    positions: RangeSet | None
    environment: PartEnvironment | None
    failed: int = 0


@dataclass(frozen=True)
class SurveyGroup:
    """:func:`survey_group`'s answer: each part's survey, and the group's share of the hash.

    Attributes
    ----------
    parts : list of SurveyedPart
        In the order of the names asked.
    hashing : HashAccumulator or None
        The v2 table hash of the group's good parts, from their digests (None: a v1
        folder, whose hash is not a sum of parts).
    """

    parts: list[SurveyedPart]
    hashing: HashAccumulator | None


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
    failed : int
        Configs whose status is not ``ok`` in the good parts.
    hashing : HashAccumulator or None
        The good parts' v2 table hash, accumulated (None for a v1 folder); a driver adds
        the parts it writes and finishes it (:meth:`HashAccumulator.digest`) with no part
        read again.
    """

    checks: list[PartInfo]
    done: RangeSet
    environments: tuple[EnvironmentUse, ...]
    failed: int = 0
    hashing: HashAccumulator | None = None


def failed_rows(table: pa.Table) -> int:
    """Rows of ``table`` (a part, or its ``status`` column) whose status is not ``ok``."""
    return int(pc.sum(pc.not_equal(table.column("status"), "ok")).as_py() or 0)


def survey_group(location: str, names: list[str]) -> SurveyGroup:
    """Read and check ``names`` of the folder at ``location``, one part at a time.

    A Ray task's body (importable, of a location): one part's footer, with its null summary,
    is in memory at a time. Each part leaves a :class:`SurveyedPart`; a good part of a v2
    folder also adds its digest to the group's hash (its stored one where that describes it,
    else from its rows: :func:`sweep.store._parts_hash.part_digest`).

    Parameters
    ----------
    location : str
        The run folder, as this process opens it.
    names : list of str
        Part file names in ``parts/``.

    Returns
    -------
    SurveyGroup
    """
    store = RunStore(location)
    manifest = store.load_manifest()
    hashing = HashAccumulator(manifest.total) if manifest.hash_version == TABLE_HASH_V2 else None
    found = []
    for name in names:
        check, positions, schema = store.inspect_part_footer(name)
        if schema is None or positions is None:
            found.append(SurveyedPart(check, positions, None))
            continue
        failed = failed_rows(store.read_part_columns(name, ["status"]))
        found.append(SurveyedPart(check, positions, environment_of(schema), failed))
        if hashing is not None:
            hashing.add(name, part_digest(store, name, schema, positions, hashing.total), schema)
    return SurveyGroup(found, hashing)


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
    groups = list(mapper(survey_group, store, store.part_names(), ()))
    surveyed = [part for group in groups for part in group.parts]
    checks = store.judge_conflicts([(p.check, p.positions) for p in surveyed])
    good = {c.name for c in checks if c.ok}
    kept = [p for p in surveyed if p.check.name in good]
    done = RangeSet.union_all(p.positions for p in kept if p.positions is not None)
    uses = group_environments((p.environment, p.check.rows) for p in kept)
    failed = sum(p.failed for p in kept)
    return PartSurvey(checks, done, uses, failed, _good_parts_hash(store, groups, good))


def _good_parts_hash(
    store: RunStore, groups: Sequence[SurveyGroup], good: set[str]
) -> HashAccumulator | None:
    """The groups' hashes merged, less the parts that failed only for a conflict.

    A part in conflict with another passed its own check, so its group added it; it is
    taken back out with the digest it was added with (read again: conflicts are rare).
    """
    manifest = store.load_manifest()
    if manifest.hash_version != TABLE_HASH_V2:
        return None
    hashing = HashAccumulator(manifest.total)
    for group in groups:
        if group.hashing is not None:
            hashing.merge(group.hashing)
    for name in [n for n in hashing.shares if n not in good]:
        schema = store.read_part_schema(name)
        positions = hashing.shares[name].positions
        hashing.remove(name, part_digest(store, name, schema, positions, hashing.total))
    return hashing
