"""Multiple-testing corrections of per-config p-values: Holm and Benjamini-Hochberg."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

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
    counted = corrections_counted(p_value_counts(p), level)
    return MultipleTestingSummary(
        n_tests=counted.n_tests,
        alpha=level,
        n_raw=counted.n_raw,
        n_holm=counted.n_holm,
        n_bh=counted.n_bh,
        holm_adjusted=holm_adjust(p),
        bh_adjusted=benjamini_hochberg_adjust(p),
    )


@dataclass(frozen=True)
class PValueCounts:
    """P-values as their distinct values and how many tests have each.

    Bootstrap p-values ``(1 + c) / (1 + B)`` take at most ``B + 1`` values, so a sweep of any
    size reduces to O(B) numbers, part by part (:func:`p_value_counts`,
    :func:`merge_p_value_counts`), and Holm's and Benjamini-Hochberg's counts and adjusted
    values follow from them exactly (:func:`corrections_counted`).

    Attributes
    ----------
    values : ndarray of float64, shape (v,)
        The distinct p-values, ascending.
    counts : ndarray of int64, shape (v,)
        Tests with each.
    """

    values: FloatArray
    counts: NDArray[np.int64]


def p_value_counts(pvalues: ArrayLike) -> PValueCounts:
    """:class:`PValueCounts` of some p-values (no NaN, in [0, 1])."""
    values, counts = np.unique(_pvalues(pvalues), return_counts=True)
    return PValueCounts(values, counts.astype(np.int64))


def merge_p_value_counts(parts: Sequence[PValueCounts]) -> PValueCounts:
    """The :class:`PValueCounts` of several sets of tests together (exact, order-free)."""
    if not parts:
        return PValueCounts(np.zeros(0), np.zeros(0, dtype=np.int64))
    values = np.concatenate([p.values for p in parts])
    counts = np.concatenate([p.counts for p in parts])
    distinct, which = np.unique(values, return_inverse=True)
    return PValueCounts(distinct, _summed(which, counts, distinct.size))


def _summed(which: NDArray[np.intp], counts: NDArray[np.int64], size: int) -> NDArray[np.int64]:
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, which, counts)
    return out


@dataclass(frozen=True)
class CountedCorrections:
    """Holm and Benjamini-Hochberg from :class:`PValueCounts`.

    Attributes
    ----------
    n_tests, n_raw, n_holm, n_bh : int
        As :class:`MultipleTestingSummary`.
    values : ndarray of float64, shape (v,)
        The distinct p-values, ascending.
    holm_adjusted, bh_adjusted : ndarray of float64, shape (v,)
        The adjusted p-value of every test with each value: equal ties share one
        (:func:`holm_adjust` and :func:`benjamini_hochberg_adjust` give them one).
    """

    n_tests: int
    n_raw: int
    n_holm: int
    n_bh: int
    values: FloatArray
    holm_adjusted: FloatArray
    bh_adjusted: FloatArray

    def adjusted(self, pvalue: float) -> tuple[float, float]:
        """Holm's and Benjamini-Hochberg's adjusted p-value of a test with this p-value."""
        at = int(np.searchsorted(self.values, pvalue))
        if at >= self.values.size or self.values[at] != pvalue:
            raise input_error(f"pvalue: {pvalue!r} is not one of the counted p-values")
        return float(self.holm_adjusted[at]), float(self.bh_adjusted[at])


def corrections_counted(counted: PValueCounts, alpha: float = 0.05) -> CountedCorrections:
    """Holm's and Benjamini-Hochberg's counts and adjusted values from p-value counts.

    Parameters
    ----------
    counted : PValueCounts
        The tests' p-values, counted.
    alpha : float, default 0.05
        Level, in (0, 1).

    Returns
    -------
    CountedCorrections
        The counts :func:`multiple_testing_summary` gives and the adjusted values of
        :func:`holm_adjust` and :func:`benjamini_hochberg_adjust`, bit for bit.

    Notes
    -----
    With the p-values sorted, a run of ``n`` equal values ``p`` starts at 0-based position
    ``s`` and ends at ``e = s + n``. Holm steps down while ``p_(i) <= alpha / (m - i + 1)``:
    within a run the bound grows with ``i``, so a run fails at its start or not at all.
    Benjamini-Hochberg steps up to the largest ``i`` with ``p_(i) <= i alpha / m``: within a
    run the bound grows too, so a run passes at its end or not at all. Holm's adjusted value
    of the run is the running maximum of ``p (m - s)`` (the largest ``p (m - i)`` of the
    run), Benjamini-Hochberg's the running minimum from the top of ``p m / e``.
    """
    level = as_float("alpha", alpha)
    if not 0.0 < level < 1.0:
        raise input_error(f"alpha: expected a level in (0, 1), got {alpha!r}")
    p, n = counted.values, counted.counts
    end = np.cumsum(n)
    m = int(end[-1]) if end.size else 0
    start = end - n
    holm_fails = np.flatnonzero(p > level / (m - start))
    n_holm = int(start[holm_fails[0]]) if holm_fails.size else m
    bh_passes = np.flatnonzero(p <= end / m * level) if m else np.zeros(0, dtype=np.intp)
    n_bh = int(end[bh_passes[-1]]) if bh_passes.size else 0
    holm = np.minimum(np.maximum.accumulate(p * (m - start)), 1.0) if m else p.copy()
    bh = np.minimum(np.minimum.accumulate((p * m / end)[::-1])[::-1], 1.0) if m else p.copy()
    return CountedCorrections(
        n_tests=m,
        n_raw=int(n[p <= level].sum()),
        n_holm=n_holm,
        n_bh=n_bh,
        values=p,
        holm_adjusted=holm,
        bh_adjusted=bh,
    )
