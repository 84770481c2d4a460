"""Benchmark the effective number of trials (a script, not a test).

1. Time the exact participation ratio on 20,000 configs x 6,300 periods (25 years of daily
   returns), float64 and float32, with and without the eigenvalues behind Li-Ji and
   Galwey; goal: under 60 s on two cores. Report float32's error against float64.
2. Measure the sampling estimator's error against the exact value on 10,000 correlated
   configs: momentum-like strategies (lookback x band grid over three assets, overlapping
   signals, as in seed 003) and a factor model.

Usage::

    python benchmarks/bench_effective_n.py            # full sizes (~3-4 minutes)
    python benchmarks/bench_effective_n.py --quick    # small sizes, a smoke run
    python benchmarks/bench_effective_n.py --part exact   # only part 1
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from stats import effective_number_of_trials


def factor_returns(n: int, t: int, seed: int, k: int = 5, loading: float = 0.5) -> np.ndarray:
    """``n`` series with ``k`` common factors plus idiosyncratic noise (float64)."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, t))
    factors = rng.standard_normal((k, t))
    for lo in range(0, n, 2048):
        hi = min(lo + 2048, n)
        out[lo:hi] = loading * rng.standard_normal((hi - lo, k)) @ factors
        out[lo:hi] += rng.standard_normal((hi - lo, t))
    out *= 0.01
    return out


def momentum_returns(n_lookbacks: int, n_bands: int, t: int, seed: int) -> np.ndarray:
    """Daily PnL of a time-series momentum grid on three assets (seed 003's sweep shape).

    Config (lookback, band): hold sign(trailing ``lookback``-day return) of each asset when
    its magnitude exceeds ``band``, equal weight; configs with nearby lookbacks or bands
    trade almost identically, so the effective number of trials is far below N.
    """
    rng = np.random.default_rng(seed)
    warm = 320
    vol = np.array([0.011, 0.008, 0.009])
    drift = np.array([0.0003, 0.0001, 0.0002])
    r = drift + vol * rng.standard_normal((t + warm, 3))
    c = np.vstack([np.zeros((1, 3)), np.cumsum(r, axis=0)])
    lookbacks = np.linspace(20, 300, n_lookbacks).astype(int)
    bands = np.linspace(0.0, 0.06, n_bands)
    out = np.empty((n_lookbacks * n_bands, t))
    for i, lb in enumerate(lookbacks):
        # Trailing return known at the close of day d-1 sets the position held on day d.
        mom = c[warm - 1 : warm - 1 + t] - c[warm - 1 - lb : warm - 1 - lb + t]
        nxt = r[warm : warm + t]
        for j, band in enumerate(bands):
            pos = np.where(mom > band, 1.0, np.where(mom < -band, -1.0, 0.0))
            out[i * n_bands + j] = (pos * nxt).mean(axis=1)
    flat = out.max(axis=1) == out.min(axis=1)
    out[flat] += 1e-9 * rng.standard_normal((int(flat.sum()), t))  # never-trading configs
    return out


def timed(label: str, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    res = fn(*args, **kwargs)
    elapsed = time.perf_counter() - t0
    print(f"  {label:<46s} {elapsed:7.1f} s")
    return res, elapsed


def part_exact(n: int, t: int) -> None:
    print(f"\n[1] exact participation ratio on {n:,} x {t:,} (factor model, k = 5)")
    x, _ = timed("generate data", factor_returns, n, t, 1)
    r64, _ = timed("float64, no eigenvalues", effective_number_of_trials, x, eigenvalues=False)
    r32, _ = timed(
        "float32, no eigenvalues",
        effective_number_of_trials,
        x,
        precision="float32",
        eigenvalues=False,
    )
    full64, _ = timed("float64, with eigenvalues (Li-Ji, Galwey)", effective_number_of_trials, x)
    full32, _ = timed(
        "float32, with eigenvalues",
        effective_number_of_trials,
        x,
        precision="float32",
    )
    assert r64.method == "exact" and full64.eigen_method == "gram"
    rel = abs(r32.sum_sq_correlation / r64.sum_sq_correlation - 1.0)
    print(f"  participation ratio  float64 {r64.participation_ratio:.6f}")
    print(f"                       float32 {r32.participation_ratio:.6f}  (rel. error {rel:.1e})")
    print(f"  adjusted PR {r64.participation_ratio_adjusted:.2f}  nyholt {r64.nyholt:.1f}")
    print(
        f"  li_ji {full64.li_ji:.1f} (float32 {full32.li_ji:.1f})  "
        f"galwey {full64.galwey:.1f} (float32 {full32.galwey:.1f})  "
        f"mean rho {r64.mean_pairwise_correlation:.4f}"
    )


def part_estimator(label: str, x: np.ndarray, sizes: list[int], seeds: int) -> None:
    n, t = x.shape
    print(f"\n[2] estimator vs exact on {label}: {n:,} x {t:,}")
    exact, _ = timed("exact (with eigenvalues)", effective_number_of_trials, x, method="exact")
    pr = exact.participation_ratio
    print(
        f"  exact PR {pr:.3f}  adjusted {exact.participation_ratio_adjusted:.3f}  "
        f"mean rho {exact.mean_pairwise_correlation:.3f}  li_ji {exact.li_ji:.1f}  "
        f"galwey {exact.galwey:.1f}"
    )
    print(
        f"  {'sample':>7s} {'time s':>7s} {'mean PR':>9s} {'rms err %':>9s} {'max err %':>9s}"
        f" {'mean se %':>9s} {'|z| max':>7s} {'li_ji':>8s} {'galwey':>8s}"
    )
    for size in sizes:
        ests, times = [], []
        for seed in range(seeds):
            t0 = time.perf_counter()
            ests.append(
                effective_number_of_trials(x, method="estimated", sample_size=size, seed=seed)
            )
            times.append(time.perf_counter() - t0)
        prs = np.array([e.participation_ratio for e in ests])
        ses = np.array([e.participation_ratio_se for e in ests])
        err = prs / pr - 1.0
        z = np.abs(prs - pr) / ses
        print(
            f"  {size:7d} {np.mean(times):7.2f} {prs.mean():9.3f} "
            f"{100 * np.sqrt(np.mean(err**2)):9.2f} {100 * np.abs(err).max():9.2f} "
            f"{100 * np.mean(ses) / pr:9.2f} {z.max():7.2f} "
            f"{np.mean([e.li_ji for e in ests]):8.1f} {np.mean([e.galwey for e in ests]):8.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--part", choices=["all", "exact", "estimator"], default="all")
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}   numpy {np.__version__}")
    if args.quick:
        part_exact(2_000, 630)
        part_estimator("momentum grid", momentum_returns(20, 25, 1_260, 2), [100, 200], 5)
        return
    if args.part in ("all", "exact"):
        part_exact(20_000, 6_300)
    if args.part == "exact":
        return
    part_estimator(
        "momentum grid (100 lookbacks x 100 bands)",
        momentum_returns(100, 100, 6_300, 2),
        [500, 1_000, 2_000, 4_000],
        10,
    )
    part_estimator(
        "factor model (k = 5, loading 0.2)",
        factor_returns(10_000, 6_300, 3, loading=0.2),
        [500, 1_000, 2_000, 4_000],
        10,
    )


if __name__ == "__main__":
    main()
