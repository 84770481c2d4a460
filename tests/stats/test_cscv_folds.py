"""CSCV folded over groups of strategies equals the in-memory kernel, bit for bit."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stats import StatsInputError, cscv_best_and_ranks, pbo_from_block_stats
from stats._cscv_folds import SplitBests, SplitRanks
from stats._cscv_kernel import CSCVSplits, cscv_targets
from stats._pbo import BlockSummary, check_block_summary, pbo_from_bests


def _blocks(rng: np.random.Generator, n: int, s: int, tied: bool, flat: bool):
    """Block statistics of n strategies: ties, constant strategies, a constant first half."""
    counts = np.full((n, s), 20.0)
    sums = rng.standard_normal((n, s)) * 0.1
    sums_sq = sums**2 / 20 + rng.uniform(0.5, 1.5, (n, s))
    if tied:  # exact ties in and out of sample
        sums[n // 2 :] = sums[: n - n // 2]
        sums_sq[n // 2 :] = sums_sq[: n - n // 2]
    sums[::5] = sums_sq[::5] = 0.0  # constant strategies: no Sharpe ratio anywhere
    if flat:  # every strategy constant over the first half: split 0 has no key at all
        sums[:, : s // 2] = sums_sq[:, : s // 2] = 0.0
    return counts, sums, sums_sq


def _folded(blocks, index, groups, splits, sharpe):
    """The best (by index) and rank of each split, from groups folded in any order."""
    bests = SplitBests.none(splits.n_splits)
    for group in groups:
        answer = SplitBests.none(splits.n_splits)
        answer.add(*(b[group] for b in blocks), index[group], splits, sharpe)
        bests.merge(answer)
    best = bests.best(int(index.min()))
    rows, where = np.unique(best, return_inverse=True)
    at = np.searchsorted(index, rows)  # index is sorted: row of each best
    target = cscv_targets(*(b[at] for b in blocks), where, splits, sharpe)
    ranks = SplitRanks.none(splits.n_splits)
    for group in groups[::-1]:
        answer = SplitRanks.none(splits.n_splits)
        answer.add(*(b[group] for b in blocks), splits, sharpe, target)
        ranks.merge(answer)
    return best, ranks.rank, (at[where], rows)


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=120),
    s=st.sampled_from([4, 6, 8]),
    parts=st.integers(min_value=1, max_value=9),
    seed=st.integers(min_value=0, max_value=2**31 - 1),
    tied=st.booleans(),
    flat=st.booleans(),
    sharpe=st.booleans(),
)
def test_groups_in_any_order_give_the_kernels_bests_and_ranks(
    n, s, parts, seed, tied, flat, sharpe
):
    rng = np.random.default_rng(seed)
    blocks = _blocks(rng, n, s, tied, flat)
    index = np.sort(rng.choice(10**12, n, replace=False)).astype(np.int64)  # grid indices
    groups = np.array_split(rng.permutation(n), parts)  # parts hold configs in any order
    splits = CSCVSplits.of(s)
    best, rank = cscv_best_and_ranks(*blocks, splits.combos, sharpe)
    folded_best, folded_rank, (rows, _) = _folded(blocks, index, groups, splits, sharpe)
    np.testing.assert_array_equal(folded_best, index[best])
    np.testing.assert_array_equal(rows, best)
    np.testing.assert_array_equal(folded_rank, rank)


def test_a_split_without_any_key_takes_the_first_strategy_and_ties_go_to_the_lowest():
    rng = np.random.default_rng(3)
    counts, sums, sums_sq = _blocks(rng, 40, 6, tied=True, flat=True)
    index = np.arange(40, dtype=np.int64) * 7 + 5
    splits = CSCVSplits.of(6)
    best, _, _ = _folded((counts, sums, sums_sq), index, [np.arange(40)[::-1]], splits, True)
    assert best[0] == 5  # split 0 holds the constant first half in sample: no key anywhere
    kernel, _ = cscv_best_and_ranks(counts, sums, sums_sq, splits.combos, True)
    assert (kernel < 20).all()  # the tied copies (rows 20..39) never win
    np.testing.assert_array_equal(best, index[kernel])


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**31 - 1),
    parts=st.integers(min_value=1, max_value=6),
    tied=st.booleans(),
)
def test_pbo_from_the_folds_is_pbo_from_the_block_statistics(seed, parts, tied):
    rng = np.random.default_rng(seed)
    n, s = 90, 8
    counts, sums, sums_sq = _blocks(rng, n, s, tied, flat=False)
    index = np.sort(rng.choice(10**9, n, replace=False)).astype(np.int64)
    groups = np.array_split(rng.permutation(n), parts)
    splits = CSCVSplits.of(s)
    whole = pbo_from_block_stats(counts[0], sums, sums_sq)
    best, rank, (rows, _) = _folded((counts, sums, sums_sq), index, groups, splits, True)
    summary = BlockSummary(0, s)
    for group in groups:
        summary = summary.merged(BlockSummary.of(counts[group], sums[group], sums_sq[group]))
    folded = pbo_from_bests(best, rank, (counts[rows], sums[rows], sums_sq[rows]), summary)
    assert np.array_equal(folded.best_in_sample, index[whole.best_in_sample])
    for field in dataclasses.fields(whole):
        if field.name != "best_in_sample":
            a, b = getattr(folded, field.name), getattr(whole, field.name)
            same = np.array_equal(a, b, equal_nan=True) if isinstance(a, np.ndarray) else a == b
            assert same or (a != a and b != b), field.name  # bit for bit (NaN as NaN)


def _refusals():
    rng = np.random.default_rng(0)
    counts, sums, sums_sq = _blocks(rng, 6, 8, tied=False, flat=False)
    nan_sums = sums.copy()
    nan_sums[1, 2] = np.nan
    nan_sums[4, 0] = np.inf
    nan_sq = sums_sq.copy()
    nan_sq[0, 0] = np.nan
    return [
        (counts, nan_sums, sums_sq),  # non-finite sums, counted
        (counts, sums, nan_sq),  # non-finite sums of squares
        (counts[:1], sums[:1], sums_sq[:1]),  # one strategy
        (np.full((6, 8), 0.0), sums, sums_sq),  # no periods in a block
        (np.ones((6, 2)), sums[:, :2], sums_sq[:, :2]),  # too few periods for a Sharpe ratio
        (counts, sums[:, :7], sums_sq[:, :7]),  # an odd number of blocks
    ]


@pytest.mark.parametrize("case", range(6))
def test_the_summary_refuses_what_the_block_statistics_are_refused_for(case):
    counts, sums, sums_sq = _refusals()[case]
    with pytest.raises(StatsInputError) as whole:
        pbo_from_block_stats(counts, sums, sums_sq)
    with pytest.raises(StatsInputError) as summed:
        half = len(sums) // 2
        first = BlockSummary.of(counts[:half], sums[:half], sums_sq[:half])
        second = BlockSummary.of(counts[half:], sums[half:], sums_sq[half:])
        check_block_summary(first.merged(second))
    assert str(summed.value) == str(whole.value)
