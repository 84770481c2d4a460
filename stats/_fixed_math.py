"""Transcendentals with the same bits on every CPU: ``exp``, ``log``, ``Phi`` and ``Phi^-1``.

numpy picks its ``exp``/``log`` kernel at run time by the CPU's SIMD level (its AVX-512
kernels differ from the others in the last bits, numpy issues #23523 and #22904), and
glibc's ``libm`` (behind CPython's :mod:`math`, scipy's special functions and numba's
``math.exp``) picks an FMA or a non-FMA variant of ``exp``, ``log`` and ``pow`` by ifunc
(``GLIBC_TUNABLES=glibc.cpu.hwcaps=-FMA,-AVX2`` shows the difference). Anything that feeds a
results column, a summary or a report number therefore goes through the functions here: a
fixed algorithm in IEEE-754 binary64 additions, multiplications and divisions (each
correctly rounded, hence the same everywhere), with ``frexp``/``ldexp`` for the exact
exponent arithmetic, compiled by numba without fast-math, so LLVM neither contracts a
multiply-add into an FMA nor reorders anything (``tests/stats/test_fixed_math.py`` reads
the machine code for FMA instructions).

References
----------
.. [1] Sun Microsystems, fdlibm 5.3, ``e_exp.c`` and ``e_log.c`` (1993; freely
   distributable): the argument reductions and minimax polynomials used here, error below
   1 ulp.
.. [2] G. Marsaglia, "Evaluating the normal distribution", J. Stat. Softw. 11(4) (2004):
   the series ``Phi(x) = 1/2 + phi(x) (x + x^3/3 + x^5/(3 5) + ...)`` of :func:`norm_cdf`.
.. [3] P. S. Laplace's continued fraction for the Mills ratio, ``Phi(-x) = phi(x) /
   (x + 1/(x + 2/(x + 3/(x + ...))))`` for the tails (e.g. Abramowitz and Stegun 26.2.14).
.. [4] M. Abramowitz and I. A. Stegun, Handbook of Mathematical Functions (1964), 26.2.23:
   the start of :func:`norm_ppf`, refined by Halley steps on :func:`norm_cdf`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

_LN2_HI = 6.93147180369123816490e-01  # 0x3fe62e42 fee00000: k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10  # 0x3dea39ef 35793c76
_INV_LN2 = 1.44269504088896338700e00
_SQRT_HALF = 0.70710678118654752440
_LG = (
    6.666666666666735130e-01,
    3.999999999940941908e-01,
    2.857142874366239149e-01,
    2.222219843214978396e-01,
    1.818357216161805012e-01,
    1.531383769920937332e-01,
    1.479819860511658591e-01,
)
_P = (
    1.66666666666666019037e-01,
    -2.77777777770155933842e-03,
    6.61375632143793436117e-05,
    -1.65339022054652515390e-06,
    4.13813679705723846039e-08,
)
_EXP_OVERFLOW = 7.09782712893383973096e02
_EXP_UNDERFLOW = -7.45133219101941108420e02


@njit(cache=True, nogil=True)
def _log(x: float) -> float:  # pragma: no cover - compiled; checked against long double
    if not x > 0.0:  # also NaN
        if x == 0.0:
            return -np.inf
        return np.nan
    if x == np.inf:
        return np.inf
    m, k = math.frexp(x)  # x = m 2^k, m in [0.5, 1): exact
    if m < _SQRT_HALF:
        m = m * 2.0
        k -= 1
    f = m - 1.0  # exact (Sterbenz); 1 + f in [sqrt(2)/2, sqrt(2))
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (_LG[1] + w * (_LG[3] + w * _LG[5]))
    t2 = z * (_LG[0] + w * (_LG[2] + w * (_LG[4] + w * _LG[6])))
    r = t2 + t1
    hfsq = 0.5 * f * f
    dk = float(k)
    return dk * _LN2_HI - ((hfsq - (s * (hfsq + r) + dk * _LN2_LO)) - f)


@njit(cache=True, nogil=True)
def _exp(x: float) -> float:  # pragma: no cover - compiled; checked against long double
    if x != x:
        return x
    if x > _EXP_OVERFLOW:
        return np.inf
    if x < _EXP_UNDERFLOW:
        return 0.0
    if abs(x) < 3.725290298461914e-09:  # 2^-28: 1 + x is exact to the last bit
        return 1.0 + x
    half = 0.5 if x >= 0.0 else -0.5
    k = int(_INV_LN2 * x + half)  # truncation toward zero: round to nearest
    dk = float(k)
    hi = x - dk * _LN2_HI
    lo = dk * _LN2_LO
    r = hi - lo
    t = r * r
    c = r - t * (_P[0] + t * (_P[1] + t * (_P[2] + t * (_P[3] + t * _P[4]))))
    if k == 0:
        return 1.0 - ((r * c) / (c - 2.0) - r)
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    return math.ldexp(y, k)


@njit(cache=True, nogil=True)
def _log_array(x: NDArray[np.float64], out: NDArray[np.float64]) -> None:  # pragma: no cover
    for i in range(x.shape[0]):
        out[i] = _log(x[i])


@njit(cache=True, nogil=True)
def _exp_array(x: NDArray[np.float64], out: NDArray[np.float64]) -> None:  # pragma: no cover
    for i in range(x.shape[0]):
        out[i] = _exp(x[i])


def _apply(kernel, x: ArrayLike) -> NDArray[np.float64]:  # type: ignore[no-untyped-def]
    arr = np.asarray(x, dtype=np.float64)
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")
    out = np.empty(arr.shape)  # a 0-d input gives a 0-d output
    kernel(arr.reshape(-1), out.reshape(-1))
    return out


def fixed_log(x: ArrayLike) -> NDArray[np.float64]:
    """Natural logarithm, elementwise, with the same bits on every CPU.

    Parameters
    ----------
    x : array_like
        Values (converted to float64).

    Returns
    -------
    ndarray
        ``log(x)``, same shape; ``-inf`` at 0, NaN below 0 or at NaN.

    Notes
    -----
    fdlibm's ``e_log.c`` algorithm [1]_ (error below 1 ulp) in plain binary64 arithmetic; use
    it instead of ``np.log`` wherever the value feeds a result (see the module docstring).
    """
    return _apply(_log_array, x)


def fixed_exp(x: ArrayLike) -> NDArray[np.float64]:
    """Exponential, elementwise, with the same bits on every CPU.

    Parameters
    ----------
    x : array_like
        Values (converted to float64).

    Returns
    -------
    ndarray
        ``exp(x)``, same shape; ``inf`` above about 709.78, 0 below about -745.13.

    Notes
    -----
    fdlibm's ``e_exp.c`` algorithm [1]_ (error below 1 ulp); see :func:`fixed_log`.
    """
    return _apply(_exp_array, x)


def log_scalar(x: float) -> float:
    """:func:`fixed_log` of one float (for scalar statistics)."""
    return float(_log(float(x)))


def exp_scalar(x: float) -> float:
    """:func:`fixed_exp` of one float (for scalar statistics)."""
    return float(_exp(float(x)))


_SQRT_2PI = 2.5066282746310002  # sqrt(2 pi), correctly rounded
_TAIL = 1.5  # beyond |x| = 1.5 the continued fraction (converged to 2e-16), inside the series
_CF_TERMS = 300
_SERIES_TERMS = 200


@njit(cache=True, nogil=True)
def _pdf(x: float) -> float:  # pragma: no cover - compiled
    return _exp(-0.5 * x * x) / _SQRT_2PI


@njit(cache=True, nogil=True)
def _mills_tail(a: float) -> float:  # pragma: no cover - compiled
    """``Phi(-a) / phi(a)`` for ``a >= 3`` by Laplace's continued fraction, bottom up."""
    frac = 0.0
    for k in range(_CF_TERMS, 0, -1):
        frac = k / (a + frac)
    return 1.0 / (a + frac)


