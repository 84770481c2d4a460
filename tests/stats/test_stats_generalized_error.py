"""k-StepM, FDP-StepM and the minimum detectable effect from merged null summaries.

Cross-checks: a brute-force k-StepM written from Romano, Shaikh and Wolf (2008) over the full
(configs x replications) null matrix, every subset enumerated; StepM (``k = 1``), itself
checked against arch's ``StepM`` in ``test_stats_data_snooping.py`` and here once more; and
the sweep-wide p-value for the critical value behind the minimum detectable effect.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from stats import (
    NullSummary,
    StatsInputError,
    block_starts_and_lengths,
    bootstrap_long_run_sd,
    centred_resample_means,
    config_null_stats,
    consistent_threshold,
    fdp_stepm,
    k_stepm,
    merge_null_summaries,
    minimum_detectable_effect,
    norm_ppf,
    stepm,
    summarize_null,
    sweep_wide_critical_value,
    sweep_wide_pvalue,
)
from stats._data_snooping import ResampleDraws
from stats._generalized_error import allowed_exceedances


def _draws(n: int, reps: int, seed: int) -> ResampleDraws:
    rng = np.random.default_rng(seed)
    starts, lengths = block_starts_and_lengths(rng, n, 10, reps, "circular")
    return ResampleDraws.from_blocks(n, starts, lengths)


def _panel(m: int, n: int, edges: np.ndarray, seed: int, rho: float = 0.5) -> np.ndarray:
    """``m`` correlated excess-return series; ``edges[j]`` is config j's per-period Sharpe."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal((1, n))
    e = rho * common + math.sqrt(1 - rho * rho) * rng.standard_normal((m, n))
    return (e + edges[:, None]) * 0.01


def _null(e: np.ndarray, reps: int, seed: int) -> tuple[np.ndarray, ...]:
    """Means, sds, ω̂, centred resample means and t of a panel."""
    d = _draws(e.shape[1], reps, seed)
    c, omega = centred_resample_means(e, d), bootstrap_long_run_sd(e, d)
    mean, sd = e.mean(axis=1), e.std(axis=1, ddof=1)
    return mean, sd, omega, c, config_null_stats(mean, omega, c, e.shape[1]).t_stat


def _summary(e: np.ndarray, reps: int, top_k: int, seed: int = 3) -> tuple[NullSummary, np.ndarray]:
    mean, sd, omega, c, t = _null(e, reps, seed)
    idx = np.arange(e.shape[0], dtype=np.int64)
    return summarize_null(idx, mean, sd, omega, c, e.shape[1], top_k), t


