"""Fold construction: exact periods, purge and embargo, CPCV paths; mergeable summaries."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from stats import (
    FoldPlan,
    StatsInputError,
    cpcv_folds,
    cpcv_paths,
    fold_values,
    merge_fold_summaries,
    summarize_folds,
    walk_forward_folds,
)


def test_rolling_walk_forward_windows_and_purge():
    folds = walk_forward_folds(100, 30, 20, purge=3)
    # Tests at 30..49, 50..69, 70..89; the last 10 periods never make a whole test window.
    assert [f.test for f in folds] == [((30, 50),), ((50, 70),), ((70, 90),)]
    # Rolling training windows of 30, each losing its last 3 periods to the purge.
    assert [f.train for f in folds] == [((0, 27),), ((20, 47),), ((40, 67),)]


def test_anchored_walk_forward_grows_from_the_start():
    folds = walk_forward_folds(100, 30, 20, anchored=True)
    assert [f.train for f in folds] == [((0, 30),), ((0, 50),), ((0, 70),)]


def test_cpcv_purges_both_sides_and_embargoes_after():
    folds = cpcv_folds(60, 6, 2, purge=2, embargo=3)
    assert len(folds) == math.comb(6, 2)
    # Split 0 tests groups 0 and 1 (periods 0..19): 2 + 3 periods after it are dropped.
    assert folds[0].test == ((0, 20),)
    assert folds[0].train == ((25, 60),)
    # Split tests groups 2 and 4 (20..29, 40..49): purge 2 before each, 2 + 3 after each.
    k = [f.test for f in folds].index(((20, 30), (40, 50)))
    assert folds[k].train == ((0, 18), (35, 38), (55, 60))


def test_cpcv_paths_use_every_split_test_group_once():
    paths = cpcv_paths(6, 2)
    assert len(paths) == math.comb(6, 2) * 2 // 6 == 5
    used = sorted((g, s) for path in paths for g, s in path)
    tested = [np.zeros(60, dtype=bool) for _ in range(15)]
    for s, fold in enumerate(cpcv_folds(60, 6, 2)):
        for a, b in fold.test:
            tested[s][a:b] = True
    expected = sorted((g, s) for s in range(15) for g in range(6) if tested[s][10 * g])
    assert used == expected
    assert all([g for g, _ in path] == list(range(6)) for path in paths)


def test_fold_values_equal_pandas_on_the_training_windows():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((7, 300)) * 0.01 + 0.0005
    plan = FoldPlan.from_folds(
        walk_forward_folds(300, 100, 40, purge=5) + cpcv_folds(300, 5, 2, purge=4, embargo=2)
    )
    got = fold_values(x, plan, "sharpe")
    for k, fold in enumerate(plan.folds):
        frame = pd.DataFrame(np.concatenate([x[:, a:b] for a, b in fold.train], axis=1).T)
        np.testing.assert_allclose(got[:, k], frame.mean() / frame.std(), rtol=1e-12)
    means = fold_values(x, plan, "mean")
    np.testing.assert_allclose(means[:, 0], x[:, 0:95].mean(axis=1), rtol=1e-12)
    # A row alone gives the same bits as among others (invariant 1).
    np.testing.assert_array_equal(fold_values(x[[4]], plan, "sharpe")[0], got[4])


def test_summaries_merge_in_any_order_with_ties_to_the_lower_index():
    values = np.array([[1.0, np.nan], [3.0, 2.0], [3.0, np.nan], [0.5, 2.0]])
    index = np.array([10, 7, 3, 1], dtype=np.int64)
    whole = summarize_folds(index, values)
    assert whole.index.tolist() == [3, 1] and whole.value.tolist() == [3.0, 2.0]
    parts = [summarize_folds(index[[i]], values[[i]]) for i in (2, 0, 3, 1)]
    merged = merge_fold_summaries(parts)
    assert merged.index.tolist() == whole.index.tolist()
    assert merged.value.tolist() == whole.value.tolist()
    empty = summarize_folds(index[[0]], np.array([[np.nan, np.nan]]))
    assert empty.index.tolist() == [-1, -1]
    assert merge_fold_summaries([empty, parts[0]]).index.tolist() == parts[0].index.tolist()


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: walk_forward_folds(50, 40, 20), "do not fit"),
        (lambda: walk_forward_folds(100, 5, 10, purge=4), "leaves 1 training"),
        (lambda: cpcv_folds(100, 4, 4), "test_groups < groups"),
        (lambda: cpcv_folds(100, 5, 2, purge=-1), "purge"),
    ],
)
def test_folds_that_do_not_fit_are_refused(call, match):
    with pytest.raises(StatsInputError, match=match):
        call()
