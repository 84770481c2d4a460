"""Probability of backtest overfitting by combinatorially symmetric cross-validation."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from stats._cscv_kernel import CSCVSplits, cscv_best_and_ranks
from stats._fixed_math import fixed_log
from stats._row_kernel import path_statistics
from stats._validation import (
    FloatArray,
    as_float_array,
    as_int,
    check_choice,
    input_error,
    not_finite,
)

PBOMetric = Literal["sharpe", "mean"]
PBO_METRICS: tuple[str, ...] = ("sharpe", "mean")
#: Largest number of splits C(S, S/2) accepted (S = 22 gives 705,432; S = 24 is refused).
MAX_SPLITS = 1_000_000


class SplitRunner(Protocol):
    """What runs CSCV's splits, as :func:`stats._cscv_kernel.cscv_best_and_ranks` does.

    Called as ``run(counts, sums, sums_sq, combos, sharpe)`` with the block statistics
    (each of shape (N, S)), the splits' in-sample block masks ``combos`` (shape
    (n_splits, S), int8) and whether to rank by Sharpe ratio; returns each split's in-sample
    best strategy (int64) and that strategy's out-of-sample relative rank (float64). Each
    split's answer depends on that split alone, so a runner may hand disjoint rows of
    ``combos`` to several processes and put their answers back in order
    (``sweep report --address`` runs them as Ray tasks).
    """

    def __call__(
        self,
        counts: FloatArray,
        sums: FloatArray,
        sums_sq: FloatArray,
        combos: NDArray[np.int8],
        sharpe: bool,
        /,
    ) -> tuple[NDArray[np.int64], FloatArray]: ...


@dataclass(frozen=True)
class BlockStats:
    """Per-block sufficient statistics of N return series over S time blocks.

    Attributes
    ----------
    counts : ndarray of int64, shape (S,)
        Periods in each block (all equal, ``T // S``).
    sums : ndarray of float64, shape (N, S)
        Sum of each series' returns over each block.
    sums_sq : ndarray of float64, shape (N, S)
        Sum of squared returns over each block.
    rows_dropped : int
        Leading periods left out (``T mod S``).
    """

    counts: NDArray[np.int64]
    sums: FloatArray
    sums_sq: FloatArray
    rows_dropped: int


@dataclass(frozen=True)
class BlockSummary:
    """What PBO checks of the block statistics, in a few numbers (mergeable over groups).

    Attributes
    ----------
    strategies : int
        Strategies N.
    n_blocks : int
        Blocks S.
    nonfinite_sums, nonfinite_sums_sq : int
        NaN or infinite block sums, and sums of squares.
    bad_counts : bool
        Whether some block count is not a positive integer.
    fewest_half_periods : float
        The smallest, over strategies, of the periods in a strategy's S/2 smallest blocks
        (``inf`` without strategies).
    most_periods : float
        The largest total of a strategy's periods (0 without strategies).
    """

    strategies: int
    n_blocks: int
    nonfinite_sums: int = 0
    nonfinite_sums_sq: int = 0
    bad_counts: bool = False
    fewest_half_periods: float = math.inf
    most_periods: float = 0.0

    @classmethod
    def of(cls, counts: FloatArray, sums: FloatArray, sums_sq: FloatArray) -> BlockSummary:
        """The summary of some strategies' block statistics (each of shape (m, S))."""
        m, s = sums.shape
        if not m:
            return cls(0, s)
        return cls(
            strategies=m,
            n_blocks=s,
            nonfinite_sums=int((~np.isfinite(sums)).sum()),
            nonfinite_sums_sq=int((~np.isfinite(sums_sq)).sum()),
            bad_counts=_counts_bad(counts),
            fewest_half_periods=float((np.sort(counts, axis=1)[:, : s // 2]).sum(axis=1).min()),
            most_periods=float(counts.sum(axis=1).max()),
        )

    def merged(self, other: BlockSummary) -> BlockSummary:
        """The summary of both groups of strategies."""
        return BlockSummary(
            strategies=self.strategies + other.strategies,
            n_blocks=self.n_blocks,
            nonfinite_sums=self.nonfinite_sums + other.nonfinite_sums,
            nonfinite_sums_sq=self.nonfinite_sums_sq + other.nonfinite_sums_sq,
            bad_counts=self.bad_counts or other.bad_counts,
            fewest_half_periods=min(self.fewest_half_periods, other.fewest_half_periods),
            most_periods=max(self.most_periods, other.most_periods),
        )


@dataclass(frozen=True)
class PBOResult:
    """Outcome of combinatorially symmetric cross-validation (CSCV).

    Attributes
    ----------
    pbo : float
        Probability of backtest overfitting: the share of splits whose logit is <= 0, i.e.
        whose in-sample best ranks at or below the out-of-sample median.
    logits : ndarray of float64, shape (n_splits,)
        ``log(ω / (1 - ω))`` per split, ``ω = rank / (N + 1)``.
    relative_ranks : ndarray of float64, shape (n_splits,)
        ``ω`` per split: out-of-sample rank of the in-sample best over ``N + 1``.
    best_in_sample : ndarray of int64, shape (n_splits,)
        Index of the in-sample best strategy per split.
    is_performance : ndarray of float64, shape (n_splits,)
        In-sample metric of the in-sample best.
    oos_performance : ndarray of float64, shape (n_splits,)
        Out-of-sample metric of the in-sample best.
    degradation_slope : float
        OLS slope of ``oos_performance`` on ``is_performance`` (negative when selection is
        overfit); NaN if the in-sample values do not vary.
    degradation_intercept : float
        OLS intercept of the same regression.
    degradation_r2 : float
        R squared of the same regression.
    prob_oos_loss : float
        Share of splits where the in-sample best has a negative out-of-sample metric.
    n_blocks : int
        Number of time blocks S.
    n_splits : int
        Number of splits, ``C(S, S/2)``.
    n_strategies : int
        Number of strategies N.
    n_obs_used : int
        Periods used (``S * (T // S)`` for the matrix path; total count otherwise).
    rows_dropped : int
        Leading periods left out so that S divides the rest (matrix path; else 0).
    metric : str
        ``"sharpe"`` (per-period, ddof=1) or ``"mean"``.
    """

    pbo: float
    logits: FloatArray
    relative_ranks: FloatArray
    best_in_sample: NDArray[np.int64]
    is_performance: FloatArray
    oos_performance: FloatArray
    degradation_slope: float
    degradation_intercept: float
    degradation_r2: float
    prob_oos_loss: float
    n_blocks: int
    n_splits: int
    n_strategies: int
    n_obs_used: int
    rows_dropped: int
    metric: str


def _check_n_blocks(n_blocks: int) -> int:
    s = as_int("n_blocks", n_blocks, minimum=2)
    if s % 2:
        raise input_error(f"n_blocks: expected an even number of blocks, got {s}")
    if math.comb(s, s // 2) > MAX_SPLITS:
        raise input_error(
            f"n_blocks: expected C(S, S/2) <= {MAX_SPLITS:,} splits, got S = {s} "
            f"({math.comb(s, s // 2):,} splits); 16 is the usual choice"
        )
    return s


def block_statistics(performance: ArrayLike, n_blocks: int = 16) -> BlockStats:
    """Per-block count, sum and sum of squares of each column of a T x N matrix.

    Parameters
    ----------
    performance : array_like, shape (n_periods, n_strategies)
        Per-period returns, one strategy per COLUMN (the paper's T x N layout).
    n_blocks : int, default 16
        Number of equal time blocks S (even).

    Returns
    -------
    BlockStats
        Counts ``(S,)`` and sums ``(N, S)``; the first ``T mod S`` periods are dropped.

    Notes
    -----
    Each block sum runs along one strategy's contiguous periods, so a strategy's sums are
    bitwise identical whether it is passed alone or among others. A worker holding one
    config's series ``r`` of length T gets its row with ``block_statistics(r[:, None], S)``.

    References
    ----------
    .. [1] Bailey, D. H., Borwein, J., López de Prado, M. and Zhu, Q. J. (2017). "The
       probability of backtest overfitting". Journal of Computational Finance 20(4), 39-69.
    """
    m = as_float_array("performance", performance, ndim=2)
    s = _check_n_blocks(n_blocks)
    t = m.shape[0]
    if t < s:
        raise input_error(f"performance: expected at least n_blocks = {s} periods (rows), got {t}")
    # The block sums the engine stores with every config: one definition, the row kernel.
    path = path_statistics(np.ascontiguousarray(m.T), s)
    return BlockStats(
        counts=np.full(s, path.block_count, dtype=np.int64),
        sums=path.block_sum,
        sums_sq=path.block_sumsq,
        rows_dropped=t - s * path.block_count,
    )


def probability_of_backtest_overfitting(
    performance: ArrayLike, n_blocks: int = 16, *, metric: PBOMetric = "sharpe"
) -> PBOResult:
    """Probability of backtest overfitting of picking the in-sample best of N strategies.

    Parameters
    ----------
    performance : array_like, shape (n_periods, n_strategies)
        Per-period returns, one strategy per COLUMN (the paper's T x N matrix ``M``;
        note this is the transpose of the (series, periods) layout used elsewhere in
        :mod:`stats`). Must be finite.
    n_blocks : int, default 16
        Number of time blocks S, even; the paper suggests 16 (12,870 splits).
    metric : {"sharpe", "mean"}
        Performance of a strategy on a set of blocks: per-period Sharpe ratio
        (``ddof=1``) or mean return.

    Returns
    -------
    PBOResult

    Notes
    -----
    CSCV [1]_: the T rows are cut into S contiguous blocks of ``T // S`` periods, after
    DROPPING THE FIRST ``T mod S`` ROWS (as pypbo does). Each of the ``C(S, S/2)`` ways to
    choose S/2 blocks as in-sample (the rest, in order, out-of-sample) picks the in-sample
    best ``n*`` and ranks it out of sample. Conventions:

    - ``ω = rank / (N + 1)`` with rank 1 = worst out of sample, N = best, so ``ω`` is in
      (0, 1) and the logit finite; ties get the average rank (``scipy.stats.rankdata``).
    - ``PBO = share of logits <= 0``, counting a median rank as overfit (pypbo's rule).
    - An in-sample tie for best goes to the lowest column index. A NaN metric (a constant
      strategy's Sharpe) ranks below every number, in and out of sample.

    Computed from per-block sums (:func:`pbo_from_block_stats`): the full matrix never has
    to be re-sliced.

    References
    ----------
    .. [1] Bailey, D. H., Borwein, J., López de Prado, M. and Zhu, Q. J. (2017). "The
       probability of backtest overfitting". Journal of Computational Finance 20(4), 39-69.
    """
    stats_ = block_statistics(performance, n_blocks)
    result = pbo_from_block_stats(stats_.counts, stats_.sums, stats_.sums_sq, metric=metric)
    return dataclasses.replace(result, rows_dropped=stats_.rows_dropped)


def pbo_from_block_stats(
    counts: ArrayLike,
    sums: ArrayLike,
    sums_sq: ArrayLike | None = None,
    *,
    metric: PBOMetric = "sharpe",
    run_splits: SplitRunner = cscv_best_and_ranks,
) -> PBOResult:
    """Probability of backtest overfitting from per-block sufficient statistics.

    Parameters
    ----------
    counts : array_like, shape (S,) or (N, S)
        Periods per block (shared by all strategies, or per strategy when they have
        missing periods). Positive integers.
    sums : array_like, shape (N, S)
        Sum of each strategy's returns over each block (strategies in ROWS here).
    sums_sq : array_like, shape (N, S), optional
        Sum of squared returns over each block; required for ``metric="sharpe"``.
    metric : {"sharpe", "mean"}
        Per-period Sharpe ratio (``ddof=1``) or mean return of the pooled blocks.
    run_splits : SplitRunner, optional
        What computes each split's in-sample best and its out-of-sample rank: the compiled
        kernel in this process by default; any runner gives the same result, bit for bit.

    Returns
    -------
    PBOResult
        Identical (to rounding) to :func:`probability_of_backtest_overfitting` on the
        matrix these statistics summarise; ``rows_dropped`` is 0.

    Notes
    -----
    The Sharpe ratio of a union of blocks follows from pooled ``n``, ``Σx`` and ``Σx²``:
    ``var = (Σx² - (Σx)²/n)/(n - 1)``. This loses precision when a strategy's mean is
    large against its standard deviation (beyond about 1e4), which per-period returns
    never approach. A sweep can therefore keep ``3 S`` numbers per config instead of its
    return series. Conventions as in :func:`probability_of_backtest_overfitting`.

    The splits run in a compiled kernel (:mod:`stats._cscv_kernel`): each strategy's sums
    over every subset of each half of the blocks are tabulated, so a split's pooled sums cost
    one addition, and strategies are compared by ``mean * |mean| / var``, which orders as the
    Sharpe ratio does. 12,870 splits (S = 16) over 10^6 strategies take about 10 s on two
    cores, 16 times faster than matrix products over split chunks
    (``benchmarks/bench_pbo.py``), with identical bests and ranks.

    References
    ----------
    .. [1] Bailey, D. H., Borwein, J., López de Prado, M. and Zhu, Q. J. (2017). "The
       probability of backtest overfitting". Journal of Computational Finance 20(4), 39-69.
    """
    check_choice("metric", metric, PBO_METRICS)
    x_sum = as_float_array("sums", sums, ndim=2)
    n, s = x_sum.shape
    _check_n_blocks(s)
    if n < 2:
        raise _too_few_strategies(n)
    cnt = as_float_array("counts", counts)
    if cnt.shape not in ((s,), (n, s)):
        raise input_error(
            f"counts: expected shape ({s},) or ({n}, {s}) to match sums, got {cnt.shape}"
        )
    if _counts_bad(cnt):
        raise _bad_counts()
    cnt = np.broadcast_to(cnt, (n, s))
    if metric == "sharpe":
        if sums_sq is None:
            raise input_error("sums_sq: expected the per-block sums of squares for Sharpe")
        x_sq = as_float_array("sums_sq", sums_sq, ndim=2)
        if x_sq.shape != (n, s):
            raise input_error(f"sums_sq: expected shape ({n}, {s}) to match sums, got {x_sq.shape}")
    else:
        x_sq = np.zeros((n, s))

    splits = CSCVSplits.of(s)
    _check_periods(float((np.sort(cnt, axis=1)[:, : s // 2]).sum(axis=1).min()), metric)
    best, rank = run_splits(cnt, x_sum, x_sq, splits.combos, metric == "sharpe")
    return _result(
        best,
        rank,
        (cnt[best], x_sum[best], x_sq[best]),
        n,
        splits,
        metric,
        int(cnt.sum(axis=1).max()),
    )


def check_block_summary(summary: BlockSummary, metric: PBOMetric = "sharpe") -> CSCVSplits:
    """Refuse what :func:`pbo_from_block_stats` refuses, from a summary of the statistics.

    The same checks in the same order, with the same messages, on the counts of a
    :class:`BlockSummary` (for CSCV computed in passes over groups of strategies).

    Returns
    -------
    CSCVSplits
        The splits of the summary's blocks.

    Raises
    ------
    StatsInputError
        As :func:`pbo_from_block_stats` would on the statistics summarised.
    """
    check_choice("metric", metric, PBO_METRICS)
    if summary.nonfinite_sums:
        raise not_finite("sums", summary.nonfinite_sums)
    s = _check_n_blocks(summary.n_blocks)
    if summary.strategies < 2:
        raise _too_few_strategies(summary.strategies)
    if summary.bad_counts:
        raise _bad_counts()
    if metric == "sharpe" and summary.nonfinite_sums_sq:
        raise not_finite("sums_sq", summary.nonfinite_sums_sq)
    _check_periods(summary.fewest_half_periods, metric)
    return CSCVSplits.of(s)


def pbo_from_bests(
    best: NDArray[np.int64],
    rank: FloatArray,
    best_stats: tuple[FloatArray, FloatArray, FloatArray],
    summary: BlockSummary,
    *,
    metric: PBOMetric = "sharpe",
) -> PBOResult:
    """PBO from each split's in-sample best and its out-of-sample rank, found elsewhere.

    For CSCV computed in passes over groups of strategies (:class:`stats.SplitBests`,
    :class:`stats.SplitRanks`): the same result, bit for bit, as
    :func:`pbo_from_block_stats` on the strategies the passes saw.

    Parameters
    ----------
    best : ndarray of int64, shape (n_splits,)
        Each split's in-sample best, by whatever index the passes used (kept as
        ``best_in_sample``).
    rank : ndarray of float64, shape (n_splits,)
        Its out-of-sample rank among all strategies (1 = worst, average rank for ties).
    best_stats : tuple of ndarray of float64, each of shape (n_splits, S)
        Block counts, sums and sums of squares of each split's best.
    summary : BlockSummary
        Of all the strategies (checked first, :func:`check_block_summary`).
    metric : {"sharpe", "mean"}
        As in :func:`pbo_from_block_stats`.

    Returns
    -------
    PBOResult
    """
    splits = check_block_summary(summary, metric)
    return _result(
        best, rank, best_stats, summary.strategies, splits, metric, int(summary.most_periods)
    )


def _result(
    best: NDArray[np.int64],
    rank: FloatArray,
    best_stats: tuple[FloatArray, FloatArray, FloatArray],
    n: int,
    splits: CSCVSplits,
    metric: str,
    n_obs_used: int,
) -> PBOResult:
    """The result from each split's best, its rank and its block statistics (rows by split)."""
    in_sample = np.zeros((splits.n_splits, splits.n_blocks))
    in_sample[np.arange(splits.n_splits)[:, np.newaxis], splits.combos] = 1.0
    is_best = _pooled_metric(in_sample, *best_stats, metric)
    oos_best = _pooled_metric(1.0 - in_sample, *best_stats, metric)

    omega = rank / (n + 1.0)
    logits = fixed_log(omega / (1.0 - omega))
    slope, intercept, r2 = _ols(is_best, oos_best)
    with np.errstate(invalid="ignore"):
        loss = float(np.mean(oos_best < 0))
    return PBOResult(
        pbo=float(np.mean(logits <= 0.0)),
        logits=logits,
        relative_ranks=omega,
        best_in_sample=best,
        is_performance=is_best,
        oos_performance=oos_best,
        degradation_slope=slope,
        degradation_intercept=intercept,
        degradation_r2=r2,
        prob_oos_loss=loss,
        n_blocks=splits.n_blocks,
        n_splits=splits.n_splits,
        n_strategies=n,
        n_obs_used=n_obs_used,
        rows_dropped=0,
        metric=metric,
    )


def _too_few_strategies(n: int) -> Exception:
    return input_error(f"sums: expected at least 2 strategies (rows), got {n}")


def _counts_bad(counts: FloatArray) -> bool:
    """Whether some block count is not a positive integer."""
    return bool(np.any(counts < 1)) or bool(np.any(counts != np.floor(counts)))


def _bad_counts() -> Exception:
    return input_error("counts: expected positive integer period counts per block")


def _check_periods(fewest_half_periods: float, metric: str) -> None:
    """A Sharpe ratio needs at least 2 periods in each half, for every strategy."""
    if metric == "sharpe" and fewest_half_periods < 2:
        raise input_error(
            "counts: expected at least 2 periods in each half for a Sharpe ratio, got "
            f"{fewest_half_periods:g}"
        )


def _pooled_metric(
    selection: FloatArray, cnt: FloatArray, x_sum: FloatArray, x_sq: FloatArray, metric: str
) -> FloatArray:
    """Metric of row k's strategy (``cnt[k]``, ...) pooled over the blocks ``selection[k]``."""
    count = (selection * cnt).sum(axis=1)
    total = (selection * x_sum).sum(axis=1)
    mean: FloatArray = total / count
    if metric == "mean":
        return mean
    var = ((selection * x_sq).sum(axis=1) - total * mean) / (count - 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out: FloatArray = np.where(var > 0, mean / np.sqrt(np.maximum(var, 0.0)), np.nan)
    return out


def _ols(x: FloatArray, y: FloatArray) -> tuple[float, float, float]:
    ok = np.isfinite(x) & np.isfinite(y)
    xs, ys = x[ok], y[ok]
    if len(xs) < 2:
        return math.nan, math.nan, math.nan
    dx = xs - xs.mean()
    dy = ys - ys.mean()
    # Products summed by numpy's pairwise sum, not `@`: a 1-D `@` is BLAS's ddot, whose
    # kernel (chosen by CPU) changes the last bits.
    sxx = float(np.sum(dx * dx))
    if sxx == 0.0:
        return math.nan, math.nan, math.nan
    sxy = float(np.sum(dx * dy))
    slope = sxy / sxx
    intercept = float(ys.mean()) - slope * float(xs.mean())
    syy = float(np.sum(dy * dy))
    r2 = (sxy * sxy / (sxx * syy)) if syy > 0 else math.nan
    return slope, intercept, r2
