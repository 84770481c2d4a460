"""PBO by CSCV from block statistics: the compiled kernel against plain numpy, side by side.

The numpy reference is the implementation raysweep used before the compiled kernel (one
matrix product per statistic and split chunk, then argmax and rank counts over a
(splits x strategies) array). Both run on the same block sums in one process, S = 16
(12,870 splits), and must give the same in-sample bests and ranks; the ratio of their
times is the figure to read (absolute times drift on a shared machine).

Run: ``python benchmarks/bench_pbo.py [--configs 20000]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time

import numpy as np

from stats import pbo_from_block_stats

CHUNK_CELLS = 1 << 22


def numpy_cscv(counts, sums, sums_sq):
    """Best in sample and out-of-sample rank per split, by matrix products (reference)."""
    n, s = sums.shape
    combos = np.array(list(itertools.combinations(range(s), s // 2)))
    cnt_t = np.broadcast_to(counts, (n, s)).T.copy()
    sum_t, sq_t = sums.T.copy(), sums_sq.T.copy()

    def sharpe(sel):
        count, total = sel @ cnt_t, sel @ sum_t
        mean = total / count
        var = (sel @ sq_t - total * mean) / (count - 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(var > 0, mean / np.sqrt(np.maximum(var, 0.0)), np.nan)
        return np.where(np.isnan(out), -np.inf, out)

    best = np.empty(len(combos), dtype=np.int64)
    rank = np.empty(len(combos))
    chunk = max(1, CHUNK_CELLS // n)
    for lo in range(0, len(combos), chunk):
        hi = min(lo + chunk, len(combos))
        sel = np.zeros((hi - lo, s))
        sel[np.arange(hi - lo)[:, None], combos[lo:hi]] = 1.0
        perf_is, perf_oos = sharpe(sel), sharpe(1.0 - sel)
        star = np.argmax(perf_is, axis=1)
        target = perf_oos[np.arange(hi - lo), star][:, None]
        best[lo:hi] = star
        rank[lo:hi] = (perf_oos < target).sum(axis=1) + ((perf_oos == target).sum(axis=1) + 1) / 2
    return best, rank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=20_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n, s, per_block = args.configs, 16, 400
    # Correlated strategies: a common factor plus noise, per-period sd 1%.
    common = rng.standard_normal((1, s)) * 0.2
    sums = common + rng.standard_normal((n, s)) * 0.1 + 0.004
    sums_sq = sums**2 / per_block + per_block * 1e-4 * (1 + 0.1 * rng.random((n, s)))
    counts = np.full(s, per_block)
    pbo_from_block_stats(counts, sums[:2000], sums_sq[:2000])  # compile
    t0 = time.perf_counter()
    compiled = pbo_from_block_stats(counts, sums, sums_sq)
    t_compiled = time.perf_counter() - t0
    t0 = time.perf_counter()
    best, rank = numpy_cscv(counts, sums, sums_sq)
    t_numpy = time.perf_counter() - t0
    result = {
        "configs": n,
        "splits": compiled.n_splits,
        "compiled_seconds": t_compiled,
        "numpy_seconds": t_numpy,
        "speedup": t_numpy / t_compiled,
        "same_best_in_sample": bool((best == compiled.best_in_sample).all()),
        "same_ranks": bool((rank / (n + 1) == compiled.relative_ranks).all()),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
