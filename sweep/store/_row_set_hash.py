r"""The table hash v2 (``raysweep-table-v2``): a set hash over rows, combined from parts.

The v1 hash (:mod:`sweep.store._table_hash`) is one sha256 over the whole table sorted by
``config_id``: it needs the whole table (or its ``config_id`` column and a sort) in one
place. v2 is computed from per-part values that add up, so a driver combines one value per
part, whatever the order the parts are read in and however the configs were batched.

Definition (recomputable with pyarrow and hashlib, see docs/reference/table-hash.md):

1. **Row digest** ``r = sha256(row bytes)``: every column's value in table order, as v1
   encodes values (int64 / float64 as 8 little-endian bytes exactly as stored, bool as one
   byte, a string as its UTF-8 length in 8 little-endian bytes, -1 for null, then its
   bytes). The row includes ``config_id`` and ``grid_index``, so the digest is keyed by the
   config: equal metrics of two configs give two digests.
2. **Rows are a set**: the table is the set of distinct ``(grid_index, r)``. A config held
   twice with identical bytes counts once (a repeated batch changes nothing); held twice
   with different bytes both rows count, so the hash differs from that of either table.
3. **Blocks**: fixed, canonical ranges of 64 grid positions, block ``k`` holding
   ``64 k <= grid_index < 64 (k + 1)``. A block's digest is
   ``sha256(b"raysweep-block-v2\n" || k || m || r_1 || ... || r_m)`` (``k`` and the row count
   ``m`` as 8 little-endian bytes, the rows sorted by ``(grid_index, r)``); its *element* is
   ``shake_128(block digest)`` read as 2,048 bytes: 1,024 little-endian uint16 lanes.
4. **Set hash** (LtHash, Bellare and Micciancio 1997; parameters of Lewi et al. 2019):
   ``L = sum of the elements of every non-empty block``, lane by lane mod 2^16.
5. **The hash**: ``sha256(b"raysweep-table-v2\n" || name\ntype\n per column || N || K || L)``
   with ``N`` the distinct rows and ``K`` the non-empty blocks (8 little-endian bytes each).

Why it is collision-resistant
-----------------------------
Two tables with one hash and different row sets need a sha256 collision (steps 1, 3, 5) or
two different *sets* of block elements with equal ``N``, ``K`` and lane sums: a non-zero
combination with coefficients in {-1, 0, 1} of random vectors of Z_{2^16}^1024 that sums to
zero (every block index appears at most once, so a set difference has such coefficients).
That is the short-integer-solution problem, whose hardness Bellare and Micciancio's LtHash
rests on; Lewi et al. estimate at least 200 bits of security for d = 1024 lanes of 16 bits
with an extendable-output function as the element hash (they use BLAKE2x; hashlib has
SHAKE-128, whose own 128-bit level then bounds the whole). The additive hash the issue first
suggested, the sum mod 2^256 of row sha256s (AdHash, Bellare and Micciancio 1997), is not
enough for a hash anyone may try to forge: its security rests on a subset-sum problem that
Wagner's k-tree algorithm solves in about 2^(2 sqrt(n)) steps for an n-bit modulus, 2^32 at
n = 256; Clarke et al.'s MSet-Add-Hash (2003) is secure with a *secret* key, which a public
table hash cannot have. What the construction needs: a row digest that covers the config id
(else a row could be moved to another config), set semantics (each element once, so the
coefficients stay in {-1, 0, 1}; as a multiset hash LtHash16 has the trivial collision of an
element added 2^16 times, which a block index that appears once rules out), and the counts
``N`` and ``K`` bound in (a forged table
must keep the number of rows and blocks; Clarke et al. bind the multiset's cardinality for
the same reason).

Blocks, not single rows, carry the elements because an element costs a 2 KiB SHAKE output,
about ten row sha256s: with 64 rows per element the per-row cost is one sha256.

Per part
--------
A worker computes the :class:`PartDigest` of its batch (:func:`with_part_digest`) and it is
stored in the part's parquet metadata (:data:`DIGEST_KEY`, covered by the part's sha256 name):
the lane sum of the blocks the part holds whole, and the row digests of the rows of blocks
it holds only in part (at most 63 on each side of each run of positions).
:mod:`sweep.store._parts_hash` adds the parts' sums, assembles the split blocks from those
row digests, and recomputes from the rows only where parts overlap.

References
----------
M. Bellare and D. Micciancio, "A New Paradigm for Collision-Free Hashing: Incrementality at
Reduced Cost", EUROCRYPT 1997 (AdHash, MuHash, LtHash).
D. Clarke, S. Devadas, M. van Dijk, B. Gassend and G. E. Suh, "Incremental Multiset Hash
Functions and Their Application to Memory Integrity Checking", ASIACRYPT 2003
(MSet-Add-Hash, MSet-Mu-Hash).
D. Wagner, "A Generalized Birthday Problem", CRYPTO 2002.
K. Lewi, W. Kim, I. Maykov and S. Weis, "Securing Update Propagation with Homomorphic
Hashing", IACR ePrint 2019/227 (LtHash16: 1,024 lanes of 16 bits).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from sweep.common._range_set import RangeSet
from sweep.common._serial import JSONRecord, RecordFormatError
from sweep.common._sha256_rows import sha256_rows
from sweep.errors import RunFolderError
from sweep.store._footer_json import brief, footer_json, is_int

TABLE_HASH_V2 = "raysweep-table-v2"
#: Grid positions per canonical block.
BLOCK = 64
#: Lanes of an element and of the set hash (uint16 each).
LANES = 1024
_LANE_MOD = 1 << 16
_BLOCK_PREFIX = b"raysweep-block-v2\n"
#: Schema-metadata key of a part's :class:`PartDigest`.
DIGEST_KEY = b"raysweep.table_v2"
#: Rows turned into canonical bytes at once (bounds the scratch memory of a digest).
ROWS_AT_ONCE = 8192

Lanes = NDArray[np.int64]


def _zero_lanes() -> Lanes:
    return np.zeros(LANES, dtype=np.int64)


# --- rows --------------------------------------------------------------------------------
def _fixed_cells(arr: pa.Array) -> NDArray[np.uint8]:
    """The (n, width) canonical bytes of an int64, float64 or bool column."""
    kind = arr.type
    if arr.null_count:
        raise ValueError(f"column of type {kind} holds nulls; only strings may")
    n = len(arr)
    if pa.types.is_boolean(kind):
        flags: NDArray[np.uint8] = arr.to_numpy(zero_copy_only=False).astype(np.uint8)
        return flags.reshape(n, 1)
    if pa.types.is_int64(kind):
        return np.ascontiguousarray(arr.to_numpy(), dtype="<i8").view(np.uint8).reshape(n, 8)
    if pa.types.is_float64(kind):
        return np.ascontiguousarray(arr.to_numpy(), dtype="<f8").view(np.uint8).reshape(n, 8)
    raise ValueError(f"unsupported column type {kind} for the table hash")


def _string_cells(arr: pa.Array) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """Per value its UTF-8 length (-1 for null), and the concatenated UTF-8 bytes."""
    big = arr.cast(pa.large_string())
    offsets = np.frombuffer(big.buffers()[1], dtype="<i8")[big.offset : big.offset + len(big) + 1]
    data = big.buffers()[2]
    body = (
        np.zeros(0, dtype=np.uint8)
        if data is None
        else np.frombuffer(data, dtype=np.uint8)[offsets[0] : offsets[-1]]
    )
    lengths = np.diff(offsets).astype(np.int64)
    if big.null_count:
        valid = big.is_valid().to_numpy(zero_copy_only=False)
        lengths = np.where(valid, lengths, -1)
    return lengths, body


@numba.njit(cache=True, nogil=True)
def _interleave(heads, cuts, bodies, body_start, body_size, offsets, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Write each row's bytes: its fixed bytes, with each string's body after its prefix.

    ``heads`` (n, H) holds every column's fixed bytes in column order (a string's 8-byte
    length prefix included); string ``s``'s body follows head byte ``cuts[s]`` and is
    ``bodies[body_start[s, i] : body_start[s, i] + body_size[s, i]]`` for row ``i``.
    """
    n, width = heads.shape
    for i in range(n):
        pos = offsets[i]
        h = 0
        for s in range(cuts.shape[0]):
            c = cuts[s]
            out[pos : pos + c - h] = heads[i, h:c]
            pos += c - h
            h = c
            a = body_start[s, i]
            size = body_size[s, i]
            out[pos : pos + size] = bodies[a : a + size]
            pos += size
        out[pos : pos + width - h] = heads[i, h:width]


