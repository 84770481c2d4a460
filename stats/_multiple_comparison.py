"""Multiple-testing corrections of per-config p-values: Holm and Benjamini-Hochberg."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from stats._validation import (
    FloatArray,
    as_float,
    as_float_array,
    input_error,
)


def _pvalues(pvalues: ArrayLike) -> FloatArray:
    p = as_float_array("pvalues", pvalues, ndim=1, finite=False)
    if bool(np.isnan(p).any()):
        raise input_error(
            f"pvalues: expected no NaN, got {int(np.isnan(p).sum())}; a constant config has "
            "no p-value: drop it, or count it as a failed test with np.nan_to_num(p, nan=1.0)"
        )
    if bool(np.any((p < 0) | (p > 1))):
        raise input_error(
            f"pvalues: expected values in [0, 1], got range [{p.min():g}, {p.max():g}]"
        )
    return p


def holm_adjust(pvalues: ArrayLike) -> FloatArray:
    """Holm's step-down adjusted p-values (family-wise error rate).

    Parameters
    ----------
    pvalues : array_like, shape (m,)
        Raw p-values in [0, 1], no NaN.

    Returns
    -------
    ndarray of float64, shape (m,)
        Adjusted p-values in the input order: sorted ascending,
        ``p_(i) * (m - i + 1)`` made non-decreasing by a running maximum and capped at 1.
        A test is rejected at level alpha when its adjusted p-value is ``<= alpha``.

    Notes
    -----
    Same values as ``statsmodels.stats.multitest.multipletests(p, method="holm")[1]`` and
    R's ``p.adjust(p, "holm")``. Valid under any dependence between the tests.

    References
    ----------
    .. [1] Holm, S. (1979). "A simple sequentially rejective multiple test procedure".
       Scandinavian Journal of Statistics 6(2), 65-70.
    """
    p = _pvalues(pvalues)
    m = len(p)
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = p[order] * (m - np.arange(m))
    adjusted = np.minimum(np.maximum.accumulate(scaled), 1.0)
    out = np.empty(m)
    out[order] = adjusted
    return out


def benjamini_hochberg_adjust(pvalues: ArrayLike) -> FloatArray:
    """Benjamini-Hochberg step-up adjusted p-values (false discovery rate).

    Parameters
    ----------
    pvalues : array_like, shape (m,)
        Raw p-values in [0, 1], no NaN.

    Returns
    -------
    ndarray of float64, shape (m,)
        Adjusted p-values (q-values) in the input order: sorted ascending,
        ``p_(i) * m / i`` made non-decreasing from the top by a running minimum, capped at
        1. Rejecting adjusted values ``<= alpha`` controls the FDR at alpha.

    Notes
    -----
    Same values as ``statsmodels ... multipletests(p, method="fdr_bh")[1]`` and R's
    ``p.adjust(p, "BH")``. FDR control holds for independent or positively dependent
    (PRDS) tests, the usual case for configs of one strategy family; it is not guaranteed
    under arbitrary dependence (Benjamini-Yekutieli would be).

    References
    ----------
    .. [1] Benjamini, Y. and Hochberg, Y. (1995). "Controlling the false discovery rate: a
       practical and powerful approach to multiple testing". Journal of the Royal
       Statistical Society B 57(1), 289-300.
    """
    p = _pvalues(pvalues)
    m = len(p)
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    out = np.empty(m)
    out[order] = adjusted
    return out


@dataclass(frozen=True)
class MultipleTestingSummary:
    """How many tests survive each correction at one level.

    Attributes
    ----------
    n_tests : int
        Number of p-values m.
    alpha : float
        Level used.
    n_raw : int
        Raw p-values ``<= alpha`` (no correction).
    n_holm : int
        Survivors of Holm's correction (family-wise error rate <= alpha).
    n_bh : int
        Survivors of Benjamini-Hochberg (false discovery rate <= alpha).
    holm_adjusted : ndarray of float64, shape (m,)
        Holm-adjusted p-values, input order.
    bh_adjusted : ndarray of float64, shape (m,)
        Benjamini-Hochberg-adjusted p-values, input order.
    """

    n_tests: int
    alpha: float
    n_raw: int
    n_holm: int
    n_bh: int
    holm_adjusted: FloatArray
    bh_adjusted: FloatArray


def multiple_testing_summary(pvalues: ArrayLike, alpha: float = 0.05) -> MultipleTestingSummary:
    """Count the configs whose p-values survive no correction, Holm, and Benjamini-Hochberg.

    Parameters
    ----------
    pvalues : array_like, shape (m,)
        One p-value per config (e.g. :func:`bootstrap_pvalue`), no NaN.
    alpha : float, default 0.05
        Level, in (0, 1).

    Returns
    -------
    MultipleTestingSummary

    Notes
    -----
    A test survives when its adjusted p-value is ``<= alpha`` (statsmodels' and R's rule);
    the counts apply the step-down (Holm) and step-up (BH) rules to the raw p-values, as
    statsmodels does, so a p-value exactly at a threshold is not lost to rounding in the
    adjusted values.
    Bootstrap p-values have a resolution of ``1/reps``: with 50 replicates no config can
    survive Holm among more than ``alpha * reps = 2.5`` tests, so size ``reps`` to the
    number of configs before reading these counts.

    References
    ----------
    .. [1] Holm, S. (1979). Scandinavian Journal of Statistics 6(2), 65-70.
    .. [2] Benjamini, Y. and Hochberg, Y. (1995). JRSS B 57(1), 289-300.
    """
    level = as_float("alpha", alpha)
    if not 0.0 < level < 1.0:
        raise input_error(f"alpha: expected a level in (0, 1), got {alpha!r}")
    p = _pvalues(pvalues)
    m = len(p)
    ordered = np.sort(p)
    rank = np.arange(1, m + 1)
    # Holm steps down while p_(i) <= alpha/(m - i + 1); BH steps up to the largest i with
    # p_(i) <= i alpha/m. Comparing raw p-values (as statsmodels does) rather than
    # adjusted ones keeps boundary cases such as p = alpha exact.
    above = np.nonzero(ordered > level / (m - rank + 1))[0]
    n_holm = int(above[0]) if above.size else m
    below = np.nonzero(ordered <= rank / m * level)[0]
    n_bh = int(below[-1]) + 1 if below.size else 0
    return MultipleTestingSummary(
        n_tests=m,
        alpha=level,
        n_raw=int((p <= level).sum()),
        n_holm=n_holm,
        n_bh=n_bh,
        holm_adjusted=holm_adjust(p),
        bh_adjusted=benjamini_hochberg_adjust(p),
    )
