"""The closed-form bootstrap variance ``ω̂²`` against its definition, the published formulas,
and many Monte-Carlo replications of the resample means it stands for."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import stats._bootstrap_variance as module
from stats import (
    ResampleDraws,
    block_starts_and_lengths,
    bootstrap_long_run_sd,
    centred_resample_means,
)
from stats._bootstrap_variance import stationary_max_lag


def _draws(n: int, block: int, reps: int, method: str, seed: int = 5) -> ResampleDraws:
    rng = np.random.default_rng(seed)
    starts, lengths = block_starts_and_lengths(rng, n, block, reps, method)  # type: ignore[arg-type]
    return ResampleDraws.from_blocks(n, starts, lengths, block if method == "stationary" else 0)


def _series(n: int, seed: int = 1) -> np.ndarray:
    """iid, MA(5) and a slow random walk: no, positive and strong serial dependence."""
    rng = np.random.default_rng(seed)
    iid = rng.standard_normal(n)
    ma = np.convolve(rng.standard_normal(n + 5), np.ones(6), "valid")
    walk = np.cumsum(rng.standard_normal(n)) * 0.1
    return np.stack([iid, ma, walk]) * 0.01


def _circular_autocov(x: np.ndarray) -> np.ndarray:
    """``Ĉ_c(h) = n⁻¹ Σ_t d_t d_{(t+h) mod n}`` for every lag, written out."""
    d = x - x.mean()
    return np.array([np.dot(d, np.roll(d, -h)) for h in range(d.size)]) / d.size


@pytest.mark.parametrize(
    ("method", "block"), [("circular", 7), ("circular", 10), ("stationary", 6)]
)
def test_it_is_the_limit_of_the_monte_carlo_variance(method: str, block: int) -> None:
    """n B⁻¹ Σ_b c_kb² over 60,000 replications lands within 4 standard errors of ``ω̂²``."""
    n, reps = 211, 60_000  # 211 = 30 blocks of 7 and one of 1; 21 of 10 and one of 1
    x = _series(n)
    d = _draws(n, block, reps, method)
    c = centred_resample_means(x, d)
    squares = n * c * c
    monte_carlo = squares.mean(axis=1)
    se = squares.std(axis=1) / np.sqrt(reps)
    exact = bootstrap_long_run_sd(x, d) ** 2
    assert np.all(np.abs(monte_carlo - exact) <= 4 * se), (monte_carlo / exact, se / exact)


def test_circular_blocks_dividing_n_give_bartletts_weights() -> None:
    """``Ĉ_c(0) + 2 Σ_{h<l} (1 - h/l) Ĉ_c(h)`` when every block has length ``l``."""
    n, block = 240, 12
    x = _series(n, seed=2)
    got = bootstrap_long_run_sd(x, _draws(n, block, 3, "circular")) ** 2
    h = np.arange(1, block)
    for row, value in zip(x, got, strict=True):
        acov = _circular_autocov(row)
        want = acov[0] + 2 * np.sum((1 - h / block) * acov[1:block])
        assert value == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("block", [1, 4, 21])
def test_stationary_blocks_follow_politis_romano_lemma_1(block: int) -> None:
    """Politis and Romano (1994), Lemma 1, in its own form: ordinary autocovariances ``Ĉ(h)``
    and weights ``b(h) = (1 - h/n) q^h + (h/n) q^(n-h)``, ``q = 1 - 1/block``, every lag."""
    n = 300
    x = _series(n, seed=3)
    got = bootstrap_long_run_sd(x, _draws(n, block, 3, "stationary")) ** 2
    q, h = 1.0 - 1.0 / block, np.arange(1, n)
    weights = (1 - h / n) * q**h + (h / n) * q ** (n - h)
    for row, value in zip(x, got, strict=True):
        d = row - row.mean()
        acov = np.array([np.dot(d[: n - k], d[k:]) for k in range(n)]) / n
        want = acov[0] + 2 * np.sum(weights * acov[1:])
        assert value == pytest.approx(want, rel=1e-12)


def test_the_stationary_lags_stop_where_the_rest_is_below_one_rounding() -> None:
    lag = stationary_max_lag(100_000, 21.0)
    q = 1.0 - 1.0 / 21.0
    assert q ** (lag + 1) * 21.0 < 2.0**-53 <= q ** (lag - 1) * 21.0
    assert stationary_max_lag(50, 21.0) == 49  # never past the series
    assert stationary_max_lag(50, 1.0) == 0  # iid: no lag


def test_a_row_gives_the_same_bits_in_any_batch_and_order() -> None:
    rng = np.random.default_rng(9)
    x = rng.standard_normal((13, 157)) * 0.01
    for method, block in (("circular", 10), ("stationary", 10)):
        d = _draws(157, block, 4, method)
        whole = bootstrap_long_run_sd(x, d)
        order = rng.permutation(13)
        assert bootstrap_long_run_sd(x[order], d).tobytes() == whole[order].tobytes()
        alone = [bootstrap_long_run_sd(x[i : i + 1], d)[0] for i in range(13)]
        assert np.array(alone).tobytes() == whole.tobytes()


def test_constant_rows_and_one_block_have_no_variance() -> None:
    x = np.zeros((1, 50))
    assert bootstrap_long_run_sd(x, _draws(50, 5, 2, "circular"))[0] == 0.0
    one_block = _draws(50, 50, 2, "circular")  # every resample is a rotation of the series
    assert bootstrap_long_run_sd(_series(50), one_block) == pytest.approx(0.0, abs=1e-15)


def test_a_wrong_shape_is_refused() -> None:
    with pytest.raises(ValueError, match=r"expected shape \(configs, 50\)"):
        bootstrap_long_run_sd(np.zeros((2, 49)), _draws(50, 5, 2, "circular"))


def test_the_docstring_example_runs() -> None:
    assert doctest.testmod(module, raise_on_error=True).attempted >= 1
