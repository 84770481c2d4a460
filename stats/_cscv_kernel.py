"""Compiled CSCV: every split's in-sample best and its out-of-sample rank, from block sums.

Combinatorially symmetric cross-validation puts S/2 of S blocks in sample, C(S, S/2) ways
(12,870 for S = 16), and for each split needs a metric of every strategy in and out of
sample. Summing S/2 block sums per (split, strategy) costs S/2 additions; here the S blocks
are cut into a low half (blocks ``0..S/2-1``) and a high half, each strategy's sums over
every subset of each half are tabulated once (``2 * 2**(S/2)`` entries, built by adding one
block to a smaller subset), and the pooled sums of any split (or its complement) are ONE
addition, low subset plus high subset. Strategies are processed in chunks so the tables stay
small and strategy-contiguous; splits run in parallel threads, each split reduced over the
strategies in index order, so the result does not depend on the thread count.

Strategies are compared by ``key = mean * |mean| / var``, which orders exactly as the
Sharpe ratio ``mean / sqrt(var)`` does (``x * |x|`` is increasing) and needs no square root;
a strategy with ``var <= 0`` (constant) has no key and ranks below every number.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

#: Strategies tabulated at once (tables of 2**(S/2) x chunk entries per half and statistic).
CHUNK = 1024
_NO_KEY = -np.inf


@numba.njit(cache=True, nogil=True)
def _subset_table(x_t, lo, half, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``out[mask, j] = sum of x_t[lo + b, j] over the bits b of mask``, j over the chunk."""
    m = x_t.shape[1]
    for j in range(m):
        out[0, j] = 0.0
    for mask in range(1, 1 << half):
        low_bit = mask & -mask
        b = 0
        while (1 << b) != low_bit:
            b += 1
        rest = mask ^ low_bit
        for j in range(m):
            out[mask, j] = out[rest, j] + x_t[lo + b, j]


@numba.njit(cache=True, nogil=True, inline="always")
def _key(n, s, q, sharpe):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    mean = s / n
    if not sharpe:
        return mean if mean == mean else _NO_KEY
    var = (q - s * mean) / (n - 1.0)
    if var > 0.0:  # False for NaN too
        return mean * abs(mean) / var
    return _NO_KEY


@numba.njit(cache=True, nogil=True)
def _first_argmax(keys):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Largest key and its first index (-1 if none beats -inf), over four running maxima.

    Four independent maxima (index j mod 4) keep the comparisons off one dependency chain;
    merging them by (value, then lowest index) gives exactly the first maximum.
    """
    m = keys.shape[0]
    b0 = b1 = b2 = b3 = _NO_KEY
    i0 = i1 = i2 = i3 = -1
    j = 0
    while j + 4 <= m:
        if keys[j] > b0:
            b0, i0 = keys[j], j
        if keys[j + 1] > b1:
            b1, i1 = keys[j + 1], j + 1
        if keys[j + 2] > b2:
            b2, i2 = keys[j + 2], j + 2
        if keys[j + 3] > b3:
            b3, i3 = keys[j + 3], j + 3
        j += 4
    while j < m:
        if keys[j] > b0:
            b0, i0 = keys[j], j
        j += 1
    best, where = b0, i0
    for v, i in ((b1, i1), (b2, i2), (b3, i3)):
        if i >= 0 and (v > best or (v == best and (where < 0 or i < where))):
            best, where = v, i
    return best, where


@numba.njit(cache=True, nogil=True, parallel=True)
def _best_pass(ln, ls, lq, hn, hs, hq, low_mask, high_mask, sharpe, index, best_key, best_at):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Update each split's in-sample best: a greater key wins, an equal key the lower index.

    ``index`` names the chunk's strategies, ascending, so the chunk's first maximum is its
    lowest index among ties; ``best_at`` is -1 while a split has no best.
    """
    m = ls.shape[1]
    for k in numba.prange(low_mask.shape[0]):
        a = low_mask[k]
        b = high_mask[k]
        keys = np.empty(m)
        for j in range(m):  # no loop-carried dependency: vectorised
            keys[j] = _key(ln[a, j] + hn[b, j], ls[a, j] + hs[b, j], lq[a, j] + hq[b, j], sharpe)
        key, where = _first_argmax(keys)
        if where >= 0 and (key > best_key[k] or (key == best_key[k] and index[where] < best_at[k])):
            best_key[k] = key
            best_at[k] = index[where]


