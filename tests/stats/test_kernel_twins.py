"""Plain-Python twins of the numba kernels not already twinned elsewhere, on random inputs.

Twins elsewhere: ``centred_resample_means`` (``_centred_means``, its lanes one row at a time
in ``test_bootstrap_kernel_bits.py``) against an explicit gather of every resample in
``test_stats_data_snooping.py``; the CSCV kernel by Sharpe against the split-by-split recipe
of Bailey et al. (2017) in ``test_stats_pbo.py``; ``_banded_positions`` by the momentum
oracle in ``tests/strategies``. Here: ``_row_pass`` (``path_statistics``), the CSCV kernel
by mean (``metric="mean"``), and ``_fold_values``, each twin written from the docstrings.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata

from stats import (
    FoldPlan,
    cpcv_folds,
    fold_values,
    path_statistics,
    probability_of_backtest_overfitting,
    walk_forward_folds,
)


def twin_path_statistics(x: np.ndarray, n_blocks: int) -> dict[str, np.ndarray]:
    """Sequential sums in time order, equity from 1, drawdown from the running peak."""
    n, t = x.shape
    out: dict[str, list] = {k: [] for k in ("mean", "m2", "m3", "m4", "total", "dd", "bs", "bq")}
    length = t // n_blocks if n_blocks else 0
    first = t - length * n_blocks  # the oldest remainder is dropped
    for row in x.tolist():
        s = 0.0
        for v in row:
            s += v
        mu = s / t
        sums = [0.0, 0.0, 0.0]
        equity, peak, worst = 1.0, 1.0, 0.0
        for v in row:
            d = v - mu
            sums[0] += d * d
            sums[1] += d * d * d
            sums[2] += (d * d) * (d * d)
            equity *= 1.0 + v
            peak = max(peak, equity)
            worst = max(worst, 1.0 - equity / peak)
        out["mean"].append(mu)
        for k, a in zip(("m2", "m3", "m4"), sums, strict=True):
            out[k].append(a / t)
        out["total"].append(equity - 1.0)
        out["dd"].append(worst)
        blocks = [row[first + b * length : first + (b + 1) * length] for b in range(n_blocks)]
        out["bs"].append([math.fsum(b) for b in blocks])
        out["bq"].append([math.fsum(v * v for v in b) for b in blocks])
    return {
        k: np.array(v, dtype=np.float64).reshape(n, -1).squeeze(-1)
        if k not in ("bs", "bq")
        else np.array(v, dtype=np.float64).reshape(n, n_blocks)
        for k, v in out.items()
    }


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 90), st.integers(0, 9), st.integers(0, 2**32 - 1))
def test_path_statistics_equals_its_twin(n: int, t: int, n_blocks: int, seed: int) -> None:
    n_blocks = min(n_blocks, t)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, t)) * rng.choice([0.001, 0.02, 0.3])
    x[rng.random((n, t)) < 0.1] = 0.0
    got = path_statistics(x, n_blocks)
    want = twin_path_statistics(x, n_blocks)
    # same sequential arithmetic: bitwise for the moments, the equity path and the drawdown
    for name, key in (
        ("mean", "mean"),
        ("m2", "m2"),
        ("m3", "m3"),
        ("m4", "m4"),
        ("total_return", "total"),
        ("max_drawdown", "dd"),
    ):
        np.testing.assert_array_equal(getattr(got, name), want[key], err_msg=name)
    assert got.block_count == (t // n_blocks if n_blocks else 0)
    # block sums: the twin sums exactly (fsum); the kernel sequentially
    np.testing.assert_allclose(got.block_sum, want["bs"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got.block_sumsq, want["bq"], rtol=1e-12, atol=1e-15)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 5), st.integers(1, 60), st.integers(0, 6), st.integers(0, 2**32 - 1))
def test_moments_without_the_equity_path_are_the_same_bits(
    n: int, t: int, n_blocks: int, seed: int
) -> None:
    n_blocks = min(n_blocks, t)
    x = np.random.default_rng(seed).standard_normal((n, t)) * 0.02
    full = path_statistics(x, n_blocks)
    moments = path_statistics(x, n_blocks, equity_path=False)
    for name in ("mean", "m2", "m3", "m4", "block_sum", "block_sumsq"):
        np.testing.assert_array_equal(getattr(moments, name), getattr(full, name), err_msg=name)
    assert np.isnan(moments.total_return).all() and np.isnan(moments.max_drawdown).all()


def test_path_statistics_twin_can_fail() -> None:
    x = np.random.default_rng(0).standard_normal((2, 50)) * 0.01
    want = twin_path_statistics(x, 5)
    got = path_statistics(x, 5)
    assert not np.array_equal(got.max_drawdown, want["dd"] * (1 + 1e-15) + 1e-18)
    assert not np.allclose(got.block_sum, twin_path_statistics(x[:, 1:], 5)["bs"], rtol=1e-12)


def cscv_by_mean(m: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """Bailey et al. (2017) CSCV with the mean as the performance statistic, split by split."""
    t, n = m.shape
    m = m[t % s :]
    size = len(m) // s
    blocks = [m[i * size : (i + 1) * size] for i in range(s)]
    best, logits = [], []
    for chosen in itertools.combinations(range(s), s // 2):
        train = np.concatenate([blocks[i] for i in chosen])
        test = np.concatenate([blocks[i] for i in range(s) if i not in chosen])
        star = int(np.argmax(train.mean(axis=0)))
        w = rankdata(test.mean(axis=0))[star] / (n + 1)
        best.append(star)
        logits.append(math.log(w / (1 - w)))
    return np.array(best), np.array(logits)


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 30), st.sampled_from([2, 4, 6, 8]), st.integers(0, 2**32 - 1))
def test_cscv_by_mean_equals_the_split_by_split_recipe(n: int, s: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((s * 12 + int(rng.integers(0, s)), n)) * 0.01
    res = probability_of_backtest_overfitting(m, s, metric="mean")
    best, logits = cscv_by_mean(m, s)
    np.testing.assert_array_equal(res.best_in_sample, best)
    np.testing.assert_allclose(res.logits, logits, rtol=0, atol=1e-12)


def twin_fold_values(x: np.ndarray, plan: FoldPlan, sharpe: bool) -> np.ndarray:
    """Pool each fold's training windows and take the mean or the ddof=1 Sharpe ratio."""
    out = np.empty((x.shape[0], len(plan.folds)))
    for k, fold in enumerate(plan.folds):
        for i in range(x.shape[0]):
            v = [float(x[i, t]) for a, b in fold.train for t in range(a, b)]
            mean = math.fsum(v) / len(v)
            if not sharpe:
                out[i, k] = mean
                continue
            var = math.fsum((u - mean) ** 2 for u in v) / (len(v) - 1)
            out[i, k] = mean / math.sqrt(var) if var > 0 else math.nan
    return out


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 5), st.integers(0, 2**32 - 1), st.booleans())
def test_fold_values_equal_their_twin(n: int, seed: int, sharpe: bool) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 240)) * 0.01 + 0.0003
    x[0, 0:60] = 0.002  # a constant window: NaN Sharpe
    plan = FoldPlan.from_folds(
        walk_forward_folds(240, 60, 30, purge=int(rng.integers(0, 5)))
        + cpcv_folds(240, 4, 2, purge=3, embargo=1)
    )
    got = fold_values(x, plan, "sharpe" if sharpe else "mean")
    np.testing.assert_allclose(got, twin_fold_values(x, plan, sharpe), rtol=1e-11, atol=1e-15)
