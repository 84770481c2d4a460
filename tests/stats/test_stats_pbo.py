from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata

from stats import (
    StatsInputError,
    block_statistics,
    cscv_best_and_ranks,
    pbo_from_block_stats,
    probability_of_backtest_overfitting,
)


def cscv_by_hand(m: np.ndarray, s: int) -> np.ndarray:
    """Logits by the paper's recipe, split by split (as pypbo's ``pbo`` does)."""
    t, n = m.shape
    m = m[t % s :]
    size = len(m) // s
    blocks = [m[i * size : (i + 1) * size] for i in range(s)]
    logits = []
    for chosen in itertools.combinations(range(s), s // 2):
        train = np.concatenate([blocks[i] for i in chosen])
        test = np.concatenate([blocks[i] for i in range(s) if i not in chosen])
        r = train.mean(axis=0) / train.std(axis=0, ddof=1)
        r_bar = test.mean(axis=0) / test.std(axis=0, ddof=1)
        w = rankdata(r_bar)[np.argmax(r)] / (n + 1)
        logits.append(np.log(w / (1 - w)))
    return np.array(logits)


def test_matches_the_split_by_split_recipe() -> None:
    m = np.random.default_rng(0).standard_normal((203, 12)) * 0.01
    res = probability_of_backtest_overfitting(m, 6)
    expected = cscv_by_hand(m, 6)
    np.testing.assert_allclose(res.logits, expected, rtol=0, atol=1e-12)
    assert res.pbo == np.mean(expected <= 0)
    assert res.n_splits == 20 and res.n_blocks == 6 and res.n_strategies == 12
    assert res.rows_dropped == 203 % 6 and res.n_obs_used == 6 * (203 // 6)


def test_dominant_strategy_gives_pbo_near_zero() -> None:
    rng = np.random.default_rng(1)
    m = rng.standard_normal((800, 30)) * 0.01
    m[:, 7] += 0.004  # a true edge of 0.4 standard deviations per period
    res = probability_of_backtest_overfitting(m, 8)
    assert res.pbo < 0.02
    assert (res.best_in_sample == 7).mean() > 0.95
    assert res.prob_oos_loss == 0.0


def test_pure_noise_gives_pbo_near_one_half() -> None:
    pbos = [
        probability_of_backtest_overfitting(
            np.random.default_rng(seed).standard_normal((480, 50)), 8
        ).pbo
        for seed in range(30)
    ]
    assert 0.38 < float(np.mean(pbos)) < 0.62


def test_noise_degrades_out_of_sample() -> None:
    res = probability_of_backtest_overfitting(
        np.random.default_rng(4).standard_normal((960, 200)), 10
    )
    # In-sample winners of pure noise regress towards (below) zero out of sample.
    assert res.degradation_slope < 0
    assert 0.0 <= res.degradation_r2 <= 1.0
    assert 0.2 < res.prob_oos_loss < 0.8
    assert np.all((res.relative_ranks > 0) & (res.relative_ranks < 1))


@settings(max_examples=25, deadline=None)
@given(
    t=st.integers(min_value=40, max_value=200),
    n=st.integers(min_value=2, max_value=15),
    half=st.integers(min_value=1, max_value=4),
    seed=st.integers(min_value=0, max_value=10_000),
    metric=st.sampled_from(["sharpe", "mean"]),
)
def test_block_statistics_path_equals_matrix_path(
    t: int, n: int, half: int, seed: int, metric: str
) -> None:
    s = 2 * half
    m = np.random.default_rng(seed).standard_normal((t, n)) * 0.01 + 0.001
    direct = probability_of_backtest_overfitting(m, s, metric=metric)  # type: ignore[arg-type]
    # Sufficient statistics built independently, one block and one config at a time.
    size = t // s
    used = m[t % s :]
    counts = np.full(s, size)
    sums = np.empty((n, s))
    sums_sq = np.empty((n, s))
    for j in range(n):
        for b in range(s):
            chunk = used[b * size : (b + 1) * size, j]
            sums[j, b] = chunk.sum()
            sums_sq[j, b] = (chunk**2).sum()
    from_stats = pbo_from_block_stats(counts, sums, sums_sq, metric=metric)  # type: ignore[arg-type]
    assert from_stats.pbo == direct.pbo
    np.testing.assert_allclose(from_stats.logits, direct.logits, rtol=0, atol=1e-12)
    np.testing.assert_allclose(from_stats.oos_performance, direct.oos_performance, rtol=1e-9)
    # Per-strategy counts of shape (N, S) give the same answer as shared counts (S,).
    per_config = pbo_from_block_stats(np.tile(counts, (n, 1)), sums, sums_sq, metric=metric)  # type: ignore[arg-type]
    np.testing.assert_array_equal(per_config.logits, from_stats.logits)


def test_block_statistics_row_does_not_depend_on_the_batch() -> None:
    m = np.random.default_rng(5).standard_normal((1001, 9))
    together = block_statistics(m, 10)
    alone = block_statistics(m[:, [4]], 10)
    np.testing.assert_array_equal(alone.sums[0], together.sums[4])
    np.testing.assert_array_equal(alone.sums_sq[0], together.sums_sq[4])
    assert together.rows_dropped == 1 and together.counts.tolist() == [100] * 10


def test_constant_strategy_ranks_last() -> None:
    m = np.random.default_rng(6).standard_normal((400, 5))
    m[:, 2] = 0.0
    res = probability_of_backtest_overfitting(m, 4)
    assert not np.any(res.best_in_sample == 2)
    assert np.isfinite(res.logits).all()


@pytest.mark.parametrize(
    ("shape", "s", "match"),
    [
        ((100, 5), 7, "even"),
        ((100, 5), 0, "n_blocks"),
        ((10, 5), 16, "at least n_blocks"),
        ((100, 1), 4, "at least 2 strategies"),
        ((100, 5), 40, "splits"),
        ((2, 3), 2, "at least 2 periods"),
    ],
)
def test_bad_input_is_refused(shape: tuple[int, int], s: int, match: str) -> None:
    m = np.random.default_rng(0).standard_normal(shape)
    with pytest.raises(StatsInputError, match=match):
        probability_of_backtest_overfitting(m, s)


def test_sharpe_from_stats_needs_sums_of_squares() -> None:
    with pytest.raises(StatsInputError, match="sums_sq"):
        pbo_from_block_stats(np.full(4, 10), np.ones((3, 4)))
    with pytest.raises(StatsInputError, match="counts"):
        pbo_from_block_stats(np.full(3, 10), np.ones((3, 4)), np.ones((3, 4)))


@pytest.mark.parametrize("chunk", [7, 1024])
def test_ties_and_chunks_match_the_split_by_split_recipe(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Identical strategies tie in and out of sample, across the compiled kernel's chunks.

    The in-sample best among identical columns is the lowest index (numpy's argmax, as in
    the recipe), and out-of-sample ties get the average rank (scipy's rankdata).
    """
    import stats._cscv_kernel as kernel

    monkeypatch.setattr(kernel, "CHUNK", chunk)
    rng = np.random.default_rng(11)
    m = rng.standard_normal((240, 40)) * 0.01
    m[:, 3] += 0.002  # a good strategy ...
    m[:, [17, 29, 38]] = m[:, [3]]  # ... repeated in later chunks
    m[:, [8, 9]] = m[:, [20]]
    res = probability_of_backtest_overfitting(m, 6)
    np.testing.assert_allclose(res.logits, cscv_by_hand(m, 6), rtol=0, atol=1e-12)
    # A later twin never wins in sample: the lowest index does.
    assert not set(res.best_in_sample.tolist()) & {9, 17, 20, 29, 38}
    assert 3 in set(res.best_in_sample.tolist())


def test_many_strategies_agree_with_a_plain_numpy_cscv() -> None:
    """Thousands of strategies (several chunks): the compiled CSCV equals plain numpy."""
    rng = np.random.default_rng(12)
    n, s = 3000, 8
    counts = np.full(s, 50)
    sums = rng.standard_normal((n, s)) * 0.1 + 0.01
    sums_sq = sums**2 / 50 + np.abs(rng.standard_normal((n, s))) * 0.05 + 0.01
    res = pbo_from_block_stats(counts, sums, sums_sq)
    for k, chosen in enumerate(itertools.combinations(range(s), s // 2)):
        mask = np.zeros(s, dtype=bool)
        mask[list(chosen)] = True

        def sharpe(sel: np.ndarray) -> np.ndarray:
            cnt, tot = counts[sel].sum(), sums[:, sel].sum(axis=1)
            var = (sums_sq[:, sel].sum(axis=1) - tot * tot / cnt) / (cnt - 1)
            return (tot / cnt) / np.sqrt(var)

        is_perf, oos_perf = sharpe(mask), sharpe(~mask)
        star = int(np.argmax(is_perf))
        assert res.best_in_sample[k] == star
        assert res.relative_ranks[k] == rankdata(oos_perf)[star] / (n + 1)


@settings(max_examples=25, deadline=None)
@given(
    runs=st.integers(min_value=1, max_value=40),
    seed=st.integers(min_value=0, max_value=2**31 - 1),
    tied=st.booleans(),
)
def test_splits_run_in_any_runs_give_the_same_result(runs: int, seed: int, tied: bool) -> None:
    """A SplitRunner may cut the splits into runs (Ray tasks): every answer is the same."""
    rng = np.random.default_rng(seed)
    n, s = 300, 10
    sums = rng.standard_normal((n, s)) * 0.1
    if tied:  # exact ties in and out of sample: the lowest row must still win
        sums[n // 2 :] = sums[: n - n // 2]
    sums_sq = sums**2 + rng.uniform(0.5, 1.5, (n, s))
    counts = np.full(s, 25)
    seen: list[int] = []

    def in_runs(cnt, x_sum, x_sq, combos, sharpe):  # type: ignore[no-untyped-def]
        bounds = np.linspace(0, len(combos), runs + 1).astype(int)
        answers = [
            cscv_best_and_ranks(cnt, x_sum, x_sq, combos[a:b], sharpe)
            for a, b in itertools.pairwise(bounds)
            if b > a
        ]
        seen.append(len(answers))
        return np.concatenate([a[0] for a in answers]), np.concatenate([a[1] for a in answers])

    whole = pbo_from_block_stats(counts, sums, sums_sq)
    cut = pbo_from_block_stats(counts, sums, sums_sq, run_splits=in_runs)
    assert seen == [min(runs, whole.n_splits)]
    np.testing.assert_array_equal(cut.best_in_sample, whole.best_in_sample)
    np.testing.assert_array_equal(cut.logits, whole.logits)
    assert (cut.pbo, cut.prob_oos_loss, cut.degradation_slope) == (
        whole.pbo,
        whole.prob_oos_loss,
        whole.degradation_slope,
    )
