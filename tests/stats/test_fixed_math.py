"""The fixed transcendentals: accuracy against long double and scipy, published values."""

import math

import numpy as np
import pytest
from scipy import special

from stats import fixed_exp, fixed_log, norm_cdf, norm_ppf
from stats._fixed_math import log_norm_cdf


def _ulps(got, reference):
    return np.max(np.abs((got.astype(np.longdouble) - reference) / np.spacing(np.abs(got))))


def test_log_and_exp_are_within_one_ulp_of_long_double():
    rng = np.random.default_rng(11)
    x = np.concatenate(
        [rng.uniform(1e-300, 1e-250, 500), rng.uniform(0.01, 1e3, 20_000), [1.0, 2.0, 0.5]]
    )
    assert _ulps(fixed_log(x), np.log(x.astype(np.longdouble))) < 1.0
    y = np.concatenate([rng.uniform(-740.0, 709.0, 20_000), rng.uniform(-1e-6, 1e-6, 500)])
    assert _ulps(fixed_exp(y), np.exp(y.astype(np.longdouble))) < 1.0


def test_special_values_and_shapes():
    log = fixed_log(np.array([0.0, -1.0, np.nan, np.inf, 1.0]))
    assert log[0] == -np.inf and np.isnan(log[1]) and np.isnan(log[2])
    assert log[3] == np.inf and log[4] == 0.0
    exp = fixed_exp(np.array([np.nan, np.inf, -np.inf, 0.0, 800.0, -800.0]))
    assert np.isnan(exp[0]) and exp[1] == np.inf and exp[2] == 0.0 and exp[3] == 1.0
    assert exp[4] == np.inf and exp[5] == 0.0
    assert fixed_log(np.ones((2, 3))).shape == (2, 3)
    assert fixed_exp(0.0).shape == ()
    assert float(fixed_log(math.e)) == pytest.approx(1.0, abs=2e-16)


@pytest.mark.parametrize(
    ("x", "phi"),
    # Abramowitz and Stegun (1964), Table 26.1 (to the digits given there, 15 places).
    [(1.0, 0.841344746068543), (2.0, 0.977249868051821), (3.0, 0.998650101968370)],
)
def test_norm_cdf_matches_abramowitz_and_stegun(x, phi):
    assert norm_cdf(x) == pytest.approx(phi, abs=1e-15)
    assert norm_cdf(-x) == pytest.approx(1.0 - phi, abs=1e-15)


def test_norm_cdf_and_its_log_match_scipy():
    xs = np.linspace(-37.0, 37.0, 4001)
    got = np.array([norm_cdf(x) for x in xs])
    assert np.max(np.abs(got - special.ndtr(xs))) < 5e-16
    tail = xs[xs < -1.5]
    rel = np.abs(np.array([norm_cdf(x) for x in tail]) / special.ndtr(tail) - 1.0)
    # exp(-x^2/2) of a rounded x^2/2: about x^2/2 ulp in the far tail (x = -37: 2e-13).
    assert rel.max() < 5e-13
    logs = np.array([log_norm_cdf(x) for x in xs])
    np.testing.assert_allclose(logs, special.log_ndtr(xs), rtol=5e-13, atol=1e-300)


def test_norm_ppf_inverts_the_cdf_and_matches_scipy():
    assert norm_ppf(0.975) == pytest.approx(1.959963984540054, abs=1e-15)  # the textbook 1.96
    ps = np.concatenate([10.0 ** -np.linspace(0.5, 15, 200), np.linspace(0.01, 0.99, 99)])
    got = np.array([norm_ppf(p) for p in ps])
    np.testing.assert_allclose(got, special.ndtri(ps), rtol=1e-12, atol=1e-15)
    assert max(abs(norm_cdf(q) / p - 1.0) for q, p in zip(got, ps, strict=True)) < 1e-12
    assert norm_ppf(0.0) == -np.inf and norm_ppf(1.0) == np.inf and math.isnan(norm_ppf(1.5))
