"""Report section 5, multiple testing: does the winner beat the benchmark after the whole search.

The sweep-wide tests (Reality Check, SPA, StepM), the configs called real (FDP-StepM), the
minimum detectable Sharpe ratio and the effective number of trials (bootstrap-implied) come
from the null summaries stored in the parts (:mod:`sweep.store._null_summary`), merged exactly:
no return matrix is needed at any sweep size. Returns are recomputed only for the descriptive
dimensionality of the returns, a block at a time (:mod:`sweep.report._returns_sample`, which
also checks the stored Sharpe ratios bit for bit; a sample of whole rows over every column is
checked by :mod:`sweep.report._row_check`; a difference withholds the verdict).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from stats import (
    PBOResult,
    StatsInputError,
    corrections_counted,
    deflated_sharpe_ratio,
    expected_max_sharpe,
    fixed_exp,
    fixed_log,
    return_moments,
)
from sweep.data._benchmark import benchmark_returns, describe_null
from sweep.engine._evaluate import ReturnsRunner, config_returns_blocks
from sweep.errors import USER_ERRORS, SweepError
from sweep.report._config_scan import SampleRule
from sweep.report._inference import (
    detectable_effect,
    discoveries,
    effective_number,
    implied_trials,
    sweep_wide_tests,
)
from sweep.report._load import RunData
from sweep.report._options import ReportOptions
from sweep.report._pbo_passes import pbo_over_parts
from sweep.report._ranking import QUANTILES, histogram, plain
from sweep.report._rebuild import recorded_panel
from sweep.report._returns_sample import (
    DIMENSIONALITY_MEANING,
    ReturnsDimensionality,
    recompute_returns,
)
from sweep.report._row_check import recomputation_failure
from sweep.report._sections import (
    BenchmarkInfo,
    ConfigShare,
    Corrections,
    Deflated,
    Deflation,
    DeflationError,
    Degradation,
    DetectableSharpe,
    Dimensionality,
    DimensionalityError,
    Discoveries,
    ExpectedMaxCurve,
    ImpliedTrials,
    InSampleBest,
    MultipleTestingSection,
    OutOfSampleSection,
    PBOSection,
    ReturnsInfo,
    TooFewReplications,
    Unavailable,
    Winner,
)
from sweep.report._step_progress import Steps
from sweep.report._tested_configs import column_at_most
from sweep.report._verdict import Verdict, VerdictInputs, judge_winner

#: Points of the E[max]-against-N curve.
CURVE_POINTS = 80
LOGIT_BINS = 30


@dataclass(frozen=True)
class TestingPlotData:
    """Arrays behind the multiple-testing figures (not part of report.json)."""

    pbo: PBOResult | None
    curve_n: NDArray[np.float64]
    curve_sr0: NDArray[np.float64]
    naive_n: int
    effective_n: float | None
    winner_sharpe: float | None
    periods_per_year: float


def _winner(run: RunData, params: list[str]) -> Winner | None:
    """The config with the highest Sharpe ratio of excess returns (the selection metric)."""
    best = run.scan.ranked
    if not len(best) or not np.isfinite(best.metric[0]):
        return None
    w = run.complete_rows_at(best.grid_index[:1]).iloc[0]
    return Winner(
        config_id=str(w["config_id"]),
        grid_index=int(w["grid_index"]),
        params={p: plain(w[p]) for p in params},
        sharpe=float(w["excess_sharpe"]),
        sharpe_ann=float(w["excess_sharpe_ann"]),
        own_sharpe_ann=float(w["sharpe_ann"]),
        n_obs=int(w["n_obs"]),
        skew=float(w["excess_skew"]),
        kurtosis=float(w["excess_kurtosis"]),
        t_stat=float(w["t_stat"]),
        p_value=float(w["p_value"]),
    )


def benchmark_section(run: RunData) -> BenchmarkInfo:
    """The benchmark, the null hypothesis in one sentence, and the benchmark's own Sharpe."""
    name = str(run.manifest.metric_options.get("benchmark", "zero"))
    null = describe_null(name)
    if name == "zero":
        return BenchmarkInfo(name=name, null=null, sharpe=None, sharpe_ann=None)
    try:
        panel = recorded_panel(run)
    except (SweepError, OSError) as exc:
        return BenchmarkInfo(name=name, null=null, sharpe=None, sharpe_ann=None, reason=str(exc))
    sharpe = float(return_moments(benchmark_returns(name, panel)[None, :]).sharpe[0])
    return BenchmarkInfo(
        name=name, null=null, sharpe=sharpe, sharpe_ann=sharpe * math.sqrt(run.periods_per_year)
    )


