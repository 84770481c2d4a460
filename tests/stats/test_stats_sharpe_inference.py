from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stats import (
    StatsInputError,
    deflated_sharpe_ratio,
    expected_max_sharpe,
    min_track_record_length,
    minimum_backtest_length,
    probabilistic_sharpe_ratio,
    return_moments,
)

# --- expected maximum of N null Sharpe ratios -------------------------------------------


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        # Closed forms: E[max of 2 N(0,1)] = 1/sqrt(pi), of 3 = 3/(2 sqrt(pi)).
        (2, 1.0 / math.sqrt(math.pi)),
        (3, 1.5 / math.sqrt(math.pi)),
        # Teichroew (1956), "Tables of expected values of order statistics and products of
        # order statistics for samples of size twenty and less from the normal distribution",
        # Ann. Math. Statist. 27(2): 1.16296 (n=5), 1.53875 (n=10); Harter (1961), "Expected
        # values of normal order statistics", Biometrika 48: 2.50759 (n=100).
        (5, 1.16296),
        (10, 1.53875),
        (100, 2.50759),
    ],
)
def test_exact_expected_max_matches_tables(n: int, expected: float) -> None:
    assert expected_max_sharpe(n, method="exact") == pytest.approx(expected, abs=6e-6)


def test_expected_max_table_of_seed_003() -> None:
    # Seed 003 ("Distributed Backtesting"): best of N null strategies with a 0.20 standard
    # error (25 years of daily data) prints 0.31, 0.51, 0.65, 0.77, 0.88.
    got = [round(expected_max_sharpe(n, 0.2), 2) for n in (10, 100, 1_000, 10_000, 100_000)]
    assert got == [0.31, 0.51, 0.65, 0.77, 0.88]
    # Same seed: "theory 0.651" at 1,000 and "0.772" at 10,000.
    assert expected_max_sharpe(1_000, 0.2) == pytest.approx(0.651, abs=5e-4)
    assert expected_max_sharpe(10_000, 0.2) == pytest.approx(0.772, abs=5e-4)


def test_expected_max_is_zero_for_one_trial() -> None:
    assert expected_max_sharpe(1) == 0.0
    assert expected_max_sharpe(1, method="exact") == 0.0


@settings(max_examples=40, deadline=None)
@given(
    a=st.floats(min_value=1.0, max_value=1e6),
    b=st.floats(min_value=1.0, max_value=1e6),
    method=st.sampled_from(["gumbel", "exact"]),
)
def test_expected_max_is_non_decreasing(a: float, b: float, method: str) -> None:
    lo, hi = sorted((a, b))
    assert expected_max_sharpe(lo, method=method) <= expected_max_sharpe(hi, method=method) + 1e-9  # type: ignore[arg-type]


def test_expected_max_refuses_bad_input() -> None:
    with pytest.raises(StatsInputError, match="n_trials"):
        expected_max_sharpe(0.5)
    with pytest.raises(StatsInputError, match="method"):
        expected_max_sharpe(10, method="gumbell")  # type: ignore[arg-type]


# --- DSR ------------------------------------------------------------------------------

PAPER = {"sharpe": 2.5 / math.sqrt(250), "n_obs": 1250, "skew": -3.0, "kurtosis": 10.0}


def test_deflated_sharpe_ratio_paper_example() -> None:
    # Bailey & López de Prado (2014), "The Deflated Sharpe Ratio", JPM 40(5), numerical
    # example: N = 100, annualised SR 2.5, annualised V[SR] = 0.5, T = 1250 at 250 a year,
    # skew -3, kurtosis 10 -> SR0 = 0.1132 (per period), DSR = 0.9004.
    res = deflated_sharpe_ratio(**PAPER, n_trials=100, trial_sharpe_variance=0.5 / 250)
    assert res.sr0 == pytest.approx(0.1132, abs=5e-5)
    assert res.dsr == pytest.approx(0.9004, abs=5e-5)
    assert res.psr > res.dsr
    assert res.n_obs == 1250 and res.kurtosis == 10.0 and res.expected_max_method == "gumbel"


def test_dsr_equals_psr_at_the_expected_max() -> None:
    res = deflated_sharpe_ratio(**PAPER, n_trials=100, trial_sharpe_variance=0.002)
    psr = probabilistic_sharpe_ratio(PAPER["sharpe"], 1250, -3.0, 10.0, sharpe_benchmark=res.sr0)
    assert float(psr) == pytest.approx(res.dsr, rel=1e-12)


def test_dsr_refuses_annualised_sharpe() -> None:
    with pytest.raises(StatsInputError, match="ANNUALISED"):
        deflated_sharpe_ratio(2.5, 1250, -3.0, 10.0, n_trials=100, trial_sharpe_variance=0.002)


def test_dsr_refuses_annualised_trial_variance() -> None:
    with pytest.raises(StatsInputError, match=r"trial_sharpe_variance.*ANNUALISED"):
        deflated_sharpe_ratio(**PAPER, n_trials=100, trial_sharpe_variance=0.5)


def test_dsr_refuses_excess_kurtosis() -> None:
    with pytest.raises(StatsInputError, match="RAW kurtosis"):
        deflated_sharpe_ratio(0.05, 1250, 0.0, 0.0, n_trials=10, trial_sharpe_variance=1e-3)


