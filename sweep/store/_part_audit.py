"""``sweep verify``, one part at a time: what a part's check leaves behind for the run's check.

:func:`audit_part` does everything ``sweep verify`` needs of one part alone: its bytes
against the sha256 in its name and its contents (:meth:`RunStore.inspect_part`), its footer
(the schema metadata: the stored v2 digest, the null summary, the environment record) and,
for a v2 folder, its rows hashed again (:func:`sweep.store._row_set_hash.digest_rows`, a
record batch at a time). The :class:`PartAudit` it returns is small (the part's ranges, its
footer and its digest), so a verify holds one per part and never a row of the run; the
audits are made here in one process or as Ray tasks over groups of parts
(:mod:`sweep.executors._part_tasks`) and give the same :class:`Verification` either way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from sweep.common._range_set import RangeSet
from sweep.errors import RunFolderError
from sweep.store._parts_hash import PartsHash, combined_hash, part_rows
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
    """

    check: PartInfo
    positions: RangeSet | None
    schema: pa.Schema | None
    fresh: PartDigest | None


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
    return PartAudit(check, positions, schema, fresh)


#: Audits parts of a folder, ``(store, names, rehash) -> audits`` in the order of ``names``:
#: :func:`audit_here`, or as Ray tasks (``sweep.runner._pass_executor.PassExecutor``).
PartAuditor = Callable[[RunStore, list[str], bool], list[PartAudit]]


def audit_here(store: RunStore, names: list[str], rehash: bool) -> list[PartAudit]:
    """:func:`audit_part` of each of ``names``, one after another in this process."""
    return [audit_part(store, name, rehash=rehash) for name in names]


def audit_parts(location: str, names: list[str], rehash: bool) -> list[PartAudit]:
    """:func:`audit_part` of each of ``names`` in a folder opened here (a Ray task's body)."""
    store = RunStore(location)
    store.load_manifest()
    return audit_here(store, names, rehash)


def audited_hash(store: RunStore, audits: list[PartAudit], total: int) -> PartsHash:
    """The v2 table hash of the audited good parts, from the digests of their rows.

    The same as :func:`sweep.store._parts_hash.parts_hash` with ``recompute=True``: a part
    whose stored digest disagrees with its rows is named in ``mismatched``.
    """
    entries = []
    mismatched = []
    for audit in audits:
        if audit.positions is None or audit.schema is None or audit.fresh is None:
            raise RunFolderError(f"part {audit.check.name}: not audited with its rows hashed")
        stored = stored_digest(audit.schema)
        if stored is not None and stored != audit.fresh:
            mismatched.append(audit.check.name)
        entries.append((audit.check.name, audit.positions, audit.fresh))
    if not audits:
        raise RunFolderError(f"run folder {store.location!r} has no results yet")
    schema = audits[0].schema
    assert schema is not None
    digest = combined_hash(store, entries, total, schema.remove_metadata())
    return PartsHash(digest, tuple(mismatched), len(audits))