def _label(params: Mapping[str, Any], run: RunData) -> str:
    """``name=value`` of the parameters that vary across the grid (all if none varies)."""
    varying = set(run.varying)
    shown = {k: v for k, v in params.items() if k in varying} or params
    return ", ".join(
        f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items()
    )


def _deflated(winner: Winner, n: float, variance: float, ppy: float) -> Deflated | DeflationError:
    """E[max] of null Sharpes, PSR and DSR of the winner at one (trial count, variance)."""
    try:
        d = deflated_sharpe_ratio(
            winner.sharpe,
            winner.n_obs,
            winner.skew,
            winner.kurtosis,
            n_trials=n,
            trial_sharpe_variance=variance,
            method="exact" if n < 1e6 else "gumbel",
            check_per_period=False,
        )
    except USER_ERRORS as exc:
        return DeflationError(n_trials=n, error=str(exc))
    return Deflated(
        n_trials=n,
        sharpe_std=math.sqrt(variance),
        expected_max_sharpe=d.sr0,
        expected_max_sharpe_ann=d.sr0 * math.sqrt(ppy),
        winner_over_expected_max=winner.sharpe / d.sr0 if d.sr0 > 0 else None,
        z=d.z,
        dsr=d.dsr,
        psr=d.psr,
    )


def deflation(
    winner: Winner,
    naive: tuple[float, float] | None,
    implied: tuple[float, float] | None,
    ppy: float,
) -> Deflation:
    """The winner deflated at the naive and at the effective (trial count, variance)."""
    return Deflation(
        naive=None if naive is None else _deflated(winner, *naive, ppy),
        implied=None if implied is None else _deflated(winner, *implied, ppy),
    )


def pbo_sample(run: RunData, options: ReportOptions) -> tuple[SampleRule, int, bool]:
    """Which ok configs enter PBO: the rule a pass tests them by, how many, whether sampled.

    Every ok config with ``max_pbo_configs=None`` (``--pbo-sample all``); else the read's
    seeded sample (every ok config up to the cap).
    """
    if options.max_pbo_configs is None:
        return SampleRule(), run.scan.ok, False
    sample = run.scan.pbo
    return sample.rule, len(sample.grid_index), sample.sampled


