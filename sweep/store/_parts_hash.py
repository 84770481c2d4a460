"""The v2 table hash of a run folder, combined from its parts' stored digests.

Each part carries a :class:`sweep.store._row_set_hash.PartDigest` (its whole blocks' lane sum
and the row digests of the blocks it holds only in part). The table hash is their sum plus
the blocks assembled from those row digests, so the driver reads one small value per part
and one int64 column per part (its grid positions, to find parts that overlap), never the
table. Where parts overlap (a batch written twice) the overlapping blocks are recomputed
from those parts' rows, one record batch at a time, so an identical repeat counts once and a
repeat with other bytes counts as a second row.

``recompute=True`` (``sweep verify``) ignores the stored digests: every part's rows are
hashed again, a record batch at a time, and a part whose stored digest disagrees with its
rows is named.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from sweep.common._range_set import RangeSet
from sweep.errors import RunFolderError
from sweep.store._repeats import overlaps
from sweep.store._row_set_hash import (
    BLOCK,
    Lanes,
    PartDigest,
    Rows,
    block_sums,
    blocks_touched,
    digest_rows,
    final_hash,
    stored_digest,
    whole_blocks,
)
from sweep.store._run_store import RunStore


@dataclass(frozen=True)
class PartsHash:
    """The v2 hash of some parts, and what was found about their stored digests.

    Attributes
    ----------
    digest : str
        The table hash.
    mismatched : tuple of str
        Parts whose stored digest does not match their rows (found when recomputing, or
        when the stored digest disagrees with the part's grid positions).
    recomputed : int
        Parts hashed from their rows (no usable stored digest, or ``recompute``).
    """

    digest: str
    mismatched: tuple[str, ...]
    recomputed: int


def part_rows(store: RunStore, name: str, blocks: RangeSet | None = None) -> Rows:
    """The ``(grid_index, row digest)`` of a part's rows (those in ``blocks``, if given)."""
    pieces = []
    for batch in store.part_column_batches(name, None):
        if blocks is not None:
            index = np.asarray(batch.column("grid_index").to_numpy(), dtype=np.int64)
            keep = blocks.contains(index // BLOCK)
            if not keep.any():
                continue
            batch = batch.filter(pa.array(keep))
        pieces.append(Rows.of(batch))
    return Rows.concat(pieces)


def part_positions(store: RunStore, name: str) -> RangeSet:
    """A part's grid positions as ranges (its ``grid_index`` column, read by batches)."""
    return RangeSet.union_all(
        RangeSet.from_positions(b.column(0).to_numpy())
        for b in store.part_column_batches(name, ["grid_index"])
    )


def _usable(stored: PartDigest | None, positions: RangeSet, total: int) -> bool:
    """Whether a stored digest describes these positions (else it is recomputed)."""
    if stored is None:
        return False
    try:
        same = stored.positions == positions
        whole = whole_blocks(positions, total)
        blocks = len(whole)
        partial = len(stored.partial_index)
    except (ValueError, IndexError):
        return False
    held = len(RangeSet(whole.starts * BLOCK, np.minimum(whole.stops * BLOCK, total)))
    return same and stored.blocks == blocks and stored.rows == len(positions) == held + partial


@dataclass
class _Sum:
    """The running v2 sum: lanes (unreduced), distinct rows, non-empty blocks."""

    lanes: Lanes
    rows: int = 0
    blocks: int = 0

    def add(self, lanes: Lanes, rows: int, blocks: int, sign: int = 1) -> None:
        self.lanes += sign * lanes
        self.rows += sign * rows
        self.blocks += sign * blocks


def parts_hash(
    store: RunStore, names: list[str], total: int, *, recompute: bool = False
) -> PartsHash:
    """The v2 table hash of these (checked) parts of a run folder.

    Parameters
    ----------
    store : RunStore
        The folder.
    names : list of str
        Part names (any order: the hash does not depend on it).
    total : int
        Configs in the grid (where the last block ends).
    recompute : bool
        Hash every part from its rows, ignoring the stored digests.

    Returns
    -------
    PartsHash
        The hash, and the parts whose stored digest did not match.
    """
    if not names:
        raise RunFolderError(f"run folder {store.location!r} has no results yet")
    schema: pa.Schema | None = None
    entries: list[tuple[str, RangeSet, PartDigest]] = []
    mismatched: list[str] = []
    recomputed = 0
    for name in names:
        part_schema = store.read_part_schema(name)
        schema = schema or part_schema.remove_metadata()
        stored = stored_digest(part_schema)
        positions = part_positions(store, name)
        usable = _usable(stored, positions, total)
        if usable and not recompute and stored is not None:
            entries.append((name, positions, stored))
            continue
        fresh = digest_rows(part_rows(store, name), total)
        recomputed += 1
        if stored is not None and stored != fresh:
            mismatched.append(name)
        entries.append((name, positions, fresh))
    assert schema is not None
    return PartsHash(combined_hash(store, entries, total, schema), tuple(mismatched), recomputed)


def combined_hash(
    store: RunStore,
    entries: list[tuple[str, RangeSet, PartDigest]],
    total: int,
    schema: pa.Schema,
) -> str:
    """The v2 hash of parts whose digests are known: ``(name, positions, digest)`` each.

    ``schema`` is the parts' schema without metadata. Overlapping parts' blocks are read
    again from their rows (:func:`_combine`).
    """
    found = _combine(store, entries, total)
    return final_hash(schema, found.rows, found.blocks, found.lanes)


def _combine(store: RunStore, entries: list[tuple[str, RangeSet, PartDigest]], total: int) -> _Sum:
    """Sum the parts; assemble split blocks; recompute blocks where parts overlap."""
    touched = blocks_touched(overlaps([positions for _, positions, _ in entries]))
    total_sum = _Sum(np.zeros(1024, dtype=np.int64))
    pool: list[Rows] = []
    for name, positions, digest in entries:
        total_sum.add(digest.lane_sum, digest.rows, digest.blocks)
        partial = digest.partial_rows
        total_sum.rows -= len(partial)
        pool.append(partial)
        shared = whole_blocks(positions, total).intersection(touched)
        if shared:  # whole here, but another part holds some of it too: take it back out
            rows = part_rows(store, name, shared)
            total_sum.add(*block_sums(rows), sign=-1)
            pool.append(rows)
    total_sum.add(*block_sums(Rows.concat(pool)))
    return total_sum
