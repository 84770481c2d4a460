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

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from sweep.common._range_set import RangeSet
from sweep.errors import RunFolderError
from sweep.store._repeats import overlaps
from sweep.store._row_set_hash import (
    BLOCK,
    LANES,
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


def _usable(stored: PartDigest, positions: RangeSet, total: int) -> bool:
    """Whether a stored digest describes these positions (else it is recomputed)."""
    try:
        same = stored.positions == positions
        whole = whole_blocks(positions, total)
        blocks = len(whole)
        partial = len(stored.partial_index)
    except (ValueError, IndexError):
        return False
    held = len(RangeSet(whole.starts * BLOCK, np.minimum(whole.stops * BLOCK, total)))
    return same and stored.blocks == blocks and stored.rows == len(positions) == held + partial


def part_digest(
    store: RunStore, name: str, schema: pa.Schema, positions: RangeSet, total: int
) -> PartDigest:
    """A checked part's digest: the one it stores where that describes it, else from its rows.

    ``schema`` is the part's (with its metadata), ``positions`` its grid positions.
    """
    return _stored_else(stored_digest(schema), positions, total, lambda: part_rows(store, name))


def table_digest(table: pa.Table, total: int) -> PartDigest:
    """A batch's digest as :func:`part_digest` finds it once written: stored, else from rows."""
    index = table.column("grid_index").combine_chunks().to_numpy()
    positions = RangeSet.from_positions(np.asarray(index, dtype=np.int64))
    return _stored_else(stored_digest(table.schema), positions, total, lambda: Rows.of(table))


def _stored_else(
    stored: PartDigest | None, positions: RangeSet, total: int, rows: Callable[[], Rows]
) -> PartDigest:
    """``stored`` where it describes ``positions``, else the digest of ``rows()``."""
    if stored is not None and _usable(stored, positions, total):
        return stored
    return digest_rows(rows(), total)


@dataclass(eq=False)
class HashSum:
    """A running v2 sum: lanes (unreduced), distinct rows, non-empty blocks."""

    lanes: Lanes = field(default_factory=lambda: np.zeros(LANES, dtype=np.int64))
    rows: int = 0
    blocks: int = 0

    def add(self, lanes: Lanes, rows: int, blocks: int, sign: int = 1) -> None:
        """Add (``sign`` 1) or take out (-1) some blocks' sums."""
        self.lanes += sign * lanes
        self.rows += sign * rows
        self.blocks += sign * blocks

    def copy(self) -> HashSum:
        """An independent copy."""
        return HashSum(self.lanes.copy(), self.rows, self.blocks)


@dataclass(frozen=True, eq=False)
class PartShare:
    """What the hash keeps of a part once its whole blocks are summed.

    Attributes
    ----------
    positions : RangeSet
        Its grid positions (to find the parts that overlap).
    partial : Rows
        The rows of the blocks it holds only in part (assembled with other parts' rows).
    """

    positions: RangeSet
    partial: Rows


@dataclass(eq=False)
class HashAccumulator:
    """The v2 hash of parts added one at a time, in any order.

    Each part's whole blocks go into :attr:`summed` as it comes (its 1,024 lanes are not
    kept); what is kept per part is its :class:`PartShare`, a few ranges and at most 63
    rows on each side of each run of positions. Accumulators of groups of parts
    :meth:`merge` (a Ray task's answer is one), and :meth:`digest` finishes the hash: the
    split blocks assembled, the blocks that overlapping parts share read again from their
    rows, so an identical repeat counts once.

    Parameters
    ----------
    total : int
        Configs in the grid (where the last block ends).
    """

    total: int
    summed: HashSum = field(default_factory=HashSum)
    shares: dict[str, PartShare] = field(default_factory=dict)
    schema: pa.Schema | None = None  # the parts' schema, without metadata

    def add(self, name: str, digest: PartDigest, schema: pa.Schema) -> None:
        """Add part ``name`` from its digest; ``schema`` is its schema (metadata ignored)."""
        self.shares[name] = PartShare(digest.positions, self._count(digest, 1))
        if self.schema is None:
            self.schema = schema.remove_metadata()

    def remove(self, name: str, digest: PartDigest) -> None:
        """Take part ``name`` (added with ``digest``) back out."""
        self._count(digest, -1)
        del self.shares[name]

    def _count(self, digest: PartDigest, sign: int) -> Rows:
        """Add or take out a part's whole blocks; its split blocks' rows (pooled later)."""
        partial = digest.partial_rows
        self.summed.add(digest.lane_sum, digest.rows - len(partial), digest.blocks, sign)
        return partial

    def merge(self, other: HashAccumulator) -> None:
        """Add every part of ``other`` (another group of parts of the same folder)."""
        self.summed.add(other.summed.lanes, other.summed.rows, other.summed.blocks)
        self.shares.update(other.shares)
        if self.schema is None:
            self.schema = other.schema

    def digest(self, store: RunStore) -> str:
        """The table hash of the parts added (read again: only blocks that parts share)."""
        if not self.shares or self.schema is None:
            raise RunFolderError(f"run folder {store.location!r} has no results yet")
        found = self.summed.copy()
        touched = blocks_touched(overlaps([share.positions for share in self.shares.values()]))
        pool: list[Rows] = []
        for name, share in self.shares.items():
            pool.append(share.partial)
            shared = whole_blocks(share.positions, self.total).intersection(touched)
            if shared:  # whole here, but another part holds some of it too: take it back out
                rows = part_rows(store, name, shared)
                found.add(*block_sums(rows), sign=-1)
                pool.append(rows)
        found.add(*block_sums(Rows.concat(pool)))
        return final_hash(self.schema, found.rows, found.blocks, found.lanes)


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
    hashing = HashAccumulator(total)
    mismatched: list[str] = []
    recomputed = 0
    for name in names:
        schema = store.read_part_schema(name)
        stored = stored_digest(schema)
        positions = part_positions(store, name)
        if stored is not None and not recompute and _usable(stored, positions, total):
            hashing.add(name, stored, schema)
            continue
        fresh = digest_rows(part_rows(store, name), total)
        recomputed += 1
        if stored is not None and stored != fresh:
            mismatched.append(name)
        hashing.add(name, fresh, schema)
    return PartsHash(hashing.digest(store), tuple(mismatched), recomputed)
