"""Block bootstrap of many series at once, with resample Sharpes from prefix sums."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from stats._validation import input_error

BlockMethod = Literal["circular", "stationary"]
BLOCK_METHODS: tuple[str, ...] = ("circular", "stationary")


def _index_dtype(n_obs: int) -> type[np.unsignedinteger] | type[np.int64]:
    """Smallest integer type that holds ``0..n_obs-1`` (narrow draws are faster)."""
    if n_obs <= np.iinfo(np.uint16).max:
        return np.uint16
    if n_obs <= np.iinfo(np.uint32).max:
        return np.uint32
    return np.int64


def block_starts_and_lengths(
    rng: np.random.Generator,
    n_obs: int,
    block_length: int,
    reps: int,
    method: BlockMethod = "circular",
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Draw the blocks of ``reps`` bootstrap resamples of a series of ``n_obs`` periods.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness (raysweep passes a per-config generator).
    n_obs : int
        Length of the series and of every resample.
    block_length : int
        Block length (circular) or mean block length (stationary).
    reps : int
        Number of resamples.
    method : {"circular", "stationary"}
        Circular blocks of fixed length [1]_ or stationary blocks of geometric length [2]_.

    Returns
    -------
    starts, lengths : ndarray of int64, shape (reps, n_blocks)
        Block start indices in ``[0, n_obs)`` and block lengths; blocks wrap around the end
        of the series and each row's lengths sum to exactly ``n_obs`` (the last block is
        truncated; unused trailing blocks have length 0).

    Notes
    -----
    Starts are drawn with ``rng.integers`` in the narrowest unsigned type that holds
    ``n_obs`` (uint16 up to 65,535 periods), which is faster and depends only on ``n_obs``.
    Circular blocks draw starts only; stationary blocks draw lengths, then starts.

    References
    ----------
    .. [1] Politis, D. N. and Romano, J. P. (1992). "A circular block-resampling procedure for
       stationary data". In Exploring the Limits of Bootstrap, 263-270. Wiley.
    .. [2] Politis, D. N. and Romano, J. P. (1994). "The stationary bootstrap". Journal of the
       American Statistical Association 89(428), 1303-1313.
    """
    if n_obs < 2:
        raise input_error(f"n_obs: expected at least 2 periods, got {n_obs}")
    if not 1 <= block_length <= n_obs:
        raise input_error(f"block_length: expected 1..{n_obs}, got {block_length}")
    if reps < 1:
        raise input_error(f"reps: expected at least 1, got {reps}")
    dtype = _index_dtype(n_obs)
    if method == "circular":
        n_blocks = -(-n_obs // block_length)
        starts = rng.integers(0, n_obs, size=(reps, n_blocks), dtype=dtype).astype(np.int64)
        lengths = np.full((reps, n_blocks), block_length, dtype=np.int64)
        lengths[:, -1] = n_obs - block_length * (n_blocks - 1)
        return starts, lengths
    if method == "stationary":
        n_blocks = 2 * (-(-n_obs // block_length)) + 16
        while True:
            lengths = rng.geometric(1.0 / block_length, size=(reps, n_blocks)).astype(np.int64)
            if bool((lengths.sum(axis=1) >= n_obs).all()):
                break
            n_blocks *= 2
        starts = rng.integers(0, n_obs, size=(reps, n_blocks), dtype=dtype).astype(np.int64)
        ends = np.minimum(np.cumsum(lengths, axis=1), n_obs)
        lengths = np.diff(ends, axis=1, prepend=0)
        return starts, lengths
    raise input_error(f"method: expected one of {BLOCK_METHODS}, got {method!r}")


@numba.njit(cache=True, nogil=True)
def _resample_sharpes(row, demean, starts, lengths, prefix, prefix_sq, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Sharpe of each resample from prefix sums of the (demeaned) row, wrapping once."""
    n = row.shape[0]
    mu = 0.0
    if demean:
        for k in range(n):
            mu += row[k]
        mu /= n
    prefix[0] = 0.0
    prefix_sq[0] = 0.0
    for k in range(n):
        v = row[k] - mu
        prefix[k + 1] = prefix[k] + v
        prefix_sq[k + 1] = prefix_sq[k] + v * v
    total_all = prefix[n]
    total_all_sq = prefix_sq[n]
    reps, n_blocks = starts.shape
    for r in range(reps):
        total = 0.0
        total_sq = 0.0
        for b in range(n_blocks):
            s = starts[r, b]
            e = s + lengths[r, b]
            if e > n:
                total += total_all + prefix[e - n] - prefix[s]
                total_sq += total_all_sq + prefix_sq[e - n] - prefix_sq[s]
            else:
                total += prefix[e] - prefix[s]
                total_sq += prefix_sq[e] - prefix_sq[s]
        mean = total / n
        var = (total_sq - total * mean) / (n - 1)
        out[r] = mean / np.sqrt(var) if var > 0 else np.nan


def bootstrap_sharpe(
    returns: ArrayLike,
    rngs: Sequence[np.random.Generator],
    reps: int,
    block_length: int,
    method: BlockMethod = "circular",
    *,
    demean: bool = True,
) -> NDArray[np.float64]:
    """Per-period Sharpe ratios of block-bootstrap resamples of many series at once.

    No resample is materialised: the sum and the sum of squares of each block come from
    prefix sums of the series (wrapping once around its end), so a resample costs one gather
    per block.

    Parameters
    ----------
    returns : array_like, shape (n_series, n_obs)
        Per-period returns, one series per row.
    rngs : sequence of numpy.random.Generator, length n_series
        One generator per series; row ``i`` draws its blocks from ``rngs[i]`` only, so a
        row's resamples do not depend on the other rows of the batch.
    reps : int
        Resamples per series.
    block_length : int
        Block length (circular) or mean block length (stationary).
    method : {"circular", "stationary"}
        Block scheme, see :func:`block_starts_and_lengths`.
    demean : bool, default True
        Centre each series on zero before resampling (the null of no edge).

    Returns
    -------
    ndarray of float64, shape (n_series, reps)
        Per-period Sharpe (``ddof=1``) of each resample; NaN for a constant resample.

    Notes
    -----
    The prefix sums and the per-block gathers run in one compiled loop per series; the
    block starts are drawn with numpy's ``Generator`` (so the stream is numpy's, documented
    and stable). With ``demean=True`` this draws from the null distribution of the Sharpe
    ratio under serial dependence, which :func:`bootstrap_pvalue` compares the observed
    Sharpe against.
    Each resample's Sharpe equals that of the explicitly gathered resample (same blocks)
    to rounding; the variance comes from pooled ``Σx`` and ``Σx²`` of the demeaned series.

    References
    ----------
    .. [1] Politis, D. N. and Romano, J. P. (1994). "The stationary bootstrap". Journal of the
       American Statistical Association 89(428), 1303-1313.
    .. [2] Ledoit, O. and Wolf, M. (2008). "Robust performance hypothesis testing with the
       Sharpe ratio". Journal of Empirical Finance 15(5), 850-859.
    """
    x = np.ascontiguousarray(np.asarray(returns, dtype=np.float64))
    if x.ndim != 2:
        raise input_error(f"returns: expected a 2-D array, got {x.ndim} dimensions")
    n_series, n_obs = x.shape
    if len(rngs) != n_series:
        raise input_error(f"rngs: expected {n_series} generators, got {len(rngs)}")
    out = np.empty((n_series, reps))
    prefix = np.empty(n_obs + 1)
    prefix_sq = np.empty(n_obs + 1)
    for i, rng in enumerate(rngs):
        starts, lengths = block_starts_and_lengths(rng, n_obs, block_length, reps, method)
        _resample_sharpes(x[i], demean, starts, lengths, prefix, prefix_sq, out[i])
    return out


def bootstrap_pvalue(
    observed_sharpe: ArrayLike, bootstrap_sharpes: ArrayLike
) -> NDArray[np.float64]:
    """Share of null bootstrap Sharpes at or above the observed Sharpe, per series.

    Parameters
    ----------
    observed_sharpe : array_like, shape (n_series,)
        Observed per-period Sharpe ratios.
    bootstrap_sharpes : array_like, shape (n_series, reps)
        Null (demeaned) bootstrap Sharpes from :func:`bootstrap_sharpe`.

    Returns
    -------
    ndarray of float64, shape (n_series,)
        One-sided p-values in [0, 1]; NaN where the observed Sharpe is NaN.

    Notes
    -----
    The p-value is ``#{boot >= observed} / reps`` (no +1 correction), so with 50 replicates
    its resolution is 0.02. Resampling the raw (un-centred) returns instead would centre
    the bootstrap distribution on the observed Sharpe and give p near 0.5 whatever the edge.
    A NaN bootstrap Sharpe (a constant resample) counts as below the observed one.

    References
    ----------
    .. [1] Hall, P. and Wilson, S. R. (1991). "Two guidelines for bootstrap hypothesis
       testing". Biometrics 47(2), 757-762 (resample under the null).
    .. [2] Politis, D. N. and Romano, J. P. (1994). "The stationary bootstrap". Journal of the
       American Statistical Association 89(428), 1303-1313.
    """
    obs = np.asarray(observed_sharpe, dtype=np.float64)
    boot = np.asarray(bootstrap_sharpes, dtype=np.float64)
    if obs.ndim != 1:
        raise input_error(f"observed_sharpe: expected a 1-D array, got {obs.ndim} dimensions")
    if boot.ndim != 2 or boot.shape[0] != obs.shape[0] or boot.shape[1] == 0:
        raise input_error(
            f"bootstrap_sharpes: expected shape ({obs.shape[0]}, reps) with reps >= 1, "
            f"got {boot.shape}"
        )
    share = (boot >= obs[:, np.newaxis]).sum(axis=1) / boot.shape[1]
    return np.where(np.isnan(obs), np.nan, share)
