"""Measured error rates of "how many are real" (FDP-StepM) and of the minimum detectable effect.

Simulated sweeps: ``--configs`` excess-return series of ``--periods`` days laid out like a
grid (families of neighbouring configs sharing a factor, every config sharing a market
factor: correlation 0.65 within a family, 0.09 across), each reduced to null summaries in
four parts and merged, exactly as a run's parts are (B = ``--reps`` circular block-bootstrap
replications, block 10, ``stepm_top_k`` = ``--top-k``). Three kinds of panel:

* ``normal``: Gaussian innovations;
* ``t5-regime``: Student-t(5) innovations scaled by a volatility regime shared by every
  config (a two-state Markov chain: calm, volatility 1, turns stressed, volatility 2, with
  probability 5% a day and back with 2%; rescaled to unit mean variance);
* ``ar1``: Gaussian innovations with AR(1) coefficient 0.2 in every series (serial
  dependence the block bootstrap's long-run variance must absorb).

**FDP** (``--part fdp``): 5% of the configs, in two contiguous blocks of the grid, have a
true per-period excess Sharpe ratio of ``u / sqrt(n)`` with ``u`` uniform on [2, 6] (0.6 to 1.9
annualised at n = 2,520); 10% sit below the benchmark (``u = -2``). On each panel FDP-StepM
(gamma 0.1, alpha 0.05) calls configs real; the false discovery proportion (false / called,
0 when none) and the share of true edges found are recorded, with StepM's beside them.
Reported: mean FDP and its 95% interval (mean +- 1.96 s.e. over panels), P(FDP > gamma) with
its exact (Clopper-Pearson) interval, the mean share found.

**MDE** (``--part mde``): every config is null; on each panel the report's minimum
detectable Sharpe ratio (80% power, alpha 0.05) is computed from the panel's own summary, and
one config is given exactly that edge (its mean raised by MDE x its standard deviation; the
centred resamples do not move). Reported: the share of panels in which the planted config's
sweep-wide p-value is at most alpha (the model says 80%), with its exact interval; the share
in which the winner's is (the verdict's first criterion); the mean MDE annualised.

**null** (``--part null``, not in ``all``): pure-noise panels; how often the sweep-wide
test rejects (its false-positive rate, StepM's FWER there), beside the same maximum without
Hansen's recentring and studentised by each config's sample standard deviation instead of
the bootstrap's omega: the diagnosis of the excess FWER the FDP part shows.

Run: ``nice python benchmarks/bench_discoveries.py [--part all] [--panels 300]`` (about 12
minutes on two shared cores at the defaults). Prints one JSON line per scenario and a
Markdown table.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from stats import (
    NullSummary,
    ResampleDraws,
    block_starts_and_lengths,
    bootstrap_long_run_sd,
    centred_resample_means,
    config_null_stats,
    fdp_stepm,
    merge_null_summaries,
    minimum_detectable_effect,
    stepm,
    summarize_null,
    sweep_wide_pvalue,
)

PPY = 252
GAMMA, ALPHA, POWER = 0.1, 0.05, 0.8
FAMILY = 20  # configs per family (neighbours in the grid)
LOADINGS = (0.3, 0.75)  # market, family; the rest idiosyncratic
BLOCK = 10


@dataclass(frozen=True)
class Design:
    configs: int
    periods: int
    reps: int
    top_k: int
    kind: str


def _innovations(rng: np.random.Generator, shape: tuple[int, int], kind: str) -> np.ndarray:
    if kind == "t5-regime":
        return rng.standard_t(5, size=shape) / math.sqrt(5.0 / 3.0)
    return rng.standard_normal(shape)


def _regime(rng: np.random.Generator, n: int) -> np.ndarray:
    """A volatility multiplier shared by every config: 1 calm, 2 stressed (Markov)."""
    state, out = 0, np.empty(n)
    u = rng.random(n)
    for i in range(n):
        state = (1 if u[i] < 0.05 else 0) if state == 0 else (0 if u[i] < 0.02 else 1)
        out[i] = 2.0 if state else 1.0
    return out / math.sqrt(np.mean(out**2))


def panel(design: Design, sharpe: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Excess returns (configs x periods) with per-period Sharpe ratios ``sharpe``."""
    m, n = design.configs, design.periods
    a, b = LOADINGS
    c = math.sqrt(1.0 - a * a - b * b)
    families = -(-m // FAMILY)
    market = _innovations(rng, (1, n), design.kind)
    family = _innovations(rng, (families, n), design.kind)
    own = _innovations(rng, (m, n), design.kind)
    e = a * market + b * np.repeat(family, FAMILY, axis=0)[:m] + c * own
    if design.kind == "t5-regime":
        e = e * _regime(rng, n)[None, :]
    if design.kind == "ar1":
        phi = 0.2
        for i in range(1, n):
            e[:, i] += phi * e[:, i - 1]
        e *= math.sqrt(1.0 - phi * phi)
    return 0.01 * (e + sharpe[:, None])


def merged(
    mean: np.ndarray, sd: np.ndarray, omega: np.ndarray, c: np.ndarray, n: int, top_k: int
) -> NullSummary:
    """The null summaries of four parts of the configs, merged (as a run's parts are)."""
    idx = np.arange(mean.size, dtype=np.int64)
    cuts = np.linspace(0, mean.size, 5).astype(int)
    return merge_null_summaries(
        [
            summarize_null(idx[lo:hi], mean[lo:hi], sd[lo:hi], omega[lo:hi], c[lo:hi], n, top_k)
            for lo, hi in itertools.pairwise(cuts)
        ]
    )


def summaries(e: np.ndarray, draws: ResampleDraws, top_k: int):
    """Merged null summary, the per-config statistics, the centred resamples, means, sds."""
    n = e.shape[1]
    c, omega = centred_resample_means(e, draws), bootstrap_long_run_sd(e, draws)
    mean, sd = e.mean(axis=1), e.std(axis=1, ddof=1)
    stats = config_null_stats(mean, omega, c, n)
    return merged(mean, sd, omega, c, n, top_k), stats, c, mean, sd


def _draws(design: Design, rng: np.random.Generator) -> ResampleDraws:
    starts, lengths = block_starts_and_lengths(rng, design.periods, BLOCK, design.reps, "circular")
    return ResampleDraws.from_blocks(design.periods, starts, lengths)


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    lo = 0.0 if k == 0 else float(sps.beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(sps.beta.ppf(0.975, k + 1, n - k))
    return lo, hi


def run_fdp(design: Design, panels: int, seed: int) -> dict[str, object]:
    m, n = design.configs, design.periods
    root = np.random.SeedSequence([seed, 1])
    fdp, found, stepm_found, stepm_false, called, k_end, inexact = [], [], [], [], [], [], 0
    for child in root.spawn(panels):
        rng = np.random.default_rng(child)
        u = np.zeros(m)
        true = np.zeros(m, dtype=bool)
        n_true = max(1, round(0.05 * m))
        starts = (0, FAMILY * 3)  # two blocks of neighbouring configs
        for j, s in enumerate(starts):
            size = n_true // 2 + (n_true % 2 if j == 0 else 0)
            true[s : s + size] = True
        u[true] = rng.uniform(2.0, 6.0, int(true.sum()))
        bad = rng.choice(np.flatnonzero(~true), size=round(0.10 * m), replace=False)
        u[bad] = -2.0
        e = panel(design, u / math.sqrt(n), rng)
        summary, st, _, _, _ = summaries(e, _draws(design, rng), design.top_k)
        idx = np.arange(m)
        res = fdp_stepm(summary, idx, st.t_stat, GAMMA, ALPHA)
        rej = np.zeros(m, dtype=bool)
        rej[res.rejected] = True
        false = int((rej & ~true).sum())
        fdp.append(false / max(int(rej.sum()), 1))
        found.append(float((rej & true).sum()) / true.sum())
        called.append(int(rej.sum()))
        k_end.append(res.k)
        inexact += int(not (res.exact and res.all_subsets))
        sm = np.zeros(m, dtype=bool)
        sm[stepm(summary, idx, st.t_stat, ALPHA).rejected] = True
        stepm_found.append(float((sm & true).sum()) / true.sum())
        stepm_false.append(int((sm & ~true).sum()))
    f = np.array(fdp)
    se = f.std(ddof=1) / math.sqrt(panels)
    exceed = int((f > GAMMA).sum())
    return {
        "part": "fdp",
        "kind": design.kind,
        "configs": m,
        "periods": n,
        "reps": design.reps,
        "top_k": design.top_k,
        "panels": panels,
        "true_edges": int(true.sum()),
        "mean_fdp": float(f.mean()),
        "mean_fdp_95": [float(f.mean() - 1.96 * se), float(f.mean() + 1.96 * se)],
        "p_fdp_above_gamma": exceed / panels,
        "p_fdp_above_gamma_95": clopper_pearson(exceed, panels),
        "share_found": float(np.mean(found)),
        "mean_called_real": float(np.mean(called)),
        "mean_k": float(np.mean(k_end)),
        "panels_with_a_bound": inexact,
        "stepm_share_found": float(np.mean(stepm_found)),
        "stepm_fwer": float(np.mean(np.array(stepm_false) > 0)),
    }


def run_mde(design: Design, panels: int, seed: int) -> dict[str, object]:
    m, n = design.configs, design.periods
    root = np.random.SeedSequence([seed, 2])
    planted_hits = winner_hits = winner_is_planted = 0
    mdes = []
    for child in root.spawn(panels):
        rng = np.random.default_rng(child)
        e = panel(design, np.zeros(m), rng)
        summary, st, c, mean, sd = summaries(e, _draws(design, rng), design.top_k)
        sigma = float(np.sqrt(np.mean((st.omega / (math.sqrt(n) * sd)) ** 2)))
        mde = minimum_detectable_effect(summary, sigma, ALPHA, POWER)
        mdes.append(mde.sharpe * math.sqrt(PPY))
        planted = int(rng.integers(m))
        mean2 = mean.copy()
        mean2[planted] += mde.sharpe * sd[planted]
        # A constant shift leaves the series' long-run sd as it is.
        summary2 = merged(mean2, sd, st.omega, c, n, design.top_k)
        t2 = config_null_stats(mean2, st.omega, c, n).t_stat
        planted_hits += sweep_wide_pvalue(summary2, float(t2[planted])) <= ALPHA
        winner = int(np.argmax(mean2 / sd))  # the report's winner: highest excess Sharpe
        winner_hits += sweep_wide_pvalue(summary2, float(t2[winner])) <= ALPHA
        winner_is_planted += winner == planted
    return {
        "part": "mde",
        "kind": design.kind,
        "configs": m,
        "periods": n,
        "reps": design.reps,
        "panels": panels,
        "power_asked": POWER,
        "planted_detected": planted_hits / panels,
        "planted_detected_95": clopper_pearson(planted_hits, panels),
        "winner_detected": winner_hits / panels,
        "winner_is_planted": winner_is_planted / panels,
        "mean_mde_ann": float(np.mean(mdes)),
        "mde_ann_range": [float(np.min(mdes)), float(np.max(mdes))],
    }


def run_null(design: Design, panels: int, seed: int) -> dict[str, object]:
    """Pure-noise panels: how often the sweep-wide test rejects, and why (the diagnosis).

    The engine's test (bootstrap-studentised, Hansen's consistent recentring) against the
    same maximum without the recentring, and studentised by each config's sample standard
    deviation instead of the bootstrap's omega.
    """
    m, n = design.configs, design.periods
    root = np.random.SeedSequence([seed, 3])
    engine = plain = by_sd = 0
    allowed = ALPHA * (design.reps + 1)
    for child in root.spawn(panels):
        rng = np.random.default_rng(child)
        e = panel(design, np.zeros(m), rng)
        summary, st, c, mean, sd = summaries(e, _draws(design, rng), design.top_k)
        engine += sweep_wide_pvalue(summary, float(np.nanmax(st.t_stat))) <= ALPHA
        root_n = math.sqrt(n)
        null = (root_n * c / st.omega[:, None]).max(axis=0)
        plain += 1 + np.count_nonzero(null >= st.t_stat.max()) <= allowed
        null_sd = (root_n * c / sd[:, None]).max(axis=0)
        by_sd += 1 + np.count_nonzero(null_sd >= (root_n * mean / sd).max()) <= allowed
    return {
        "part": "null",
        "kind": design.kind,
        "configs": m,
        "periods": n,
        "reps": design.reps,
        "panels": panels,
        "rejects_engine": engine / panels,
        "rejects_engine_95": clopper_pearson(engine, panels),
        "rejects_without_recentring": plain / panels,
        "rejects_studentised_by_sd": by_sd / panels,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["fdp", "mde", "null", "all"], default="all")
    parser.add_argument("--panels", type=int, default=300)
    parser.add_argument("--configs", type=int, default=400)
    parser.add_argument("--periods", type=int, default=2520)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--top-k", type=int, default=32)
    parser.add_argument("--kinds", default="normal,t5-regime,ar1")
    parser.add_argument("--seed", type=int, default=20261203)
    args = parser.parse_args()
    rows = []
    for kind in args.kinds.split(","):
        design = Design(args.configs, args.periods, args.reps, args.top_k, kind)
        for part, fn in (("fdp", run_fdp), ("mde", run_mde), ("null", run_null)):
            if args.part == part or (args.part == "all" and part != "null"):
                start = time.perf_counter()
                row = fn(design, args.panels, args.seed)
                row["seconds"] = round(time.perf_counter() - start, 1)
                print(json.dumps(row), flush=True)
                rows.append(row)
    print()
    print(
        "| panels | mean FDP (95% CI) | P(FDP > 0.1) (95% CI) | share of true edges found "
        "| StepM: share found, FWER |"
    )
    print("| --- | --- | --- | --- | --- |")
    for r in (r for r in rows if r["part"] == "fdp"):
        lo, hi = r["mean_fdp_95"]
        plo, phi = r["p_fdp_above_gamma_95"]
        print(
            f"| {r['kind']}, {r['panels']} | {r['mean_fdp']:.3f} ({lo:.3f} - {hi:.3f}) | "
            f"{r['p_fdp_above_gamma']:.3f} ({plo:.3f} - {phi:.3f}) | "
            f"{r['share_found']:.1%} | {r['stepm_share_found']:.1%}, {r['stepm_fwer']:.1%} |"
        )
    print()
    print(
        "| panels | mean MDE (ann.) | planted at the MDE detected (95% CI) | winner's p <= alpha |"
    )
    print("| --- | --- | --- | --- |")
    for r in (r for r in rows if r["part"] == "mde"):
        lo, hi = r["planted_detected_95"]
        print(
            f"| {r['kind']}, {r['panels']} | {r['mean_mde_ann']:.2f} | "
            f"{r['planted_detected']:.1%} ({lo:.1%} - {hi:.1%}) | {r['winner_detected']:.1%} |"
        )
    _print_null(rows)


def _print_null(rows: list[dict[str, object]]) -> None:
    nulls = [r for r in rows if r["part"] == "null"]
    if not nulls:
        return
    print()
    print("| panels | sweep-wide test rejects (95% CI) | without recentring | studentised by sd |")
    print("| --- | --- | --- | --- |")
    for r in nulls:
        lo, hi = r["rejects_engine_95"]  # type: ignore[misc]
        print(
            f"| {r['kind']}, {r['panels']} | {r['rejects_engine']:.1%} ({lo:.1%} - {hi:.1%}) | "
            f"{r['rejects_without_recentring']:.1%} | {r['rejects_studentised_by_sd']:.1%} |"
        )


if __name__ == "__main__":
    main()
