"""A set of grid positions held as sorted, disjoint half-open ranges of int64.

What the driver tracks instead of one byte per config: the configs done are the union of
the parts' grid positions, and a part is (nearly always) a few runs of consecutive
positions, so the done set of a sweep is a few ranges per part and its complement, the
to-do list, is as small. Memory is O(ranges), never O(positions): a grid of 10^12 configs
with nothing done is one range.

::

    RangeSet.from_positions([0, 1, 2, 7, 8])      [0, 3) [7, 9)      len 5, 2 ranges
      .union(RangeSet.from_ranges([3], [5]))      [0, 5) [7, 9)      adjacent ranges merge
      .complement(12)                             [5, 7) [9, 12)     the to-do list
      .take(1, 4)                                 array([6, 9, 10])  positions by rank
      .drop(2)                                    [9, 12)
      .batches(2)                                 [5, 6], [9, 10], [11]

Every operation is a few numpy passes over the range bounds (``starts``, ``stops``); the
positions themselves are made only by :meth:`RangeSet.take`, :meth:`RangeSet.at_ranks` and
:meth:`RangeSet.batches`, as many as asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
from numpy.typing import ArrayLike, NDArray

_EMPTY = np.zeros(0, dtype=np.int64)


def _normalised(
    starts: NDArray[np.int64], stops: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Sort ranges, drop empty ones, merge overlapping and adjacent ones."""
    keep = stops > starts
    starts, stops = starts[keep], stops[keep]
    if starts.shape[0] == 0:
        return _EMPTY, _EMPTY
    order = np.argsort(starts, kind="stable")
    starts, stops = starts[order], stops[order]
    reach = np.maximum.accumulate(stops)
    # A new range begins where its start lies beyond everything before it.
    begins = np.concatenate(([True], starts[1:] > reach[:-1]))
    first = np.flatnonzero(begins)
    last = np.concatenate((first[1:], [starts.shape[0]])) - 1
    return starts[first].copy(), reach[last].copy()