@njit(cache=True, nogil=True)
def _norm_cdf(x: float) -> float:  # pragma: no cover - compiled
    if x != x:
        return x
    if x <= -_TAIL:
        return 0.0 if x < -40.0 else _pdf(x) * _mills_tail(-x)
    if x >= _TAIL:
        return 1.0 if x > 40.0 else 1.0 - _pdf(x) * _mills_tail(x)
    term = x
    total = x
    x2 = x * x
    for k in range(1, _SERIES_TERMS):
        term = term * x2 / (2 * k + 1)
        new = total + term
        if new == total:
            break
        total = new
    return 0.5 + _pdf(x) * total


@njit(cache=True, nogil=True)
def _log1p(u: float) -> float:  # pragma: no cover - compiled
    """``log(1 + u)`` accurate for small ``u`` (D. Goldberg, ACM Comput. Surv. 23 (1991))."""
    w = 1.0 + u
    if w == 1.0:
        return u
    return _log(w) * u / (w - 1.0)


@njit(cache=True, nogil=True)
def _log_norm_cdf(x: float) -> float:  # pragma: no cover - compiled
    if x <= -_TAIL:  # relative accuracy in the far lower tail, where Phi underflows
        return -0.5 * x * x - _log(_SQRT_2PI) + _log(_mills_tail(-x))
    if x > 0.0:  # Phi near 1: log1p of the upper tail, not log of a rounded 1 - tail
        return _log1p(-_norm_cdf(-x))
    return _log(_norm_cdf(x))


