"""``sweep verify``, one part at a time: what a part's check leaves behind for the run's check.

:func:`audit_part` does everything ``sweep verify`` needs of one part alone: its bytes
against the sha256 in its name and its contents (:meth:`RunStore.inspect_part`), its footer
(the schema metadata: the stored v2 digest, the null summary, the environment record) and,
for a v2 folder, its rows hashed again (:func:`sweep.store._row_set_hash.digest_rows`, a
record batch at a time). The :class:`PartAudit` it returns is small (the part's ranges, its
footer and its digest), so a verify holds one per part and never a row of the run; the
audits are made here in one process or as Ray tasks over groups of parts
(:mod:`sweep.executors._part_tasks`) and give the same :class:`Verification` either way.

A part's null summary (about 140 kB in its footer: 200 replications) is not kept per part: an
audit's schema leaves it out, and the summaries of the parts one call audits are merged as
they are read (:func:`audit_here`; the merge is exact in any grouping) and carried by the
call's last good audit, which names the parts merged. A verify or a report then holds one
summary per group of parts, not one per part: with 5,000 parts, 700 MB less.
:func:`merged_null_summary` merges the groups' summaries over the parts that passed every
check, reading again only the summaries of a group that lost a part to a conflict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pyarrow as pa

from stats import NullSummary, merge_null_summaries
from sweep.common._range_set import RangeSet
from sweep.errors import RunFolderError
from sweep.store._null_summary import MERGE_GROUP, SUMMARY_KEY, merged_summary, summary_of
from sweep.store._part_environment import EnvironmentUse, environment_of, group_environments
from sweep.store._parts_hash import HashAccumulator, PartsHash, part_rows
from sweep.store._record import PartInfo
from sweep.store._row_set_hash import PartDigest, digest_rows, stored_digest
from sweep.store._run_store import RunStore


@dataclass(frozen=True)
class PartAudit:
    """One part's check and what the run's check needs of it (see the module docstring).

    Attributes
    ----------
    check : PartInfo
        The part's own check (:meth:`RunStore.check_part`); conflicts with other parts are
        judged afterwards (:meth:`RunStore.judge_conflicts`).
    positions : RangeSet or None
        Its grid positions (None when the check failed).
    schema : pyarrow.Schema or None
        Its schema with the metadata: null summary, stored digest, environment.
    fresh : PartDigest or None
        Its v2 digest computed again from its rows (when asked for and the check passed).
    summary : NullSummary or None
        The null summaries of the parts ``merged_parts`` names, merged (None: some part
        carries none, or no summary rides on this audit). Not compared by ``==``.
    merged_parts : tuple of str
        The parts whose summaries ``summary`` merges (empty: none rides on this audit).
    """

    check: PartInfo
    positions: RangeSet | None
    schema: pa.Schema | None
    fresh: PartDigest | None
    summary: NullSummary | None = field(default=None, compare=False)
    merged_parts: tuple[str, ...] = ()


def audit_part(store: RunStore, name: str, *, rehash: bool) -> PartAudit:
    """Check one part and read what the run's check needs of it.

    Parameters
    ----------
    store : RunStore
        The folder.
    name : str
        The part's file name.
    rehash : bool
        Hash its rows again (v2 folders).

    Returns
    -------
    PartAudit
    """
    check, positions, schema = store.inspect_part_footer(name)
    if not check.ok or positions is None or schema is None:
        return PartAudit(check, None, None, None)
    total = store.expectations().grid_size
    fresh = digest_rows(part_rows(store, name), total) if rehash else None
    summary = summary_of(schema)
    meta = {k: v for k, v in (schema.metadata or {}).items() if k != SUMMARY_KEY}
    return PartAudit(check, positions, schema.with_metadata(meta), fresh, summary, (name,))


#: Audits parts of a folder, ``(store, names, rehash) -> audits`` in the order of ``names``:
#: :func:`audit_here`, or as Ray tasks (``sweep.runner._pass_executor.PassExecutor``).
PartAuditor = Callable[[RunStore, list[str], bool], list[PartAudit]]


def audit_here(store: RunStore, names: list[str], rehash: bool) -> list[PartAudit]:
    """:func:`audit_part` of each of ``names``, one after another in this process.

    The good parts' null summaries are merged as they are read (:data:`MERGE_GROUP` at a
    time) and ride on the last good audit (see the module docstring).
    """
    audits: list[PartAudit] = []
    merged: NullSummary | None = None
    waiting: list[NullSummary] = []
    covered: list[str] = []
    lacking = False  # a good part without a summary: the merge is None
    for name in names:
        audit = audit_part(store, name, rehash=rehash)
        if audit.merged_parts:
            covered += audit.merged_parts
            if audit.summary is None:
                lacking = True
            else:
                waiting.append(audit.summary)
            if len(waiting) >= MERGE_GROUP:
                merged, waiting = _merge(merged, waiting), []
            audit = replace(audit, summary=None, merged_parts=())
        audits.append(audit)
    if covered:
        names_covered = set(covered)
        last = max(i for i, a in enumerate(audits) if a.check.name in names_covered)
        total = None if lacking else _merge(merged, waiting)
        audits[last] = replace(audits[last], summary=total, merged_parts=tuple(covered))
    return audits


def _merge(merged: NullSummary | None, more: list[NullSummary]) -> NullSummary:
    """``merged`` (if any) and ``more`` merged into one summary."""
    return merge_null_summaries([*([merged] if merged is not None else []), *more])


def merged_null_summary(
    store: RunStore, audits: list[PartAudit], passed: set[str]
) -> NullSummary | None:
    """The null summary of the parts in ``passed``, from the summaries the audits carry.

    A group's merge is used whole when every part it merges passed; a group that lost a part
    (a conflict judged after the audits) has its passed parts' summaries read again. None
    when no part passed or a passed part carries no summary (a sweep without bootstrap), as
    :func:`sweep.store._null_summary.merged_summary`.
    """
    merged: NullSummary | None = None
    waiting: list[NullSummary] = []
    seen = False
    for audit in audits:
        kept = [n for n in audit.merged_parts if n in passed]
        if not kept:
            continue
        seen = True
        summary = (
            audit.summary
            if len(kept) == len(audit.merged_parts)
            else merged_summary(store.read_part_schema(n) for n in kept)
        )
        if summary is None:
            return None
        waiting.append(summary)
        if len(waiting) >= MERGE_GROUP:
            merged, waiting = _merge(merged, waiting), []
    return _merge(merged, waiting) if seen else None


def audit_parts(location: str, names: list[str], rehash: bool) -> list[PartAudit]:
    """:func:`audit_part` of each of ``names`` in a folder opened here (a Ray task's body)."""
    store = RunStore(location)
    store.load_manifest()
    return audit_here(store, names, rehash)


def audited_environments(good: list[PartAudit]) -> tuple[EnvironmentUse, ...]:
    """The environments that computed the good parts (from the footers their audits read)."""
    return group_environments(
        (environment_of(a.schema), a.check.rows) for a in good if a.schema is not None
    )


def audited_hash(store: RunStore, audits: list[PartAudit], total: int) -> PartsHash:
    """The v2 table hash of the audited good parts, from the digests of their rows.

    The same as :func:`sweep.store._parts_hash.parts_hash` with ``recompute=True``: a part
    whose stored digest disagrees with its rows is named in ``mismatched``.
    """
    hashing = HashAccumulator(total)
    mismatched = []
    for audit in audits:
        if audit.positions is None or audit.schema is None or audit.fresh is None:
            raise RunFolderError(f"part {audit.check.name}: not audited with its rows hashed")
        stored = stored_digest(audit.schema)
        if stored is not None and stored != audit.fresh:
            mismatched.append(audit.check.name)
        hashing.add(audit.check.name, audit.fresh, audit.schema)
    return PartsHash(hashing.digest(store), tuple(mismatched), len(audits))