def test_per_period_check_can_be_switched_off() -> None:
    res = deflated_sharpe_ratio(
        1.5, 200, n_trials=10, trial_sharpe_variance=0.01, check_per_period=False
    )
    assert 0.0 <= res.dsr <= 1.0


@settings(max_examples=40, deadline=None)
@given(
    n1=st.floats(min_value=1.0, max_value=1e5),
    n2=st.floats(min_value=1.0, max_value=1e5),
    sharpe=st.floats(min_value=-0.2, max_value=0.3),
    variance=st.floats(min_value=0.0, max_value=0.01),
    method=st.sampled_from(["gumbel", "exact"]),
)
def test_dsr_is_non_increasing_in_the_number_of_trials(
    n1: float, n2: float, sharpe: float, variance: float, method: str
) -> None:
    lo, hi = sorted((n1, n2))
    kw = {"trial_sharpe_variance": variance, "method": method}
    d_lo = deflated_sharpe_ratio(sharpe, 1000, -0.5, 6.0, n_trials=lo, **kw).dsr  # type: ignore[arg-type]
    d_hi = deflated_sharpe_ratio(sharpe, 1000, -0.5, 6.0, n_trials=hi, **kw).dsr  # type: ignore[arg-type]
    assert d_hi <= d_lo + 1e-12


# --- PSR and MinTRL -----------------------------------------------------------------------


def test_psr_is_one_half_at_the_benchmark() -> None:
    assert float(probabilistic_sharpe_ratio(0.05, 500, sharpe_benchmark=0.05)) == 0.5


def test_psr_normal_case_by_hand() -> None:
    # Normal returns: variance factor 1 + SR^2/2 (Lo 2002); z = 0.1 sqrt(99)/sqrt(1.005).
    z = 0.1 * math.sqrt(99) / math.sqrt(1.005)
    expected = 0.5 * math.erfc(-z / math.sqrt(2))
    assert float(probabilistic_sharpe_ratio(0.1, 100)) == pytest.approx(expected, rel=1e-14)


def test_psr_is_vectorised_over_configs() -> None:
    rng = np.random.default_rng(3)
    r = rng.standard_normal((5, 400)) * 0.01 + 0.001
    m = return_moments(r)
    vec = probabilistic_sharpe_ratio(m.sharpe, m.n_obs, m.skew, m.kurtosis)
    one = [
        float(probabilistic_sharpe_ratio(s, 400, g, k))
        for s, g, k in zip(m.sharpe, m.skew, m.kurtosis, strict=True)
    ]
    np.testing.assert_allclose(vec, one, rtol=1e-15)
    assert vec.shape == (5,)


def test_psr_propagates_nan_from_constant_series() -> None:
    m = return_moments(np.zeros((1, 50)))
    assert np.isnan(probabilistic_sharpe_ratio(m.sharpe, m.n_obs, m.skew, m.kurtosis)).all()


def test_psr_refuses_annualised_sharpe() -> None:
    with pytest.raises(StatsInputError, match="sharpe"):
        probabilistic_sharpe_ratio([0.05, 1.6], 252)


@settings(max_examples=40, deadline=None)
@given(
    sharpe=st.floats(min_value=0.01, max_value=0.5),
    skew=st.floats(min_value=-2.0, max_value=1.0),
    excess=st.floats(min_value=0.0, max_value=20.0),
    confidence=st.floats(min_value=0.5, max_value=0.999),
)
def test_psr_at_min_track_record_length_equals_confidence(
    sharpe: float, skew: float, excess: float, confidence: float
) -> None:
    kurt = 1.0 + skew * skew + excess
    factor = 1.0 - skew * sharpe + (kurt - 1.0) / 4.0 * sharpe**2
    if factor <= 0.05:
        return
    length = float(min_track_record_length(sharpe, skew, kurt, confidence=confidence))
    # PSR's formula evaluated at a real-valued T = MinTRL (PSR itself takes integer n_obs).
    z = sharpe * math.sqrt(length - 1.0) / math.sqrt(factor)
    assert 0.5 * math.erfc(-z / math.sqrt(2)) == pytest.approx(confidence, rel=1e-9)


def test_min_track_record_length_is_inf_without_an_edge() -> None:
    out = min_track_record_length([0.2, 0.1], sharpe_benchmark=0.1)
    assert math.isinf(out[1]) and math.isfinite(out[0])


# --- MinBTL -------------------------------------------------------------------------------


def test_minimum_backtest_length_paper_example() -> None:
    # Bailey, Borwein, López de Prado & Zhu (2014), "Pseudo-mathematics and financial
    # charlatanism", Notices of the AMS 61(5): with 5 years of daily data no more than 45
    # independent configurations should be tried (E[max annualised SR] = 1 at N = 45).
    years = minimum_backtest_length(45, 1.0 / math.sqrt(252)) / 252
    assert years == pytest.approx(5.0, abs=0.01)


def test_minimum_backtest_length_refuses_annualised_target() -> None:
    with pytest.raises(StatsInputError, match="target_sharpe"):
        minimum_backtest_length(45, 1.5)
