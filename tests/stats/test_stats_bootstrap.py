from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from stats import (
    block_starts_and_lengths,
    bootstrap_pvalue,
    bootstrap_sharpe,
    sharpe_ratio,
)
from sweep.errors import StatsInputError


def generators(n: int, seed: int = 0) -> list[np.random.Generator]:
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n)]


@pytest.mark.parametrize("method", ["circular", "stationary"])
@pytest.mark.parametrize("block_length", [1, 7, 50])
def test_resample_sharpe_equals_materialised_resample(method: str, block_length: int) -> None:
    n_obs, reps = 120, 30
    x = np.random.default_rng(2).standard_normal((3, n_obs)) * 0.01 + 0.002
    fast = bootstrap_sharpe(x, generators(3), reps, block_length, method)  # type: ignore[arg-type]
    for i, rng in enumerate(generators(3)):
        starts, lengths = block_starts_and_lengths(rng, n_obs, block_length, reps, method)  # type: ignore[arg-type]
        row = x[i] - x[i].sum() / n_obs
        for r in range(reps):
            index = np.concatenate(
                [(s + np.arange(n)) % n_obs for s, n in zip(starts[r], lengths[r], strict=True)]
            )
            assert len(index) == n_obs
            np.testing.assert_allclose(fast[i, r], sharpe_ratio(row[index])[0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["circular", "stationary"])
def test_blocks_cover_exactly_n_obs(method: str) -> None:
    starts, lengths = block_starts_and_lengths(np.random.default_rng(0), 97, 10, 40, method)  # type: ignore[arg-type]
    assert starts.shape == lengths.shape
    assert (lengths.sum(axis=1) == 97).all() and (lengths >= 0).all()
    assert ((starts >= 0) & (starts < 97)).all()


@pytest.mark.parametrize("method", ["circular", "stationary"])
def test_each_row_is_independent_of_the_batch(method: str) -> None:
    x = np.random.default_rng(3).standard_normal((6, 300))
    batch = bootstrap_sharpe(x, generators(6, seed=9), 25, 12, method)  # type: ignore[arg-type]
    for i, rng in enumerate(generators(6, seed=9)):
        alone = bootstrap_sharpe(x[i : i + 1], [rng], 25, 12, method)  # type: ignore[arg-type]
        np.testing.assert_array_equal(alone[0], batch[i])
    # Reordering the batch permutes the rows and changes no bit.
    order = [5, 0, 3, 1, 4, 2]
    gens = generators(6, seed=9)
    shuffled = bootstrap_sharpe(x[order], [gens[i] for i in order], 25, 12, method)  # type: ignore[arg-type]
    np.testing.assert_array_equal(shuffled, batch[order])


def test_strong_edge_gives_p_near_zero() -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 1000)) * 0.01 + 0.003  # per-period Sharpe about 0.3
    boot = bootstrap_sharpe(x, generators(5), 200, 20)
    p = bootstrap_pvalue(sharpe_ratio(x), boot)
    assert (p <= 0.005).all()


def test_pure_noise_gives_roughly_uniform_p() -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((300, 250))
    boot = bootstrap_sharpe(x, generators(300, seed=6), 100, 5, "stationary")
    p = bootstrap_pvalue(sharpe_ratio(x), boot)
    assert 0.43 < p.mean() < 0.57
    assert 0.05 < (p <= 0.1).mean() < 0.16
    assert sps.kstest(p, "uniform").pvalue > 0.001


def test_pvalue_is_nan_for_nan_sharpe_and_checks_shapes() -> None:
    p = bootstrap_pvalue(np.array([np.nan, 0.1]), np.zeros((2, 4)))
    assert np.isnan(p[0]) and p[1] == 0.0
    with pytest.raises(StatsInputError, match="bootstrap_sharpes"):
        bootstrap_pvalue(np.zeros(3), np.zeros((2, 4)))


def test_bad_input_is_refused() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(StatsInputError, match="block_length"):
        block_starts_and_lengths(rng, 10, 11, 5)
    with pytest.raises(StatsInputError, match="method"):
        block_starts_and_lengths(rng, 10, 2, 5, "moving")  # type: ignore[arg-type]
    with pytest.raises(StatsInputError, match="rngs"):
        bootstrap_sharpe(np.zeros((2, 10)), generators(1), 5, 2)
    with pytest.raises(ValueError, match="returns"):
        bootstrap_sharpe(np.zeros(10), generators(1), 5, 2)