@numba.njit(cache=True, nogil=True, parallel=True)
def _rank_pass(ln, ls, lq, hn, hs, hq, low_mask, high_mask, sharpe, target, below, ties):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Count, per split, strategies whose out-of-sample key is below / equal to the target."""
    m = ls.shape[1]
    for k in numba.prange(low_mask.shape[0]):
        a = low_mask[k]
        b = high_mask[k]
        t = target[k]
        nb = 0
        nt = 0
        for j in range(m):
            key = _key(ln[a, j] + hn[b, j], ls[a, j] + hs[b, j], lq[a, j] + hq[b, j], sharpe)
            if key < t:
                nb += 1
            elif key == t:
                nt += 1
        below[k] += nb
        ties[k] += nt


_FloatArray = NDArray[np.float64]
_SixTables = tuple[_FloatArray, _FloatArray, _FloatArray, _FloatArray, _FloatArray, _FloatArray]


class _Tables:
    """Subset-sum tables of one chunk of strategies, in buffers reused across chunks."""

    def __init__(self, n_blocks: int, size: int) -> None:
        self.half = n_blocks // 2
        self.buffers = np.empty((6, 1 << self.half, size))

    def fill(
        self, counts: NDArray[np.float64], sums: NDArray[np.float64], sums_sq: NDArray[np.float64]
    ) -> _SixTables:
        """Tables (low n, s, q, high n, s, q) of these rows, shape ``(2**(S/2), rows)``."""
        m = sums.shape[0]
        tables = [self.buffers[i, :, :m] for i in range(6)]
        sources = [(lo, x) for lo in (0, self.half) for x in (counts, sums, sums_sq)]
        for table, (lo, x) in zip(tables, sources, strict=True):
            _subset_table(np.ascontiguousarray(x.T), lo, self.half, table)
        return tables[0], tables[1], tables[2], tables[3], tables[4], tables[5]


@dataclass(frozen=True)
class CSCVSplits:
    """The ``C(S, S/2)`` splits of S blocks, and their blocks as bit masks within each half.

    Attributes
    ----------
    n_blocks : int
        Blocks S (even).
    combos : ndarray of int8, shape (n_splits, S/2)
        Each split's in-sample blocks, in the lexicographic order ``itertools`` yields.
    is_low, is_high, oos_low, oos_high : ndarray of int64, shape (n_splits,)
        The in-sample and out-of-sample blocks of each split within the low half (blocks
        ``0..S/2-1``) and the high half, as bit masks (:func:`split_masks`).
    """

    n_blocks: int
    combos: NDArray[np.int8]
    is_low: NDArray[np.int64]
    is_high: NDArray[np.int64]
    oos_low: NDArray[np.int64]
    oos_high: NDArray[np.int64]

    @classmethod
    def of(cls, n_blocks: int, combos: NDArray[np.int8] | None = None) -> CSCVSplits:
        """Every split of ``n_blocks`` blocks (or the splits ``combos``)."""
        if combos is None:
            half = range(n_blocks // 2)
            every = itertools.combinations(range(n_blocks), len(half))
            combos = np.array(list(every), dtype=np.int8).reshape(-1, len(half))
        return cls(n_blocks, combos, *split_masks(combos, n_blocks))

    @property
    def n_splits(self) -> int:
        """Number of splits."""
        return len(self.combos)


def split_masks(combos: NDArray[np.int8], n_blocks: int) -> tuple[NDArray[np.int64], ...]:
    """Bit masks of each split's in-sample and out-of-sample blocks within each half.

    Returns
    -------
    is_low, is_high, oos_low, oos_high : ndarray of int64, shape (n_splits,)
    """
    half = n_blocks // 2
    bits = np.zeros(len(combos), dtype=np.int64)
    for col in range(combos.shape[1]):
        bits |= np.int64(1) << combos[:, col].astype(np.int64)
    full = (1 << half) - 1
    is_low, is_high = bits & full, (bits >> half) & full
    return is_low, is_high, full ^ is_low, full ^ is_high


def no_bests(n_splits: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The state of :func:`best_update` before any strategy: no key, no index (-1)."""
    return np.full(n_splits, _NO_KEY), np.full(n_splits, -1, dtype=np.int64)


def best_update(
    counts: NDArray[np.float64],
    sums: NDArray[np.float64],
    sums_sq: NDArray[np.float64],
    index: NDArray[np.int64],
    splits: CSCVSplits,
    sharpe: bool,
    best_key: NDArray[np.float64],
    best_at: NDArray[np.int64],
) -> None:
    """Fold some strategies into each split's in-sample best (in place).

    Parameters
    ----------
    counts, sums, sums_sq : ndarray of float64, shape (m, S)
        Periods, sum and sum of squares of each strategy (row) over each block.
    index : ndarray of int64, shape (m,)
        The strategies' indices, ASCENDING (distinct from those folded in before).
    splits : CSCVSplits
        The splits.
    sharpe : bool
        Compare by Sharpe ratio (True) or by mean (False).
    best_key, best_at : ndarray, shape (n_splits,)
        Each split's best key and its strategy's index so far (:func:`no_bests` at first):
        a greater key wins, an equal key the lower index, so the result is the first
        maximum by index whatever order the strategies come in.
    """
    m = len(sums)
    if not m:
        return
    tables = _Tables(splits.n_blocks, min(CHUNK, m))
    for lo in range(0, m, CHUNK):
        hi = min(lo + CHUNK, m)
        chunk = tables.fill(counts[lo:hi], sums[lo:hi], sums_sq[lo:hi])
        _best_pass(*chunk, splits.is_low, splits.is_high, sharpe, index[lo:hi], best_key, best_at)


