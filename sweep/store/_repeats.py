"""Keys that more than one part holds, found in bounded memory.

Two good parts may hold the same config (a batch written twice after a crash) or, in a
forged folder, the same ``config_id`` at another grid position. Finding them must not hold
every key of the run at once (invariant 9):

- **grid positions** are compared as ranges (:func:`overlaps` of each part's
  :class:`sweep.common._range_set.RangeSet`, a few ranges per part);
- **config ids** are compared by 64-bit fingerprints in passes: pass ``p`` of ``n`` keeps the
  fingerprints ``f`` with ``f % n == p`` (at most :data:`FINGERPRINTS_AT_ONCE` of them for
  evenly spread ids), sorts them and keeps the repeated ones; the ids behind a repeated
  fingerprint are then compared exactly, so a fingerprint collision costs a second look,
  never a wrong answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from sweep.common._range_set import RangeSet

#: Fingerprints (8 bytes each) one pass over the parts' ``config_id`` columns holds: 64 MiB.
FINGERPRINTS_AT_ONCE = 1 << 23

_MIX = np.uint64(0x9E3779B97F4A7C15)

#: A part's ``config_id`` column, a record batch's array at a time.
IdBatches = Callable[[str], Iterable[pa.Array]]


def overlaps(sets: list[RangeSet]) -> RangeSet:
    """Positions that two or more of ``sets`` hold."""
    if len(sets) < 2:
        return RangeSet.empty()
    starts = np.concatenate([s.starts for s in sets])
    stops = np.concatenate([s.stops for s in sets])
    where = np.concatenate((starts, stops))
    step = np.concatenate((np.ones_like(starts), -np.ones_like(stops)))
    order = np.lexsort((step, where))  # at one position, ends before starts: [a,b) [b,c) meet
    where, cover = where[order], np.cumsum(step[order])
    double = np.flatnonzero(cover[:-1] >= 2)
    return RangeSet(where[double], where[double + 1])


def fingerprints(ids: pa.Array) -> NDArray[np.uint64]:
    """A 64-bit fingerprint of each string's bytes (vectorised; a null is the empty string).

    Equal strings have equal fingerprints; different ones almost never do (the caller
    compares the strings behind a repeated fingerprint).
    """
    arr = pc.fill_null(ids.cast(pa.large_binary()), b"")
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    offsets = np.frombuffer(arr.buffers()[1], dtype="<i8")[arr.offset : arr.offset + n + 1]
    data = arr.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    width = max(8, int(-(-int(lengths.max()) // 8) * 8))
    cols = np.arange(width, dtype=np.int64)
    inside = cols[None, :] < lengths[:, None]
    where = np.where(inside, offsets[:-1, None] + cols[None, :], 0)
    cells = np.where(inside, raw[where] if raw.size else 0, 0).astype(np.uint8)
    words = np.ascontiguousarray(cells).view("<u8")
    with np.errstate(over="ignore"):
        out = lengths.astype(np.uint64) * _MIX
        for k in range(words.shape[1]):
            out = (out ^ words[:, k]) * _MIX
            out ^= out >> np.uint64(29)
    return out


def repeated_ids(
    names: list[str], id_batches: IdBatches, rows: int, at_once: int = FINGERPRINTS_AT_ONCE
) -> pa.Array:
    """The ``config_id`` values that two or more of these parts hold.

    Parameters
    ----------
    names : list of str
        Parts, each holding distinct ids (checked per part before).
    id_batches : callable
        A part's ``config_id`` column, an array at a time.
    rows : int
        Rows of the parts together (sets the number of passes).
    at_once : int
        Fingerprints a pass may hold.

    Returns
    -------
    pyarrow.Array
        The repeated ids (strings), each once.
    """
    passes = max(1, -(-rows // max(1, at_once)))
    suspects: list[NDArray[np.uint64]] = []
    for p in range(passes):
        kept = []
        for name in names:
            for ids in id_batches(name):
                found = fingerprints(ids)
                kept.append(found if passes == 1 else found[found % np.uint64(passes) == p])
        values = np.sort(np.concatenate(kept)) if kept else np.zeros(0, np.uint64)
        suspects.append(np.unique(values[1:][values[1:] == values[:-1]]))
    suspect = np.concatenate(suspects)
    if suspect.size == 0:
        return pa.array([], type=pa.string())
    behind = [
        ids.filter(pa.array(np.isin(fingerprints(ids), suspect)))
        for name in names
        for ids in id_batches(name)
    ]
    counts = pc.value_counts(pa.chunked_array(behind, type=pa.string()))
    return counts.field("values").filter(pc.greater(counts.field("counts"), 1))
