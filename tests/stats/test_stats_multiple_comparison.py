from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stats import StatsInputError, benjamini_hochberg_adjust, holm_adjust, multiple_testing_summary

P = [0.01, 0.04, 0.03, 0.005]


def test_holm_by_hand() -> None:
    # Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04; running max
    # 0.02, 0.03, 0.06, 0.06; back in input order:
    np.testing.assert_allclose(holm_adjust(P), [0.03, 0.06, 0.06, 0.02])


def test_benjamini_hochberg_by_hand() -> None:
    # Sorted times m/i = 0.02, 0.02, 0.04, 0.04; running min from the top leaves them; back
    # in input order:
    np.testing.assert_allclose(benjamini_hochberg_adjust(P), [0.02, 0.04, 0.04, 0.02])


def test_summary_counts_survivors() -> None:
    res = multiple_testing_summary(P, alpha=0.05)
    assert (res.n_tests, res.n_raw, res.n_holm, res.n_bh) == (4, 4, 2, 4)
    res = multiple_testing_summary(P, alpha=0.025)
    assert (res.n_raw, res.n_holm, res.n_bh) == (2, 1, 2)


@settings(max_examples=25, deadline=None)
@given(
    p=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=60),
    alpha=st.floats(min_value=0.001, max_value=0.5),
)
def test_matches_statsmodels(p: list[float], alpha: float) -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    holm_ref = multitest.multipletests(p, alpha=alpha, method="holm")
    bh_ref = multitest.multipletests(p, alpha=alpha, method="fdr_bh")
    np.testing.assert_allclose(holm_adjust(p), holm_ref[1], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(benjamini_hochberg_adjust(p), bh_ref[1], rtol=1e-12, atol=1e-15)
    res = multiple_testing_summary(p, alpha)
    assert res.n_holm == int(holm_ref[0].sum())
    assert res.n_bh == int(bh_ref[0].sum())
    assert res.n_holm <= res.n_bh <= res.n_raw


def test_a_pvalue_at_the_threshold_survives() -> None:
    # BH: 0.2 * 3/3 rounds above 0.2 in floating point; the step-up rule keeps it.
    res = multiple_testing_summary([0.0, 0.0, 0.2], alpha=0.2)
    assert (res.n_holm, res.n_bh) == (3, 3)


def test_bad_pvalues_are_refused() -> None:
    with pytest.raises(StatsInputError, match="NaN"):
        holm_adjust([0.1, np.nan])
    with pytest.raises(StatsInputError, match=r"\[0, 1\]"):
        benjamini_hochberg_adjust([0.1, 1.5])
    with pytest.raises(StatsInputError, match="alpha"):
        multiple_testing_summary([0.1], alpha=0.0)