def row_bytes(batch: pa.RecordBatch | pa.Table) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """The canonical bytes of every row, concatenated, and each row's start (n + 1 offsets).

    Row ``i`` is ``buffer[offsets[i]:offsets[i + 1]]``: every column's value in column
    order (see the module docstring). The fixed bytes of all columns are gathered into one
    (n, width) block column by column with numpy, and one compiled loop interleaves them
    with the strings' bytes row by row.
    """
    n = batch.num_rows
    columns = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in batch.columns]
    fixed: list[NDArray[np.uint8]] = []
    cuts: list[int] = []
    bodies: list[NDArray[np.uint8]] = []
    starts: list[NDArray[np.int64]] = []
    sizes: list[NDArray[np.int64]] = []
    width, body_bytes = 0, 0
    for arr in columns:
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            lengths, body = _string_cells(arr)
            fixed.append(lengths.astype("<i8").view(np.uint8).reshape(n, 8))
            width += 8
            cuts.append(width)
            size = np.maximum(lengths, 0)
            sizes.append(size)
            starts.append(body_bytes + np.cumsum(size) - size)
            bodies.append(body)
            body_bytes += body.shape[0]
        else:
            cells = _fixed_cells(arr)
            fixed.append(cells)
            width += cells.shape[1]
    heads = np.empty((n, width), dtype=np.uint8)
    at = 0
    for cells in fixed:
        heads[:, at : at + cells.shape[1]] = cells
        at += cells.shape[1]
    body_size = np.array(sizes, dtype=np.int64).reshape(len(sizes), n)
    row_width = width + body_size.sum(axis=0)
    offsets = np.concatenate(([0], np.cumsum(row_width))).astype(np.int64)
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    _interleave(
        heads,
        np.array(cuts, dtype=np.int64),
        np.concatenate(bodies) if bodies else np.zeros(0, dtype=np.uint8),
        np.array(starts, dtype=np.int64).reshape(len(starts), n),
        body_size,
        offsets,
        out,
    )
    return out, offsets


