"""Joint-resampling statistics: the compiled kernel against a plain twin, exact order-free
merges, the bootstrap-implied N, and the sweep-wide tests against arch (a peer library)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stats import (
    NullSummary,
    ResampleDraws,
    StatsInputError,
    block_starts_and_lengths,
    bootstrap_long_run_sd,
    centred_resample_means,
    config_null_stats,
    data_snooping_tests,
    expected_max_sharpe,
    implied_number_of_trials,
    merge_null_summaries,
    stepm,
    summarize_null,
    sweep_wide_pvalue,
)


def draws(n: int, block: int, reps: int, method: str, seed: int = 7) -> ResampleDraws:
    starts, lengths = block_starts_and_lengths(
        np.random.default_rng(seed),
        n,
        block,
        reps,
        method,  # type: ignore[arg-type]
    )
    return ResampleDraws.from_blocks(n, starts, lengths, block if method == "stationary" else 0)


def twin_centred_means(x: np.ndarray, d: ResampleDraws) -> np.ndarray:
    """Plain-Python twin: gather every resample explicitly, then demean."""
    m, n = x.shape
    out = np.empty((m, d.reps))
    for b in range(d.reps):
        idx = np.concatenate(
            [np.arange(s, e) % n for s, e in zip(d.starts[:, b], d.ends[:, b], strict=True)]
        )
        assert idx.size == n
        out[:, b] = x[:, idx].mean(axis=1) - x.mean(axis=1)
    return out


@pytest.mark.parametrize(("method", "block"), [("circular", 7), ("stationary", 5), ("circular", 1)])
def test_kernel_equals_the_explicit_resample(method: str, block: int) -> None:
    x = np.random.default_rng(1).standard_normal((11, 97)) * 0.01 + 0.001
    d = draws(97, block, 40, method)
    np.testing.assert_allclose(
        centred_resample_means(x, d), twin_centred_means(x, d), rtol=0, atol=1e-15
    )


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 20), st.integers(0, 2**32 - 1))
def test_a_row_is_bitwise_the_same_alone_or_in_any_batch(m: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, 60))
    d = draws(60, 6, 30, "circular", seed=seed % 1000)
    batch = centred_resample_means(x, d)
    order = rng.permutation(m)
    shuffled = centred_resample_means(x[order], d)
    for i in range(m):
        alone = centred_resample_means(x[i : i + 1], d)
        assert alone.tobytes() == batch[i : i + 1].tobytes()
        assert shuffled[np.flatnonzero(order == i)[0]].tobytes() == batch[i].tobytes()


def _summary(x: np.ndarray, d: ResampleDraws, idx: np.ndarray, k: int = 4) -> NullSummary:
    c, omega = centred_resample_means(x, d), bootstrap_long_run_sd(x, d)
    return summarize_null(idx, x.mean(axis=1), x.std(axis=1, ddof=1), omega, c, x.shape[1], k)


def _same(a: NullSummary, b: NullSummary) -> None:
    assert a.n_configs == b.n_configs
    for f in ("reality_check", "spa", "null_sharpe", "top_value", "top_index"):
        assert getattr(a, f).tobytes() == getattr(b, f).tobytes(), f


def test_merging_is_exact_and_order_free() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((30, 80)) * 0.01
    x[5] = x[6]  # identical configs: ties in every replication, broken by grid index
    d = draws(80, 8, 50, "stationary")
    idx = np.arange(100, 130)
    whole = _summary(x, d, idx)
    cuts = [0, 3, 4, 17, 30]
    pieces = [_summary(x[a:b], d, idx[a:b]) for a, b in itertools.pairwise(cuts)]
    _same(merge_null_summaries(pieces), whole)
    _same(merge_null_summaries(pieces[::-1]), whole)
    _same(merge_null_summaries([merge_null_summaries(pieces[:2]), *pieces[2:]]), whole)


def test_a_batch_repeated_after_a_crash_enters_the_top_lists_once() -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((12, 60)) * 0.01
    d = draws(60, 6, 40, "circular")
    idx = np.arange(12)
    whole = _summary(x, d, idx)
    first, second = _summary(x[:8], d, idx[:8]), _summary(x[5:], d, idx[5:])  # 5..7 twice
    merged = merge_null_summaries([first, second])
    for f in ("reality_check", "spa", "null_sharpe", "top_value", "top_index"):
        assert getattr(merged, f).tobytes() == getattr(whole, f).tobytes(), f
    assert merged.n_configs == 15  # the plain sum: the caller corrects it


def test_pvalues_are_never_zero_and_have_the_plus_one_form() -> None:
    x = np.random.default_rng(4).standard_normal((3, 200)) * 0.01
    x[0] += 0.05  # far above anything the null reaches
    d = draws(200, 10, 99, "circular")
    c, omega = centred_resample_means(x, d), bootstrap_long_run_sd(x, d)
    p = config_null_stats(x.mean(axis=1), omega, c, 200).p_value
    assert p[0] == pytest.approx(1 / 100)
    assert (p > 0).all()
    constant = config_null_stats(np.zeros(1), np.zeros(1), np.zeros((1, 99)), 200)
    assert math.isnan(constant.p_value[0]) and math.isnan(constant.t_stat[0])


def test_implied_n_inverts_the_exact_expected_maximum() -> None:
    for n in (1.5, 7.0, 250.0, 12_345.0):
        target = expected_max_sharpe(n, 0.02, method="exact")
        assert implied_number_of_trials(target, 0.02) == pytest.approx(n, rel=1e-6)
    assert implied_number_of_trials(-0.1, 0.02) == 1.0
    with pytest.raises(StatsInputError, match="null_sharpe_std"):
        implied_number_of_trials(0.1, 0.0)


def _panel(edge: float, seed: int) -> np.ndarray:
    """200 correlated excess-return series of 2,000 periods; 5 carry ``edge`` per period."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal((2000, 1))
    e = (0.6 * common + 0.8 * rng.standard_normal((2000, 200))).T * 0.01
    e[:5] += edge
    e[5:20] -= 0.002
    return e


