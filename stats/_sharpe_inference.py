"""Inference on Sharpe ratios: E[max] of null Sharpes, PSR, DSR, MinTRL and MinBTL.

Every Sharpe ratio here is PER PERIOD (mean / std of per-period returns, ``ddof=1``), never
annualised, and every kurtosis is RAW (a normal distribution gives 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate

from stats._fixed_math import (
    exp_scalar,
    log_norm_cdf,
    log_scalar,
    norm_cdf,
    norm_cdf_array,
    norm_ppf,
)
from stats._validation import (
    FloatArray,
    as_float,
    as_float_array,
    check_choice,
    input_error,
)

ExpectedMaxMethod = Literal["gumbel", "exact"]
EXPECTED_MAX_METHODS: tuple[str, ...] = ("gumbel", "exact")

#: A per-period Sharpe ratio above this, over at least ``_DAILY_SIZE_N_OBS`` periods, is
#: taken to be an annualised Sharpe passed by mistake (it would be a t-statistic above 10).
_MAX_PER_PERIOD_SHARPE = 1.0
#: A spread (standard deviation) of per-period trial Sharpes above this is refused likewise.
_MAX_PER_PERIOD_SHARPE_STD = 0.5
_DAILY_SIZE_N_OBS = 100
_ANNUALISED_HINT = (
    "it looks ANNUALISED; pass the PER-PERIOD value (annualised / sqrt(periods_per_year)), "
    "or check_per_period=False if it really is per period"
)


def _check_per_period_sharpe(name: str, sharpe: FloatArray, n_obs: FloatArray | None) -> None:
    big = np.abs(np.nan_to_num(sharpe)) > _MAX_PER_PERIOD_SHARPE
    if n_obs is not None:
        big = big & (n_obs >= _DAILY_SIZE_N_OBS)
    if bool(np.any(big)):
        worst = float(np.max(np.abs(np.nan_to_num(sharpe))))
        where = "" if n_obs is None else f" over >= {_DAILY_SIZE_N_OBS} periods"
        raise input_error(
            f"{name}: expected a per-period Sharpe ratio (|SR| <= {_MAX_PER_PERIOD_SHARPE:g}"
            f"{where}), got {worst:g}; {_ANNUALISED_HINT}"
        )


def _check_raw_kurtosis(skew: FloatArray, kurtosis: FloatArray) -> None:
    # Pearson's inequality: raw kurtosis >= 1 + skew**2 for every distribution.
    with np.errstate(invalid="ignore"):
        bad = kurtosis < 1.0 + skew * skew - 1e-12
    if bool(np.any(bad)):
        k = float(np.broadcast_to(kurtosis, bad.shape)[bad].flat[0])
        s = float(np.broadcast_to(skew, bad.shape)[bad].flat[0])
        raise input_error(
            f"kurtosis: expected RAW kurtosis (normal = 3) with kurtosis >= 1 + skew**2, got "
            f"{k:g} with skew {s:g}; EXCESS kurtosis (normal = 0) was probably passed: add 3"
        )


def _check_n_obs(n_obs: ArrayLike) -> FloatArray:
    t = as_float_array("n_obs", n_obs)
    if bool(np.any(t < 2)) or bool(np.any(t != np.floor(t))):
        raise input_error(
            f"n_obs: expected integer period counts >= 2, got {np.unique(t)[:5].tolist()}"
        )
    return t


def _sharpe_variance_factor(
    sharpe: FloatArray, skew: FloatArray, kurtosis: FloatArray
) -> FloatArray:
    """``1 - skew*SR + (kurtosis - 1)/4 * SR**2``: (T - 1) times the variance of the SR."""
    factor: FloatArray = 1.0 - skew * sharpe + (kurtosis - 1.0) / 4.0 * sharpe * sharpe
    with np.errstate(invalid="ignore"):
        bad = factor <= 0
    if bool(np.any(bad)):
        raise input_error(
            "skew, kurtosis: expected moments with 1 - skew*SR + (kurtosis-1)/4*SR**2 > 0, got "
            f"{float(np.broadcast_to(factor, bad.shape)[bad].flat[0]):g}; check the sign of "
            "the skew and that the kurtosis is RAW"
        )
    return factor


def _gumbel_expected_max(n: float) -> float:
    gamma = float(np.euler_gamma)
    if n <= 1.0:
        return 0.0
    approx = (1.0 - gamma) * norm_ppf(1.0 - 1.0 / n) + gamma * norm_ppf(1.0 - 1.0 / (n * math.e))
    return max(approx, 0.0)


def _exact_expected_max(n: float) -> float:
    if n == 1.0:
        return 0.0
    # E[max] = integral of x dPhi(x)**n = integral of x * n * phi(x) * Phi(x)**(n-1) dx.
    log_n = log_scalar(n)
    log_sqrt_2pi = 0.5 * log_scalar(2.0 * math.pi)

    def integrand(x: float) -> float:
        return x * exp_scalar(log_n - 0.5 * x * x - log_sqrt_2pi + (n - 1.0) * log_norm_cdf(x))

    centre = math.sqrt(2.0 * log_n)
    points = [centre - 2.0, centre - 0.5, centre, centre + 0.5, centre + 2.0]
    value, _ = integrate.quad(
        integrand, -12.0, centre + 12.0, points=points, limit=400, epsabs=1e-13, epsrel=1e-12
    )
    return float(value)


def expected_max_sharpe(
    n_trials: float, sharpe_std: float = 1.0, *, method: ExpectedMaxMethod = "gumbel"
) -> float:
    r"""Return the expected maximum of ``n_trials`` independent null Sharpe ratios.

    ``sharpe_std * E[max of n_trials i.i.d. standard normals]``.

    Parameters
    ----------
    n_trials : float
        Number of independent trials, ``>= 1``; need not be an integer (an effective number
        of trials from :func:`effective_number_of_trials` is typical).
    sharpe_std : float, default 1.0
        Standard deviation of the trial Sharpe ratios under the null. With the default the
        result is the expected maximum of standard normals.
    method : {"gumbel", "exact"}
        ``"gumbel"``: the extreme-value approximation of [1]_ (eq. 6 of [2]_),
        :math:`(1-\gamma)\Phi^{-1}(1-1/N) + \gamma\Phi^{-1}(1-1/(Ne))`. ``"exact"``: the
        integral :math:`\int x\,d\Phi(x)^N`, by adaptive quadrature.

    Returns
    -------
    float
        The expected maximum, in the units of ``sharpe_std``.

    Notes
    -----
    The Gumbel form is what the DSR paper [2]_ and most libraries (pypbo, mlfinlab) use; it
    overstates the exact value by about 2% at N = 10 (1.5746 vs 1.5388) and 1% at N = 100
    (2.5304 vs 2.5076), and it goes to minus infinity as N falls to 1. Here it is clamped
    at 0 (the exact value at N = 1), which keeps it continuous and non-decreasing in N.
    Prefer ``method="exact"`` when N is below about 10. Both are monotone in N.

    The result is scale-free: pass a per-period ``sharpe_std`` to get a per-period
    expected maximum, or an annualised one (e.g. ``1/sqrt(years)``) to get an annualised
    one (seed 003's table: ``0.2 * E[max]`` for 25 years of data).

    References
    ----------
    .. [1] Bailey, D. H., Borwein, J., López de Prado, M. and Zhu, Q. J. (2014).
       "Pseudo-mathematics and financial charlatanism: the effects of backtest overfitting
       on out-of-sample performance". Notices of the AMS 61(5), 458-471.
    .. [2] Bailey, D. H. and López de Prado, M. (2014). "The Deflated Sharpe Ratio:
       correcting for selection bias, backtest overfitting and non-normality". Journal of
       Portfolio Management 40(5), 94-107.
    """
    n = as_float("n_trials", n_trials)
    if n < 1.0:
        raise input_error(f"n_trials: expected a number of trials >= 1, got {n_trials!r}")
    std = as_float("sharpe_std", sharpe_std)
    if std < 0:
        raise input_error(f"sharpe_std: expected a non-negative number, got {sharpe_std!r}")
    check_choice("method", method, EXPECTED_MAX_METHODS)
    if method == "gumbel":
        return std * _gumbel_expected_max(n)
    if n > 1e15:
        raise input_error(
            f"n_trials: expected at most 1e15 for method='exact', got {n:g}; use 'gumbel'"
        )
    return std * _exact_expected_max(n)


def probabilistic_sharpe_ratio(
    sharpe: ArrayLike,
    n_obs: ArrayLike,
    skew: ArrayLike = 0.0,
    kurtosis: ArrayLike = 3.0,
    *,
    sharpe_benchmark: ArrayLike = 0.0,
    check_per_period: bool = True,
) -> FloatArray:
    r"""Probabilistic Sharpe ratio: the probability that the true Sharpe exceeds a benchmark.

    .. math::
        \mathrm{PSR}(SR^*) = \Phi\left(\frac{(\widehat{SR} - SR^*)\sqrt{T-1}}
        {\sqrt{1 - \hat\gamma_3 \widehat{SR} + \frac{\hat\gamma_4 - 1}{4}\widehat{SR}^2}}\right)

    Parameters
    ----------
    sharpe : array_like
        Observed PER-PERIOD Sharpe ratio(s) (:func:`sharpe_ratio`), not annualised.
    n_obs : array_like
        Number of return periods ``T`` behind each Sharpe ratio (integers >= 2).
    skew : array_like, default 0.0
        Skewness of the returns (biased form, as :func:`return_moments`).
    kurtosis : array_like, default 3.0
        RAW kurtosis of the returns (normal = 3), NOT excess kurtosis.
    sharpe_benchmark : array_like, default 0.0
        The per-period benchmark Sharpe ratio :math:`SR^*`.
    check_per_period : bool, default True
        Refuse a Sharpe above 1 per period over 100 or more periods, which is almost surely
        an annualised value passed by mistake.

    Returns
    -------
    ndarray of float64
        PSR in [0, 1], with the broadcast shape of the inputs (0-d for scalar inputs; use
        ``float(...)``). NaN where the Sharpe, skew or kurtosis is NaN (constant series).

    Raises
    ------
    StatsInputError
        On an apparently annualised Sharpe, an excess kurtosis (kurtosis < 1 + skew**2),
        ``n_obs < 2``, or moments that make the variance term non-positive.

    Notes
    -----
    Conventions: per-period Sharpe, ``T - 1`` in the numerator and RAW kurtosis, as in
    [1]_ and pypbo's ``psr``; the same formula with EXCESS kurtosis ``k`` reads
    ``(k + 2)/4 * SR**2``. The standard error is the asymptotic one of Mertens (2002),
    i.i.d. returns assumed; serial correlation is not accounted for.

    References
    ----------
    .. [1] Bailey, D. H. and López de Prado, M. (2012). "The Sharpe Ratio Efficient
       Frontier". Journal of Risk 15(2), 3-44.
    .. [2] Mertens, E. (2002). "Comments on variance of the IID estimator in Lo (2002)".
       Working paper, University of Basel.
    """
    sr = as_float_array("sharpe", sharpe, finite=False)
    t = _check_n_obs(n_obs)
    g3 = as_float_array("skew", skew, finite=False)
    g4 = as_float_array("kurtosis", kurtosis, finite=False)
    bench = as_float_array("sharpe_benchmark", sharpe_benchmark)
    if check_per_period:
        _check_per_period_sharpe("sharpe", sr, t)
        _check_per_period_sharpe("sharpe_benchmark", bench, t)
    _check_raw_kurtosis(g3, g4)
    factor = _sharpe_variance_factor(sr, g3, g4)
    z = (sr - bench) * np.sqrt(t - 1.0) / np.sqrt(factor)
    out: FloatArray = norm_cdf_array(z)
    return out


@dataclass(frozen=True)
class DeflatedSharpe:
    """The deflated Sharpe ratio of one selected strategy and what went into it.

    Attributes
    ----------
    dsr : float
        Deflated Sharpe ratio: PSR against the expected maximum null Sharpe ``sr0``.
    psr : float
        PSR against a zero benchmark (no deflation), for comparison.
    sharpe : float
        The observed per-period Sharpe ratio tested.
    sr0 : float
        Per-period benchmark ``sqrt(trial_sharpe_variance) * E[max of n_trials N(0,1)]``.
    z : float
        The test statistic ``(sharpe - sr0) * sqrt(n_obs - 1) / sqrt(variance factor)``.
    n_trials : float
        Number of (effective) independent trials used.
    trial_sharpe_variance : float
        Variance of the per-period Sharpe ratios across trials.
    n_obs : int
        Number of return periods.
    skew : float
        Skewness of the selected strategy's returns.
    kurtosis : float
        RAW kurtosis of the selected strategy's returns.
    expected_max_method : str
        ``"gumbel"`` or ``"exact"``, see :func:`expected_max_sharpe`.
    """

    dsr: float
    psr: float
    sharpe: float
    sr0: float
    z: float
    n_trials: float
    trial_sharpe_variance: float
    n_obs: int
    skew: float
    kurtosis: float
    expected_max_method: str


def deflated_sharpe_ratio(
    sharpe: float,
    n_obs: int,
    skew: float = 0.0,
    kurtosis: float = 3.0,
    *,
    n_trials: float,
    trial_sharpe_variance: float,
    method: ExpectedMaxMethod = "gumbel",
    check_per_period: bool = True,
) -> DeflatedSharpe:
    r"""Deflated Sharpe ratio of the best of ``n_trials`` strategies.

    ``DSR = PSR(SR0)`` with ``SR0 = sqrt(V[SR]) * E[max of N standard normals]``: the
    probability that the selected strategy's true Sharpe beats the best Sharpe that
    ``n_trials`` skill-less strategies would be expected to show.

    Parameters
    ----------
    sharpe : float
        Observed PER-PERIOD Sharpe ratio of the selected (best) strategy.
    n_obs : int
        Number of return periods behind it.
    skew : float, default 0.0
        Skewness of its returns.
    kurtosis : float, default 3.0
        RAW kurtosis of its returns (normal = 3).
    n_trials : float
        Number of independent trials, ``>= 1``: the naive count of configs or an effective
        number from :func:`effective_number_of_trials`.
    trial_sharpe_variance : float
        Variance of the PER-PERIOD Sharpe ratios across the trials (``ddof=1``), i.e.
        ``np.var(sharpes, ddof=1)``; an annualised variance divided by
        ``periods_per_year``.
    method : {"gumbel", "exact"}
        How E[max] is computed, see :func:`expected_max_sharpe`. The paper uses "gumbel".
    check_per_period : bool, default True
        Refuse a Sharpe above 1 per period, or a trial Sharpe standard deviation above 0.5
        per period, over 100 or more periods (almost surely annualised).

    Returns
    -------
    DeflatedSharpe

    Raises
    ------
    StatsInputError
        On apparently annualised inputs, excess kurtosis, or invalid counts.

    Notes
    -----
    With the paper's example (N = 100 trials, annualised SR 2.5 and trial-SR variance 0.5,
    T = 1250 daily periods at 250 a year, skew -3, raw kurtosis 10) the per-period inputs
    are ``sharpe = 2.5/sqrt(250)`` and ``trial_sharpe_variance = 0.5/250``, giving
    SR0 = 0.1132 and DSR = 0.9004 [1]_. Annualising before calling is the classic mistake:
    it inflates the z-statistic by ``sqrt(periods_per_year)``.

    Other implementations: pypbo's ``dsr`` takes the trial Sharpe STANDARD DEVIATION and
    RAW kurtosis (as here, but no per-period check); code following López de Prado's
    book often passes pandas' ``kurt()``, which is EXCESS kurtosis, and must add 3 (here
    an excess kurtosis below ``1 + skew**2`` is refused, larger ones cannot be detected).
    ``n_trials`` may be the effective number from :func:`effective_number_of_trials`
    rather than the count of configs; report both.

    References
    ----------
    .. [1] Bailey, D. H. and López de Prado, M. (2014). "The Deflated Sharpe Ratio:
       correcting for selection bias, backtest overfitting and non-normality". Journal of
       Portfolio Management 40(5), 94-107.
    .. [2] Bailey, D. H. and López de Prado, M. (2012). "The Sharpe Ratio Efficient
       Frontier". Journal of Risk 15(2), 3-44.
    """
    sr = as_float("sharpe", sharpe)
    t = as_float("n_obs", n_obs)
    variance = as_float("trial_sharpe_variance", trial_sharpe_variance)
    if variance < 0:
        raise input_error(
            f"trial_sharpe_variance: expected a non-negative variance, got {variance!r}"
        )
    if check_per_period:
        _check_per_period_sharpe("sharpe", np.asarray(sr), np.asarray(t))
        if math.sqrt(variance) > _MAX_PER_PERIOD_SHARPE_STD and t >= _DAILY_SIZE_N_OBS:
            raise input_error(
                "trial_sharpe_variance: expected the variance of PER-PERIOD Sharpe ratios "
                f"(standard deviation <= {_MAX_PER_PERIOD_SHARPE_STD:g}), got {variance:g}; "
                f"{_ANNUALISED_HINT}"
            )
    sr0 = expected_max_sharpe(n_trials, math.sqrt(variance), method=method)
    g3 = as_float("skew", skew)
    g4 = as_float("kurtosis", kurtosis)
    _check_raw_kurtosis(np.asarray(g3), np.asarray(g4))
    t_checked = _check_n_obs(t)
    factor = float(_sharpe_variance_factor(np.asarray(sr), np.asarray(g3), np.asarray(g4)))
    z = (sr - sr0) * math.sqrt(float(t_checked) - 1.0) / math.sqrt(factor)
    z_zero = sr * math.sqrt(float(t_checked) - 1.0) / math.sqrt(factor)
    return DeflatedSharpe(
        dsr=norm_cdf(z),
        psr=norm_cdf(z_zero),
        sharpe=sr,
        sr0=sr0,
        z=z,
        n_trials=float(n_trials),
        trial_sharpe_variance=variance,
        n_obs=int(t),
        skew=g3,
        kurtosis=g4,
        expected_max_method=method,
    )


def min_track_record_length(
    sharpe: ArrayLike,
    skew: ArrayLike = 0.0,
    kurtosis: ArrayLike = 3.0,
    *,
    sharpe_benchmark: ArrayLike = 0.0,
    confidence: float = 0.95,
    check_per_period: bool = True,
) -> FloatArray:
    r"""Minimum track record length: periods needed for PSR(SR*) to reach ``confidence``.

    .. math::
        \mathrm{MinTRL} = 1 + \left(1 - \hat\gamma_3\widehat{SR}
        + \frac{\hat\gamma_4 - 1}{4}\widehat{SR}^2\right)
        \left(\frac{z_\alpha}{\widehat{SR} - SR^*}\right)^2

    Parameters
    ----------
    sharpe : array_like
        Observed PER-PERIOD Sharpe ratio(s).
    skew : array_like, default 0.0
        Skewness of the returns.
    kurtosis : array_like, default 3.0
        RAW kurtosis of the returns (normal = 3).
    sharpe_benchmark : array_like, default 0.0
        Per-period benchmark Sharpe ratio :math:`SR^*`.
    confidence : float, default 0.95
        Target probability, in (0, 1); :math:`z_\alpha = \Phi^{-1}(\text{confidence})`.
    check_per_period : bool, default True
        Refuse a Sharpe above 1 per period (almost surely annualised).

    Returns
    -------
    ndarray of float64
        MinTRL in PERIODS (the frequency of the Sharpe ratio; divide by periods per year
        for years); ``inf`` where ``sharpe <= sharpe_benchmark``.

    Notes
    -----
    Inverse of :func:`probabilistic_sharpe_ratio` in ``n_obs``: PSR at ``n_obs = MinTRL``
    equals ``confidence`` exactly (same ``T - 1`` and RAW-kurtosis conventions).

    References
    ----------
    .. [1] Bailey, D. H. and López de Prado, M. (2012). "The Sharpe Ratio Efficient
       Frontier". Journal of Risk 15(2), 3-44.
    """
    sr = as_float_array("sharpe", sharpe, finite=False)
    g3 = as_float_array("skew", skew, finite=False)
    g4 = as_float_array("kurtosis", kurtosis, finite=False)
    bench = as_float_array("sharpe_benchmark", sharpe_benchmark)
    conf = as_float("confidence", confidence)
    if not 0.0 < conf < 1.0:
        raise input_error(f"confidence: expected a probability in (0, 1), got {confidence!r}")
    if check_per_period:
        _check_per_period_sharpe("sharpe", sr, None)
        _check_per_period_sharpe("sharpe_benchmark", bench, None)
    _check_raw_kurtosis(g3, g4)
    factor = _sharpe_variance_factor(sr, g3, g4)
    z_alpha = norm_ppf(conf)
    edge = sr - bench
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(edge > 0, 1.0 + factor * (z_alpha / edge) ** 2, np.inf)
    out = np.where(np.isnan(edge) | np.isnan(factor), np.nan, out)
    result: FloatArray = np.asarray(out, dtype=np.float64)
    return result


def minimum_backtest_length(
    n_trials: float,
    target_sharpe: float,
    *,
    method: ExpectedMaxMethod = "gumbel",
    check_per_period: bool = True,
) -> float:
    r"""Minimum backtest length: periods for N skill-less trials not to fake ``target_sharpe``.

    ``MinBTL = (E[max of N standard normals] / target_sharpe)**2``: a null Sharpe estimated
    over ``T`` periods has standard deviation about ``1/sqrt(T)`` per period, so over
    fewer than MinBTL periods the best of N noise strategies is expected to show a
    per-period Sharpe of ``target_sharpe`` or more.

    Parameters
    ----------
    n_trials : float
        Number of independent trials, ``>= 1``.
    target_sharpe : float
        Positive PER-PERIOD Sharpe ratio the best trial should not reach by luck.
    method : {"gumbel", "exact"}
        How E[max] is computed, see :func:`expected_max_sharpe`.
    check_per_period : bool, default True
        Refuse a target above 1 per period (almost surely annualised).

    Returns
    -------
    float
        MinBTL in PERIODS.

    Notes
    -----
    The paper states MinBTL in YEARS with an annualised target; the two agree because
    ``(E/(SR_a/sqrt(q)))**2 = q * (E/SR_a)**2`` periods for ``q`` periods a year. Its
    example: 45 independent trials need 5 years for an annualised Sharpe of 1 not to be
    expected from luck alone (``minimum_backtest_length(45, 1/sqrt(252)) / 252 ≈ 5.0``).
    The paper's upper bound ``2 ln N / SR**2`` is not used.

    References
    ----------
    .. [1] Bailey, D. H., Borwein, J., López de Prado, M. and Zhu, Q. J. (2014).
       "Pseudo-mathematics and financial charlatanism: the effects of backtest overfitting
       on out-of-sample performance". Notices of the AMS 61(5), 458-471.
    """
    target = as_float("target_sharpe", target_sharpe)
    if not target > 0:
        raise input_error(f"target_sharpe: expected a positive Sharpe ratio, got {target!r}")
    if check_per_period:
        _check_per_period_sharpe("target_sharpe", np.asarray(target), None)
    e_max = expected_max_sharpe(n_trials, 1.0, method=method)
    return (e_max / target) ** 2