def cscv_targets(
    counts: NDArray[np.float64],
    sums: NDArray[np.float64],
    sums_sq: NDArray[np.float64],
    row: NDArray[np.intp],
    splits: CSCVSplits,
    sharpe: bool,
) -> NDArray[np.float64]:
    """The out-of-sample key of strategy ``row[k]`` in split ``k``, for each split.

    From the rows' own subset tables, built by the same additions as in
    :func:`rank_update`, so a strategy compared with itself there is an exact tie.
    """
    rows, where = np.unique(row, return_inverse=True)
    target = np.empty(len(row))
    if not len(rows):
        return target
    tables = _Tables(splits.n_blocks, min(CHUNK, len(rows)))
    for lo in range(0, len(rows), CHUNK):
        pick = rows[lo : lo + CHUNK]
        ln, ls, lq, hn, hs, hq = tables.fill(counts[pick], sums[pick], sums_sq[pick])
        inside = (where >= lo) & (where < lo + len(pick))
        col = where[inside] - lo
        a, b = splits.oos_low[inside], splits.oos_high[inside]
        n_, s_, q_ = ln[a, col] + hn[b, col], ls[a, col] + hs[b, col], lq[a, col] + hq[b, col]
        target[inside] = [_key(*v, sharpe) for v in zip(n_, s_, q_, strict=True)]
    return target


def rank_update(
    counts: NDArray[np.float64],
    sums: NDArray[np.float64],
    sums_sq: NDArray[np.float64],
    splits: CSCVSplits,
    sharpe: bool,
    target: NDArray[np.float64],
    below: NDArray[np.int64],
    ties: NDArray[np.int64],
) -> None:
    """Add, per split, the strategies whose out-of-sample key is below / equal to ``target``."""
    m = len(sums)
    if not m:
        return
    tables = _Tables(splits.n_blocks, min(CHUNK, m))
    for lo in range(0, m, CHUNK):
        hi = min(lo + CHUNK, m)
        chunk = tables.fill(counts[lo:hi], sums[lo:hi], sums_sq[lo:hi])
        _rank_pass(*chunk, splits.oos_low, splits.oos_high, sharpe, target, below, ties)


def relative_rank(below: NDArray[np.int64], ties: NDArray[np.int64]) -> NDArray[np.float64]:
    """Rank from counts below and tied (the strategy itself among the ties): 1 = worst."""
    rank: NDArray[np.float64] = below + (ties + 1) / 2.0
    return rank


def cscv_best_and_ranks(
    counts: NDArray[np.float64],
    sums: NDArray[np.float64],
    sums_sq: NDArray[np.float64],
    combos: NDArray[np.int8],
    sharpe: bool,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Each split's in-sample best strategy and its out-of-sample rank among all strategies.

    Parameters
    ----------
    counts, sums, sums_sq : ndarray of float64, shape (N, S)
        Periods, sum and sum of squares of each strategy (row) over each block.
    combos : ndarray of int8, shape (n_splits, S/2)
        The in-sample blocks of each split.
    sharpe : bool
        Compare by Sharpe ratio (True) or by mean (False).

    Returns
    -------
    best : ndarray of int64, shape (n_splits,)
        Row of the in-sample best (lowest row among ties; row 0 if no strategy has a key).
    rank : ndarray of float64, shape (n_splits,)
        Its out-of-sample rank, 1 = worst, average rank for ties.
    """
    n, s = sums.shape
    splits = CSCVSplits.of(s, combos)
    best_key, best = no_bests(splits.n_splits)
    best_update(counts, sums, sums_sq, np.arange(n, dtype=np.int64), splits, sharpe, best_key, best)
    best[best < 0] = 0  # no strategy has a key: the first one, as argmax over -inf gives
    target = cscv_targets(counts, sums, sums_sq, best, splits, sharpe)
    below = np.zeros(splits.n_splits, dtype=np.int64)
    ties = np.zeros(splits.n_splits, dtype=np.int64)
    rank_update(counts, sums, sums_sq, splits, sharpe, target, below, ties)
    return best, relative_rank(below, ties)