def _ours(e: np.ndarray, reps: int, block: int) -> tuple[float, float, list[int], np.ndarray]:
    d = draws(e.shape[1], block, reps, "circular", seed=11)
    c, omega = centred_resample_means(e, d), bootstrap_long_run_sd(e, d)
    mean, sd = e.mean(axis=1), e.std(axis=1, ddof=1)
    idx = np.arange(e.shape[0])
    parts = [
        summarize_null(
            idx[lo : lo + 37],
            mean[lo : lo + 37],
            sd[lo : lo + 37],
            omega[lo : lo + 37],
            c[lo : lo + 37],
            e.shape[1],
            32,
        )
        for lo in range(0, e.shape[0], 37)
    ]
    t = config_null_stats(mean, omega, c, e.shape[1]).t_stat
    res = data_snooping_tests(merge_null_summaries(parts), idx, mean, t, e.shape[1])
    return res.reality_check_pvalue, res.spa_pvalue, res.stepm.rejected.tolist(), omega


@pytest.mark.slow
@pytest.mark.parametrize(("edge", "seed"), [(0.00045, 1), (0.0003, 2), (0.0012, 3)])
def test_reality_check_spa_and_stepm_agree_with_arch(edge: float, seed: int) -> None:
    """Peer: arch 7's SPA/StepM on the same excess returns, bootstrap type and block length.

    arch's SPA statistic is the max of mean loss differentials (its ``studentize`` flag only
    sets the variance used for the consistent recentring), so our studentised SPA is compared
    with arch run on e_k / ω̂_k, and our (unstudentised) Reality Check with arch's "upper"
    p-value on e_k. Different random draws: the p-values agree within Monte-Carlo error. With
    B = 2,000 the standard error of one p-value is at most sqrt(0.25 / 2000) = 0.011, so the
    difference of two independent estimates has s.e. <= 0.016; we allow 4 s.e. = 0.064.
    """
    arch = pytest.importorskip("arch.bootstrap")
    e = _panel(edge, seed)
    reps, block = 2000, 10
    rc, spa, ours_stepm, omega = _ours(e, reps, block)
    zeros = np.zeros(e.shape[1])
    plain = arch.SPA(zeros, -e.T, block_size=block, reps=reps, bootstrap="circular", seed=5)
    plain.compute()
    scaled = -(e / omega[:, None]).T
    stud = arch.SPA(zeros, scaled, block_size=block, reps=reps, bootstrap="circular", seed=5)
    stud.compute()
    assert abs(rc - plain.pvalues["upper"]) <= 0.064
    assert abs(spa - stud.pvalues["consistent"]) <= 0.064
    peer = arch.StepM(zeros, scaled, block_size=block, reps=reps, bootstrap="circular", seed=5)
    peer.compute()
    assert ours_stepm == sorted(int(i) for i in peer.superior_models)


