"""The step-down tests and the corrections from per-part counts equal the array forms.

The report runs StepM, FDP-StepM, Holm and Benjamini-Hochberg from reductions of each part
(``stats.TCounts``, ``stats.PValueCounts``) so that no per-config array is held. Checked
here: any split of the configs into parts, merged, gives the answer of the arrays, bit for
bit; StepM equals the set-based step-down as Romano and Wolf (2005) write it (the previous
implementation, kept below as the reference); Holm and BH equal statsmodels.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from stats import (
    NullSummary,
    StatsInputError,
    block_starts_and_lengths,
    bootstrap_long_run_sd,
    centred_resample_means,
    config_null_stats,
    corrections_counted,
    data_snooping_counted,
    data_snooping_tests,
    fdp_stepm,
    fdp_stepm_counted,
    merge_null_summaries,
    merge_p_value_counts,
    merge_t_counts,
    multiple_testing_summary,
    p_value_counts,
    stepm,
    stepm_counted,
    summarize_null,
    sweep_extremes,
    t_counts_of,
)
from stats._data_snooping import NO_CONFIG, ResampleDraws, exceedances
from stats._generalized_error import allowed_exceedances


def reference_stepm(summary: NullSummary, idx: np.ndarray, t: np.ndarray, alpha: float):
    """StepM as a set-based step-down (the implementation before the counts)."""
    ok = np.isfinite(t)
    idx, t = idx[ok], t[ok]
    rejected: set[int] = set()
    exact, steps = True, 0
    remaining = np.ones(idx.size, dtype=bool)
    while remaining.any():
        steps += 1
        if not rejected:
            null_max = summary.spa
        else:
            gone = np.isin(summary.top_index, np.fromiter(rejected, dtype=np.int64))
            null_max = np.empty(summary.reps)
            for b in range(summary.reps):
                free = np.flatnonzero(~gone[b])
                if free.size:
                    null_max[b] = summary.top_value[b, free[0]]
                else:
                    null_max[b] = summary.top_value[b, -1]
                    exact = exact and summary.top_index[b, -1] == NO_CONFIG
        p = (1.0 + exceedances(null_max, t[remaining])) / (1.0 + summary.reps)
        new = idx[remaining][p <= alpha]
        if new.size == 0:
            break
        rejected.update(new.tolist())
        remaining &= ~np.isin(idx, new)
    return sorted(rejected), steps, exact


def _sweep(m: int, n: int, reps: int, real: int, seed: int, top_k: int):
    """A correlated sweep with ``real`` configs of positive edge; its parts' summaries."""
    rng = np.random.default_rng(seed)
    edges = np.where(np.arange(m) < real, rng.uniform(0.03, 0.15, m), rng.uniform(-0.1, 0.0, m))
    common = rng.standard_normal((1, n))
    e = (0.5 * common + math.sqrt(0.75) * rng.standard_normal((m, n)) + edges[:, None]) * 0.01
    starts, lengths = block_starts_and_lengths(
        np.random.default_rng(seed + 1), n, 10, reps, "circular"
    )
    draws = ResampleDraws.from_blocks(n, starts, lengths)
    c, omega = centred_resample_means(e, draws), bootstrap_long_run_sd(e, draws)
    mean, sd = e.mean(axis=1), e.std(axis=1, ddof=1)
    t = config_null_stats(mean, omega, c, n).t_stat
    idx = rng.permutation(10 * m)[:m].astype(np.int64)  # grid positions need not be 0..m-1
    cuts = np.sort(rng.choice(np.arange(1, m), size=4, replace=False))
    parts = np.split(np.arange(m), cuts)
    summaries = [summarize_null(idx[p], mean[p], sd[p], omega[p], c[p], n, top_k) for p in parts]
    return merge_null_summaries(summaries), idx, mean, t, parts


def _merged_counts(summary, idx, t, parts, rng):
    shuffled = [parts[i] for i in rng.permutation(len(parts))]
    return merge_t_counts([t_counts_of(summary, idx[p], t[p]) for p in shuffled])


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("top_k", [2, 6, 40])
def test_stepm_and_fdp_stepm_from_merged_part_counts_equal_the_arrays(
    seed: int, top_k: int
) -> None:
    summary, idx, _, t, parts = _sweep(40, 400, 99, real=12, seed=seed, top_k=top_k)
    counts = _merged_counts(summary, idx, t, parts, np.random.default_rng(seed))
    whole = t_counts_of(summary, idx, t)
    assert np.array_equal(counts.counts, whole.counts)
    assert np.array_equal(counts.listed_index, whole.listed_index)
    assert counts.total == int(np.isfinite(t).sum())
    for alpha in (0.05, 0.1, 0.3):
        ref = reference_stepm(summary, idx, t, alpha)
        arrays = stepm(summary, idx, t, alpha)
        counted = stepm_counted(summary, counts, alpha)
        assert arrays.rejected is not None
        assert (arrays.rejected.tolist(), arrays.steps, arrays.exact) == ref
        assert (counted.count, counted.steps, counted.exact) == (len(ref[0]), ref[1], ref[2])
        assert counted.threshold == arrays.threshold
        assert sorted(idx[t > counted.threshold].tolist()) == ref[0]
        for gamma in (0.1, 0.25):
            full = fdp_stepm(summary, idx, t, gamma, alpha)
            part = fdp_stepm_counted(summary, counts, gamma, alpha)
            assert full.rejected is not None and part.rejected is None
            assert (part.count, part.k, part.counts, part.exact, part.all_subsets) == (
                full.rejected.size,
                full.k,
                full.counts,
                full.exact,
                full.all_subsets,
            )
            assert part.critical_value == full.critical_value
            assert sorted(idx[t > part.threshold].tolist()) == full.rejected.tolist()


