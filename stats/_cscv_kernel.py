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
def _best_pass(ln, ls, lq, hn, hs, hq, low_mask, high_mask, sharpe, offset, best_key, best_idx):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Update each split's in-sample best (strictly greater key wins: first index on ties)."""
    m = ls.shape[1]
    for k in numba.prange(low_mask.shape[0]):
        a = low_mask[k]
        b = high_mask[k]
        keys = np.empty(m)
        for j in range(m):  # no loop-carried dependency: vectorised
            keys[j] = _key(ln[a, j] + hn[b, j], ls[a, j] + hs[b, j], lq[a, j] + hq[b, j], sharpe)
        key, where = _first_argmax(keys)
        if where >= 0 and key > best_key[k]:  # earlier chunks hold lower indices: they win ties
            best_key[k] = key
            best_idx[k] = offset + where


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
    is_low, is_high, oos_low, oos_high = split_masks(combos, s)
    n_splits = len(combos)
    tables = _Tables(s, min(CHUNK, n))
    best_key = np.full(n_splits, _NO_KEY)
    best = np.full(n_splits, -1, dtype=np.int64)
    for lo in range(0, n, CHUNK):
        hi = min(lo + CHUNK, n)
        chunk = tables.fill(counts[lo:hi], sums[lo:hi], sums_sq[lo:hi])
        _best_pass(*chunk, is_low, is_high, sharpe, lo, best_key, best)
    best[best < 0] = 0  # no strategy has a key: the first one, as argmax over -inf gives
    # The targets come from the best rows' own tables, built by the same additions as in
    # the rank pass, so a strategy compared with itself is an exact tie.
    rows, where = np.unique(best, return_inverse=True)
    target = np.empty(n_splits)
    for lo in range(0, len(rows), CHUNK):
        pick = rows[lo : lo + CHUNK]
        ln, ls, lq, hn, hs, hq = tables.fill(counts[pick], sums[pick], sums_sq[pick])
        inside = (where >= lo) & (where < lo + len(pick))
        col = where[inside] - lo
        a, b = oos_low[inside], oos_high[inside]
        n_, s_, q_ = ln[a, col] + hn[b, col], ls[a, col] + hs[b, col], lq[a, col] + hq[b, col]
        target[inside] = [_key(*v, sharpe) for v in zip(n_, s_, q_, strict=True)]
    below = np.zeros(n_splits, dtype=np.int64)
    ties = np.zeros(n_splits, dtype=np.int64)
    for lo in range(0, n, CHUNK):
        hi = min(lo + CHUNK, n)
        chunk = tables.fill(counts[lo:hi], sums[lo:hi], sums_sq[lo:hi])
        _rank_pass(*chunk, oos_low, oos_high, sharpe, target, below, ties)
    return best, below + (ties + 1) / 2.0