def _pbo(run: RunData, options: ReportOptions) -> tuple[PBOSection | Unavailable, PBOResult | None]:
    rule, configs, sampled = pbo_sample(run, options)
    if configs < 2:
        return Unavailable(reason="needs at least 2 ok configs"), None
    try:
        found = pbo_over_parts(run, rule, configs)
    except StatsInputError as exc:
        return Unavailable(reason=str(exc)), None
    res = found.result
    best_rows, best_counts = np.unique(res.best_in_sample, return_counts=True)
    best_ids = [found.best_ids[int(i)] for i in best_rows]  # distinct rows, distinct ids
    order = sorted(zip(best_counts.tolist(), best_ids, strict=True), key=lambda c: (-c[0], c[1]))
    counts_hist, edges = np.histogram(res.logits, bins=LOGIT_BINS)
    n_periods = int(run.manifest.data["n_periods"]) - 1
    quantiles = np.quantile(res.logits, [0.05, 0.25, 0.5, 0.75, 0.95])
    s = res.n_blocks
    section = PBOSection(
        pbo=res.pbo,
        metric="per-period Sharpe ratio",
        blocks=res.n_blocks,
        splits=res.n_splits,
        configs=res.n_strategies,
        sampled=sampled,
        periods_per_block=found.periods_per_block,
        leading_periods_dropped=n_periods - s * found.periods_per_block,
        prob_oos_loss=res.prob_oos_loss,
        degradation=Degradation(
            slope=res.degradation_slope,
            intercept=res.degradation_intercept,
            r_squared=res.degradation_r2,
        ),
        logit_quantiles={k: float(v) for k, v in zip(QUANTILES, quantiles, strict=True)},
        logit_histogram=histogram(counts_hist, edges),
        in_sample_best=InSampleBest(
            distinct_configs=len(best_ids),
            most_frequent=tuple(
                ConfigShare(config_id=str(c), share=n / res.n_splits) for n, c in order[:5]
            ),
        ),
    )
    return section, res


def corrections(
    run: RunData, winner: Winner | None, reps: int, alpha: float
) -> Corrections | TooFewReplications | Unavailable:
    """Survivors of Holm and Benjamini-Hochberg among the bootstrap p-values.

    From the ok configs' p-values counted as the parts were read (``run.tested``); the
    first survivors by ``config_id`` are read back from the parts that can hold one.
    """
    counts = run.tested.p_counts
    tests = run.tested.finite_p
    if not tests:
        return Unavailable(
            reason="no bootstrap p-values (metrics.bootstrap_reps = 0, or constant configs)"
        )
    needed = math.ceil(tests / alpha) - 1
    if reps < needed:
        return TooFewReplications(
            tests=tests,
            bootstrap_reps=reps,
            reason=(
                f"Holm and Benjamini-Hochberg counts over {tests:,} per-config p-values need "
                f"B + 1 >= m / alpha, i.e. at least {needed:,} bootstrap replications (the "
                f"smallest p-value is 1/(B + 1) = {1.0 / (reps + 1):.2g}); the sweep has "
                f"{reps:,}. The sweep-wide tests above answer the same question for any m"
            ),
        )
    counted = corrections_counted(counts, alpha)
    holm = bh = None
    if winner is not None and math.isfinite(winner.p_value):
        holm, bh = counted.adjusted(winner.p_value)
    # Holm's adjusted value grows with p: its survivors are the configs up to a p-value.
    surviving = counted.values[counted.holm_adjusted <= alpha]
    survivors: list[str] = []
    if surviving.size:
        cut = float(surviving[-1])
        listed = run.listed(
            run.tested.parts_at_most_p(run.good_parts, cut),
            ["p_value"],
            column_at_most("p_value", cut),
            20,
        )
        survivors = [str(i) for i in listed.column("config_id").to_pylist()]
    return Corrections(
        alpha=alpha,
        tests=counted.n_tests,
        raw=counted.n_raw,
        holm=counted.n_holm,
        benjamini_hochberg=counted.n_bh,
        holm_survivors=tuple(survivors),
        bootstrap_reps=reps,
        smallest_p_value=1.0 / (reps + 1),
        winner_holm_adjusted=holm,
        winner_bh_adjusted=bh,
    )


