"""The SIMD-lane kernels give, bit for bit, the scalar sequence of every row.

``path_statistics`` and ``fold_values`` reduce eight rows side by side, one per SIMD lane
(``stats._row_kernel``). Each lane must do exactly its row's scalar operations in time order,
so the results are compared bitwise with a plain-Python loop of that sequence (Python floats
are IEEE doubles: the same operations give the same bits), on row counts and lengths that
are not multiples of eight, with NaN, infinities, zeros and a -100% period in some rows.
The paired pass (returns and their excess over a benchmark) and the excess fold values must
equal the separate calls on a materialised ``returns - benchmark``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from stats import fold_values, path_statistics, walk_forward_folds
from stats._folds import FoldPlan, excess_fold_values
from stats._row_kernel import paired_path_statistics

FIELDS = ("mean", "m2", "m3", "m4", "total_return", "max_drawdown", "block_sum", "block_sumsq")


def scalar_rows(x: np.ndarray, n_blocks: int, equity_path: bool) -> dict[str, np.ndarray]:
    """The base kernel's scalar sequence, row by row, in plain Python."""
    n, t = x.shape
    length = t // n_blocks if n_blocks else 0
    dropped = t - length * n_blocks
    out = {k: np.empty(n) for k in FIELDS[:6]}
    out["block_sum"] = np.empty((n, n_blocks))
    out["block_sumsq"] = np.empty((n, n_blocks))
    for i, row in enumerate(x.tolist()):
        s = 0.0
        for v in row:
            s += v
        mu = s / t
        a2 = a3 = a4 = bs = bq = 0.0
        equity, peak, worst = 1.0, 1.0, 0.0
        for k, v in enumerate(row):
            if k >= dropped and (k - dropped) % length == 0:
                bs = bq = 0.0
            d = v - mu
            d2 = d * d
            a2 += d2
            a3 += d2 * d
            a4 += d2 * d2
            bs += v
            bq += v * v
            if equity_path:
                equity *= 1.0 + v
                if equity > peak:
                    peak = equity
                fall = 1.0 - equity / peak
                if fall > worst:
                    worst = fall
            if k >= dropped and (k - dropped) % length == length - 1:
                out["block_sum"][i, (k - dropped) // length] = bs
                out["block_sumsq"][i, (k - dropped) // length] = bq
        out["mean"][i] = mu
        out["m2"][i], out["m3"][i], out["m4"][i] = a2 / t, a3 / t, a4 / t
        out["total_return"][i] = equity - 1.0 if equity_path else np.nan
        out["max_drawdown"][i] = worst if equity_path else np.nan
    return out


def rows(n: int, t: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(0.0003, 0.02, (n, t))
    if n > 3 and t > 9:
        x[1, 3] = np.nan
        x[2, 5] = np.inf
        x[3] = 0.0
        x[n - 1, 7] = -1.0
    return x


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


@pytest.mark.parametrize(
    ("n", "t", "n_blocks"), [(1, 1, 0), (5, 7, 2), (8, 8, 1), (9, 61, 4), (17, 203, 16), (23, 5, 5)]
)
@pytest.mark.parametrize("equity_path", [True, False])
def test_path_statistics_lanes_are_the_scalar_sequence(
    n: int, t: int, n_blocks: int, equity_path: bool
) -> None:
    x = rows(n, t, n * 1000 + t)
    got = path_statistics(x, n_blocks, equity_path=equity_path)
    want = scalar_rows(x, n_blocks, equity_path)
    for field in FIELDS:
        assert bits(getattr(got, field)) == bits(want[field]), field


@pytest.mark.parametrize(("n", "t", "n_blocks"), [(1, 3, 0), (9, 61, 4), (17, 203, 16)])
def test_paired_pass_equals_two_separate_calls(n: int, t: int, n_blocks: int) -> None:
    x = rows(n, t, 7 + n)
    bench = np.random.default_rng(t).normal(0.0002, 0.01, t)
    own, excess = paired_path_statistics(x, bench, n_blocks)
    want_own = path_statistics(x, 0)
    want_excess = path_statistics(x - bench[np.newaxis, :], n_blocks, equity_path=False)
    for field in FIELDS:
        assert bits(getattr(own, field)) == bits(getattr(want_own, field)), field
        assert bits(getattr(excess, field)) == bits(getattr(want_excess, field)), field
    assert (own.block_count, excess.block_count) == (0, want_excess.block_count)


@pytest.mark.parametrize("metric", ["sharpe", "mean"])
@pytest.mark.parametrize("n", [1, 8, 13])
def test_fold_values_lanes_and_excess(metric: str, n: int) -> None:
    t = 301
    x = np.random.default_rng(n).normal(0.0003, 0.02, (n, t))
    bench = np.random.default_rng(99).normal(0.0002, 0.01, t)
    plan = FoldPlan.from_folds(walk_forward_folds(t, 60, 23, purge=3))
    got = fold_values(x, plan, metric)  # type: ignore[arg-type]
    want = np.empty_like(got)
    for i, row in enumerate(x.tolist()):
        for f in range(len(plan.folds)):
            cnt = tot = sq = 0.0
            for g in plan.train_segments[f].tolist():
                lo, hi = int(plan.seg_start[g]), int(plan.seg_stop[g])
                a = b = 0.0
                for v in row[lo:hi]:
                    a += v
                    b += v * v
                cnt += hi - lo
                tot += a
                sq += b
            mean = tot / cnt
            var = (sq - tot * mean) / (cnt - 1.0)
            want[i, f] = (
                mean if metric == "mean" else (mean / math.sqrt(var) if var > 0 else np.nan)
            )
    assert bits(got) == bits(want)
    excess = excess_fold_values(x, bench, plan, metric)  # type: ignore[arg-type]
    assert bits(excess) == bits(fold_values(x - bench[np.newaxis, :], plan, metric))  # type: ignore[arg-type]
