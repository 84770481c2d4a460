"""Effective number of independent trials among correlated strategy return series."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import blas

from stats._validation import FloatArray, as_float_array, as_int, check_choice, input_error

EffectiveTrialsMethod = Literal["auto", "exact", "estimated"]
EFFECTIVE_TRIALS_METHODS: tuple[str, ...] = ("auto", "exact", "estimated")
Precision = Literal["float64", "float32"]
PRECISIONS: tuple[str, ...] = ("float64", "float32")

#: ``method="auto"`` computes exactly while ``n * n_obs * min(n, n_obs)`` (multiply-adds of
#: the Gram product) stays under this: 20,000 x 6,300 (7.9e11) is exact, 50,000 x 6,300 is not.
EXACT_BUDGET = 1.0e12


@dataclass(frozen=True)
class EffectiveTrials:
    """Effective number of independent trials, by several estimators.

    Attributes
    ----------
    method : str
        ``"exact"`` (every pair of series) or ``"estimated"`` (a random sample of series).
    n : int
        Number of series used (non-constant rows of the input).
    n_constant : int
        Number of constant rows left out (their correlation is undefined).
    n_obs : int
        Number of periods per series.
    sample_size : int
        Number of series the sums over pairs came from (``n`` when exact).
    participation_ratio : float
        ``(sum λ)**2 / sum λ**2 = n**2 / sum_ij ρ_ij**2``, in [1, n].
    participation_ratio_se : float
        Standard error of the estimate (0.0 when exact).
    participation_ratio_adjusted : float
        The participation ratio with the finite-sample noise floor of each squared
        correlation removed (see Notes), in [1, n].
    sum_sq_correlation : float
        ``sum_ij ρ_ij**2`` over all ordered pairs including the diagonal (= sum λ**2).
    mean_pairwise_correlation : float
        Mean of ``ρ_ij`` over pairs ``i != j`` (always exact; NaN when ``n == 1``).
    mean_sq_pairwise_correlation : float
        Mean of ``ρ_ij**2`` over pairs ``i != j`` (NaN when ``n == 1``).
    nyholt : float
        Nyholt's ``1 + (n - 1)(1 - Var(λ)/n)``, ``ddof=1`` variance, in [1, n].
    li_ji : float
        Li and Ji's ``sum_i I(|λ_i| >= 1) + (|λ_i| - floor(|λ_i|))``.
    galwey : float
        Galwey's ``(sum sqrt(λ_i))**2 / sum λ_i`` (negative λ set to 0).
    eigen_method : str
        Where the eigenvalues behind ``li_ji`` and ``galwey`` came from: ``"gram"`` (the
        ``n_obs x n_obs`` Gram matrix, exact), ``"correlation"`` (the ``n x n``
        correlation matrix, exact), ``"sampled"`` (a sample of series, extrapolated) or
        ``"none"`` (not computed: ``li_ji`` and ``galwey`` are NaN).
    eigen_sample_size : int
        Number of series behind the eigenvalues (``n`` unless sampled; 0 for none).
    precision : str
        Floating-point type of the matrix products, ``"float64"`` or ``"float32"``.
    """

    method: str
    n: int
    n_constant: int
    n_obs: int
    sample_size: int
    participation_ratio: float
    participation_ratio_se: float
    participation_ratio_adjusted: float
    sum_sq_correlation: float
    mean_pairwise_correlation: float
    mean_sq_pairwise_correlation: float
    nyholt: float
    li_ji: float
    galwey: float
    eigen_method: str
    eigen_sample_size: int
    precision: str


def _standardised(block: FloatArray, dtype: type[np.floating]) -> NDArray[np.floating]:
    """Rows centred and scaled to unit Euclidean norm, so ``Z @ Z.T`` is the correlation."""
    dev = block - (block.sum(axis=1) / block.shape[1])[:, np.newaxis]
    norm = np.sqrt((dev * dev).sum(axis=1))
    out: NDArray[np.floating] = (dev / norm[:, np.newaxis]).astype(dtype, copy=False)
    return out


def _row_blocks(n: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(start + size, n)) for start in range(0, n, size)]


def _eigenvalues(matrix: NDArray[np.floating], *, upper: bool = False) -> FloatArray:
    values: FloatArray = np.asarray(
        np.linalg.eigvalsh(matrix, UPLO="U" if upper else "L"), dtype=np.float64
    )
    return values


def _li_ji(eigenvalues: FloatArray) -> float:
    a = np.abs(eigenvalues)
    # An eigenvalue a rounding error below an integer k would count 1 + 0.999... instead
    # of 1 + 0 (identical series give one eigenvalue of exactly N): snap near-integers.
    nearest = np.round(a)
    a = np.where(np.abs(a - nearest) <= 1e-9 * np.maximum(a, 1.0), nearest, a)
    return float(((a >= 1.0).astype(np.float64) + (a - np.floor(a))).sum())


def _galwey(eigenvalues: FloatArray) -> float:
    # Rounding leaves the zero eigenvalues of a rank-deficient matrix at +-1e-15, whose
    # square roots (3e-8 each) would add up; treat anything below 1e-10 * max as zero.
    top = float(np.max(eigenvalues)) if eigenvalues.size else 0.0
    lam = np.where(eigenvalues > 1e-10 * top, eigenvalues, 0.0)
    total = float(lam.sum())
    return float(np.sqrt(lam).sum()) ** 2 / total if total > 0 else 1.0


def _clamp(value: float, n: int) -> float:
    return float(min(max(value, 1.0), float(n)))


def trials_from_mean_sq_correlation(
    n: int, mean_sq: float, n_obs: int
) -> tuple[float, float, float]:
    """Participation ratio, its noise-floor-adjusted form and Nyholt's estimate from ``mean ρ²``.

    The formulas of :func:`effective_number_of_trials` written in the mean squared pairwise
    correlation, so a value measured on a sample of series can be carried to all ``n``:
    ``n² / (n + n(n-1) q)``, the same with ``q`` replaced by ``(q - f) / (1 - f)`` where
    ``f = 1/(n_obs - 1)`` is the finite-sample floor of each ``ρ²``, and
    ``1 + (n - 1)(1 - q)``.

    Parameters
    ----------
    n : int
        Number of series, ``n >= 1``.
    mean_sq : float
        Mean squared correlation over distinct pairs.
    n_obs : int
        Observations per series, ``>= 2``.

    Returns
    -------
    tuple of float
        ``(participation_ratio, participation_ratio_adjusted, nyholt)``, each in ``[1, n]``.
    """
    floor = 1.0 / (n_obs - 1.0)
    mean_sq_adj = max(mean_sq - floor, 0.0) / (1.0 - floor)
    plain = n * n / (n + n * (n - 1.0) * mean_sq)
    adjusted = n * n / (n + n * (n - 1.0) * mean_sq_adj)
    nyholt = 1.0 + (n - 1.0) * (1.0 - mean_sq)
    return _clamp(plain, n), _clamp(adjusted, n), _clamp(nyholt, n)


def _sample_rows(n: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
    idx: NDArray[np.int64] = np.sort(rng.choice(n, size=size, replace=False)).astype(np.int64)
    return idx


def effective_number_of_trials(
    returns: ArrayLike,
    *,
    method: EffectiveTrialsMethod = "auto",
    sample_size: int = 2000,
    seed: int | np.random.Generator = 0,
    precision: Precision = "float64",
    max_eigen_dim: int = 8192,
    block_rows: int = 2048,
    eigenvalues: bool = True,
) -> EffectiveTrials:
    r"""Effective number of independent trials among N correlated return series.

    The headline is the participation ratio of the correlation matrix's eigenvalues,
    :math:`(\sum\lambda)^2/\sum\lambda^2 = N^2/\sum_{ij}\rho_{ij}^2`: N for uncorrelated
    series, 1 for identical ones. Nyholt's, Li and Ji's and Galwey's estimates and the
    mean pairwise correlation come with it.

    Parameters
    ----------
    returns : array_like, shape (n_series, n_periods)
        Per-period returns of each config, one series per row (NOT the paper-style
        periods x strategies layout of :func:`probability_of_backtest_overfitting`).
        Must be finite; constant rows are left out and counted in ``n_constant``.
    method : {"auto", "exact", "estimated"}
        ``"exact"`` uses every pair; ``"estimated"`` samples ``sample_size`` series;
        ``"auto"`` is exact while ``n * n_obs * min(n, n_obs) <= 1e12``.
    sample_size : int, default 2000
        Series sampled by the estimator (and for eigenvalues when ``min(n, n_obs)``
        exceeds ``max_eigen_dim``).
    seed : int or numpy.random.Generator, default 0
        Randomness for the samples; the result is deterministic for an int seed.
    precision : {"float64", "float32"}
        Type of the matrix products. On 20,000 x 6,300 on two cores the exact sums took
        11 s in float64 and 7 s in float32, whose relative error on ``sum ρ**2`` measured
        5e-11 (``benchmarks/bench_effective_n.py``; the tests hold it to 1e-5).
        Standardisation, sums and eigenvalues are always float64.
    max_eigen_dim : int, default 8192
        Largest matrix given to the symmetric eigensolver (6,300 took 11 to 35 s on two
        busy cores, growing as the cube); above it the eigenvalues come from a sample.
    block_rows : int, default 2048
        Rows standardised and multiplied at a time (memory ``block_rows * n_periods``).
    eigenvalues : bool, default True
        Compute the eigenvalues behind ``li_ji`` and ``galwey``; with False those are NaN,
        ``eigen_method`` is ``"none"`` and only the pairwise sums are computed (on
        20,000 x 6,300 this saves the 11-35 s eigendecomposition of the 6,300 x 6,300 Gram).

    Returns
    -------
    EffectiveTrials

    Raises
    ------
    StatsInputError
        If ``returns`` is not a finite 2-D array with at least 3 periods and one
        non-constant row, or an option is invalid.

    Notes
    -----
    **Exact, without an N x N matrix.** With rows standardised to zero mean and unit norm
    (``Z``, N x T), the correlation matrix is ``Z Z^T`` and
    :math:`\sum\rho_{ij}^2 = \|ZZ^T\|_F^2 = \|Z^TZ\|_F^2`. When ``T < N`` the T x T Gram
    ``Z^T Z`` is accumulated block by block with BLAS ``syrk`` (cost ``N T^2``); otherwise
    the N x N correlation is summed tile by tile (cost ``N^2 T``), never held whole unless
    ``N <= max_eigen_dim`` and its eigenvalues are wanted. The nonzero eigenvalues of
    ``Z Z^T`` and ``Z^T Z`` coincide, so the Gram's eigenvalues give Li-Ji and Galwey
    exactly (the other ``N - T`` eigenvalues are 0 and contribute nothing to either).

    **Estimated.** A random sample of ``m`` series gives the mean squared off-diagonal
    correlation ``q`` exactly over its ``m(m-1)`` pairs (a U-statistic, unbiased for the
    population mean over all pairs), and :math:`\sum\rho^2 \approx N + N(N-1)q`. Its
    standard error is the Hoeffding first-order one, ``2 sd(h_i)/sqrt(m)`` with ``h_i`` the
    mean squared correlation of sampled series ``i`` with the others, carried to the
    participation ratio by the delta method. Sampled Li-Ji and Galwey estimates are sums
    of per-eigenvalue terms and are scaled by ``N/m``, as the seed-003 recipe scales its
    sampled participation ratio; that extrapolation is right for block or one-factor
    structure with ``T >> N`` and biased when ``T < N`` (rank deficiency), so treat sampled
    Li-Ji and Galwey as indicative. They are capped by what the rank ``r = min(N, T - 1)``
    of the correlation matrix allows: Galwey <= r (Cauchy-Schwarz), Li-Ji <= 2r. Measured
    on 10,000 x 6,300 (``benchmarks/bench_effective_n.py``, 10 seeds per size): the
    participation-ratio estimate had an rms error of 1.5%, 1.1%, 1.1%, 0.7% (momentum
    grid, PR 2.5) and 2.6%, 2.8%, 2.0%, 1.2% (factor model, PR 194) at m = 500, 1000,
    2000, 4000, with reported standard errors of the same size; the sampled Li-Ji and
    Galwey overstated the exact values by 1.3x to 7x. The mean pairwise correlation is
    always exact:
    :math:`\sum_{ij}\rho_{ij} = \|\sum_i z_i\|^2`.

    **Finite-sample floor.** Even independent series show squared sample correlations
    averaging ``1/(T-1)`` (exact for Gaussian data), so with ``T < N`` the plain
    participation ratio of independent series is about ``N T/(N+T)``, not N. The adjusted
    ratio maps each mean squared correlation ``q`` to ``max(q - a, 0)/(1 - a)`` with
    ``a = 1/(T-1)`` (unbiased at ``ρ = 0`` and exact at ``|ρ| = 1``). Serial dependence in
    the returns raises the floor, which this does not correct.

    **Other estimators.** Nyholt [2]_ uses the ``ddof=1`` variance of the N eigenvalues,
    which equals ``(sum λ**2 - N)/(N - 1)`` and needs no eigendecomposition; with that
    convention it gives exactly N and 1 at the two extremes (``ddof=0`` would not). It
    equals ``N + 1 - N/PR``. Li and Ji [3]_ and Galwey [4]_ need eigenvalues.

    References
    ----------
    .. [1] Bailey, D. H. and López de Prado, M. (2014). "The Deflated Sharpe Ratio".
       Journal of Portfolio Management 40(5), 94-107 (effective number of trials).
    .. [2] Nyholt, D. R. (2004). "A simple correction for multiple testing for SNPs in
       linkage disequilibrium with each other". American Journal of Human Genetics 74(4),
       765-769.
    .. [3] Li, J. and Ji, L. (2005). "Adjusting multiple testing in multilocus analyses
       using the eigenvalues of a correlation matrix". Heredity 95, 221-227.
    .. [4] Galwey, N. W. (2009). "A new measure of the effective number of tests, a
       practical tool for comparing families of non-independent significance tests".
       Genetic Epidemiology 33(7), 559-568.
    .. [5] Gao, P. and Ganguli, S. (2015). "On simplicity and complexity in the brave new
       world of large-scale neuroscience" (participation ratio of a covariance spectrum).
       Current Opinion in Neurobiology 32, 148-155.
    """
    x = as_float_array("returns", returns, ndim=2)
    check_choice("method", method, EFFECTIVE_TRIALS_METHODS)
    check_choice("precision", precision, PRECISIONS)
    size = as_int("sample_size", sample_size, minimum=2)
    eig_dim = as_int("max_eigen_dim", max_eigen_dim, minimum=2)
    rows_per_block = as_int("block_rows", block_rows, minimum=1)
    if not isinstance(seed, np.random.Generator):
        seed = as_int("seed", seed, minimum=0)
    rng = np.random.default_rng(seed)
    dtype: type[np.floating] = np.float64 if precision == "float64" else np.float32

    n_rows, t = x.shape
    if t < 3:
        raise input_error(f"returns: expected at least 3 periods per series, got {t}")
    x, sum_corr = _varying_rows(x, rows_per_block)
    n = x.shape[0]
    if method == "auto":
        method = "exact" if float(n) * t * min(n, t) <= EXACT_BUDGET else "estimated"
    if method == "estimated" and size >= n:
        method = "exact"
    if method == "exact":
        sums = _exact_sums(x, dtype, rows_per_block, eig_dim if eigenvalues else 0)
    else:
        sums = _estimated_sums(x, dtype, _sample_rows(n, size, rng), eig_dim if eigenvalues else 0)
    if eigenvalues and sums.eigen is None:
        # Exact pairs but too many eigenvalues to compute: take them from a sample.
        idx = _sample_rows(n, min(size, eig_dim, n), rng)
        z = _standardised(x[idx], dtype)
        eigen = _eigenvalues(np.asarray(z @ z.T, dtype=np.float64))
        sums = replace(sums, eigen=eigen, eigen_method="sampled")
    return _result(method, sums, n, n_rows - n, t, sum_corr, precision)


class GramTrials:
    """:func:`effective_number_of_trials` fed the return series a block of rows at a time.

    For a sample of series too large to hold at once next to everything else (the report
    recomputes 10,000 series of a sweep's full length): the rows are standardised and
    multiplied into the ``n_periods``-square Gram as they come, in blocks of
    ``block_rows``, and dropped. The result is the exact method's by the Gram (the route
    :func:`effective_number_of_trials` takes for ``method="exact"`` when ``n_periods`` is
    below the number of non-constant series), bit for bit: the same blocks of the same
    rows in the same order.

    Parameters
    ----------
    n_periods : int
        Periods of every series (at least 3).
    precision : {"float64", "float32"}
        Type of the Gram products (as in :func:`effective_number_of_trials`).
    block_rows : int, default 2048
        Rows standardised and multiplied at a time.
    eigenvalues : bool, default True
        Compute the Gram's eigenvalues (Li-Ji, Galwey); needs ``n_periods <=
        max_eigen_dim`` (the sampled-eigenvalue route needs every row).
    max_eigen_dim : int, default 8192
        Largest matrix given to the symmetric eigensolver.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).standard_normal((40, 10))
    >>> acc = GramTrials(10, block_rows=16)
    >>> for lo in range(0, 40, 7):
    ...     acc.add(x[lo : lo + 7])
    >>> acc.result() == effective_number_of_trials(x, method="exact", block_rows=16)
    True
    """

    def __init__(
        self,
        n_periods: int,
        *,
        precision: Precision = "float64",
        block_rows: int = 2048,
        eigenvalues: bool = True,
        max_eigen_dim: int = 8192,
    ) -> None:
        t = as_int("n_periods", n_periods, minimum=3)
        check_choice("precision", precision, PRECISIONS)
        eig_dim = as_int("max_eigen_dim", max_eigen_dim, minimum=2)
        if eigenvalues and t > eig_dim:
            raise input_error(
                f"eigenvalues: a {t:,}-square Gram is above max_eigen_dim ({eig_dim:,}); pass "
                "eigenvalues=False (a sample of rows for them needs every row)"
            )
        self._t = t
        self._precision = precision
        self._dtype: type[np.floating] = np.float64 if precision == "float64" else np.float32
        self._block = as_int("block_rows", block_rows, minimum=1)
        self._eigenvalues = eigenvalues
        self._pending: list[FloatArray] = []
        self._pending_rows = 0
        self._total = np.zeros(t)
        self._gram = np.zeros((t, t), dtype=self._dtype, order="F")
        self._syrk = blas.get_blas_funcs("syrk", dtype=self._dtype)
        self._n = 0
        self._n_constant = 0

    @staticmethod
    def same_as_auto(n_series: int, n_periods: int) -> bool:
        """Whether ``method="auto"`` on that many non-constant series takes the Gram route.

        Then :meth:`result` is :func:`effective_number_of_trials`'s result, bit for bit.
        """
        exact = float(n_series) * n_periods * min(n_series, n_periods) <= EXACT_BUDGET
        return exact and 3 <= n_periods < n_series

    def add(self, returns: ArrayLike) -> None:
        """Take more series, one per row (finite; constant rows are counted and left out)."""
        x = as_float_array("returns", returns, ndim=2)
        if x.shape[1] != self._t:
            raise input_error(f"returns: expected {self._t} periods per series, got {x.shape[1]}")
        keep = x.max(axis=1) > x.min(axis=1) if x.shape[0] else np.zeros(0, dtype=bool)
        self._n_constant += int((~keep).sum())
        kept = x if bool(keep.all()) else x[keep]
        self._pending.append(kept)
        self._pending_rows += kept.shape[0]
        while self._pending_rows >= self._block:
            self._take(self._block)

    def _take(self, rows: int) -> None:
        """Standardise and multiply in the first ``rows`` pending rows."""
        stacked = np.concatenate(self._pending) if len(self._pending) > 1 else self._pending[0]
        block, rest = stacked[:rows], stacked[rows:]
        self._pending = [rest] if rest.shape[0] else []
        self._pending_rows = rest.shape[0]
        self._total += _standardised(block, np.float64).sum(axis=0)
        z = _standardised(block, self._dtype)
        self._gram = self._syrk(1.0, z.T, beta=1.0, c=self._gram, trans=0, lower=0, overwrite_c=1)
        self._n += rows

    def result(self) -> EffectiveTrials:
        """The estimators over every non-constant series added."""
        if self._pending_rows:
            self._take(self._pending_rows)
        n = self._n
        if n == 0:
            raise input_error(
                "returns: expected at least one non-constant series, got "
                f"{self._n_constant} constant rows"
            )
        sum_sq = _frobenius_sq_upper(self._gram)
        eigen = (
            _eigenvalues(self._gram.astype(np.float64), upper=True) if self._eigenvalues else None
        )
        mean_sq = (sum_sq - n) / (n * (n - 1.0)) if n > 1 else math.nan
        sums = _PairSums(n, sum_sq, mean_sq, 0.0, eigen, "gram" if eigen is not None else "sampled")
        sum_corr = float(self._total @ self._total)
        return _result("exact", sums, n, self._n_constant, self._t, sum_corr, self._precision)


@dataclass(frozen=True)
class _PairSums:
    """What the exact or estimated pass found: the sums over pairs and the eigenvalues."""

    used: int  # series the sums came from
    sum_sq: float  # sum_ij rho_ij**2 (estimated: extrapolated from the sample)
    mean_sq: float  # mean rho_ij**2 over pairs i != j (NaN for one series)
    se: float  # standard error of the participation ratio (0.0 when exact)
    eigen: FloatArray | None  # eigenvalues behind Li-Ji and Galwey (None: not computed)
    eigen_method: str  # "gram", "correlation" or "sampled"


def _varying_rows(x: FloatArray, rows_per_block: int) -> tuple[FloatArray, float]:
    """Pass 1 (float64, O(N T)): the non-constant rows, and ``sum_ij rho_ij`` over them."""
    n_rows, t = x.shape
    keep = np.empty(n_rows, dtype=bool)
    for lo, hi in _row_blocks(n_rows, rows_per_block):
        blk = x[lo:hi]
        keep[lo:hi] = blk.max(axis=1) > blk.min(axis=1)
    n = int(keep.sum())
    if n == 0:
        raise input_error(
            f"returns: expected at least one non-constant series, got {n_rows} constant rows"
        )
    if not bool(keep.all()):
        x = x[keep]
    total = np.zeros(t)
    for lo, hi in _row_blocks(n, rows_per_block):
        total += _standardised(x[lo:hi], np.float64).sum(axis=0)
    return x, float(total @ total)


def _exact_sums(
    x: FloatArray, dtype: type[np.floating], rows_per_block: int, eig_dim: int
) -> _PairSums:
    """Every pair: the T x T Gram when ``T < N``, else the N x N correlation (see Notes).

    Eigenvalues are computed when the matrix is at most ``eig_dim`` wide (0: never).
    """
    n, t = x.shape
    eigen: FloatArray | None = None
    eigen_method = "sampled"
    if t < n:
        gram = _gram(x, dtype, rows_per_block)
        sum_sq = _frobenius_sq_upper(gram)
        if t <= eig_dim:
            eigen = _eigenvalues(gram.astype(np.float64), upper=True)
            eigen_method = "gram"
    elif n <= eig_dim:
        z = _standardised(x, dtype)
        corr = np.asarray(z @ z.T, dtype=np.float64)
        sum_sq = float((corr * corr).sum())
        eigen = _eigenvalues(corr)
        eigen_method = "correlation"
    else:
        sum_sq = _tiled_sum_sq(x, dtype, rows_per_block)
    mean_sq = (sum_sq - n) / (n * (n - 1.0)) if n > 1 else math.nan
    return _PairSums(n, sum_sq, mean_sq, 0.0, eigen, eigen_method)


def _estimated_sums(
    x: FloatArray, dtype: type[np.floating], idx: NDArray[np.int64], eig_dim: int
) -> _PairSums:
    """The sampled rows ``idx``: a U-statistic of ``rho**2`` and its Hoeffding s.e. (Notes)."""
    n = x.shape[0]
    size = idx.shape[0]
    z = _standardised(x[idx], dtype)
    corr = np.asarray(z @ z.T, dtype=np.float64)
    sq = corr * corr
    off_row = (sq.sum(axis=1) - np.diag(sq)) / (size - 1.0)
    mean_sq = float(off_row.mean())
    se_mean_sq = 2.0 * float(off_row.std(ddof=1)) / math.sqrt(size)
    sum_sq = n + n * (n - 1.0) * mean_sq
    se = n * n * n * (n - 1.0) * se_mean_sq / (sum_sq * sum_sq)
    eigen = _eigenvalues(corr) if size <= eig_dim else None
    return _PairSums(size, sum_sq, mean_sq, se, eigen, "sampled")


def _result(
    method: str,
    sums: _PairSums,
    n: int,
    n_constant: int,
    t: int,
    sum_corr: float,
    precision: str,
) -> EffectiveTrials:
    """Every estimator from the sums over pairs and the eigenvalues."""
    eigen = sums.eigen
    if eigen is None:
        eigen_method, eigen_size = "none", 0
    else:
        eigen_method = sums.eigen_method
        eigen_size = n if eigen_method != "sampled" else len(eigen)
    scale = n / eigen_size if eigen_size else math.nan
    # rank(R) <= min(n, t - 1) bounds Galwey by the rank and Li-Ji by twice the rank; the
    # bounds bind only on extrapolated (sampled) values.
    rank = min(n, t - 1)
    sum_sq, mean_sq = sums.sum_sq, sums.mean_sq
    if n > 1:
        adjusted = trials_from_mean_sq_correlation(n, mean_sq, t)[1]
        nyholt = 1.0 + (n - 1.0) * (1.0 - ((sum_sq - n) / (n - 1.0)) / n)
        mean_corr = (sum_corr - n) / (n * (n - 1.0))
    else:
        sum_sq, adjusted, nyholt, mean_corr = 1.0, 1.0, 1.0, math.nan
    return EffectiveTrials(
        method=method,
        n=n,
        n_constant=n_constant,
        n_obs=t,
        sample_size=sums.used,
        participation_ratio=_clamp(n * n / sum_sq, n),
        participation_ratio_se=sums.se,
        participation_ratio_adjusted=adjusted,
        sum_sq_correlation=float(sum_sq),
        mean_pairwise_correlation=float(mean_corr),
        mean_sq_pairwise_correlation=float(mean_sq),
        nyholt=_clamp(nyholt, n),
        li_ji=math.nan if eigen is None else _clamp(min(_li_ji(eigen) * scale, 2.0 * rank), n),
        galwey=math.nan if eigen is None else _clamp(min(_galwey(eigen) * scale, rank), n),
        eigen_method=eigen_method,
        eigen_sample_size=eigen_size,
        precision=precision,
    )


def _gram(x: FloatArray, dtype: type[np.floating], rows_per_block: int) -> NDArray[np.floating]:
    """Upper triangle of ``Z^T Z`` (T x T, Fortran order), accumulated block by block."""
    t = x.shape[1]
    gram = np.zeros((t, t), dtype=dtype, order="F")
    syrk = blas.get_blas_funcs("syrk", dtype=dtype)
    for lo, hi in _row_blocks(x.shape[0], rows_per_block):
        z = _standardised(x[lo:hi], dtype)
        # z.T is Fortran-contiguous (T x rows): syrk computes z.T @ z with no copy.
        gram = syrk(1.0, z.T, beta=1.0, c=gram, trans=0, lower=0, overwrite_c=1)
    return gram


def _frobenius_sq_upper(upper: NDArray[np.floating]) -> float:
    """``||G||_F**2`` of a symmetric matrix from its upper triangle, summed in float64."""
    total = 0.0
    diag = 0.0
    t = upper.shape[0]
    for lo, hi in _row_blocks(t, 512):
        strip = np.triu(np.asarray(upper[lo:hi], dtype=np.float64), k=lo)
        total += float((strip * strip).sum())
        d = np.diagonal(upper[lo:hi, lo:hi]).astype(np.float64)
        diag += float(d @ d)
    return 2.0 * total - diag


def _tiled_sum_sq(x: FloatArray, dtype: type[np.floating], rows_per_block: int) -> float:
    """``sum_ij ρ_ij**2`` from tiles of the correlation matrix (upper tiles doubled)."""
    blocks = _row_blocks(x.shape[0], rows_per_block)
    standard = [_standardised(x[lo:hi], dtype) for lo, hi in blocks]
    total = 0.0
    for i, zi in enumerate(standard):
        for j in range(i, len(standard)):
            tile = np.asarray(zi @ standard[j].T, dtype=np.float64)
            total += (1.0 if i == j else 2.0) * float((tile * tile).sum())
    return total
