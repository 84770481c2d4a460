"""CSCV folded over groups of strategies: what a pass over a sweep's parts returns and merges.

:func:`stats.cscv_best_and_ranks` needs every strategy's block statistics at once. The same
answer comes from two folds over any grouping of the strategies, each group seen by itself:

1. :class:`SplitBests`: each split's in-sample best key and the index of its strategy (a
   greater key wins, an equal key the lower index, so groups merge in any order to the
   first maximum by index, as the kernel's argmax over rows in index order gives);
2. with each split's best known and its out-of-sample key (the target,
   :func:`stats._cscv_kernel.cscv_targets`), :class:`SplitRanks`: how many
   strategies fall below the target and how many tie it, per split, summed.

Each answer is O(splits), whatever the number of strategies; the keys come from the same
compiled kernel and the same additions, so the ranks are the kernel's bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from stats._cscv_kernel import (
    CSCVSplits,
    best_update,
    no_bests,
    rank_update,
    relative_rank,
)
from stats._validation import FloatArray


def _in_index_order(
    index: NDArray[np.int64], *arrays: FloatArray
) -> tuple[NDArray[np.int64], list[FloatArray]]:
    """``index`` ascending, and the rows of ``arrays`` in the same order."""
    index = np.asarray(index, dtype=np.int64)
    if index.size < 2 or bool(np.all(index[1:] > index[:-1])):
        return index, list(arrays)
    order = np.argsort(index, kind="stable")
    return index[order], [a[order] for a in arrays]


@dataclass
class SplitBests:
    """Each CSCV split's in-sample best so far, over the strategies folded in.

    Attributes
    ----------
    key : ndarray of float64, shape (n_splits,)
        The best's comparison key (``mean * |mean| / var`` for Sharpe, the mean otherwise);
        ``-inf`` while no strategy has one.
    at : ndarray of int64, shape (n_splits,)
        The best's index (-1 while none): among equal keys the lowest.
    """

    key: FloatArray
    at: NDArray[np.int64]

    @classmethod
    def none(cls, n_splits: int) -> SplitBests:
        """No strategy folded in yet."""
        return cls(*no_bests(n_splits))

    def add(
        self,
        counts: FloatArray,
        sums: FloatArray,
        sums_sq: FloatArray,
        index: NDArray[np.int64],
        splits: CSCVSplits,
        sharpe: bool,
    ) -> None:
        """Fold in some strategies (rows of shape (m, S); ``index`` distinct, any order)."""
        index, (counts, sums, sums_sq) = _in_index_order(index, counts, sums, sums_sq)
        best_update(counts, sums, sums_sq, index, splits, sharpe, self.key, self.at)

    def merge(self, other: SplitBests) -> None:
        """Take ``other``'s bests where they win (the same result in any order of merging)."""
        wins = (other.at >= 0) & (
            (other.key > self.key) | ((other.key == self.key) & (other.at < self.at))
        )
        self.key = np.where(wins, other.key, self.key)
        self.at = np.where(wins, other.at, self.at)

    def best(self, first: int) -> NDArray[np.int64]:
        """Each split's best index; ``first`` (the lowest index) where no strategy had a key."""
        return np.where(self.at < 0, np.int64(first), self.at)


@dataclass
class SplitRanks:
    """Per split, the strategies below and tied with a target out-of-sample key, summed.

    Attributes
    ----------
    below, ties : ndarray of int64, shape (n_splits,)
        Strategies whose out-of-sample key is below / equal to the split's target.
    """

    below: NDArray[np.int64]
    ties: NDArray[np.int64]

    @classmethod
    def none(cls, n_splits: int) -> SplitRanks:
        """No strategy counted yet."""
        return cls(np.zeros(n_splits, dtype=np.int64), np.zeros(n_splits, dtype=np.int64))

    def add(
        self,
        counts: FloatArray,
        sums: FloatArray,
        sums_sq: FloatArray,
        splits: CSCVSplits,
        sharpe: bool,
        target: FloatArray,
    ) -> None:
        """Count some strategies (rows of shape (m, S), any order) against ``target``."""
        rank_update(counts, sums, sums_sq, splits, sharpe, target, self.below, self.ties)

    def merge(self, other: SplitRanks) -> None:
        """Add ``other``'s counts."""
        self.below = self.below + other.below
        self.ties = self.ties + other.ties

    @property
    def rank(self) -> FloatArray:
        """The target's rank per split, 1 = worst, the average rank among ties (itself one)."""
        return relative_rank(self.below, self.ties)
