"""Out-of-sample validation folds: walk-forward and combinatorial purged cross-validation.

Periods are positions ``0..T-1`` of a return series (return t earns from close t to close
t+1). A fold has training windows and test windows, each a half-open ``(start, stop)`` range.
Every window boundary of a plan cuts the series into *segments*; a config's sufficient
statistics (count, sum, sum of squares) are taken once per segment, in time order along its
own row, and a fold's training statistics pool its segments. A fold's in-sample best is then a
maximum over configs, which merges exactly and in any order (:class:`FoldSummary`).

References
----------
.. [1] Pardo, R. (2008). *The Evaluation and Optimization of Trading Strategies*, 2nd ed.,
   Wiley, ch. 11 (walk-forward analysis, walk-forward efficiency).
.. [2] López de Prado, M. (2018). *Advances in Financial Machine Learning*, Wiley,
   ch. 7.4 (purging and embargo) and ch. 12 (combinatorial purged cross-validation).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Literal

import numba
import numpy as np
from numpy.typing import NDArray

from stats._lanes import LANES
from stats._row_kernel import lane_sums, vstore
from stats._validation import input_error

FoldMetric = Literal["sharpe", "mean"]
FOLD_METRICS: tuple[str, ...] = ("sharpe", "mean")
Window = tuple[int, int]


@dataclass(frozen=True)
class Fold:
    """One fold: where the rule is fitted (train) and where it is judged (test).

    Attributes
    ----------
    name : str
        ``wf-00``, ``wf-01``, ... (walk-forward) or ``cpcv-00``, ... (CPCV splits).
    train, test : tuple of (int, int)
        Half-open period ranges, sorted, disjoint.
    """

    name: str
    train: tuple[Window, ...]
    test: tuple[Window, ...]


@dataclass(frozen=True)
class FoldPlan:
    """Folds and the segments their statistics are pooled from.

    Attributes
    ----------
    folds : tuple of Fold
        Walk-forward folds first (in time order), then CPCV splits (lexicographic in the
        test groups).
    seg_start, seg_stop : ndarray of int64, shape (n_segments,)
        The segments: every training window is a union of them.
    train_segments : tuple of ndarray of int64
        Per fold, the segments of its training windows, in time order.
    """

    folds: tuple[Fold, ...]
    seg_start: NDArray[np.int64]
    seg_stop: NDArray[np.int64]
    train_segments: tuple[NDArray[np.int64], ...]

    @classmethod
    def from_folds(cls, folds: list[Fold]) -> FoldPlan:
        """Cut the series at every training-window boundary of ``folds``."""
        edges = sorted({p for f in folds for w in f.train for p in w})
        starts, stops = np.array(edges[:-1], dtype=np.int64), np.array(edges[1:], dtype=np.int64)
        members = []
        for f in folds:
            inside = np.zeros(len(starts), dtype=bool)
            for lo, hi in f.train:
                inside |= (starts >= lo) & (stops <= hi)
            members.append(np.flatnonzero(inside).astype(np.int64))
        return cls(tuple(folds), starts, stops, tuple(members))


def walk_forward_folds(
    n_periods: int, train: int, test: int, *, anchored: bool = False, purge: int = 0
) -> list[Fold]:
    """Walk-forward folds: fit on ``train`` periods, test on the next ``test``, step by ``test``.

    Parameters
    ----------
    n_periods : int
        Length T of the return series.
    train, test : int
        Periods of each training window (the first one when ``anchored``) and test window.
    anchored : bool
        Training windows all start at period 0 and grow (``False``: they roll).
    purge : int
        Periods dropped from the end of each training window, before its test window.

    Returns
    -------
    list of Fold
        Fold k tests ``[train + k*test, train + (k+1)*test)``; only whole test windows are
        used, so the last ``(T - train) mod test`` periods are never tested.

    Notes
    -----
    An embargo [2]_ removes training periods that FOLLOW a test window; no walk-forward
    training period does, so walk-forward takes no embargo.
    """
    if min(train, test) < 1 or purge < 0:
        raise input_error(
            f"walk_forward: expected train, test >= 1 and purge >= 0, got {train}, {test}, {purge}"
        )
    if train - purge < 2:
        raise input_error(
            f"walk_forward: purge {purge} leaves {train - purge} training periods; expected "
            "at least 2"
        )
    folds = []
    k = 0
    while train + (k + 1) * test <= n_periods:
        test_lo = train + k * test
        train_lo = 0 if anchored else k * test
        folds.append(
            Fold(f"wf-{k:02d}", ((train_lo, test_lo - purge),), ((test_lo, test_lo + test),))
        )
        k += 1
    if not folds:
        raise input_error(
            f"walk_forward: train {train} + test {test} periods do not fit in {n_periods} "
            "periods of returns"
        )
    return folds


def group_bounds(n_periods: int, groups: int) -> NDArray[np.int64]:
    """Boundaries of ``groups`` contiguous, nearly equal groups: group g is ``[b[g], b[g+1])``."""
    return np.array([g * n_periods // groups for g in range(groups + 1)], dtype=np.int64)


def cpcv_folds(
    n_periods: int, groups: int, test_groups: int, *, purge: int = 0, embargo: int = 0
) -> list[Fold]:
    """Combinatorial purged cross-validation splits [2]_.

    Parameters
    ----------
    n_periods : int
        Length T of the return series.
    groups, test_groups : int
        The series is cut into ``groups`` contiguous groups; each of the C(groups,
        test_groups) splits tests on ``test_groups`` of them and trains on the rest.
    purge : int
        Training periods dropped on each side of every test group.
    embargo : int
        Training periods dropped after every test group (beyond the purge).

    Returns
    -------
    list of Fold
        One per split, in lexicographic order of the test groups.
    """
    if not 1 <= test_groups < groups:
        raise input_error(
            f"cpcv: expected 1 <= test_groups < groups, got test_groups={test_groups}, "
            f"groups={groups}"
        )
    if purge < 0 or embargo < 0:
        raise input_error(f"cpcv: expected purge, embargo >= 0, got {purge}, {embargo}")
    bounds = group_bounds(n_periods, groups)
    if int(np.diff(bounds).min()) < 2:
        raise input_error(f"cpcv: {groups} groups of {n_periods} periods leave a group under 2")
    folds = []
    for k, chosen in enumerate(itertools.combinations(range(groups), test_groups)):
        tested = np.zeros(n_periods, dtype=bool)
        dropped = np.zeros(n_periods, dtype=bool)
        for g in chosen:
            lo, hi = int(bounds[g]), int(bounds[g + 1])
            tested[lo:hi] = True
            dropped[max(0, lo - purge) : lo] = True
            dropped[hi : min(n_periods, hi + purge + embargo)] = True
        train = _runs(~tested & ~dropped)
        if sum(hi - lo for lo, hi in train) < 2:
            raise input_error(f"cpcv: purge and embargo leave split {k} under 2 training periods")
        folds.append(Fold(f"cpcv-{k:02d}", train, _runs(tested)))
    return folds


def cpcv_paths(groups: int, test_groups: int) -> list[list[tuple[int, int]]]:
    """The backtest paths of CPCV: per path, ``(group, split)`` for every group in order.

    There are ``C(groups, test_groups) * test_groups / groups`` paths; path p takes, for each
    group, the p-th split (lexicographic) that tests it [2]_.
    """
    splits = list(itertools.combinations(range(groups), test_groups))
    testing = [[k for k, s in enumerate(splits) if g in s] for g in range(groups)]
    n_paths = math.comb(groups, test_groups) * test_groups // groups
    return [[(g, testing[g][p]) for g in range(groups)] for p in range(n_paths)]


def _runs(mask: NDArray[np.bool_]) -> tuple[Window, ...]:
    """Maximal runs of True in ``mask`` as half-open ranges."""
    padded = np.concatenate([[False], mask, [False]]).astype(np.int8)
    change = np.flatnonzero(np.diff(padded))
    return tuple((int(a), int(b)) for a, b in zip(change[::2], change[1::2], strict=True))


@numba.njit(cache=True, nogil=True)
def _fold_values(x, bench, seg_start, seg_stop, members, offsets, sharpe, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Per group of eight rows (one per SIMD lane): segment sums, then each row's folds.

    The rows are ``x``, or ``x - bench`` when ``bench`` is not empty (never materialised).
    """
    relative = bench.shape[0] > 0
    n = x.shape[0]
    n_seg = seg_start.shape[0]
    s = np.empty((n_seg, LANES))
    q = np.empty((n_seg, LANES))
    for i0 in range(0, n, LANES):
        for g in range(n_seg):
            if relative:
                a, b = lane_sums(x, bench, i0, seg_start[g], seg_stop[g], True, True)
            else:
                a, b = lane_sums(x, bench, i0, seg_start[g], seg_stop[g], True, False)
            vstore(s[g], a)
            vstore(q[g], b)
        for lane in range(min(LANES, n - i0)):
            i = i0 + lane
            for f in range(offsets.shape[0] - 1):
                cnt = 0.0
                tot = 0.0
                sq = 0.0
                for m in range(offsets[f], offsets[f + 1]):
                    g = members[m]
                    cnt += seg_stop[g] - seg_start[g]
                    tot += s[g, lane]
                    sq += q[g, lane]
                mean = tot / cnt
                if not sharpe:
                    out[i, f] = mean
                    continue
                var = (sq - tot * mean) / (cnt - 1.0)
                out[i, f] = mean / math.sqrt(var) if var > 0.0 else np.nan