def _studentised(e: np.ndarray, reps: int) -> tuple[np.ndarray, ...]:
    """Panel, means, sds, ω̂, centred resample means (block 10, circular) and t statistics."""
    d = draws(e.shape[1], 10, reps, "circular")
    c, omega = centred_resample_means(e, d), bootstrap_long_run_sd(e, d)
    mean, sd = e.mean(axis=1), e.std(axis=1, ddof=1)
    return e, mean, sd, omega, c, config_null_stats(mean, omega, c, e.shape[1]).t_stat


def test_stepm_with_a_short_top_list_is_conservative() -> None:
    e, mean, sd, omega, c, t = _studentised(_panel(0.0015, 4), 300)
    idx = np.arange(e.shape[0])
    full = summarize_null(idx, mean, sd, omega, c, e.shape[1], 200)
    short = summarize_null(idx, mean, sd, omega, c, e.shape[1], 2)
    exact = stepm(full, idx, t)
    bounded = stepm(short, idx, t)
    assert exact.exact and set(exact.rejected.tolist()) == {0, 1, 2, 3, 4}
    assert not bounded.exact
    assert set(bounded.rejected.tolist()) <= set(exact.rejected.tolist())


def test_winner_pvalue_is_the_spa_pvalue_for_the_best_config() -> None:
    e, mean, sd, omega, c, t = _studentised(_panel(0.0006, 5), 200)
    s = summarize_null(np.arange(200), mean, sd, omega, c, e.shape[1], 8)
    res = data_snooping_tests(s, np.arange(200), mean, t, e.shape[1])
    best = float(np.nanmax(t))
    # Hansen's (2005) SPA p-value written out: (1 + #{max(0, T*_b) >= max(0, t)}) / (1 + B).
    by_definition = (1 + int(np.sum(np.maximum(s.spa, 0.0) >= max(best, 0.0)))) / (1 + 200)
    assert sweep_wide_pvalue(s, best) == res.spa_pvalue == by_definition
    assert res.best_index == int(np.nanargmax(t))
    # A config below the benchmark gets p = 1 (its t is floored at 0 like the null maxima).
    assert sweep_wide_pvalue(s, -1.0) == 1.0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([-np.inf, -1.0, 0.0, 0.5, 1.0, 2.0, np.inf, np.nan]), max_size=30),
    st.lists(st.sampled_from([-np.inf, -1.0, 0.0, 0.5, 1.0, 2.0, np.inf, np.nan]), max_size=30),
)
def test_exceedances_are_the_counts_of_the_comparison_matrix(null, observed):
    from stats._data_snooping import exceedances

    null_a, observed_a = np.array(null, dtype=float), np.array(observed, dtype=float)
    with np.errstate(invalid="ignore"):
        matrix = (null_a[None, :] >= observed_a[:, None]).sum(axis=1)
    np.testing.assert_array_equal(exceedances(null_a, observed_a), matrix)