def test_data_snooping_from_counts_equals_the_arrays_with_constant_configs() -> None:
    summary, idx, mean, t, parts = _sweep(30, 300, 199, real=5, seed=4, top_k=8)
    t = t.copy()
    t[[3, 17]] = np.nan  # constant configs: no t, not tested
    counts = _merged_counts(summary, idx, t, parts, np.random.default_rng(0))
    arrays = data_snooping_tests(summary, idx, mean, t, 300, 0.1)
    counted = data_snooping_counted(summary, counts, sweep_extremes(idx, mean, t), 300, 0.1)
    assert counted.n_configs == arrays.n_configs == 28
    assert counted.reality_check_pvalue == arrays.reality_check_pvalue
    assert counted.spa_pvalue == arrays.spa_pvalue
    assert counted.best_index == arrays.best_index
    assert arrays.stepm.rejected is not None and counted.stepm.rejected is None
    assert counted.stepm.count == arrays.stepm.rejected.size


def test_a_value_that_is_no_critical_value_is_refused() -> None:
    summary, idx, _, t, _ = _sweep(12, 200, 49, real=3, seed=1, top_k=4)
    counts = t_counts_of(summary, idx, t)
    assert counts.above(math.inf) == 0 and counts.above(math.nan) == 0
    assert counts.above(-math.inf) == counts.total == 12
    assert counts.above(0.0) == int((t > 0).sum())
    off = float(np.nextafter(counts.thresholds[0], np.inf))
    with pytest.raises(ValueError, match="not a critical value"):
        counts.above(off)


def _discrete_pvalues(rng: np.random.Generator, m: int, reps: int) -> np.ndarray:
    """Bootstrap-like p-values (1 + c)/(1 + B), many small (planted effects), many ties."""
    c = np.where(rng.random(m) < 0.3, rng.integers(0, 3, m), rng.integers(0, reps + 1, m))
    return (1.0 + c) / (1.0 + reps)


@pytest.mark.parametrize("seed", range(10))
def test_holm_and_bh_from_merged_part_counts_equal_the_arrays_and_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, reps = int(rng.integers(50, 3000)), int(rng.choice([99, 999, 9999]))
    p = _discrete_pvalues(rng, m, reps)
    cuts = np.sort(rng.choice(np.arange(1, m), size=6, replace=False))
    merged = merge_p_value_counts([p_value_counts(part) for part in np.split(p, cuts)[::-1]])
    for alpha in (0.01, 0.05, 0.2):
        whole = multiple_testing_summary(p, alpha)
        counted = corrections_counted(merged, alpha)
        assert (counted.n_tests, counted.n_raw, counted.n_holm, counted.n_bh) == (
            whole.n_tests,
            whole.n_raw,
            whole.n_holm,
            whole.n_bh,
        )
        holm, bh = zip(*(counted.adjusted(float(v)) for v in p), strict=True)
        assert np.array_equal(np.array(holm), whole.holm_adjusted)
        assert np.array_equal(np.array(bh), whole.bh_adjusted)
        sm_holm = multipletests(p, alpha=alpha, method="holm")
        sm_bh = multipletests(p, alpha=alpha, method="fdr_bh")
        assert counted.n_holm == int(sm_holm[0].sum())
        assert counted.n_bh == int(sm_bh[0].sum())
        np.testing.assert_allclose(holm, sm_holm[1], rtol=1e-12)
        np.testing.assert_allclose(bh, sm_bh[1], rtol=1e-12)


def test_p_values_exactly_at_the_holm_and_bh_bounds_survive() -> None:
    # m = 4, alpha = 0.2: Holm's bounds 0.05, 0.2/3, 0.1, 0.2; BH's 0.05, 0.1, 0.15, 0.2.
    for p, expected in (([0.05, 0.05, 0.1, 0.2], (4, 4)), ([0.05, 0.07, 0.1, 0.2], (1, 4))):
        counted = corrections_counted(p_value_counts(p), 0.2)
        whole = multiple_testing_summary(p, 0.2)
        assert (counted.n_holm, counted.n_bh) == (whole.n_holm, whole.n_bh) == expected
    assert corrections_counted(p_value_counts(np.zeros(0)), 0.05).n_tests == 0
    with pytest.raises(StatsInputError, match="not one of the counted"):
        counted.adjusted(0.3)


def test_allowed_exceedances_bound_the_stepm_threshold_search() -> None:
    # With B = 19 and alpha = 0.05 one exceedance is allowed... none: (1 + 0)/20 = 0.05.
    assert allowed_exceedances(19, 0.05) == 0
    summary, idx, _, t, _ = _sweep(10, 200, 19, real=10, seed=2, top_k=3)
    res = stepm_counted(summary, t_counts_of(summary, idx, t), 0.01)  # unreachable level
    assert res.count == 0 and res.threshold == math.inf
