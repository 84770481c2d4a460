from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stats import AmortizationLaw, StatsInputError, fit_amortization

# Seed 000 ("The amortization law"): op-count calibration O = 5000 + 24 * 150,000 and
# b = 150,000 ops per combination, batch grid 1..61.
SEED_000 = AmortizationLaw(overhead=3_605_000, marginal=150_000)


def test_seed_000_landmarks() -> None:
    law = SEED_000
    # Seed 000, Results: S(1) = 1.00, S(61) = 17.96, ceiling 1 + O/b = 25.03, ridge O/b =
    # 24.03, B*(0.90) = 216.3, B*(0.95) = 456.63.
    assert float(law.speedup(1)) == pytest.approx(1.0, abs=1e-15)
    assert round(float(law.speedup(61)), 2) == 17.96
    assert round(law.ceiling, 2) == 25.03
    assert round(law.ridge, 2) == 24.03
    assert round(law.batch_for_fraction(0.90), 1) == 216.3
    assert round(law.batch_for_fraction(0.95), 2) == 456.63
    # Seed 000, Table 3: overhead 96.0% of the batched cost at B = 1 and 28.3% at B = 61;
    # useful fraction 3.99% -> 71.7% (= fraction of the ceiling, 71.7% at 61).
    assert round(100 * float(law.overhead_share(1)), 1) == 96.0
    assert round(100 * float(law.overhead_share(61)), 1) == 28.3
    assert round(100 * float(law.useful_share(1)), 2) == 3.99
    assert round(100 * float(law.fraction_of_ceiling(61)), 1) == 71.7


def test_seed_000_fit_back_from_the_op_count_curve() -> None:
    # Seed 000, "Fit-back verification": fitting O + bB over B = 1..61 recovers O/b = 24.03
    # with zero residual.
    batch = np.arange(1, 62)
    cost = 3_605_000 + 150_000 * batch
    fit = fit_amortization(batch, cost)
    assert fit.overhead == pytest.approx(3_605_000, rel=1e-10)
    assert fit.marginal == pytest.approx(150_000, rel=1e-10)
    assert round(fit.law.ridge, 2) == 24.03
    assert fit.r_squared == pytest.approx(1.0, abs=1e-12)
    assert np.abs(fit.residuals).max() < 1e-6 * cost.max()
    assert fit.n_points == 61 and fit.per_call_marginal is None


def test_speedup_is_the_ratio_of_the_two_costs() -> None:
    law = AmortizationLaw(overhead=2.0, marginal=0.5, per_call_marginal=0.7)
    b = np.array([1.0, 3.0, 10.0, 1000.0])
    np.testing.assert_allclose(law.speedup(b), b * (2.0 + 0.7) / (2.0 + 0.5 * b))
    assert law.ceiling == pytest.approx(2.7 / 0.5)
    np.testing.assert_allclose(law.overhead_share(b) + law.useful_share(b), 1.0)
    # B*(f) does not depend on the per-call marginal.
    assert law.batch_for_fraction(0.9) == AmortizationLaw(2.0, 0.5).batch_for_fraction(0.9)
    s = law.speedup(law.batch_for_fraction(0.9))
    assert float(s) / law.ceiling == pytest.approx(0.9)


@settings(max_examples=30, deadline=None)
@given(
    overhead=st.floats(min_value=1e-4, max_value=10.0),
    marginal=st.floats(min_value=1e-4, max_value=1.0),
    a=st.floats(min_value=0.0, max_value=2.0),
    seed=st.integers(min_value=0, max_value=1000),
)
def test_fit_recovers_planted_parameters(
    overhead: float, marginal: float, a: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    batch = np.repeat([1, 2, 4, 8, 16, 32, 64, 128], 5).astype(float)
    noise = 1.0 + 0.001 * rng.standard_normal(len(batch))
    seconds = (overhead + marginal * batch) * noise
    per_call = (overhead + a) * (1.0 + 0.001 * rng.standard_normal(20))
    fit = fit_amortization(batch, seconds, per_call_seconds=per_call)
    scale = max(overhead + 128 * marginal, overhead + a)  # largest timing, for tolerances
    assert abs(fit.overhead - overhead) < 0.01 * scale
    assert abs(fit.marginal - marginal) < 0.01 * scale / 64
    assert fit.per_call_marginal is not None
    assert abs(fit.per_call_marginal - a) < 0.01 * scale
    assert np.abs(fit.residuals).max() < 0.006 * scale and fit.n_points == len(batch) + 20


def test_bad_input_is_refused() -> None:
    with pytest.raises(StatsInputError, match="distinct"):
        fit_amortization([4, 4, 4], [1.0, 1.1, 0.9])
    with pytest.raises(StatsInputError, match="seconds"):
        fit_amortization([1, 2, 3], [1.0, 2.0])
    with pytest.raises(StatsInputError, match="grow"):
        fit_amortization([1, 2, 3], [3.0, 2.0, 1.0])
    with pytest.raises(StatsInputError, match="batch_sizes"):
        fit_amortization([0, 2, 3], [1.0, 2.0, 3.0])
    with pytest.raises(StatsInputError, match="marginal"):
        AmortizationLaw(overhead=1.0, marginal=0.0)
    with pytest.raises(StatsInputError, match="fraction"):
        SEED_000.batch_for_fraction(1.0)
