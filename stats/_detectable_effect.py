"""The smallest edge a sweep could have detected: a minimum detectable Sharpe ratio.

"Not distinguishable from selection luck" says nothing about size until it is read beside the
edge the test could have found. For the sweep-wide test (SPA's null maximum over every config,
:func:`stats.sweep_wide_pvalue`) this module gives the per-period excess Sharpe ratio that a
config must have for the test to reject with a stated power (80% by default), at the run's
length and over its number of configs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stats._data_snooping import NullSummary
from stats._fixed_math import norm_ppf
from stats._generalized_error import allowed_exceedances, critical_value
from stats._validation import input_error


@dataclass(frozen=True)
class DetectableEffect:
    """The minimum detectable excess Sharpe ratio of a sweep (per period).

    Attributes
    ----------
    sharpe : float
        Per-period excess Sharpe ratio detected with probability ``power`` by the sweep-wide
        test at level ``alpha`` (``inf`` when the replications are too few for any
        rejection).
    single_test_sharpe : float
        The same for one config chosen in advance and tested alone at ``alpha`` (a holdout
        of the same length): no search to pay for.
    critical_value : float
        ``c``, the critical value the MDE uses: the sweep's, never below the single test's
        ``z_{1-alpha}`` (see the notes of :func:`minimum_detectable_effect`).
    sweep_critical_value : float
        The sweep-wide test rejects for a config whose ``t`` exceeds it
        (:func:`sweep_wide_critical_value`).
    null_sharpe_std : float
        ``sigma``: the null standard deviation of one config's per-period Sharpe ratio.
    power, alpha : float
        As asked.
    """

    sharpe: float
    single_test_sharpe: float
    critical_value: float
    sweep_critical_value: float
    null_sharpe_std: float
    power: float
    alpha: float


def sweep_wide_critical_value(summary: NullSummary, alpha: float = 0.05) -> float:
    """The ``t`` above which the sweep-wide p-value is at most ``alpha``.

    ``sweep_wide_pvalue(summary, t) <= alpha`` exactly when ``t > c``: ``c`` is the
    ``(a + 1)``-th largest of ``max(0, T*_b)`` over the replications, with ``a`` the largest
    count for which ``(1 + a) / (1 + B) <= alpha`` (``inf`` when there is none).
    """
    if not 0.0 < alpha < 1.0:
        raise input_error(f"alpha: expected a level in (0, 1), got {alpha!r}")
    return critical_value(np.maximum(summary.spa, 0.0), allowed_exceedances(summary.reps, alpha))


def minimum_detectable_effect(
    summary: NullSummary, null_sharpe_std: float, alpha: float = 0.05, power: float = 0.8
) -> DetectableEffect:
    """The per-period excess Sharpe ratio the sweep-wide test detects with ``power``.

    Parameters
    ----------
    summary : NullSummary
        Merged over the whole sweep.
    null_sharpe_std : float
        ``sigma``, the null standard deviation of one config's per-period Sharpe ratio: the
        root mean square over configs of ``omega_k / (sqrt(n) sd_k)`` (the report's, as for
        the effective number of trials).
    alpha : float, default 0.05
        Level of the sweep-wide test.
    power : float, default 0.8
        Probability of detection asked for.

    Returns
    -------
    DetectableEffect

    Notes
    -----
    The model. A config with per-period excess Sharpe ratio ``theta`` (mean ``mu = theta
    sd`` over ``n`` periods) has studentised statistic ``t = sqrt(n) mean / omega``, which is
    asymptotically ``N(theta / sigma, 1)`` with ``sigma = omega / (sqrt(n) sd)``, whatever
    the returns' skew, kurtosis or serial dependence, because ``omega`` is the block
    bootstrap's long-run standard deviation (Hansen 2005, Sec. 2.3, whose studentised
    statistic this is). The sweep-wide test rejects for it when ``t > c``, ``c`` the ``1 - alpha``
    bootstrap quantile of the maximum over every config (:func:`sweep_wide_critical_value`;
    the first, single-step critical value of Romano and Wolf's 2005 StepM). Its power is
    ``1 - Phi(c - theta / sigma)``; setting it to ``power``:

        MDE = (c + Phi^-1(power)) sigma,

    the minimum detectable effect of Bloom (1995) (the standard error times the multiplier
    ``z_{1-alpha} + z_{power}`` of a one-sided test), with the sweep's own critical value in
    place of ``z_{1-alpha}``. ``single_test_sharpe`` keeps ``z_{1-alpha}``: the MDE of one
    config fixed in advance, the search's cost being the difference.

    ``c`` is never taken below ``z_{1-alpha}``. Hansen's consistent recentring leaves the
    configs far below the benchmark out of the null maximum, so a sweep whose every config
    is clearly worse than the benchmark has a null maximum near 0; a config WITH an edge is
    not left out, and its own null draws (about ``N(0, 1)``) enter the maximum, whose
    ``1 - alpha`` quantile is then at least theirs. (Taking the larger of the two quantiles
    is a lower bound of the quantile of the maximum, so in that corner the MDE errs small.)

    The MDE is an upper
    bound of the size the test needs when the edge is shared by several configs (any of
    them may carry the maximum over the line) and is conservative then; the Sharpe ratio's
    own standard error (Lo 2002; Mertens 2002, with skew and kurtosis) does not enter,
    because the test studentises the mean by ``omega``, not the Sharpe ratio. Measured by
    ``benchmarks/bench_discoveries.py``: a config planted at the MDE among null configs is
    detected in about ``power`` of the simulated sweeps (docs/benchmarks/discoveries.md).
    Per-period throughout; annualise with ``sqrt(periods_per_year)``.

    References
    ----------
    .. [1] Bloom, H. S. (1995). "Minimum detectable effects: a simple way to report the
       statistical power of experimental designs". Evaluation Review 19(5), 547-556.
    .. [2] Hansen, P. R. (2005). "A test for superior predictive ability". Journal of
       Business & Economic Statistics 23(4), 365-380.
    .. [3] Romano, J. P. and Wolf, M. (2005). "Stepwise multiple testing as formalized data
       snooping". Econometrica 73(4), 1237-1282.
    .. [4] Lo, A. W. (2002). "The statistics of Sharpe ratios". Financial Analysts Journal
       58(4), 36-52. Mertens, E. (2002). "Comments on variance of the IID estimator in Lo
       (2002)". Working paper, University of Basel.
    """
    if not 0.0 < power < 1.0:
        raise input_error(f"power: expected a probability in (0, 1), got {power!r}")
    if not (math.isfinite(null_sharpe_std) and null_sharpe_std > 0.0):
        raise input_error(f"null_sharpe_std: expected a finite value > 0, got {null_sharpe_std!r}")
    sweep_c = sweep_wide_critical_value(summary, alpha)
    single_c = norm_ppf(1.0 - alpha)
    c = max(sweep_c, single_c)
    z = norm_ppf(power)
    return DetectableEffect(
        sharpe=(c + z) * null_sharpe_std,
        single_test_sharpe=(single_c + z) * null_sharpe_std,
        critical_value=c,
        sweep_critical_value=sweep_c,
        null_sharpe_std=null_sharpe_std,
        power=power,
        alpha=alpha,
    )