@njit(cache=True, nogil=True)
def _norm_ppf(p: float) -> float:  # pragma: no cover - compiled
    if not (p > 0.0 and p < 1.0):
        if p == 0.0:
            return -np.inf
        if p == 1.0:
            return np.inf
        return np.nan
    q = p if p < 0.5 else 1.0 - p
    t = math.sqrt(-2.0 * _log(q))
    x = t - (2.515517 + t * (0.802853 + t * 0.010328)) / (
        1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))
    )
    x = -x  # the lower-tail quantile of q
    for _ in range(8):  # Halley on log Phi(x) = log q (relative accuracy in the tail)
        cdf = _norm_cdf(x)
        if x <= -_TAIL:
            ratio = _mills_tail(-x)  # Phi(x) / phi(x)
            err = _log_norm_cdf(x) - _log(q)
            step = err * ratio  # Newton on log Phi: d/dx log Phi = phi / Phi
        else:
            step = (cdf - q) / _pdf(x)
        new = x - step / (1.0 + 0.5 * x * step)
        if new == x:
            break
        x = new
    return x if p < 0.5 else -x


def norm_cdf(x: float) -> float:
    """Standard normal distribution function with the same bits on every CPU.

    Parameters
    ----------
    x : float
        Argument.

    Returns
    -------
    float
        ``Phi(x)``.

    Notes
    -----
    Marsaglia's series for ``|x| < 3`` [2]_ and Laplace's continued fraction beyond [3]_, in
    plain binary64 arithmetic over :func:`fixed_exp`; agrees with ``scipy.special.ndtr`` to
    a few ulp (``tests/stats/test_fixed_math.py``) but, unlike it, never depends on which
    ``libm`` variant the CPU selects.
    """
    return float(_norm_cdf(float(x)))


def log_norm_cdf(x: float) -> float:
    """``log Phi(x)``, accurate in the far lower tail (where ``Phi`` underflows)."""
    return float(_log_norm_cdf(float(x)))


def norm_ppf(p: float) -> float:
    """Standard normal quantile with the same bits on every CPU.

    Parameters
    ----------
    p : float
        Probability.

    Returns
    -------
    float
        ``Phi^{-1}(p)``; ``-inf`` at 0, ``inf`` at 1, NaN outside ``[0, 1]``.

    Notes
    -----
    Abramowitz and Stegun 26.2.23 as the start [4]_, then Halley steps on :func:`norm_cdf`
    (on ``log Phi`` in the lower tail, for relative accuracy) until the step vanishes.
    """
    return float(_norm_ppf(float(p)))


@njit(cache=True, nogil=True)
def _norm_cdf_array(x: NDArray[np.float64], out: NDArray[np.float64]) -> None:  # pragma: no cover
    for i in range(x.shape[0]):
        out[i] = _norm_cdf(x[i])


def norm_cdf_array(x: ArrayLike) -> NDArray[np.float64]:
    """:func:`norm_cdf` elementwise."""
    return _apply(_norm_cdf_array, x)


def small_least_squares(
    design: NDArray[np.float64], observed: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Ordinary least squares for a few columns, without LAPACK or BLAS.

    ``np.linalg.lstsq`` runs LAPACK on OpenBLAS kernels chosen by CPU, so a fit's last bits
    would depend on the machine. The normal equations are formed with elementwise products
    summed by numpy's pairwise sum and solved by Gaussian elimination with partial pivoting
    in a fixed order: for the 2- and 3-column fits of timings (the amortization law, the
    USL's start) the squared condition number is harmless.

    Parameters
    ----------
    design : ndarray, shape (n, k)
        Regressors, full column rank, k small.
    observed : ndarray, shape (n,)
        Responses.

    Returns
    -------
    ndarray, shape (k,)
        The coefficients.
    """
    x = np.asarray(design, dtype=np.float64)
    y = np.asarray(observed, dtype=np.float64)
    k = x.shape[1]
    a = [[float(np.sum(x[:, i] * x[:, j])) for j in range(k)] for i in range(k)]
    r = [float(np.sum(x[:, i] * y)) for i in range(k)]
    for col in range(k):
        pivot = max(range(col, k), key=lambda row: abs(a[row][col]))
        a[col], a[pivot] = a[pivot], a[col]
        r[col], r[pivot] = r[pivot], r[col]
        for row in range(col + 1, k):
            factor = a[row][col] / a[col][col]
            for j in range(col, k):
                a[row][j] -= factor * a[col][j]
            r[row] -= factor * r[col]
    coef = [0.0] * k
    for row in range(k - 1, -1, -1):
        total = r[row]
        for j in range(row + 1, k):
            total -= a[row][j] * coef[j]
        coef[row] = total / a[row][row]
    return np.array(coef)
