from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stats import GramTrials, StatsInputError, effective_number_of_trials


def brute_force(x: np.ndarray) -> dict[str, float]:
    corr = np.corrcoef(x)
    n = len(corr)
    lam = np.linalg.eigvalsh(corr)
    a = np.abs(lam)
    lam = np.where(lam > 1e-10 * lam.max(), lam, 0.0)  # rounding noise of zero eigenvalues
    return {
        "pr": n * n / float((corr**2).sum()),
        "mean": float(corr[np.triu_indices(n, 1)].mean()),
        "li_ji": float(((a >= 1) + (a - np.floor(a))).sum()),
        "galwey": float(np.sqrt(np.maximum(lam, 0)).sum() ** 2 / np.maximum(lam, 0).sum()),
    }


def factor_returns(n: int, t: int, seed: int, k: int = 3, loading: float = 0.6) -> np.ndarray:
    rng = np.random.default_rng(seed)
    factors = rng.standard_normal((k, t))
    x = loading * rng.standard_normal((n, k)) @ factors + rng.standard_normal((n, t))
    return 0.01 * x


@pytest.mark.parametrize(
    ("n", "t", "kw", "eigen_method"),
    [
        (300, 120, {}, "gram"),  # T < N: T x T Gram
        (80, 200, {}, "correlation"),  # N <= T: N x N correlation
        (150, 200, {"max_eigen_dim": 50, "block_rows": 40}, "sampled"),  # tiled sums
        (300, 120, {"block_rows": 7}, "gram"),  # many small blocks
    ],
)
def test_exact_paths_match_brute_force(
    n: int, t: int, kw: dict[str, int], eigen_method: str
) -> None:
    x = factor_returns(n, t, seed=n + t)
    res = effective_number_of_trials(x, method="exact", **kw)
    ref = brute_force(x)
    assert res.method == "exact" and res.eigen_method == eigen_method
    assert res.participation_ratio == pytest.approx(ref["pr"], rel=1e-10)
    assert res.mean_pairwise_correlation == pytest.approx(ref["mean"], rel=1e-9, abs=1e-12)
    assert res.nyholt == pytest.approx(n + 1 - n / ref["pr"], rel=1e-10)
    if eigen_method != "sampled":
        assert res.li_ji == pytest.approx(ref["li_ji"], rel=1e-9)
        assert res.galwey == pytest.approx(ref["galwey"], rel=1e-9)


def test_independent_series_give_about_n() -> None:
    n, t = 40, 3000
    x = np.random.default_rng(0).standard_normal((n, t))
    res = effective_number_of_trials(x)
    # Sampling error: independent Gaussian series have E[r^2] = 1/(T-1), so the plain
    # ratio is about N^2 / (N + N(N-1)/(T-1)); the adjusted one removes that floor.
    assert res.participation_ratio == pytest.approx(n * n / (n + n * (n - 1) / (t - 1)), rel=0.01)
    assert res.participation_ratio > 0.98 * n
    assert res.participation_ratio_adjusted == pytest.approx(n, rel=0.02)
    assert res.nyholt == pytest.approx(n, rel=0.02)
    assert abs(res.mean_pairwise_correlation) < 0.01


def test_identical_series_give_one() -> None:
    base = np.random.default_rng(1).standard_normal(250)
    x = np.array([a * base + b for a, b in [(1, 0), (2, 1), (0.5, -3), (7, 0.1)] * 5])
    res = effective_number_of_trials(x)
    assert res.participation_ratio == pytest.approx(1.0, abs=1e-9)
    assert res.participation_ratio_adjusted == pytest.approx(1.0, abs=1e-9)
    assert res.nyholt == pytest.approx(1.0, abs=1e-9)
    assert res.li_ji == pytest.approx(1.0, abs=1e-9)
    assert res.galwey == pytest.approx(1.0, abs=1e-6)
    assert res.mean_pairwise_correlation == pytest.approx(1.0, abs=1e-12)