#: The last plan's flattened training segments (a plan is reused for every batch of a sweep).
_LAST_MEMBERS: tuple[FoldPlan | None, NDArray[np.int64], NDArray[np.int64]] = (
    None,
    np.zeros(0, dtype=np.int64),
    np.zeros(1, dtype=np.int64),
)


def _flat_members(plan: FoldPlan) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Every fold's training segments, concatenated, and where each fold's start (cached)."""
    global _LAST_MEMBERS
    last = _LAST_MEMBERS  # one read: another thread may replace it, never half of it
    if last[0] is plan:
        return last[1], last[2]
    members = np.concatenate([*plan.train_segments, np.zeros(0, dtype=np.int64)])
    offsets = np.cumsum([0, *(len(m) for m in plan.train_segments)]).astype(np.int64)
    _LAST_MEMBERS = (plan, members, offsets)
    return members, offsets


def fold_values(
    returns: NDArray[np.float64], plan: FoldPlan, metric: FoldMetric
) -> NDArray[np.float64]:
    """Each config's metric on each fold's training windows.

    Parameters
    ----------
    returns : ndarray of float64, shape (n, T)
        Per-period (excess) returns, one config per row.
    plan : FoldPlan
        The folds.
    metric : {"sharpe", "mean"}
        Per-period Sharpe ratio (``ddof=1``; NaN for a constant window) or mean.

    Returns
    -------
    ndarray of float64, shape (n, n_folds)

    Notes
    -----
    Each row is reduced on its own, in time order (segment sums, then pooled in segment
    order), so a row's values do not depend on the batch it is in. Eight rows are summed
    side by side, one per SIMD lane (:func:`stats._row_kernel.lane_sums`), each lane doing
    its row's scalar sums.
    """
    return excess_fold_values(returns, None, plan, metric)


def excess_fold_values(
    returns: NDArray[np.float64],
    benchmark: NDArray[np.float64] | None,
    plan: FoldPlan,
    metric: FoldMetric,
) -> NDArray[np.float64]:
    """:func:`fold_values` of ``returns - benchmark``, without materialising the difference.

    Parameters
    ----------
    returns : ndarray of float64, shape (n, T)
        Per-period returns, one config per row.
    benchmark : ndarray of float64, shape (T,), or None
        Subtracted from every row, period by period (None: nothing subtracted).
    plan : FoldPlan
        The folds.
    metric : {"sharpe", "mean"}
        As in :func:`fold_values`.

    Returns
    -------
    ndarray of float64, shape (n, n_folds)
        Bit for bit ``fold_values(returns - benchmark, plan, metric)``.
    """
    x = np.ascontiguousarray(returns, dtype=np.float64)
    bench = np.zeros(0) if benchmark is None else np.ascontiguousarray(benchmark, dtype=np.float64)
    if bench.shape not in ((0,), (x.shape[1],)):
        raise ValueError(f"benchmark: expected shape ({x.shape[1]},), got {bench.shape}")
    members, offsets = _flat_members(plan)
    out = np.empty((x.shape[0], len(plan.folds)))
    sharpe = metric == "sharpe"
    _fold_values(x, bench, plan.seg_start, plan.seg_stop, members, offsets, sharpe, out)
    return out


@dataclass(frozen=True)
class FoldSummary:
    """Per fold, the in-sample best over a set of configs: mergeable exactly, in any order.

    Attributes
    ----------
    value : ndarray of float64, shape (n_folds,)
        The best training metric (-inf when no config has one).
    index : ndarray of int64, shape (n_folds,)
        Grid index of that config (-1 when none); ties go to the smaller grid index.
    """

    value: NDArray[np.float64]
    index: NDArray[np.int64]


def summarize_folds(grid_index: NDArray[np.int64], values: NDArray[np.float64]) -> FoldSummary:
    """The best config per fold among ``values`` (rows = configs at ``grid_index``)."""
    by_index = np.argsort(grid_index, kind="stable")  # the first maximum is the lowest index
    ordered = values[by_index]
    has_value = ~np.isnan(ordered).all(axis=0)
    pos = np.nanargmax(np.where(has_value, ordered, 0.0), axis=0)
    folds = np.arange(values.shape[1])
    value = np.where(has_value, ordered[pos, folds], -np.inf)
    index = np.where(has_value, grid_index[by_index][pos], -1).astype(np.int64)
    return FoldSummary(value, index)


def merge_fold_summaries(summaries: list[FoldSummary]) -> FoldSummary:
    """Merge fold summaries: the larger value wins, the smaller grid index on ties."""
    if not summaries:
        raise input_error("summaries: expected at least one fold summary")
    value = summaries[0].value.copy()
    index = summaries[0].index.copy()
    for s in summaries[1:]:
        better = (s.value > value) | (
            (s.value == value) & (s.index >= 0) & ((index < 0) | (s.index < index))
        )
        value = np.where(better, s.value, value)
        index = np.where(better, s.index, index)
    return FoldSummary(value, index)
