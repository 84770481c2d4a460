"""Block-bootstrap draws: circular or stationary blocks of a series of ``n_obs`` periods."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import NDArray

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