def test_k_orthogonal_groups_give_k() -> None:
    # Exactly uncorrelated group signals (orthonormal after centring), 6 copies each.
    rng = np.random.default_rng(2)
    centred = rng.standard_normal((100, 4))
    centred -= centred.mean(axis=0)
    q, _ = np.linalg.qr(centred)
    x = np.repeat(q.T, 6, axis=0) * rng.uniform(0.5, 2.0, (24, 1))
    res = effective_number_of_trials(x)
    for value in (res.participation_ratio, res.li_ji, res.galwey):
        assert value == pytest.approx(4.0, rel=1e-9)
    assert res.nyholt == pytest.approx(24 + 1 - 24 / 4, rel=1e-9)


def test_float32_error_is_small() -> None:
    x = factor_returns(600, 250, seed=5)
    exact = effective_number_of_trials(x)
    single = effective_number_of_trials(x, precision="float32")
    assert single.precision == "float32"
    assert single.participation_ratio == pytest.approx(exact.participation_ratio, rel=1e-5)
    assert single.galwey == pytest.approx(exact.galwey, rel=1e-4)


def test_estimator_is_close_to_exact_and_reports_its_error() -> None:
    x = factor_returns(2500, 200, seed=7)
    exact = effective_number_of_trials(x, method="exact")
    est = effective_number_of_trials(x, method="estimated", sample_size=500, seed=11)
    assert est.method == "estimated" and est.sample_size == 500 and est.eigen_method == "sampled"
    assert est.participation_ratio_se > 0
    err = abs(est.participation_ratio - exact.participation_ratio)
    assert err < 4 * est.participation_ratio_se
    assert err < 0.1 * exact.participation_ratio
    # The mean pairwise correlation is exact on both paths.
    assert est.mean_pairwise_correlation == pytest.approx(exact.mean_pairwise_correlation)


def test_estimator_is_deterministic_for_a_seed() -> None:
    x = factor_returns(400, 60, seed=8)
    a = effective_number_of_trials(x, method="estimated", sample_size=100, seed=3)
    b = effective_number_of_trials(x, method="estimated", sample_size=100, seed=3)
    assert a.participation_ratio == b.participation_ratio and a.galwey == b.galwey


def test_auto_picks_exact_when_affordable() -> None:
    res = effective_number_of_trials(factor_returns(50, 40, seed=1))
    assert res.method == "exact" and res.sample_size == res.n == 50
    assert res.participation_ratio_se == 0.0


def test_constant_rows_are_left_out_and_counted() -> None:
    x = factor_returns(30, 80, seed=4)
    with_flat = np.vstack([x, np.zeros((3, 80)), np.full((1, 80), 0.02)])
    res = effective_number_of_trials(with_flat)
    assert res.n == 30 and res.n_constant == 4
    clean = effective_number_of_trials(x)
    assert res.participation_ratio == pytest.approx(clean.participation_ratio)


def test_single_series() -> None:
    res = effective_number_of_trials(np.arange(10.0)[None, :])
    assert res.participation_ratio == 1.0 and np.isnan(res.mean_pairwise_correlation)


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=40),
    t=st.integers(min_value=3, max_value=40),
    seed=st.integers(min_value=0, max_value=10_000),
    mix=st.floats(min_value=0.0, max_value=5.0),
)
def test_participation_ratio_lies_in_one_to_n(n: int, t: int, seed: int, mix: float) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, t)) + mix * rng.standard_normal(t)
    res = effective_number_of_trials(x)
    for value in (
        res.participation_ratio,
        res.participation_ratio_adjusted,
        res.nyholt,
        res.li_ji,
        res.galwey,
    ):
        assert 1.0 <= value <= n