class RangeSet:
    """An immutable set of int64 positions as sorted, disjoint, non-adjacent ranges.

    Parameters
    ----------
    starts, stops : array_like of int
        Range bounds, ``[starts[i], stops[i])``; any order, overlapping or empty ranges
        allowed (they are normalised).

    Notes
    -----
    ``len()`` is the number of positions (a Python int); :attr:`n_ranges` the number of
    ranges. Two sets are equal when they hold the same positions.
    """

    __slots__ = ("starts", "stops")

    def __init__(self, starts: ArrayLike, stops: ArrayLike) -> None:
        lo = np.asarray(starts, dtype=np.int64).reshape(-1)
        hi = np.asarray(stops, dtype=np.int64).reshape(-1)
        if lo.shape != hi.shape:
            raise ValueError(f"starts and stops differ in length: {lo.shape[0]} != {hi.shape[0]}")
        self.starts: NDArray[np.int64]
        self.stops: NDArray[np.int64]
        self.starts, self.stops = _normalised(lo, hi)
        self.starts.flags.writeable = False
        self.stops.flags.writeable = False

    # --- construction -----------------------------------------------------------------
    @classmethod
    def from_ranges(cls, starts: ArrayLike, stops: ArrayLike) -> RangeSet:
        """The union of the ranges ``[starts[i], stops[i])``."""
        return cls(starts, stops)

    @classmethod
    def from_positions(cls, positions: ArrayLike) -> RangeSet:
        """The set of the given positions (any order, repeats allowed)."""
        values = np.unique(np.asarray(positions, dtype=np.int64).reshape(-1))
        if values.shape[0] == 0:
            return cls.empty()
        breaks = np.flatnonzero(np.diff(values) != 1) + 1
        first = np.concatenate(([0], breaks))
        last = np.concatenate((breaks, [values.shape[0]])) - 1
        return cls(values[first], values[last] + 1)

    @classmethod
    def full(cls, n: int) -> RangeSet:
        """Positions ``0 .. n-1``."""
        return cls([0], [n])

    @classmethod
    def empty(cls) -> RangeSet:
        """No position."""
        return cls(_EMPTY, _EMPTY)

    @classmethod
    def union_all(cls, sets: Iterable[RangeSet]) -> RangeSet:
        """The union of many sets, normalised once (O(total ranges), not pairwise)."""
        items = list(sets)
        if not items:
            return cls.empty()
        return cls(
            np.concatenate([s.starts for s in items]), np.concatenate([s.stops for s in items])
        )

    # --- size -------------------------------------------------------------------------
    def __len__(self) -> int:
        return int((self.stops - self.starts).sum())

    @property
    def n_ranges(self) -> int:
        """How many ranges hold the positions."""
        return int(self.starts.shape[0])

    def __bool__(self) -> bool:
        return self.n_ranges > 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RangeSet):
            return NotImplemented
        return bool(
            np.array_equal(self.starts, other.starts) and np.array_equal(self.stops, other.stops)
        )

    def __hash__(self) -> int:
        return hash((self.starts.tobytes(), self.stops.tobytes()))

    def __repr__(self) -> str:
        pairs = zip(self.starts[:4].tolist(), self.stops[:4].tolist(), strict=True)
        shown = " ".join(f"[{a}, {b})" for a, b in pairs)
        more = f" ... ({self.n_ranges} ranges)" if self.n_ranges > 4 else ""
        return f"RangeSet({shown or 'empty'}{more})"

    @property
    def first(self) -> int:
        """The smallest position (IndexError when empty)."""
        if not self:
            raise IndexError("an empty RangeSet has no first position")
        return int(self.starts[0])

    @property
    def last(self) -> int:
        """The largest position (IndexError when empty)."""
        if not self:
            raise IndexError("an empty RangeSet has no last position")
        return int(self.stops[-1]) - 1

    # --- set algebra ------------------------------------------------------------------
    def union(self, other: RangeSet) -> RangeSet:
        """Positions in either set."""
        return RangeSet.union_all((self, other))

    def complement(self, n: int) -> RangeSet:
        """Positions ``0 .. n-1`` not in this set (the to-do list of a grid of ``n``)."""
        inner = self.intersection(RangeSet.full(n))
        edges_lo = np.concatenate(([0], inner.stops))
        edges_hi = np.concatenate((inner.starts, [n]))
        return RangeSet(edges_lo, edges_hi)

    def intersection(self, other: RangeSet) -> RangeSet:
        """Positions in both sets."""
        if not self or not other:
            return RangeSet.empty()
        # Every pair of ranges that can meet: for each range here, the ranges of ``other``
        # from the first that ends after its start to the last that starts before its end.
        lo = np.searchsorted(other.stops, self.starts, side="right")
        hi = np.searchsorted(other.starts, self.stops, side="left")
        counts = np.maximum(hi - lo, 0)
        mine = np.repeat(np.arange(self.n_ranges), counts)
        if mine.shape[0] == 0:
            return RangeSet.empty()
        offsets = np.arange(mine.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
        theirs = lo[mine] + offsets
        starts = np.maximum(self.starts[mine], other.starts[theirs])
        stops = np.minimum(self.stops[mine], other.stops[theirs])
        return RangeSet(starts, stops)

    def difference(self, other: RangeSet) -> RangeSet:
        """Positions here and not in ``other`` (positions are grid positions, ``>= 0``)."""
        if not self or not other:
            return self
        return self.intersection(other.complement(int(self.stops[-1])))

    def contains(self, positions: ArrayLike) -> NDArray[np.bool_]:
        """For each position, whether it is in the set."""
        values = np.asarray(positions, dtype=np.int64)
        at = np.searchsorted(self.starts, values, side="right") - 1
        inside = at >= 0
        clipped = np.maximum(at, 0)
        if self.n_ranges == 0:
            return np.zeros(values.shape, dtype=bool)
        return inside & (values < self.stops[clipped])

    # --- positions by rank ------------------------------------------------------------
    def _cumulative(self) -> NDArray[np.int64]:
        """Positions before each range (length ``n_ranges + 1``)."""
        return np.concatenate(([0], np.cumsum(self.stops - self.starts)))

    def at_ranks(self, ranks: ArrayLike) -> NDArray[np.int64]:
        """The positions of the given ranks (0 = the smallest), each ``0 <= rank < len``."""
        r = np.asarray(ranks, dtype=np.int64)
        before = self._cumulative()
        if r.size and (int(r.min()) < 0 or int(r.max()) >= int(before[-1])):
            raise IndexError(f"rank out of range 0..{int(before[-1]) - 1}")
        which = np.searchsorted(before, r, side="right") - 1
        return self.starts[which] + (r - before[which])

    def take(self, lo: int, hi: int) -> NDArray[np.int64]:
        """The positions of ranks ``lo .. hi-1`` (clipped to the set), in ascending order.

        Only those positions are made: ``take(0, 32)`` of a set of 10^12 positions is 32
        integers.
        """
        before = self._cumulative()
        total = int(before[-1])
        lo, hi = max(0, min(lo, total)), max(0, min(hi, total))
        if hi <= lo:
            return _EMPTY.copy()
        first = int(np.searchsorted(before, lo, side="right")) - 1
        last = int(np.searchsorted(before, hi, side="left"))
        pieces = []
        for k in range(first, last):
            a = int(self.starts[k]) + max(0, lo - int(before[k]))
            b = int(self.starts[k]) + min(int(self.stops[k] - self.starts[k]), hi - int(before[k]))
            pieces.append(np.arange(a, b, dtype=np.int64))
        return np.concatenate(pieces) if pieces else _EMPTY.copy()

    def drop(self, n: int) -> RangeSet:
        """The set without its ``n`` smallest positions."""
        if n <= 0:
            return self
        before = self._cumulative()
        if n >= int(before[-1]):
            return RangeSet.empty()
        k = int(np.searchsorted(before, n, side="right")) - 1
        starts = self.starts[k:].copy()
        starts[0] += n - int(before[k])
        return RangeSet(starts, self.stops[k:])

    def batches(self, size: int) -> Iterator[NDArray[np.int64]]:
        """Consecutive batches of ``size`` positions (the last may be shorter), ascending.

        Lazy: one batch is made at a time, so iterating a to-do list never holds more
        than a batch of positions.
        """
        if size < 1:
            raise ValueError(f"size: expected a positive integer, got {size}")
        pending: list[NDArray[np.int64]] = []
        held = 0
        for a, b in self.ranges():
            while a < b:
                step = min(b - a, size - held)
                pending.append(np.arange(a, a + step, dtype=np.int64))
                held += step
                a += step
                if held == size:
                    yield np.concatenate(pending) if len(pending) > 1 else pending[0]
                    pending, held = [], 0
        if pending:
            yield np.concatenate(pending) if len(pending) > 1 else pending[0]

    def ranges(self) -> Iterator[tuple[int, int]]:
        """The ``(start, stop)`` pairs, ascending."""
        yield from zip(self.starts.tolist(), self.stops.tolist(), strict=True)