# --- the brute force: the paper's algorithm over the full null matrix ---------------------
def _null_matrix(e: np.ndarray, reps: int, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """``s_jb`` written out from the module docstring of stats._data_snooping, and ``t``."""
    n = e.shape[1]
    mean, _, omega, c, _ = _null(e, reps, seed)
    stats = config_null_stats(mean, omega, c, n)
    shift = np.where(stats.t_stat < consistent_threshold(n), mean, 0.0)
    s = math.sqrt(n) * (c + shift[:, None]) / stats.omega[:, None]
    return s, stats.t_stat


def brute_k_stepm(s: np.ndarray, t: np.ndarray, k: int, alpha: float) -> list[int]:
    """RSW (2008) k-StepM, literally: every k-1 subset of the rejected, p-values per subset."""
    m, reps = s.shape
    rejected: set[int] = set()
    while True:
        remaining = [j for j in range(m) if j not in rejected]
        if len(rejected) <= k - 1:
            sets = [list(range(m))]
        else:
            sets = [
                remaining + list(sub) for sub in itertools.combinations(sorted(rejected), k - 1)
            ]
        worst = np.zeros(m)  # the largest p-value of each config over the sets
        for members in sets:
            block = np.sort(s[members], axis=0)[::-1]  # descending per replication
            kmax = block[k - 1] if len(members) >= k else np.full(reps, -np.inf)
            for j in remaining:
                p = (1 + np.count_nonzero(kmax >= t[j])) / (1 + reps)
                worst[j] = max(worst[j], p)
        new = {j for j in remaining if worst[j] <= alpha}
        if not new:
            return sorted(rejected)
        rejected |= new


def brute_fdp_stepm(s: np.ndarray, t: np.ndarray, gamma: float, alpha: float) -> list[int]:
    k = 1
    while True:
        found = brute_k_stepm(s, t, k, alpha)
        if len(found) < k / gamma - 1 or len(found) == len(t):
            return found
        k += 1


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_k_stepm_equals_the_brute_force(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    edges = np.where(np.arange(12) < 7, rng.uniform(0.04, 0.16, 12), 0.0)  # 7 of 12 real
    e = _panel(12, 600, edges, seed)
    summary, t = _summary(e, 99, top_k=12)
    s, t_brute = _null_matrix(e, 99)
    assert t.tobytes() == t_brute.tobytes()
    res = k_stepm(summary, np.arange(12), t, k, 0.1)
    assert res.rejected.tolist() == brute_k_stepm(s, t_brute, k, 0.1)
    assert res.exact and res.all_subsets and res.k == k
    assert res.rejected.tolist() == np.flatnonzero(t > res.critical_value).tolist()


@pytest.mark.parametrize("seed", range(6))
def test_fdp_stepm_equals_the_brute_force(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    edges = np.where(np.arange(12) < 8, rng.uniform(0.03, 0.15, 12), 0.0)
    e = _panel(12, 500, edges, seed)
    summary, t = _summary(e, 99, top_k=12)
    s, _ = _null_matrix(e, 99)
    for gamma in (0.1, 0.25, 0.5):
        res = fdp_stepm(summary, np.arange(12), t, gamma, 0.1)
        assert res.rejected.tolist() == brute_fdp_stepm(s, t, gamma, 0.1), gamma
        assert res.counts[-1] == res.rejected.size and len(res.counts) == res.k


@pytest.mark.parametrize("seed", [5, 11])  # panels that take two rounds of rejections
def test_k1_is_stepm_for_any_top_list(seed: int) -> None:
    edges = np.zeros(40)
    edges[:20] = np.random.default_rng(seed).uniform(0.03, 0.2, 20)
    e = _panel(40, 600, edges, seed, rho=0.6)
    for top_k in (40, 8, 2):
        summary, t = _summary(e, 200, top_k)
        one, ref = k_stepm(summary, np.arange(40), t, 1), stepm(summary, np.arange(40), t)
        assert one.rejected.tolist() == ref.rejected.tolist() and one.exact == ref.exact
        assert one.steps == ref.steps == 3  # two rounds of rejections, then none
        assert one.exact == (top_k > 2)  # two stored maxima per replication run out


def test_short_top_lists_and_the_subset_bound_are_conservative() -> None:
    edges = np.zeros(300)
    edges[:40] = np.linspace(0.02, 0.09, 40)
    e = _panel(300, 2000, edges, 9, rho=0.7)
    full, t = _summary(e, 200, 300)
    short, _ = _summary(e, 200, 6)
    idx = np.arange(300)
    for k in (2, 3, 5, 8):
        exact = k_stepm(full, idx, t, k)
        assert exact.exact
        bounded = k_stepm(full, idx, t, k, max_subsets=0)
        trimmed = k_stepm(short, idx, t, k)
        assert set(bounded.rejected.tolist()) <= set(exact.rejected.tolist())
        assert set(trimmed.rejected.tolist()) <= set(exact.rejected.tolist())
        if k > 6:
            assert not trimmed.exact
    # More false discoveries tolerated, at least as many configs called real.
    assert fdp_stepm(full, idx, t).rejected.size >= stepm(full, idx, t).rejected.size


def test_merged_parts_give_the_whole_sweeps_answer() -> None:
    edges = np.zeros(120)
    edges[::10] = 0.08
    e = _panel(120, 800, edges, 11)
    mean, sd, omega, c, t = _null(e, 150, 5)
    idx = np.arange(1000, 1120, dtype=np.int64)
    whole = summarize_null(idx, mean, sd, omega, c, 800, 16)
    cuts = [0, 7, 50, 51, 120]
    parts = [
        summarize_null(idx[a:b], mean[a:b], sd[a:b], omega[a:b], c[a:b], 800, 16)
        for a, b in itertools.pairwise(cuts)
    ]
    merged = merge_null_summaries(parts[::-1])
    a, b = fdp_stepm(whole, idx, t, 0.2), fdp_stepm(merged, idx, t, 0.2)
    assert a.rejected.tolist() == b.rejected.tolist() and a.counts == b.counts


def test_a_config_at_or_below_the_benchmark_is_never_called_real() -> None:
    # Every config far below the benchmark: each one's null is recentred to its negative
    # mean, the null maxima are negative, and the bar stays at t > 0.
    e = _panel(30, 800, np.full(30, -0.15), 6)
    summary, t = _summary(e, 99, 8)
    assert (np.sort(summary.top_value[:, 0])[-5] < 0) and (t < 0).all()
    for k in (1, 2, 5):
        res = k_stepm(summary, np.arange(30), t, k)
        assert res.rejected.size == 0 and res.critical_value == 0.0
    t_up = t.copy()
    t_up[3] = 1e-9  # a positive t above a negative null: real (its own null is not in it)
    assert k_stepm(summary, np.arange(30), t_up, 1).rejected.tolist() == [3]
    t_up[3] = 0.0
    assert k_stepm(summary, np.arange(30), t_up, 1).rejected.size == 0


def test_nothing_to_find_and_bad_input() -> None:
    e = _panel(50, 500, np.zeros(50), 2)
    summary, t = _summary(e, 99, 8)
    res = fdp_stepm(summary, np.arange(50), t)
    assert res.k == 1 and res.counts == (res.rejected.size,)
    t_nan = t.copy()
    t_nan[:10] = np.nan  # constant configs are not tested
    assert k_stepm(summary, np.arange(50), t_nan, 2).rejected.size <= 40
    with pytest.raises(StatsInputError, match="k: expected an integer >= 1"):
        k_stepm(summary, np.arange(50), t, 0)
    with pytest.raises(StatsInputError, match="gamma"):
        fdp_stepm(summary, np.arange(50), t, gamma=1.0)
    with pytest.raises(StatsInputError, match="alpha"):
        fdp_stepm(summary, np.arange(50), t, alpha=0.0)
    with pytest.raises(StatsInputError, match="one length"):
        k_stepm(summary, np.arange(49), t, 1)


@pytest.mark.parametrize("reps", [1, 19, 20, 99, 199, 200, 999])
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1, 0.2])
def test_allowed_exceedances_is_the_pvalue_rule(reps: int, alpha: float) -> None:
    a = allowed_exceedances(reps, alpha)
    for count in range(reps + 1):
        assert ((1.0 + count) / (1.0 + reps) <= alpha) == (count <= a)


def test_the_critical_value_is_where_the_sweep_wide_pvalue_crosses_alpha() -> None:
    e = _panel(80, 600, np.zeros(80), 4)
    summary, _ = _summary(e, 199, 4)
    for alpha in (0.01, 0.05, 0.1):
        c = sweep_wide_critical_value(summary, alpha)
        null = np.maximum(summary.spa, 0.0)
        for t in np.concatenate([null, null + 1e-12, null - 1e-12, [0.0, 10.0]]):
            assert (sweep_wide_pvalue(summary, float(t)) <= alpha) == (t > c)
    tiny = NullSummary(
        1, np.zeros(5), np.ones(5), np.zeros(5), np.ones((5, 1)), np.zeros((5, 1), dtype=np.int64)
    )
    assert sweep_wide_critical_value(tiny, 0.05) == math.inf  # 1/(B+1) > alpha: no rejection


def test_minimum_detectable_effect_is_the_stated_formula() -> None:
    e = _panel(60, 1000, np.zeros(60), 8)
    summary, _ = _summary(e, 199, 4)
    mde = minimum_detectable_effect(summary, 0.03, alpha=0.05, power=0.8)
    c = sweep_wide_critical_value(summary, 0.05)
    assert c > norm_ppf(0.95)  # 60 configs: the search raises the bar
    assert mde.sharpe == (c + norm_ppf(0.8)) * 0.03
    assert mde.single_test_sharpe == (norm_ppf(0.95) + norm_ppf(0.8)) * 0.03
    assert mde.sharpe > mde.single_test_sharpe  # the search costs detectable size
    assert mde.critical_value == mde.sweep_critical_value == c and mde.power == 0.8
    # Every config far below the benchmark: the consistent null maximum is about 0, yet a
    # config with an edge would face at least its own null, the single test's bar.
    worse = _panel(60, 1000, np.full(60, -0.2), 8)
    low = minimum_detectable_effect(_summary(worse, 199, 4)[0], 0.03)
    assert low.sweep_critical_value < norm_ppf(0.95) == low.critical_value
    assert low.sharpe == low.single_test_sharpe
    with pytest.raises(StatsInputError, match="power"):
        minimum_detectable_effect(summary, 0.03, power=1.0)
    with pytest.raises(StatsInputError, match="null_sharpe_std"):
        minimum_detectable_effect(summary, 0.0)


@pytest.mark.slow
def test_k1_agrees_with_arch_stepm() -> None:
    """Peer: arch's StepM on the studentised excess returns (as in test_stats_data_snooping)."""
    arch = pytest.importorskip("arch.bootstrap")
    edges = np.zeros(150)
    edges[:4] = [0.12, 0.11, 0.1, 0.1]  # far from the noise: the sets do not hang on draws
    e = _panel(150, 2000, edges, 21, rho=0.6)
    mean, sd, omega, c, t = _null(e, 2000, 11)
    summary = summarize_null(np.arange(150), mean, sd, omega, c, 2000, 32)
    ours = k_stepm(summary, np.arange(150), t, 1).rejected.tolist()
    zeros = np.zeros(2000)
    scaled = -(e / omega[:, None]).T
    peer = arch.StepM(zeros, scaled, block_size=10, reps=2000, bootstrap="circular", seed=5)
    peer.compute()
    assert ours == sorted(int(i) for i in peer.superior_models)