def row_digests(batch: pa.RecordBatch | pa.Table) -> NDArray[np.uint8]:
    """The sha256 of every row's canonical bytes, shape (n, 32)."""
    n = batch.num_rows
    out = np.empty((n, 32), dtype=np.uint8)
    for lo in range(0, n, ROWS_AT_ONCE):
        chunk = batch.slice(lo, ROWS_AT_ONCE)
        out[lo : lo + chunk.num_rows] = sha256_rows(*row_bytes(chunk))
    return out


@dataclass(frozen=True)
class Rows:
    """Rows as ``(grid_index, row digest)`` pairs: what the v2 hash sees of a table.

    Attributes
    ----------
    index : ndarray of int64, shape (n,)
        Grid positions.
    digest : ndarray of uint8, shape (n, 32)
        Row digests.
    """

    index: NDArray[np.int64]
    digest: NDArray[np.uint8]

    @classmethod
    def empty(cls) -> Rows:
        """No rows."""
        return cls(np.zeros(0, dtype=np.int64), np.zeros((0, 32), dtype=np.uint8))

    @classmethod
    def of(cls, batch: pa.RecordBatch | pa.Table) -> Rows:
        """The rows of a table or batch (it must have a ``grid_index`` column)."""
        index = batch.column("grid_index")
        if isinstance(index, pa.ChunkedArray):
            index = index.combine_chunks()
        return cls(np.asarray(index.to_numpy(), dtype=np.int64), row_digests(batch))

    @classmethod
    def concat(cls, pieces: Iterable[Rows]) -> Rows:
        """All rows of ``pieces``."""
        items = list(pieces)
        if not items:
            return cls.empty()
        return cls(
            np.concatenate([p.index for p in items]), np.concatenate([p.digest for p in items])
        )

    def __len__(self) -> int:
        return int(self.index.shape[0])

    def select(self, keep: NDArray[np.bool_]) -> Rows:
        """The rows where ``keep`` is True."""
        return Rows(self.index[keep], self.digest[keep])

    def distinct(self) -> Rows:
        """Each distinct ``(grid_index, digest)`` once, sorted by grid index then digest bytes."""
        if len(self) == 0:
            return self
        words = self.digest.view(">u8").reshape(-1, 4)  # big-endian: byte order = word order
        order = np.lexsort((words[:, 3], words[:, 2], words[:, 1], words[:, 0], self.index))
        index, digest = self.index[order], self.digest[order]
        repeat = (index[1:] == index[:-1]) & np.all(digest[1:] == digest[:-1], axis=1)
        keep = np.concatenate(([True], ~repeat))
        return Rows(index[keep], digest[keep])


# --- blocks and their elements -----------------------------------------------------------
def block_element(block: int, digests: NDArray[np.uint8]) -> Lanes:
    """The element of block ``block`` holding rows with these (sorted, distinct) digests."""
    head = _BLOCK_PREFIX + block.to_bytes(8, "little") + len(digests).to_bytes(8, "little")
    digest = hashlib.sha256(head + np.ascontiguousarray(digests).tobytes()).digest()
    element = hashlib.shake_128(digest).digest(2 * LANES)
    return np.frombuffer(element, dtype="<u2").astype(np.int64)


