"""The bootstrap kernels' bits: lanes, ranks and sorts give what one row at a time gives.

``_circular_variance`` and ``_centred_means`` run 8 rows side by side; their plain-Python
twins here are the one-row-at-a-time sequences (the code before issue 43), compared bit for
bit for batch sizes around multiples of 8, several block lengths and rows with exact zeros.
``_sorted_top_k`` (a sort network) must give ``_top_k``'s lists (``np.lexsort``) bit for bit,
ties, signed zeros and infinities included, and decline what it does not handle.
"""

from __future__ import annotations

import numpy as np
import pytest

from stats import ResampleDraws, block_starts_and_lengths
from stats._bootstrap_variance import _circular_variance
from stats._data_snooping import NO_CONFIG, _centred_means, _sorted_top_k, _top_k


def twin_circular_variance(x: np.ndarray, length: int) -> np.ndarray:
    """One row at a time: mean, prefix over ``2n`` periods of ``d[t % n]``, two sums."""
    m, n = x.shape
    k = (n + length - 1) // length
    last = n - (k - 1) * length
    out = np.empty(m)
    for i, row in enumerate(x.tolist()):
        s = 0.0
        for v in row:
            s += v
        mu = s / n
        d = [v - mu for v in row]
        prefix = [0.0]
        for t in range(2 * n):
            prefix.append(prefix[t] + d[t % n])
        full = tail = 0.0
        for s0 in range(n):
            a = prefix[s0 + length] - prefix[s0]
            b = prefix[s0 + last] - prefix[s0]
            full += a * a
            tail += b * b
        out[i] = ((k - 1) * full + tail) / n / n
    return out


def twin_centred_means(x: np.ndarray, draws: ResampleDraws) -> np.ndarray:
    """One row at a time: raw prefix, mean, each block's demeaned sum added in block order."""
    m, n = x.shape
    n_blocks, reps = draws.starts.shape
    out = np.empty((m, reps))
    for i, row in enumerate(x.tolist()):
        prefix = [0.0]
        for v in row:
            prefix.append(prefix[-1] + v)
        mu = prefix[n] / n

        def block(s: int, length: int, prefix: list[float] = prefix, mu: float = mu) -> float:
            e = s + length
            wrapped = e > n
            end = e - n if wrapped else e
            raw = prefix[end] - prefix[s] + (prefix[n] if wrapped else 0.0)
            return raw - length * mu

        for b in range(reps):
            acc = 0.0
            for j in range(n_blocks):
                s = int(draws.starts[j, b])
                acc += block(s, int(draws.ends[j, b]) - s)
            out[i, b] = acc / n
    return out


def _rows(m: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, n)) * 0.01
    x[::3, ::4] = 0.0
    if m > 2:
        x[1] = 0.25  # a constant row: every demeaned value exactly 0
    return x


@pytest.mark.parametrize("m", [1, 7, 8, 9, 17])
@pytest.mark.parametrize("length", [1, 4, 5, 37])
def test_circular_variance_lanes_match_one_row_at_a_time(m: int, length: int) -> None:
    x = _rows(m, 37, m * 100 + length)
    out = np.empty(m)
    _circular_variance(x, length, out)
    assert out.tobytes() == twin_circular_variance(x, length).tobytes()
    alone = np.empty(1)
    _circular_variance(x[m - 1 :], length, alone)
    assert alone[0].tobytes() == out[m - 1].tobytes()


@pytest.mark.parametrize("m", [1, 7, 8, 9, 17])
@pytest.mark.parametrize(
    ("length", "method"), [(1, "circular"), (5, "circular"), (4, "stationary")]
)
def test_centred_means_lanes_match_one_row_at_a_time(m: int, length: int, method: str) -> None:
    n = 41
    x = _rows(m, n, m + length)
    rng = np.random.default_rng(length)
    starts, lengths = block_starts_and_lengths(rng, n, length, 6, method)  # type: ignore[arg-type]
    draws = ResampleDraws.from_blocks(n, starts, lengths, float(length) * (method != "circular"))
    out = np.empty((m, draws.reps))
    _centred_means(x, draws.starts, draws.ends, draws.fixed_length, draws.table_starts, out)
    assert out.tobytes() == twin_centred_means(x, draws).tobytes()


def _tied_values(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    pool = np.array([0.0, -0.0, 1.5, -1.5, 2.0, np.inf, -np.inf, 1e-300, -1e-300])
    return rng.choice(pool, size=shape) if rng.random() < 0.5 else rng.standard_normal(shape)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize(("m", "k"), [(32, 32), (33, 32), (64, 32), (64, 1), (100, 7), (5, 5)])
def test_sorted_top_k_is_lexsort_bit_for_bit(seed: int, m: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.ascontiguousarray(_tied_values(rng, (m, 9)))
    index = rng.permutation(10 * m)[:m].astype(np.int64)
    top_value = np.empty((9, k))
    top_index = np.empty((9, k), dtype=np.int64)
    assert _sorted_top_k(values, index, top_value, top_index)
    want_value, want_index = _top_k(
        np.ascontiguousarray(values.T), np.ascontiguousarray(np.broadcast_to(index, (9, m))), k
    )
    assert top_value.tobytes() == want_value.tobytes()
    assert top_index.tobytes() == want_index.tobytes()


def test_sorted_top_k_declines_what_lexsort_pads_or_dedupes() -> None:
    values = np.zeros((4, 3))
    top_value = np.empty((3, 2))
    top_index = np.empty((3, 2), dtype=np.int64)
    assert not _sorted_top_k(values, np.array([0, 1, 1, 2]), top_value, top_index)
    assert not _sorted_top_k(values[:1], np.array([0]), top_value, top_index)
    values[2, 1] = np.nan
    assert not _sorted_top_k(values, np.array([0, 1, 2, 3]), top_value, top_index)
    assert not _sorted_top_k(np.zeros((2, 3)), np.array([0, 2**53]), top_value, top_index)
    assert NO_CONFIG < 0