@pytest.mark.parametrize(
    ("x", "kw", "match"),
    [
        (np.zeros(10), {}, "2-D"),
        (np.full((3, 10), np.nan), {}, "finite"),
        (np.zeros((3, 10)), {}, "non-constant"),
        (np.ones((3, 2)), {}, "at least 3 periods"),
        (np.eye(5), {"method": "exakt"}, "Did you mean 'exact'"),
        (np.eye(5), {"sample_size": 1}, "sample_size"),
    ],
)
def test_bad_input_is_refused(x: np.ndarray, kw: dict[str, object], match: str) -> None:
    with pytest.raises(StatsInputError, match=match):
        effective_number_of_trials(x, **kw)  # type: ignore[arg-type]


def test_eigenvalues_can_be_skipped() -> None:
    x = factor_returns(200, 80, seed=9)
    res = effective_number_of_trials(x, eigenvalues=False)
    full = effective_number_of_trials(x)
    assert res.eigen_method == "none" and res.eigen_sample_size == 0
    assert np.isnan(res.li_ji) and np.isnan(res.galwey)
    assert res.participation_ratio == pytest.approx(full.participation_ratio, rel=1e-12)


def test_sampled_eigen_estimates_respect_the_rank() -> None:
    # T - 1 = 29 bounds the rank, so Galwey <= 29 and Li-Ji <= 58 however they extrapolate.
    x = np.random.default_rng(10).standard_normal((3000, 30))
    res = effective_number_of_trials(x, method="estimated", sample_size=100)
    assert res.galwey <= 29 + 1e-9 and res.li_ji <= 58 + 1e-9


def test_trials_from_mean_sq_correlation_matches_the_estimator_and_its_limits():
    from stats import trials_from_mean_sq_correlation

    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 250)) + 0.4 * rng.standard_normal(250)
    eff = effective_number_of_trials(x, method="exact")
    plain, adjusted, nyholt = trials_from_mean_sq_correlation(
        eff.n, eff.mean_sq_pairwise_correlation, eff.n_obs
    )
    assert plain == pytest.approx(eff.participation_ratio, rel=1e-12)
    assert adjusted == pytest.approx(eff.participation_ratio_adjusted, rel=1e-12)
    assert nyholt == pytest.approx(eff.nyholt, rel=1e-12)
    # Independent series at the noise floor count fully; identical series count once.
    assert trials_from_mean_sq_correlation(100, 1.0 / 99.0, 100)[1] == pytest.approx(100.0)
    assert trials_from_mean_sq_correlation(100, 0.0, 100)[0] == pytest.approx(100.0)
    assert trials_from_mean_sq_correlation(100, 1.0, 100) == (1.0, 1.0, 1.0)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(8, 120),
    t=st.integers(3, 7),
    block_rows=st.integers(1, 40),
    cuts=st.lists(st.integers(1, 50), min_size=1, max_size=8),
    precision=st.sampled_from(["float64", "float32"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_gram_trials_fed_in_any_blocks_is_the_exact_result(n, t, block_rows, cuts, precision, seed):
    # Rows arrive in arbitrary pieces (some constant): the same result, bit for bit, as the
    # exact method on the whole matrix whenever it takes the Gram route (t < non-constant n).
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, t)) + rng.standard_normal(t)  # correlated rows
    x[rng.random(n) < 0.1] = 0.5
    acc = GramTrials(t, precision=precision, block_rows=block_rows)
    start, k = 0, 0
    while start < n:
        stop = start + cuts[k % len(cuts)]
        acc.add(x[start:stop])
        start, k = stop, k + 1
    live = int((x.max(axis=1) > x.min(axis=1)).sum())
    if live <= t:
        return
    whole = effective_number_of_trials(
        x, method="exact", precision=precision, block_rows=block_rows
    )
    assert acc.result() == whole


def test_gram_trials_refuses_what_it_cannot_do():
    with pytest.raises(ValueError, match="max_eigen_dim"):
        GramTrials(100, max_eigen_dim=50)
    acc = GramTrials(5, eigenvalues=False)
    with pytest.raises(ValueError, match="5 periods"):
        acc.add(np.zeros((3, 4)))
    acc.add(np.ones((3, 5)))
    with pytest.raises(ValueError, match="non-constant"):
        acc.result()
