"""Scaling laws: Gunther's Universal Scalability Law, Gustafson's law, task efficiency."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize

from stats._fixed_math import small_least_squares
from stats._validation import FloatArray, as_float, as_float_array, check_choice, input_error

GammaMode = Literal["fixed", "free"]
GAMMA_MODES: tuple[str, ...] = ("fixed", "free")


def _workers(name: str, workers: ArrayLike) -> FloatArray:
    p = as_float_array(name, workers)
    if bool(np.any(p < 1)):
        raise input_error(f"{name}: expected worker counts >= 1, got min {float(p.min())}")
    return p


def usl_throughput(
    workers: ArrayLike, sigma: float, kappa: float, gamma: float = 1.0
) -> FloatArray:
    r"""Throughput predicted by the Universal Scalability Law.

    :math:`X(p) = \gamma p / (1 + \sigma(p - 1) + \kappa p(p - 1))`.

    Parameters
    ----------
    workers : array_like
        Number of workers p (>= 1).
    sigma : float
        Contention (serial fraction), usually in [0, 1].
    kappa : float
        Coherency (crosstalk) cost, usually >= 0.
    gamma : float, default 1.0
        Throughput of one worker; with 1 the result is the relative capacity C(p).

    Returns
    -------
    ndarray of float64
        X(p), the shape of ``workers``.

    References
    ----------
    .. [1] Gunther, N. J. (2007). Guerrilla Capacity Planning. Springer, chapters 4-6.
    """
    p = _workers("workers", workers)
    s = as_float("sigma", sigma)
    k = as_float("kappa", kappa)
    g = as_float("gamma", gamma)
    out: FloatArray = g * p / (1.0 + s * (p - 1.0) + k * p * (p - 1.0))
    return out


def usl_peak_workers(sigma: float, kappa: float) -> float:
    r"""Worker count of peak USL throughput, :math:`p^* = \sqrt{(1 - \sigma)/\kappa}`.

    Parameters
    ----------
    sigma : float
        Contention, in [0, 1).
    kappa : float
        Coherency, >= 0.

    Returns
    -------
    float
        ``p*``; ``inf`` when ``kappa == 0`` (throughput then rises to ``gamma/sigma``).

    References
    ----------
    .. [1] Gunther, N. J. (2007). Guerrilla Capacity Planning. Springer, eq. 4.33.
    """
    s = as_float("sigma", sigma)
    k = as_float("kappa", kappa)
    if k < 0 or not 0 <= s < 1:
        raise input_error(
            f"sigma, kappa: expected 0 <= sigma < 1 and kappa >= 0, got {s!r} and {k!r}"
        )
    return math.inf if k == 0 else math.sqrt((1.0 - s) / k)


@dataclass(frozen=True)
class USLFit:
    """A Universal Scalability Law fitted to measured throughput.

    Attributes
    ----------
    sigma : float
        Contention coefficient.
    kappa : float
        Coherency coefficient.
    gamma : float
        Throughput of one worker in the fitted model: ``X(1)`` as measured when
        ``gamma_fixed``, else fitted.
    gamma_fixed : bool
        Whether the fit was on relative capacity ``C = X(p)/X(1)`` with gamma fixed.
    peak_workers : float
        ``sqrt((1 - sigma)/kappa)``: ``inf`` when ``kappa == 0`` (no retrograde region),
        NaN when the fitted sigma is not in [0, 1).
    peak_throughput : float
        Predicted throughput at ``peak_workers`` (``gamma/sigma`` when unbounded).
    r_squared : float
        Coefficient of determination of the throughput fit.
    workers : ndarray of float64
        Worker counts measured.
    throughput : ndarray of float64
        Throughput measured.
    predicted : ndarray of float64
        Fitted throughput at ``workers``.
    residuals : ndarray of float64
        ``throughput - predicted``.
    """

    sigma: float
    kappa: float
    gamma: float
    gamma_fixed: bool
    peak_workers: float
    peak_throughput: float
    r_squared: float
    workers: FloatArray
    throughput: FloatArray
    predicted: FloatArray
    residuals: FloatArray

    def predict(self, workers: ArrayLike) -> FloatArray:
        """Fitted throughput at any worker counts."""
        return usl_throughput(workers, self.sigma, self.kappa, self.gamma)


def _capacity_residuals(theta: FloatArray, p: FloatArray, c: FloatArray) -> FloatArray:
    s, k = theta
    out: FloatArray = p / (1.0 + s * (p - 1.0) + k * p * (p - 1.0)) - c
    return out


def _throughput_residuals(theta: FloatArray, p: FloatArray, x: FloatArray) -> FloatArray:
    s, k, g = theta
    out: FloatArray = g * p / (1.0 + s * (p - 1.0) + k * p * (p - 1.0)) - x
    return out


def _capacity_jacobian(theta: FloatArray, p: FloatArray, c: FloatArray) -> FloatArray:
    s, k = theta
    d2 = (1.0 + s * (p - 1.0) + k * p * (p - 1.0)) ** 2
    out: FloatArray = np.column_stack([-p * (p - 1.0) / d2, -p * p * (p - 1.0) / d2])
    return out


def _throughput_jacobian(theta: FloatArray, p: FloatArray, x: FloatArray) -> FloatArray:
    s, k, g = theta
    d = 1.0 + s * (p - 1.0) + k * p * (p - 1.0)
    out: FloatArray = np.column_stack(
        [-g * p * (p - 1.0) / d**2, -g * p * p * (p - 1.0) / d**2, p / d]
    )
    return out


def _least_squares(
    fun: Callable[..., FloatArray],
    jac: Callable[..., FloatArray],
    start: FloatArray,
    lower: FloatArray,
    upper: FloatArray,
    args: tuple[FloatArray, FloatArray],
) -> FloatArray:
    """Unbounded Levenberg-Marquardt; if it leaves the bounds, a bounded trust-region fit."""
    res = optimize.least_squares(
        fun,
        start,
        jac=jac,
        method="lm",
        args=args,
        xtol=1e-15,
        ftol=1e-15,
        gtol=1e-15,
        max_nfev=20_000,
    )
    theta: FloatArray = np.asarray(res.x, dtype=np.float64)
    if bool(np.all(theta >= lower)) and bool(np.all(theta <= upper)) and res.success:
        return theta
    res = optimize.least_squares(
        fun,
        np.clip(start, lower, upper),
        jac=jac,
        method="trf",
        bounds=(lower, upper),
        args=args,
        x_scale="jac",
        xtol=1e-15,
        ftol=1e-15,
        gtol=1e-15,
        max_nfev=20_000,
    )
    out: FloatArray = np.asarray(res.x, dtype=np.float64)
    return out


def fit_usl(workers: ArrayLike, throughput: ArrayLike, *, gamma: GammaMode = "fixed") -> USLFit:
    r"""Fit the Universal Scalability Law to measured (workers, throughput) pairs.

    Parameters
    ----------
    workers : array_like, shape (k,)
        Worker counts p (>= 1), at least 3 distinct values.
    throughput : array_like, shape (k,)
        Measured throughput X(p) (work per second; for a fixed workload, ``1/wall``).
    gamma : {"fixed", "free"}
        ``"fixed"`` (default, as Gunther does): fit sigma and kappa on relative capacity
        ``C(p) = X(p)/X(1)`` with gamma = 1, which needs a measurement at p = 1 (several are
        averaged); the reported ``gamma`` is that X(1). ``"free"``: fit
        :math:`X(p) = \gamma p/(1 + \sigma(p-1) + \kappa p(p-1))` with gamma a third
        parameter, as the R ``usl`` package does, and needs no p = 1 point.

    Returns
    -------
    USLFit

    Notes
    -----
    Nonlinear least squares on C(p) (fixed) or X(p) (free), unweighted, by
    Levenberg-Marquardt (``scipy.optimize.least_squares``) from a start given by Gunther's
    linearisation ``p/C - 1 = sigma(p-1) + kappa p(p-1)``; only if that leaves
    ``0 <= sigma <= 1, kappa >= 0, gamma > 0`` is the fit redone within those bounds.
    On R ``usl``'s ``specsdm91`` data the free fit gives sigma = 0.0277285,
    kappa = 1.04366e-4, gamma = 89.9952 and a peak at 96.52 workers, as that package does.
    The linearised regression itself gives different (worse-fitting) values, which is why
    it only starts the search.

    References
    ----------
    .. [1] Gunther, N. J. (2007). Guerrilla Capacity Planning. Springer.
    .. [2] Möding, S. (2023). usl: Analyze System Scalability with the Universal
       Scalability Law. R package, https://CRAN.R-project.org/package=usl.
    """
    p = _workers("workers", workers)
    x = as_float_array("throughput", throughput)
    check_choice("gamma", gamma, GAMMA_MODES)
    if p.ndim != 1 or x.shape != p.shape:
        raise input_error(
            f"throughput: expected a 1-D array matching workers {p.shape}, got {x.shape}"
        )
    if len(np.unique(p)) < 3:
        raise input_error(
            f"workers: expected at least 3 distinct worker counts, got {np.unique(p).tolist()}"
        )
    if bool(np.any(x <= 0)):
        raise input_error(f"throughput: expected positive values, got min {float(x.min())}")

    if gamma == "fixed":
        ones = p == 1
        if not bool(ones.any()):
            raise input_error(
                "workers: expected a measurement at 1 worker for gamma='fixed' (relative "
                f"capacity C = X(p)/X(1)), got {sorted(set(p.tolist()))}; use gamma='free'"
            )
        g = float(x[ones].mean())
        c = x / g
        start = _linearised_start(p, c)
        lower, upper = np.array([0.0, 0.0]), np.array([1.0, np.inf])
        s, k = _least_squares(_capacity_residuals, _capacity_jacobian, start, lower, upper, (p, c))
    else:
        first = int(np.argmin(p))
        g0 = float(x[first] / p[first])
        start = np.append(_linearised_start(p, x / g0), g0)
        lower, upper = np.array([0.0, 0.0, 0.0]), np.array([1.0, np.inf, np.inf])
        s, k, g = _least_squares(
            _throughput_residuals, _throughput_jacobian, start, lower, upper, (p, x)
        )
    predicted = g * p / (1.0 + s * (p - 1.0) + k * p * (p - 1.0))
    residuals = x - predicted
    ss_tot = float(((x - x.mean()) ** 2).sum())
    r2 = 1.0 - float((residuals**2).sum()) / ss_tot if ss_tot > 0 else 1.0
    if 0.0 <= s < 1.0 and k >= 0.0:
        peak = usl_peak_workers(s, k)
        if math.isinf(peak):
            peak_x = g / s if s > 0 else math.inf
        else:
            peak_x = g * peak / (1.0 + s * (peak - 1.0) + k * peak * (peak - 1.0))
    else:
        peak, peak_x = math.nan, math.nan
    return USLFit(
        sigma=float(s),
        kappa=float(k),
        gamma=float(g),
        gamma_fixed=gamma == "fixed",
        peak_workers=peak,
        peak_throughput=float(peak_x),
        r_squared=r2,
        workers=p,
        throughput=x,
        predicted=predicted,
        residuals=residuals,
    )


def _linearised_start(p: FloatArray, c: FloatArray) -> FloatArray:
    """Gunther's linear regression ``p/C - 1 = sigma (p-1) + kappa p (p-1)``, clipped."""
    design = np.column_stack([p - 1.0, p * (p - 1.0)])
    coef = small_least_squares(design, p / c - 1.0)
    start: FloatArray = np.array([min(max(coef[0], 1e-4), 0.99), max(coef[1], 1e-8)])
    return start