def block_sums(rows: Rows) -> tuple[Lanes, int, int]:
    """Lane sum of the elements of the blocks of ``rows``, the distinct rows and blocks.

    Returns
    -------
    lanes : ndarray of int64, shape (1024,)
        Not yet reduced mod 2^16.
    n_rows, n_blocks : int
    """
    unique = rows.distinct()
    lanes = _zero_lanes()
    if len(unique) == 0:
        return lanes, 0, 0
    blocks = unique.index // BLOCK
    starts = np.flatnonzero(np.concatenate(([True], blocks[1:] != blocks[:-1])))
    ends = np.concatenate((starts[1:], [len(unique)]))
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        lanes += block_element(int(blocks[a]), unique.digest[a:b])
    return lanes, len(unique), int(starts.shape[0])


def whole_blocks(positions: RangeSet, total: int) -> RangeSet:
    """The blocks (as a set of block numbers) every position of which is in ``positions``.

    The last block of a grid of ``total`` configs is whole when its ``total mod 64``
    positions are all there.
    """
    lo, hi = positions.starts, positions.stops
    first = -(-lo // BLOCK)
    stop = np.where(hi >= total, -(-hi // BLOCK), hi // BLOCK)
    return RangeSet(first, stop)


def blocks_touched(positions: RangeSet) -> RangeSet:
    """The blocks (as block numbers) holding at least one of ``positions``."""
    return RangeSet(positions.starts // BLOCK, (positions.stops - 1) // BLOCK + 1)


# --- per part ----------------------------------------------------------------------------
def _flat(ranges: RangeSet) -> tuple[int, ...]:
    return tuple(int(v) for pair in ranges.ranges() for v in pair)


@dataclass(frozen=True)
class PartDigest(JSONRecord):
    """A part's contribution to the v2 table hash (stored in its metadata).

    Attributes
    ----------
    version : str
        :data:`TABLE_HASH_V2`.
    rows : int
        Distinct rows of the part.
    ranges : tuple of int
        Its grid positions as ranges, flattened: ``start0, stop0, start1, stop1, ...``.
    blocks : int
        Blocks it holds whole (summed into ``lanes``).
    lanes : str
        Base64 of the 1,024 little-endian uint16 lanes: the whole blocks' elements summed.
    partial_index : tuple of int
        Grid positions of its rows in blocks it holds only in part.
    partial_digest : str
        Those rows' digests, hex, 64 characters each, in the same order.
    """

    version: str
    rows: int
    ranges: tuple[int, ...]
    blocks: int
    lanes: str
    partial_index: tuple[int, ...]
    partial_digest: str

    @property
    def positions(self) -> RangeSet:
        """Its grid positions."""
        flat = np.asarray(self.ranges, dtype=np.int64)
        return RangeSet(flat[0::2], flat[1::2])

    @property
    def lane_sum(self) -> Lanes:
        """``lanes`` decoded (int64)."""
        return np.frombuffer(base64.b64decode(self.lanes), dtype="<u2").astype(np.int64)

    @property
    def partial_rows(self) -> Rows:
        """The rows of the blocks it holds only in part."""
        raw = bytes.fromhex(self.partial_digest)
        digest = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 32).copy()
        return Rows(np.asarray(self.partial_index, dtype=np.int64), digest)

    def to_bytes(self) -> bytes:
        """The metadata value (compact JSON)."""
        import json

        return json.dumps(self.to_json(), separators=(",", ":")).encode()


def digest_rows(rows: Rows, total: int) -> PartDigest:
    """The :class:`PartDigest` of a part holding ``rows`` (distinct grid positions)."""
    unique = rows.distinct()
    positions = RangeSet.from_positions(unique.index)
    whole = whole_blocks(positions, total)
    in_whole = whole.contains(unique.index // BLOCK)
    lanes, _, n_blocks = block_sums(unique.select(in_whole))
    partial = unique.select(~in_whole)
    return PartDigest(
        version=TABLE_HASH_V2,
        rows=len(unique),
        ranges=_flat(positions),
        blocks=n_blocks,
        lanes=base64.b64encode((lanes % _LANE_MOD).astype("<u2").tobytes()).decode(),
        partial_index=tuple(int(i) for i in partial.index),
        partial_digest=partial.digest.tobytes().hex(),
    )


def rows_of_batches(batches: Iterable[pa.RecordBatch]) -> Rows:
    """The rows of a stream of record batches (one batch in memory at a time)."""
    return Rows.concat(Rows.of(b) for b in batches if b.num_rows)


def with_part_digest(table: pa.Table, total: int) -> pa.Table:
    """Attach the table's :class:`PartDigest` to its schema metadata (:data:`DIGEST_KEY`)."""
    digest = digest_rows(Rows.of(table), total)
    return table.replace_schema_metadata(
        {**(table.schema.metadata or {}), DIGEST_KEY: digest.to_bytes()}
    )


def decode_digest(raw: bytes) -> PartDigest:
    """Read a :class:`PartDigest` as :func:`with_part_digest` stores it.

    Exactly what the writer writes is accepted: the record of :data:`TABLE_HASH_V2`, its
    counts and positions int64 values >= 0 (``ranges`` in pairs), ``lanes`` the base64 of
    :data:`LANES` uint16 lanes and ``partial_digest`` 32 bytes of hex per ``partial_index``.
    Whether it describes its part's rows is the table hash's to judge
    (:mod:`sweep.store._parts_hash`: recomputed from the rows where it does not).

    Raises
    ------
    RunFolderError
        ``row digest: ...``, naming what is malformed (never a raw decoding error).
    """
    doc = footer_json(raw, "row digest")
    try:
        digest = PartDigest.from_json(doc, "row digest")
    except RecordFormatError as exc:
        raise RunFolderError(" ".join(str(exc).split())) from exc
    if digest.version != TABLE_HASH_V2:
        raise RunFolderError(
            f"row digest: expected version {TABLE_HASH_V2}, got {brief(digest.version)}"
        )
    for key in ("rows", "blocks", "ranges", "partial_index"):
        value = getattr(digest, key)
        for v in value if isinstance(value, tuple) else (value,):
            if not is_int(v) or not 0 <= v < 1 << 63:
                raise RunFolderError(f"row digest: expected {key} int64 >= 0, got {brief(v)}")
    if len(digest.ranges) % 2:
        raise RunFolderError("row digest: expected ranges in (start, stop) pairs, got an odd count")
    try:
        lanes = base64.b64decode(digest.lanes, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise RunFolderError(f"row digest: expected lanes in base64: {exc}") from exc
    try:
        partial = bytes.fromhex(digest.partial_digest)
    except ValueError as exc:
        raise RunFolderError(f"row digest: expected a partial_digest in hex: {exc}") from exc
    if len(lanes) != 2 * LANES:
        raise RunFolderError(
            f"row digest: expected lanes of {2 * LANES} bytes, got {len(lanes)} bytes"
        )
    if len(partial) != 32 * len(digest.partial_index):
        raise RunFolderError(
            f"row digest: expected a partial_digest of 32 bytes per partial_index "
            f"({32 * len(digest.partial_index)} bytes), got {len(partial)} bytes"
        )
    return digest


def stored_digest(schema: pa.Schema) -> PartDigest | None:
    """The :class:`PartDigest` a part's metadata carries (None when absent or unreadable).

    The part check refuses a part whose digest :func:`decode_digest` cannot read; a batch
    in memory (:func:`sweep.store._parts_hash.table_digest`) may lack one.
    """
    raw = (schema.metadata or {}).get(DIGEST_KEY)
    if raw is None:
        return None
    try:
        return decode_digest(raw)
    except RunFolderError:  # a damaged or foreign value: the caller recomputes from the rows
        return None


# --- the hash ----------------------------------------------------------------------------
def schema_lines(schema: pa.Schema) -> bytes:
    r"""``name\\ntype\\n`` of every column, as both hash versions feed them."""
    return b"".join(f"{f.name}\n{f.type}\n".encode() for f in schema)


def final_hash(schema: pa.Schema, n_rows: int, n_blocks: int, lanes: Lanes) -> str:
    """The v2 table hash from the counts and the (unreduced) lane sum."""
    h = hashlib.sha256(f"{TABLE_HASH_V2}\n".encode())
    h.update(schema_lines(schema))
    h.update(n_rows.to_bytes(8, "little") + n_blocks.to_bytes(8, "little"))
    h.update((np.asarray(lanes) % _LANE_MOD).astype("<u2").tobytes())
    return h.hexdigest()


def table_hash_v2(table: pa.Table) -> str:
    """The v2 hash of a table in memory (any row order; identical repeated rows count once).

    Parameters
    ----------
    table : pyarrow.Table
        A results table (with ``grid_index``).

    Returns
    -------
    str
        Hex sha256 (see the module docstring).
    """
    lanes, n_rows, n_blocks = block_sums(rows_of_batches(_batches(table)))
    return final_hash(table.schema, n_rows, n_blocks, lanes)


def _batches(table: pa.Table) -> Iterator[pa.RecordBatch]:
    yield from table.to_batches(max_chunksize=ROWS_AT_ONCE)
