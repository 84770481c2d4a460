"""Every number of the sweep-wide tests pinned on a null summary computed by hand.

Four configs (grid indices 10, 11, 12, 13), ``n = 4`` periods (``sqrt(n) = 2``), ``B = 9``
replications, so every p-value is a multiple of ``1 / (1 + B) = 0.1``. All inputs are
dyadic fractions, so every product and sum below is exact in float64 and the expected
numbers are written as the exact decimals the definitions give; each is derived in the
comment beside it from the definitions:

* White (2000), "A reality check for data snooping", Econometrica 68(5), 1097-1126:
  statistic ``V = max_k sqrt(n) ē_k``, null ``V*_b = max_k sqrt(n) c_kb``,
  p = ``(1 + #{V*_b >= V}) / (1 + B)``.
* Hansen (2005), "A test for superior predictive ability", JBES 23(4), 365-380:
  ``t_k = sqrt(n) ē_k / ω̂_k``; ``s_kb = sqrt(n) (c_kb + ē_k 1{t_k < -sqrt(2 log log n)}) / ω̂_k``;
  statistic ``max(0, max_k t_k)`` against ``max(0, max_k s_kb)``.
* Romano and Wolf (2005), "Stepwise multiple testing as formalized data snooping",
  Econometrica 73(4), 1237-1282: StepM rejects, round by round, the remaining configs whose
  ``t`` exceeds the ``1 - alpha`` quantile of the maximum of ``s_kb`` over the configs not
  yet rejected; it stops when a round rejects nothing.
* Romano, Shaikh and Wolf (2008), "Formalized data snooping based on generalized error
  rates", Econometric Theory 24(2), 404-447: k-StepM replaces the maximum by the ``k``-th
  largest, maximised over ``(k - 1)``-subsets of the rejected configs; FDP-StepM runs
  k-StepM for ``k = 1, 2, ...`` while it rejects ``N_k >= k / gamma - 1`` configs.

The quantile rule of every test here is the p-value rule ``(1 + #{null >= t}) / (1 + B) <=
alpha`` (Davison and Hinkley 1997, Sec. 4.2). At ``alpha = 0.25`` and ``B = 9``:
``(1 + a) / 10 <= 0.25`` allows ``a = 1`` exceedance, so a critical value is the 2nd largest
of the 9 null values (with ``a / B``, 2/9 <= 0.25 would allow 2).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from stats import (
    NullSummary,
    config_null_stats,
    data_snooping_counted,
    data_snooping_tests,
    fdp_stepm,
    fdp_stepm_counted,
    k_stepm,
    merge_null_summaries,
    merge_t_counts,
    stepm,
    stepm_counted,
    summarize_null,
    sweep_extremes,
    sweep_wide_critical_value,
    sweep_wide_pvalue,
    t_counts_of,
)
from stats._data_snooping import NO_CONFIG, consistent_threshold

N_OBS = 4
IDX = np.array([10, 11, 12, 13], dtype=np.int64)
# Means ē_k and long-run sds ω̂_k (std, ddof=1, taken equal to ω̂ for simplicity).
MEAN = np.array([0.875, 1.0, 1.0, -1.0])
OMEGA = np.array([0.5, 1.0, 2.0, 1.0])
STD = OMEGA.copy()
# t_k = sqrt(n) ē_k / ω̂_k = 2 ē_k / ω̂_k:
#   10: 2 * 0.875 / 0.5 = 3.5;  11: 2 * 1 / 1 = 2.0;  12: 2 * 1 / 2 = 1.0;  13: -2.0.
T = np.array([3.5, 2.0, 1.0, -2.0])
# Centred resample means c_kb (rows: configs 10..13, columns: replications b = 0..8).
CENTRED = np.array(
    [
        [0.75, 0.125, 0.25, -0.125, 0.0, 0.5, 0.0625, -0.25, 0.125],
        [0.25, 1.25, -0.25, 0.5, 0.125, 0.0, 0.75, 0.25, -0.125],
        [1.0, 0.0, 0.75, 0.5, -1.0, 0.5, 0.25, 1.0, 0.25],
        [0.0, 0.25, 0.5, -0.25, 0.375, -0.5, 0.125, 0.75, -0.125],
    ]
)
# Hansen's threshold at n = 4: -sqrt(2 log log 4) = -sqrt(2 log 1.3863) = -sqrt(0.65327)
# = -0.80825. Only config 13 (t = -2) is below it, so only it keeps its mean in the null:
#   s_10b = 2 c / 0.5 = 4 c_10b;  s_11b = 2 c_11b;  s_12b = 2 c / 2 = c_12b;
#   s_13b = 2 (c_13b - 1) / 1.
S = np.array(
    [
        [3.0, 0.5, 1.0, -0.5, 0.0, 2.0, 0.25, -1.0, 0.5],
        [0.5, 2.5, -0.5, 1.0, 0.25, 0.0, 1.5, 0.5, -0.25],
        [1.0, 0.0, 0.75, 0.5, -1.0, 0.5, 0.25, 1.0, 0.25],
        [-2.0, -1.5, -1.0, -2.5, -1.25, -3.0, -1.75, -0.5, -2.25],
    ]
)
# SPA null, max_k s_kb per column: 3.0 (10), 2.5 (11), 1.0 (10), 1.0 (11), 0.25 (11),
# 2.0 (10), 1.5 (11), 1.0 (12), 0.5 (10).
SPA = [3.0, 2.5, 1.0, 1.0, 0.25, 2.0, 1.5, 1.0, 0.5]
# Reality Check null, 2 max_k c_kb per column:
#   b0 2*max(.75, .25, 1, 0) = 2.0    b1 2*1.25 = 2.5         b2 2*.75 = 1.5
#   b3 2*.5 = 1.0                     b4 2*.375 (13) = 0.75   b5 2*.5 = 1.0
#   b6 2*.75 = 1.5                    b7 2*1.0 = 2.0          b8 2*.25 = 0.5
REALITY_CHECK = [2.0, 2.5, 1.5, 1.0, 0.75, 1.0, 1.5, 2.0, 0.5]
# Best null Sharpe, max_k c_kb / sd_k = max(s_10b/2, s_11b/2, s_12b/2, c_13b):
#   b0 max(1.5, .25, .5, 0) = 1.5    b1 1.25    b2 max(.5, -.25, .375, .5) = 0.5
#   b3 0.5    b4 max(0, .125, -.5, .375) = 0.375    b5 1.0    b6 0.75
#   b7 max(-.5, .25, .5, .75) = 0.75    b8 0.25
NULL_SHARPE = [1.5, 1.25, 0.5, 0.5, 0.375, 1.0, 0.75, 0.75, 0.25]
# Each column of S sorted descending, ties (b6: 0.25 for 10 and 12) by the smaller index.
TOP_VALUE = [
    [3.0, 1.0, 0.5, -2.0],
    [2.5, 0.5, 0.0, -1.5],
    [1.0, 0.75, -0.5, -1.0],
    [1.0, 0.5, -0.5, -2.5],
    [0.25, 0.0, -1.0, -1.25],
    [2.0, 0.5, 0.0, -3.0],
    [1.5, 0.25, 0.25, -1.75],
    [1.0, 0.5, -0.5, -1.0],
    [0.5, 0.25, -0.25, -2.25],
]
TOP_INDEX = [
    [10, 12, 11, 13],
    [11, 10, 12, 13],
    [10, 12, 11, 13],
    [11, 12, 10, 13],
    [11, 10, 12, 13],
    [10, 12, 11, 13],
    [11, 10, 12, 13],
    [12, 11, 13, 10],
    [10, 12, 11, 13],
]
ALPHA = 0.25


def hand_summary(top_k: int = 4) -> NullSummary:
    """The summary above, written out (``top_k`` < 4 keeps the first columns of the lists)."""
    return NullSummary(
        n_configs=4,
        reality_check=np.array(REALITY_CHECK),
        spa=np.array(SPA),
        null_sharpe=np.array(NULL_SHARPE),
        top_value=np.array(TOP_VALUE)[:, :top_k],
        top_index=np.array(TOP_INDEX, dtype=np.int64)[:, :top_k],
    )


def test_the_hand_example_is_what_the_definitions_say() -> None:
    # The recentring threshold that decides which configs keep their mean (only 13).
    threshold = consistent_threshold(N_OBS)
    assert threshold == pytest.approx(-0.80825, abs=1e-5)
    shift = np.where(threshold > T, MEAN, 0.0)
    np.testing.assert_array_equal(S, 2.0 * (CENTRED + shift[:, None]) / OMEGA[:, None])


def test_per_config_t_and_pvalues_by_hand() -> None:
    res = config_null_stats(MEAN, OMEGA, CENTRED, N_OBS)
    np.testing.assert_array_equal(res.t_stat, T)
    np.testing.assert_array_equal(res.omega, OMEGA)
    # p_k = (1 + #{c_kb >= ē_k}) / (1 + B):
    #   10: c >= 0.875: none                       -> 1/10
    #   11: c >= 1.0: 1.25                         -> 2/10
    #   12: c >= 1.0: 1.0 (b0), 1.0 (b7), ties count -> 3/10
    #   13: c >= -1.0: all 9                       -> 10/10
    np.testing.assert_array_equal(res.p_value, [0.1, 0.2, 0.3, 1.0])


@pytest.mark.parametrize("top_k", [4, 2, 6])
def test_the_null_summary_by_hand(top_k: int) -> None:
    got = summarize_null(IDX, MEAN, STD, OMEGA, CENTRED, N_OBS, top_k)
    assert got.n_configs == 4 and got.reps == 9 and got.top_k == top_k
    np.testing.assert_array_equal(got.spa, SPA)
    np.testing.assert_array_equal(got.reality_check, REALITY_CHECK)
    np.testing.assert_array_equal(got.null_sharpe, NULL_SHARPE)
    # Lists longer than the configs are padded with -inf and NO_CONFIG.
    pad = max(top_k - 4, 0)
    value = np.pad(np.array(TOP_VALUE), ((0, 0), (0, pad)), constant_values=-np.inf)
    index = np.pad(np.array(TOP_INDEX), ((0, 0), (0, pad)), constant_values=NO_CONFIG)
    np.testing.assert_array_equal(got.top_value, value[:, :top_k])
    np.testing.assert_array_equal(got.top_index, index[:, :top_k])
    # Any split into parts merges to the same summary.
    halves = [
        summarize_null(IDX[p], MEAN[p], STD[p], OMEGA[p], CENTRED[p], N_OBS, top_k)
        for p in ([0, 3], [1, 2])
    ]
    merged = merge_null_summaries(halves)
    np.testing.assert_array_equal(merged.spa, SPA)
    np.testing.assert_array_equal(merged.top_value, got.top_value)
    np.testing.assert_array_equal(merged.top_index, got.top_index)


@pytest.mark.parametrize(
    ("t", "expected"),
    [
        # (1 + #{max(0, T*_b) >= max(0, t)}) / (1 + B), SPA = 3, 2.5, 1, 1, .25, 2, 1.5, 1, .5:
        (3.5, 0.1),  # none >= 3.5                           -> 1/10 (never 0)
        (2.5, 0.3),  # 3.0 and 2.5 (a tie counts)            -> 3/10
        (1.0, 0.8),  # all but 0.25 and 0.5: 7               -> 8/10
        (0.0, 1.0),  # every floored maximum is >= 0         -> 10/10
        (-1.0, 1.0),  # t floored at 0 as the maxima are     -> 10/10
    ],
)
def test_sweep_wide_pvalue_by_hand(t: float, expected: float) -> None:
    assert sweep_wide_pvalue(hand_summary(), t) == expected


def test_sweep_wide_pvalue_of_a_non_finite_t_is_nan() -> None:
    assert math.isnan(sweep_wide_pvalue(hand_summary(), math.nan))


def test_sweep_wide_critical_value_by_hand() -> None:
    # a = 1 allowed exceedance: the 2nd largest of max(0, SPA) = 2.5; t > 2.5 has p <= 0.25
    # (t = 2.5 itself has p = 0.3 above).
    assert sweep_wide_critical_value(hand_summary(), ALPHA) == 2.5
    # alpha = 0.05 with B = 9: (1 + 0) / 10 > 0.05, no count is allowed -> inf.
    assert sweep_wide_critical_value(hand_summary(), 0.05) == math.inf


STEPM_BY_HAND = {
    # Round 1: null = SPA maxima; 2nd largest of (3, 2.5, 2, 1.5, 1, 1, 1, .5, .25) = 2.5.
    #   t > 2.5: config 10 (3.5).
    # Round 2: max over {11, 12, 13} per replication (10 removed from the lists):
    #   1.0, 2.5, 0.75, 1.0, 0.25, 0.5, 1.5, 1.0, 0.25; 2nd largest = 1.5.
    #   t > 1.5: config 11 (2.0).
    # Round 3: max over {12, 13}: 1.0, 0.0, 0.75, 0.5, -1.0, 0.5, 0.25, 1.0, 0.25;
    #   2nd largest = 1.0; config 12 has t = 1.0, not above it: nothing new, stop.
    "rejected": [10, 11],
    "count": 2,
    "threshold": 1.5,
    "steps": 3,
}


def test_stepm_by_hand() -> None:
    res = stepm(hand_summary(), IDX, T, ALPHA)
    assert res.rejected is not None and res.rejected.tolist() == STEPM_BY_HAND["rejected"]
    assert (res.count, res.threshold, res.steps, res.exact) == (
        STEPM_BY_HAND["count"],
        STEPM_BY_HAND["threshold"],
        STEPM_BY_HAND["steps"],
        True,
    )


def test_stepm_with_a_top_list_of_two_by_hand() -> None:
    # Lists of the top 2. Round 2 is exact (only 10 is gone, so a free entry is always
    # listed). Round 3 removes 10 and 11: replications 1, 4 and 6 list only those two, so
    # their maximum is bounded by the last stored value (0.5, 0.0, 0.25 in place of the true
    # 0.0, -1.0, 0.25); the null 1.0, .5, .75, .5, 0, .5, .25, 1.0, .25 still has 2nd largest
    # 1.0: the same rejections, flagged not exact.
    res = stepm(hand_summary(top_k=2), IDX, T, ALPHA)
    assert res.rejected is not None and res.rejected.tolist() == [10, 11]
    assert (res.count, res.threshold, res.steps, res.exact) == (2, 1.5, 3, False)


def test_stepm_rejects_nothing_when_the_level_is_out_of_reach() -> None:
    # B = 9, alpha = 0.05: even no exceedance gives p = 0.1 > 0.05; one round, inf.
    res = stepm(hand_summary(), IDX, T, 0.05)
    assert res.rejected is not None and res.rejected.tolist() == []
    assert (res.count, res.threshold, res.steps) == (0, math.inf, 1)


def test_reality_check_spa_and_stepm_by_hand() -> None:
    res = data_snooping_tests(hand_summary(), IDX, MEAN, T, N_OBS, ALPHA)
    assert (res.reps, res.n_configs, res.best_index, res.alpha) == (9, 4, 10, ALPHA)
    # Reality Check: V = 2 max_k ē_k = 2 * 1.0 = 2.0 (configs 11 and 12, not the best t);
    # #{V*_b >= 2.0} = 2.0 (b0), 2.5 (b1), 2.0 (b7) = 3 -> (1 + 3) / (1 + 9) = 0.4.
    assert res.reality_check_pvalue == 0.4
    # SPA: max(0, max_k t_k) = 3.5; no SPA maximum reaches it -> 1/10.
    assert res.spa_pvalue == 0.1
    assert res.stepm.rejected is not None
    assert res.stepm.rejected.tolist() == STEPM_BY_HAND["rejected"]
    assert (res.stepm.count, res.stepm.threshold, res.stepm.steps) == (2, 1.5, 3)


def test_the_counted_forms_the_report_uses_by_hand() -> None:
    # The report runs data_snooping_counted / stepm_counted / fdp_stepm_counted on counts
    # merged from the parts: the same hand numbers, from any split.
    summary = hand_summary()
    counts = merge_t_counts([t_counts_of(summary, IDX[p], T[p]) for p in ([2], [0, 3], [1])])
    extremes = sweep_extremes(IDX, MEAN, T)
    assert (extremes.best_index, extremes.best_t, extremes.max_mean) == (10, 3.5, 1.0)
    res = data_snooping_counted(summary, counts, extremes, N_OBS, ALPHA)
    assert (res.reality_check_pvalue, res.spa_pvalue) == (0.4, 0.1)
    assert res.stepm.rejected is None
    assert (res.stepm.count, res.stepm.threshold, res.stepm.steps) == (2, 1.5, 3)
    alone = stepm_counted(summary, counts, ALPHA)
    assert (alone.count, alone.threshold, alone.steps) == (2, 1.5, 3)
    fdp = fdp_stepm_counted(summary, counts, 0.4, ALPHA)
    assert (fdp.k, fdp.counts, fdp.count, fdp.threshold) == (2, (2, 3), 3, 0.75)


def test_k_stepm_by_hand() -> None:
    summary = hand_summary()
    # k = 2, round 1: the 2nd largest s_kb of every config per replication:
    #   1.0, 0.5, 0.75, 0.5, 0.0, 0.5, 0.25, 0.5, 0.25; its 2nd largest is 0.75.
    #   t > 0.75: 10, 11, 12 (3.5, 2.0, 1.0).
    # Round 2: every 1-subset I of {10, 11, 12} joins config 13; the 2nd largest of the two
    #   is min(s_Ib, s_13b) <= s_13b < 0 in every replication: every quantile is negative,
    #   floored at 0; t > 0 adds no config (13 has t = -2): stop after 2 rounds.
    res = k_stepm(summary, IDX, T, 2, ALPHA)
    assert res.rejected is not None and res.rejected.tolist() == [10, 11, 12]
    assert (res.count, res.threshold, res.critical_value, res.steps) == (3, 0.75, 0.75, 2)
    assert res.exact and res.all_subsets
    # With one subset allowed (3 exist), each replication adds its largest rejected entry
    # instead: still negative, the same set, flagged as the bound.
    bounded = k_stepm(summary, IDX, T, 2, ALPHA, max_subsets=2)
    assert bounded.rejected is not None and bounded.rejected.tolist() == [10, 11, 12]
    assert (bounded.count, bounded.critical_value, bounded.all_subsets) == (3, 0.75, False)
    # k = 3, round 1: the 3rd largest per replication: .5, 0, -.5, -.5, -1, 0, .25, -.5, -.25;
    #   2nd largest 0.25; t > 0.25: 10, 11, 12. Round 2: 2-subsets of them with 13, all 3rd
    #   largest < 0 -> 0: stop.
    res3 = k_stepm(summary, IDX, T, 3, ALPHA)
    assert (res3.count, res3.critical_value, res3.steps) == (3, 0.25, 2)
    # k = 1 is StepM (its critical values are all positive here).
    res1 = k_stepm(summary, IDX, T, 1, ALPHA)
    assert (res1.count, res1.threshold, res1.critical_value, res1.steps) == (2, 1.5, 1.5, 3)


@pytest.mark.parametrize(
    ("gamma", "k", "counts", "count", "critical"),
    [
        # gamma = 0.4: N_1 = 2 >= 1/0.4 - 1 = 1.5, go on; N_2 = 3 < 2/0.4 - 1 = 4, stop at k = 2.
        (0.4, 2, (2, 3), 3, 0.75),
        # gamma = 0.5: N_1 = 2 >= 1; N_2 = 3 >= 3; N_3 = 3 < 5: stop at k = 3.
        (0.5, 3, (2, 3, 3), 3, 0.25),
        # gamma = 0.3: N_1 = 2 < 1/0.3 - 1 = 2.33: StepM's set.
        (0.3, 1, (2,), 2, 1.5),
    ],
)
def test_fdp_stepm_by_hand(
    gamma: float, k: int, counts: tuple[int, ...], count: int, critical: float
) -> None:
    res = fdp_stepm(hand_summary(), IDX, T, gamma, ALPHA)
    assert (res.k, res.counts, res.count, res.critical_value) == (k, counts, count, critical)
    assert res.threshold == critical and res.exact and res.all_subsets
    assert res.rejected is not None and res.rejected.tolist() == [10, 11, 12][:count]
