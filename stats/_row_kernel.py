"""One compiled pass over each return series: moments, equity path, block sums.

This is the single definition of the per-series statistics raysweep stores for every
config; :func:`stats.return_moments` and the engine's metrics both call it. Each row is
reduced on its own, in time order (plain sequential sums, no pairwise or SIMD reordering
across rows), so a row's statistics are bitwise identical whatever batch it is in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


@numba.njit(inline="always")
def _span(row, following, lo, hi, mu, equity_path, acc):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Periods ``lo..hi`` of one row added to its running sums, in time order.

    ``acc`` is (m2, m3, m4, equity, peak, worst, block sum, block sum of squares, sum of
    ``following``); the block sums start from the values given. Every sum is its own chain
    in one loop, so the chains run side by side: the next row's plain sum (its mean) rides
    along with this row's moments instead of costing a pass of its own.
    """
    a2, a3, a4, equity, peak, worst, bs, bq, s = acc
    for k in range(lo, hi):
        v = row[k]
        d = v - mu
        d2 = d * d
        a2 += d2
        a3 += d2 * d
        a4 += d2 * d2
        bs += v
        bq += v * v
        s += following[k]
        if equity_path:  # loop-invariant: compiled as two loops, one without the chain
            equity *= 1.0 + v
            if equity > peak:
                peak = equity
            fall = 1.0 - equity / peak
            if fall > worst:
                worst = fall
    return a2, a3, a4, equity, peak, worst, bs, bq, s


@numba.njit(cache=True, nogil=True)
def _row_pass(x, n_blocks, equity_path, mean, m2, m3, m4, total, drawdown, block_sum, block_sq):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Per row: the moments, equity path and block sums in one loop, after the row's sum.

    The sum (for the mean) of each row after the first is taken in the previous row's loop.
    """
    n, t = x.shape
    length = t // n_blocks if n_blocks > 0 else 0
    dropped = t - length * n_blocks
    s = 0.0
    for k in range(t):
        s += x[0, k]
    for i in range(n):
        row = x[i]
        following = x[i + 1] if i + 1 < n else row  # the last row's is not used
        mu = s / t
        # The periods before the first block (all of them without blocks), then block by block.
        start = (0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0)
        acc = _span(row, following, 0, dropped, mu, equity_path, start)
        for b in range(n_blocks):
            lo = dropped + b * length
            carried = (*acc[:6], 0.0, 0.0, acc[8])
            acc = _span(row, following, lo, lo + length, mu, equity_path, carried)
            block_sum[i, b] = acc[6]
            block_sq[i, b] = acc[7]
        a2, a3, a4, equity, _, worst, _, _, s = acc
        mean[i] = mu
        m2[i] = a2 / t
        m3[i] = a3 / t
        m4[i] = a4 / t
        total[i] = equity - 1.0 if equity_path else np.nan
        drawdown[i] = worst if equity_path else np.nan


@dataclass(frozen=True)
class PathStatistics:
    """Per-row statistics from one pass (see :func:`path_statistics`).

    Attributes
    ----------
    mean, m2, m3, m4 : ndarray of float64, shape (n,)
        Mean and the biased central moments ``sum((x - mean)**k) / T``.
    total_return : ndarray of float64, shape (n,)
        ``prod(1 + x) - 1`` of compounding equity starting at 1.
    max_drawdown : ndarray of float64, shape (n,)
        Largest fall from a running peak (the start, 1, counts as a peak), as a fraction.
    block_count : int
        Periods per block, ``T // n_blocks`` (0 when ``n_blocks == 0``).
    block_sum, block_sumsq : ndarray of float64, shape (n, n_blocks)
        Sum and sum of squares of each block; the first ``T mod n_blocks`` periods are
        dropped so blocks are equal.
    """

    mean: FloatArray
    m2: FloatArray
    m3: FloatArray
    m4: FloatArray
    total_return: FloatArray
    max_drawdown: FloatArray
    block_count: int
    block_sum: FloatArray
    block_sumsq: FloatArray


def path_statistics(
    returns: NDArray[np.float64], n_blocks: int = 0, equity_path: bool = True
) -> PathStatistics:
    """Moments, total return, maximum drawdown and block sums of each row, in one pass.

    Parameters
    ----------
    returns : ndarray of float64, shape (n_series, n_periods)
        Per-period simple returns, one series per row.
    n_blocks : int, default 0
        Number of equal time blocks for the per-block sums (0: none).
    equity_path : bool, default True
        Compound the equity path for the total return and the maximum drawdown; False
        leaves both NaN and skips the compounding, the slowest part of the pass (the
        moments and block sums are the same bits either way).

    Returns
    -------
    PathStatistics
        The statistics of every row.

    Notes
    -----
    Sums run sequentially in time order within a row (not numpy's pairwise order), which
    keeps each row independent of the batch; for daily-length series the difference from a
    pairwise sum is at the 1e-13 relative level.
    """
    x = np.ascontiguousarray(returns, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 1:
        raise ValueError(f"returns: expected a non-empty 2-D array, got shape {x.shape}")
    n, t = x.shape
    mean, m2, m3, m4, total, drawdown = (np.empty(n) for _ in range(6))
    block_sum = np.empty((n, n_blocks))
    block_sq = np.empty((n, n_blocks))
    _row_pass(x, n_blocks, equity_path, mean, m2, m3, m4, total, drawdown, block_sum, block_sq)
    return PathStatistics(
        mean=mean,
        m2=m2,
        m3=m3,
        m4=m4,
        total_return=total,
        max_drawdown=drawdown,
        block_count=t // n_blocks if n_blocks else 0,
        block_sum=block_sum,
        block_sumsq=block_sq,
    )