def expected_max_curve(
    naive_n: int, sharpe_std: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """E[max] of null Sharpes (per period) against N, from 1 to ten times the naive N."""
    top = max(10.0 * naive_n, 10.0)
    # Evenly spaced in log N, through the fixed exp/log (np.logspace's pow is CPU-dispatched).
    n = np.unique(np.round(fixed_exp(np.linspace(0.0, float(fixed_log(top)), CURVE_POINTS))))
    sr0 = np.array([expected_max_sharpe(float(k), sharpe_std) for k in n])
    return n.astype(np.float64), sr0


def _dimensionality(
    run: RunData,
    options: ReportOptions,
    steps: Steps,
    recompute: ReturnsRunner,
) -> tuple[ReturnsInfo, Dimensionality | DimensionalityError | None]:
    """Recomputed returns and their dimensionality (descriptive; not a trial count)."""
    dimensions = ReturnsDimensionality(options)
    with steps.step("recompute returns"):
        returns_info = recompute_returns(run, options, recompute, dimensions)
    if not returns_info.recomputed or not returns_info.configs:
        return returns_info, None
    with steps.step("dimensionality of the returns"):
        try:
            dims: Dimensionality | DimensionalityError = dimensions.result(
                run.scan.ok, returns_info.sampled
            )
        except USER_ERRORS as exc:
            dims = DimensionalityError(error=str(exc), meaning=DIMENSIONALITY_MEANING)
    return returns_info, dims


def _walk_forward_psr(run: RunData, oos: OutOfSampleSection | Unavailable | None) -> float | None:
    """The walk-forward PSR for the verdict (None: not in the spec; NaN: not computed).

    A walk-forward the spec asks for but the report could not compute does not hold.
    """
    validation = run.manifest.spec.get("validation")
    if not (isinstance(validation, Mapping) and validation.get("walk_forward")):
        return None
    walk = oos.walk_forward if isinstance(oos, OutOfSampleSection) else None
    return math.nan if walk is None else walk.psr


def _verdict(
    run: RunData,
    section: MultipleTestingSection,
    options: ReportOptions,
    oos_psr: float | None,
) -> Verdict | None:
    winner = section.winner
    if winner is None:
        return None
    tests = section.sweep_wide
    implied = section.deflation.implied if section.deflation is not None else None
    implied = implied if isinstance(implied, Deflated) else None
    pbo = section.pbo if isinstance(section.pbo, PBOSection) else None
    detectable = section.detectable if isinstance(section.detectable, DetectableSharpe) else None
    called = section.discoveries if isinstance(section.discoveries, Discoveries) else None
    return judge_winner(
        VerdictInputs(
            n_configs=section.naive_n,
            winner=_label(winner.params, run),
            winner_sharpe_ann=winner.sharpe_ann,
            null=section.benchmark.null,
            benchmark_sharpe_ann=section.benchmark.sharpe_ann,
            sweep_pvalue=tests.winner_pvalue if not isinstance(tests, Unavailable) else None,
            reps=tests.reps if not isinstance(tests, Unavailable) else 0,
            alpha=options.alpha,
            prob_oos_loss=None if pbo is None else pbo.prob_oos_loss,
            pbo=None if pbo is None else pbo.pbo,
            implied_n=None if implied is None else implied.n_trials,
            dsr_implied=None if implied is None else implied.dsr,
            complete=run.scan.done == run.total,
            oos_psr=oos_psr,
            integrity_failure=recomputation_failure(section.returns),
            mde_sharpe_ann=detectable.sharpe_ann if detectable else None,
            single_test_mde_ann=detectable.single_test_sharpe_ann if detectable else None,
            power=detectable.power if detectable else None,
            periods=detectable.periods if detectable else None,
            periods_per_year=run.periods_per_year,
            called_real=called.count if called else None,
            fdp_gamma=called.gamma if called else None,
        )
    )


def testing_section(
    run: RunData,
    options: ReportOptions,
    steps: Steps,
    oos: OutOfSampleSection | Unavailable | None = None,
    recompute: ReturnsRunner = config_returns_blocks,
) -> tuple[MultipleTestingSection | Unavailable, Verdict | None, TestingPlotData]:
    """Section 5 of the report, with the verdict.

    Parameters
    ----------
    run : RunData
        The run folder, read.
    options : ReportOptions
        Sample sizes, seeds, alpha.
    steps : Steps
        Progress and timings of the long steps.
    oos : OutOfSampleSection or Unavailable, optional
        The out-of-sample section: with walk-forward, its PSR decides "holds out of sample".
    recompute : ReturnsRunner, optional
        What recomputes the sampled configs' returns (here, or Ray tasks).

    Returns
    -------
    section : MultipleTestingSection or Unavailable
        Benchmark and null, winner, sweep-wide tests, the configs called real (FDP-StepM),
        the minimum detectable Sharpe ratio, per-config corrections, the effective number of
        trials and the deflated Sharpe at it and at the naive count, PBO, dimensionality,
        the E[max] curve.
    verdict : Verdict or None
        None when no config finished ok.
    plot_data : TestingPlotData
        Arrays for the figures.
    """
    ppy = run.periods_per_year
    empty = TestingPlotData(None, np.array([]), np.array([]), 0, None, None, ppy)
    if not run.scan.ok:
        return Unavailable(reason="no config finished with status ok"), None, empty
    n_obs = int(run.facts.first_n_obs or 0)
    naive = run.scan.sharpe.count
    winner = _winner(run, run.param_names)
    variance = run.scan.sharpe.variance if run.scan.sharpe.variance is not None else math.nan
    with steps.step("sweep-wide tests"):
        sweep_wide = sweep_wide_tests(run, winner, options.alpha, n_obs)
        implied = implied_trials(run.null_summary, run.facts)
    with steps.step("configs called real"):
        varying = [p for p in run.param_names if p in set(run.varying)] or run.param_names
        called = discoveries(run, varying, options.alpha, options.fdp_gamma)
        detectable = detectable_effect(run.null_summary, run.facts, run.scan.ok, options.alpha, ppy)
    with steps.step("deflated Sharpe ratio"):
        deflated = (
            deflation(
                winner,
                (float(naive), variance) if math.isfinite(variance) else None,
                (implied.n, implied.null_sharpe_std**2)
                if isinstance(implied, ImpliedTrials)
                else None,
                ppy,
            )
            if winner is not None
            else None
        )
    with steps.step("probability of backtest overfitting"):
        pbo, pbo_result = _pbo(run, options)
    reps = int(run.manifest.metric_options.get("bootstrap_reps", 0))
    returns_info, dims = _dimensionality(run, options, steps, recompute)
    std = math.sqrt(variance) if math.isfinite(variance) else 0.0
    curve_n, curve_sr0 = expected_max_curve(naive, std) if naive else (np.array([]), np.array([]))
    section = MultipleTestingSection(
        naive_n=naive,
        naive_n_definition="configs that finished with status ok and a finite excess Sharpe",
        selection_metric="Sharpe ratio of excess returns over the benchmark",
        benchmark=benchmark_section(run),
        trial_sharpe_variance=variance,
        trial_sharpe_std=math.sqrt(variance) if math.isfinite(variance) else None,
        sharpe_convention="per period (mean / std, ddof=1); kurtosis RAW (normal = 3)",
        winner=winner,
        sweep_wide=sweep_wide,
        discoveries=called,
        detectable=detectable,
        implied_trials=implied,
        effective_number_of_trials=effective_number(
            implied, naive, deflated.implied if deflated is not None else None
        ),
        deflation=deflated,
        pbo=pbo,
        corrections=corrections(run, winner, reps, options.alpha),
        returns=returns_info,
        dimensionality=dims,
        expected_max_curve=ExpectedMaxCurve(
            n=tuple(curve_n.tolist()), expected_max_sharpe=tuple(curve_sr0.tolist())
        ),
    )
    verdict = _verdict(run, section, options, _walk_forward_psr(run, oos))
    plot = TestingPlotData(
        pbo_result,
        curve_n,
        curve_sr0,
        naive,
        implied.n if isinstance(implied, ImpliedTrials) else None,
        winner.sharpe if winner else None,
        ppy,
    )
    return section, verdict, plot