def gustafson_speedup(workers: ArrayLike, serial_fraction: float) -> FloatArray:
    r"""Gustafson's scaled speedup, :math:`S(p) = p - \alpha(p - 1)`.

    Parameters
    ----------
    workers : array_like
        Number of workers p (>= 1).
    serial_fraction : float
        Serial share alpha of the SCALED workload's run time on p workers, in [0, 1].

    Returns
    -------
    ndarray of float64
        The speedup of running the p-times larger workload that fills the same wall time.

    Notes
    -----
    Amdahl's law holds the work fixed and saturates at ``1/alpha``; Gustafson's holds the
    time fixed and grows the work, as a sweep does (a bigger grid in the same night), so
    the speedup grows linearly in p. The two alphas are different fractions.

    References
    ----------
    .. [1] Gustafson, J. L. (1988). "Reevaluating Amdahl's law". Communications of the ACM
       31(5), 532-533.
    """
    p = _workers("workers", workers)
    a = as_float("serial_fraction", serial_fraction)
    if not 0.0 <= a <= 1.0:
        raise input_error(f"serial_fraction: expected a number in [0, 1], got {a!r}")
    out: FloatArray = p - a * (p - 1.0)
    return out


def task_efficiency(task_seconds: ArrayLike, overhead_seconds: ArrayLike) -> FloatArray:
    """Share of a task's wall time doing useful work, ``t / (t + overhead)``.

    Parameters
    ----------
    task_seconds : array_like
        Useful work per task, t (>= 0).
    overhead_seconds : array_like
        Fixed per-task overhead (scheduling, transport), >= 0.

    Returns
    -------
    ndarray of float64
        Efficiency ceiling in [0, 1]: with 0.05 ms of overhead, 10 ms tasks reach 99.5%
        and 0.05 ms tasks 50% (seed 003).

    Notes
    -----
    The amortization law's useful share ``bB/(O + bB)`` with ``t = bB``.

    References
    ----------
    .. [1] Seed 003 of this project, "Distributed Backtesting", section on task granularity.
    """
    t = as_float_array("task_seconds", task_seconds)
    o = as_float_array("overhead_seconds", overhead_seconds)
    if bool(np.any(t < 0)) or bool(np.any(o < 0)):
        raise input_error("task_seconds, overhead_seconds: expected non-negative durations")
    with np.errstate(divide="ignore", invalid="ignore"):
        out: FloatArray = np.where(t + o > 0, t / (t + o), 1.0)
    return out
