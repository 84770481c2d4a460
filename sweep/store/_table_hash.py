r"""The results-table hash (invariant 3): sha256 over a documented canonical byte form.

Two versions. A run folder records which one it carries (``manifest.json``'s
``table_hash_version``; a folder without the key is v1): new runs use
``raysweep-table-v2`` (:mod:`sweep.store._row_set_hash`), computed from per-part digests
without the whole table; folders written before it keep ``raysweep-table-v1``, below, and
still verify with it.

Recipe (``raysweep-table-v1``), computable with pyarrow alone (see docs/reference/table-hash.md):

1. Sort the table by ``config_id`` (byte order of the UTF-8 strings, ascending), keeping
   the first row of a config held twice (its copies are identical: parts whose copies
   differ are refused as a conflict before any table is made).
2. Start a sha256 with ``b"raysweep-table-v1\\n"`` and the row count as 8 bytes little-endian.
3. For each column in table order: feed ``name + "\\n" + str(arrow_type) + "\\n"`` (UTF-8),
   then the column's values:

   * int64 / float64: the values as little-endian 8-byte integers / IEEE-754 doubles,
     exactly as stored (NaN bit patterns included, no rounding);
   * bool: one byte per value, 0 or 1;
   * string: every value's UTF-8 length as little-endian int64 (-1 for null), then the
     concatenated UTF-8 bytes of the non-null values.

   Columns other than strings may not hold nulls.
4. The hash is the hex digest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from sweep.store._row_set_hash import TABLE_HASH_V2, table_hash_v2

TABLE_HASH_V1 = "raysweep-table-v1"
#: The versions this engine computes, oldest first; the last is what new runs use.
TABLE_HASH_VERSIONS = (TABLE_HASH_V1, TABLE_HASH_V2)
#: The version a new run folder records.
CURRENT_TABLE_HASH = TABLE_HASH_V2


def hash_version(name: str) -> str:
    """The full version name of ``name`` (``"v1"``, ``"v2"`` or a full name); ValueError else."""
    full = name if name.startswith("raysweep-table-") else f"raysweep-table-{name}"
    if full not in TABLE_HASH_VERSIONS:
        raise ValueError(
            f"table hash version: expected one of {', '.join(TABLE_HASH_VERSIONS)} (or v1, "
            f"v2), got {name!r}"
        )
    return full


def canonical_order(ids: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Row positions that sort ``config_id`` ascending, keeping one row per id.

    THE canonical row order (results, the table hash, the report). A config found in two
    parts (possible only after a crash between a part's write and the driver's bookkeeping)
    has identical rows; the first is kept.
    """
    order = pc.sort_indices(ids)
    sorted_ids = ids.take(order)
    if isinstance(sorted_ids, pa.ChunkedArray):
        sorted_ids = sorted_ids.combine_chunks()
    if len(sorted_ids) > 1:
        repeats = pc.equal(sorted_ids.slice(1), sorted_ids.slice(0, len(sorted_ids) - 1))
        if pc.any(repeats).as_py():
            order = order.filter(pa.concat_arrays([pa.array([True]), pc.invert(repeats)]))
    return order


#: Hex digits of a config id (:func:`sweep.config_id`: 128 bits, lower case).
CONFIG_ID_HEX_DIGITS = 32


def config_id_keys(ids: pa.ChunkedArray | pa.Array) -> NDArray[np.uint64] | None:
    """Each config id as its 128-bit value, shape (n, 2): high and low 64 bits.

    Lower-case hex digits sort as their values do (``0-9`` before ``a-f`` in byte order),
    so sorting these keys is sorting the strings: 16 bytes per id instead of the string and
    its sorted copy. None when an id is null or not 32 lower-case hex digits (a folder this
    engine did not write): the caller then sorts the strings (:func:`canonical_order`).
    """
    arr = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    n = len(arr)
    if n == 0:
        return np.zeros((0, 2), dtype=np.uint64)
    if not pa.types.is_string(arr.type) or arr.null_count:
        return None
    width = CONFIG_ID_HEX_DIGITS
    offsets = np.frombuffer(arr.buffers()[1], dtype="<i4")[arr.offset : arr.offset + n + 1]
    if not np.array_equal(np.diff(offsets), np.full(n, width, dtype=np.int32)):
        return None
    chars = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[0] + n * width]
    if not _is_lower_hex(chars):
        return None
    digits = chars.reshape(n, width).astype(np.int64)
    digits -= np.where(digits >= ord("a"), ord("a") - 10, ord("0"))
    shifts = np.arange(60, -1, -4, dtype=np.uint64)  # 16 digits per 64-bit half
    halves = digits.astype(np.uint64).reshape(n, 2, width // 2) << shifts
    keys: NDArray[np.uint64] = np.bitwise_or.reduce(halves, axis=2)
    return keys


def _is_lower_hex(chars: NDArray[np.uint8]) -> bool:
    """Whether every byte is ``0-9`` or ``a-f``."""
    digit = (chars >= ord("0")) & (chars <= ord("9"))
    letter = (chars >= ord("a")) & (chars <= ord("f"))
    return bool((digit | letter).all())


def canonical_order_of_keys(keys: NDArray[np.uint64]) -> NDArray[np.intp]:
    """:func:`canonical_order` from :func:`config_id_keys`: the same positions.

    A stable sort by the high then the low half (as the strings' stable sort), keeping the
    first row of an id held twice.
    """
    order: NDArray[np.intp] = np.lexsort((keys[:, 1], keys[:, 0]))
    if len(order) > 1:
        high, low = keys[order, 0], keys[order, 1]
        repeats = (high[1:] == high[:-1]) & (low[1:] == low[:-1])
        del high, low
        if repeats.any():
            order = order[np.concatenate([[True], ~repeats])]
    return order


def sort_by_config_id(table: pa.Table) -> pa.Table:
    """Return ``table`` in the canonical row order (:func:`canonical_order`)."""
    return table.take(canonical_order(table.column("config_id")))


def _column_bytes(column: pa.ChunkedArray) -> list[bytes]:
    arr = column.combine_chunks()
    kind = arr.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        lengths = pc.fill_null(pc.binary_length(arr), -1).to_numpy(zero_copy_only=False)
        arr = arr.cast(pa.large_string())
        offsets = np.frombuffer(arr.buffers()[1], dtype="<i8")[
            arr.offset : arr.offset + len(arr) + 1
        ]
        data = arr.buffers()[2]
        body = b"" if data is None else data.to_pybytes()[offsets[0] : offsets[-1]]
        return [lengths.astype("<i8").tobytes(), body]
    if arr.null_count:
        raise ValueError(f"column of type {kind} holds nulls; only strings may")
    if pa.types.is_boolean(kind):
        return [arr.to_numpy(zero_copy_only=False).astype(np.uint8).tobytes()]
    if pa.types.is_int64(kind):
        return [arr.to_numpy().astype("<i8").tobytes()]
    if pa.types.is_float64(kind):
        return [arr.to_numpy().astype("<f8").tobytes()]
    raise ValueError(f"unsupported column type {kind} for the table hash")


def hash_columns(n_rows: int, columns: Iterable[tuple[str, pa.ChunkedArray | pa.Array]]) -> str:
    """Hash columns already in canonical (``config_id``-sorted) row order, one at a time.

    Parameters
    ----------
    n_rows : int
        Rows in the table.
    columns : iterable of (name, array)
        Every column in table order; consumed lazily, so a caller can read one column at a
        time and keep memory to one column.

    Returns
    -------
    str
        Hex sha256 of the canonical byte form (see the module docstring).
    """
    h = hashlib.sha256()
    h.update(f"{TABLE_HASH_V1}\n".encode())
    h.update(n_rows.to_bytes(8, "little"))
    for name, column in columns:
        chunked = column if isinstance(column, pa.ChunkedArray) else pa.chunked_array([column])
        h.update(f"{name}\n{chunked.type}\n".encode())
        for chunk in _column_bytes(chunked):
            h.update(chunk)
    return h.hexdigest()


def table_hash(
    table: pa.Table, *, presorted: bool = False, version: str = CURRENT_TABLE_HASH
) -> str:
    """Return the canonical sha256 of a results table (see the module docstring).

    Parameters
    ----------
    table : pyarrow.Table
        A results table (any row order unless ``presorted``).
    presorted : bool
        The table is already sorted by ``config_id`` (v1 only: v2 does not depend on the
        row order).
    version : str
        ``raysweep-table-v2`` (default, what new runs record) or ``raysweep-table-v1``
        (``"v1"`` and ``"v2"`` are accepted too).

    Returns
    -------
    str
        Hex sha256.
    """
    if hash_version(version) == TABLE_HASH_V2:
        return table_hash_v2(table)
    if not presorted:
        table = sort_by_config_id(table)
    return hash_columns(table.num_rows, zip(table.column_names, table.columns, strict=True))


def _cell_bytes(column: pa.ChunkedArray) -> list[bytes]:
    """Each value's bytes in the canonical form (strings with their length; null apart)."""
    arr = column.combine_chunks()
    kind = arr.type
    if arr.null_count == 0 and (
        pa.types.is_boolean(kind) or pa.types.is_int64(kind) or pa.types.is_float64(kind)
    ):
        dtype = "<f8" if pa.types.is_float64(kind) else "<i8" if pa.types.is_int64(kind) else "u1"
        values = np.ascontiguousarray(arr.to_numpy(zero_copy_only=False).astype(dtype))
        return [row.tobytes() for row in values.view(np.uint8).reshape(len(arr), -1)]
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return [
            b"\xff" if v is None else len(v.encode()).to_bytes(8, "little") + v.encode()
            for v in arr.to_pylist()
        ]
    return [f"{kind}:{v!r}".encode() for v in arr.to_pylist()]


def row_digests(table: pa.Table) -> list[bytes]:
    """The sha256 of each row's values in the canonical byte form (column names included).

    Two rows have the same digest exactly when every column holds the same bytes (NaN bit
    patterns and signed zeros included): how a config found in two parts is judged an
    identical repeat or a conflict. One Python step per value: for the few rows that repeat,
    not for a whole table.
    """
    digests = [hashlib.sha256() for _ in range(table.num_rows)]
    for name, column in zip(table.column_names, table.columns, strict=True):
        head = f"{name}\n{column.type}\n".encode()
        for digest, cell in zip(digests, _cell_bytes(column), strict=True):
            digest.update(head)
            digest.update(cell)
    return [d.digest() for d in digests]
