"""The plain-language verdict on the sweep's winner: one small, documented rule.

Rule (:func:`judge_winner`): the winner (the config with the highest Sharpe ratio of excess
returns over the spec's benchmark) is called **likely real** only if

1. the sweep-wide test rejects for it: its p-value against the bootstrap distribution of the
   MAXIMUM studentised statistic over every config tried (Hansen's SPA null, joint
   resamples) is at most ``alpha`` (default 0.05); and
2. the selection holds out of sample. With walk-forward validation in the spec
   (``[validation] walk_forward``), the rule re-optimised on each training window and traded
   on the next test window has stitched out-of-sample excess returns with a probabilistic
   Sharpe ratio (against zero excess) of at least 0.95. Without it: in combinatorially
   symmetric cross-validation the in-sample best has a negative out-of-sample excess Sharpe
   in fewer than half the splits.

Otherwise it is **not distinguishable from selection luck**. Without bootstrap replications
(``metrics.bootstrap_reps = 0``) there is no sweep-wide test and no verdict. Nor is there
one when the report's recomputation failed (``integrity_failure``: configs evaluated again
from the recorded sweep do not give their stored rows bit for bit,
:mod:`sweep.report._row_check`): the statistics would describe rows the sweep's inputs do
not give. The deflated
Sharpe ratio, the probability of backtest overfitting and the dimensionality of the returns
are reported beside the verdict but do not decide it: PBO cannot see an edge every config
shares, and a dimensionality is not a count of trials.

The paragraph also says what the verdict can and cannot see: the null families its error
rates were measured on (:data:`CALIBRATED_NULL_FAMILIES`), the smallest edge the sweep-wide
test detects at 80% power (so "not distinguishable" is read with its size), how many configs
FDP-StepM calls real, and what to do next.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sweep.common._serial import OMIT_NONE
from sweep.report._oos_selection import OOS_PSR_THRESHOLD

#: Default level of the sweep-wide test.
ALPHA = 0.05
#: The in-sample best must lose out of sample in fewer than this share of CSCV splits.
OOS_LOSS_THRESHOLD = 0.5
#: The null families of the docs' calibration table (``docs/benchmarks/calibration.md``, made
#: by ``benchmarks/bench_calibration.py``),
#: named in the verdict: extend this tuple when the calibration table gains a family.
CALIBRATED_NULL_FAMILIES: tuple[str, ...] = (
    "martingale",
    "GARCH(1,1)-t",
    "volatility regime",
    "drifting correlated assets with buy-and-hold benchmark",
    "listings/delistings (xs_momentum)",
    "one asset under long-only sma_cross",
    "the default metrics (zero benchmark)",
)
#: The rule, as the report states it.
RULE = (
    "Rule: the winner is called likely real only if its sweep-wide p-value (against the "
    "bootstrap maximum over every config tried) is at most alpha and the selection holds out "
    "of sample: with walk-forward validation, the re-optimised rule's stitched out-of-sample "
    f"excess returns have PSR >= {OOS_PSR_THRESHOLD}; otherwise the in-sample best loses to "
    f"the benchmark out of sample in fewer than {OOS_LOSS_THRESHOLD:.0%} of the CSCV splits."
)


@dataclass(frozen=True)
class VerdictInputs:
    """What the verdict is decided from.

    Attributes
    ----------
    n_configs : int
        Configs tested (finished ok with a non-constant excess series).
    winner : str
        The winner's parameters, as text.
    winner_sharpe_ann : float
        Its annualised Sharpe ratio of excess returns.
    null : str
        The null hypothesis, one sentence.
    benchmark_sharpe_ann : float or None
        The benchmark's own annualised Sharpe ratio (None for the zero benchmark).
    sweep_pvalue : float or None
        The winner's p-value against the sweep-wide maximum (None without bootstrap).
    reps : int
        Bootstrap replications.
    alpha : float
        Level of the test.
    prob_oos_loss : float or None
        CSCV probability that the in-sample best has a negative out-of-sample excess Sharpe.
    pbo : float or None
        Probability of backtest overfitting (reported, not a gate).
    implied_n : float or None
        Number of independent trials as lucky as the grid (from the bootstrap maxima).
    dsr_implied : float or None
        Deflated Sharpe ratio at ``implied_n``.
    complete : bool
        Whether every config of the grid is done.
    oos_psr : float or None
        PSR of the walk-forward out-of-sample excess returns (None without walk-forward in
        the spec; NaN when it is configured but could not be computed: does not hold).
    integrity_failure : str or None
        What did not reproduce when the report recomputed stored rows (None: everything
        recomputed matched, or nothing could be recomputed); withholds the verdict.
    mde_sharpe_ann : float or None
        The smallest annualised excess Sharpe ratio the sweep-wide test detects with
        ``power`` (:func:`stats.minimum_detectable_effect`).
    single_test_mde_ann : float or None
        The same for one config fixed in advance and tested alone (a holdout as long).
    power : float or None
        The power of the minimum detectable effect.
    periods : int or None
        Periods of the sample.
    periods_per_year : float or None
        To say the sample's length in years.
    called_real : int or None
        Configs FDP-StepM calls real.
    fdp_gamma : float or None
        The false discovery proportion it tolerates (with probability ``1 - alpha``).
    """

    n_configs: int
    winner: str
    winner_sharpe_ann: float
    null: str
    benchmark_sharpe_ann: float | None
    sweep_pvalue: float | None
    reps: int
    alpha: float
    prob_oos_loss: float | None
    pbo: float | None
    implied_n: float | None
    dsr_implied: float | None
    complete: bool = True
    oos_psr: float | None = None
    integrity_failure: str | None = None
    mde_sharpe_ann: float | None = None
    single_test_mde_ann: float | None = None
    power: float | None = None
    periods: int | None = None
    periods_per_year: float | None = None
    called_real: int | None = None
    fdp_gamma: float | None = None


@dataclass(frozen=True)
class Verdict:
    """The verdict.

    Attributes
    ----------
    likely_real : bool or None
        True: the winner passes the rule; False: it does not; None: no sweep-wide test, or
        a failed integrity check (``integrity_failure``).
    headline : str
        One line.
    reasons : tuple of str
        Each criterion, met or not.
    paragraph : str
        The plain-language paragraph the report ends its statistics with.
    rule : str
        The rule, as the report states it (:data:`RULE`).
    integrity_failure : str or None
        The failed integrity check that withheld the verdict (absent from report.json when
        there is none).
    calibrated_on : tuple of str
        The null families the rule's error rates were measured on
        (:data:`CALIBRATED_NULL_FAMILIES`; empty in reports written before it was stated).
    minimum_detectable_sharpe_ann : float or None
        The smallest annualised excess Sharpe ratio the sweep-wide test detects at 80%
        power.
    called_real : int or None
        Configs FDP-StepM calls real at the report's level.
    next_steps : str
        What the reader should do next.
    """

    likely_real: bool | None
    headline: str
    reasons: tuple[str, ...]
    paragraph: str
    rule: str = RULE
    integrity_failure: str | None = field(default=None, metadata=OMIT_NONE)
    calibrated_on: tuple[str, ...] = ()
    minimum_detectable_sharpe_ann: float | None = field(default=None, metadata=OMIT_NONE)
    called_real: int | None = field(default=None, metadata=OMIT_NONE)
    next_steps: str = ""


def holds_out_of_sample(prob_oos_loss: float | None, oos_psr: float | None) -> bool:
    """Criterion 2: walk-forward PSR when there is walk-forward, else the CSCV loss rate."""
    if oos_psr is not None:
        return oos_psr >= OOS_PSR_THRESHOLD
    return prob_oos_loss is not None and prob_oos_loss < OOS_LOSS_THRESHOLD


def is_likely_real(
    sweep_pvalue: float | None,
    prob_oos_loss: float | None,
    alpha: float = ALPHA,
    oos_psr: float | None = None,
) -> bool | None:
    """The rule of the module docstring; None when there is no sweep-wide p-value."""
    if sweep_pvalue is None:
        return None
    return sweep_pvalue <= alpha and holds_out_of_sample(prob_oos_loss, oos_psr)


def _reasons(inputs: VerdictInputs) -> tuple[str, ...]:
    out = []
    if inputs.integrity_failure is not None:
        out.append(f"integrity check failed (no verdict): {inputs.integrity_failure}")
    if inputs.sweep_pvalue is not None:
        ok = inputs.sweep_pvalue <= inputs.alpha
        out.append(
            f"sweep-wide p-value of the winner {inputs.sweep_pvalue:.4f} "
            f"({'<=' if ok else '>'} alpha {inputs.alpha:g})"
        )
    if inputs.oos_psr is not None and math.isnan(inputs.oos_psr):
        out.append("walk-forward out-of-sample check could not be computed (does not hold)")
    elif inputs.oos_psr is not None:
        ok = inputs.oos_psr >= OOS_PSR_THRESHOLD
        out.append(
            f"walk-forward out-of-sample PSR {inputs.oos_psr:.3f} "
            f"({'>=' if ok else '<'} {OOS_PSR_THRESHOLD})"
        )
    elif inputs.prob_oos_loss is None:
        out.append("out-of-sample check (CSCV) could not be computed")
    else:
        ok = inputs.prob_oos_loss < OOS_LOSS_THRESHOLD
        out.append(
            f"P(out-of-sample loss of the in-sample best) {inputs.prob_oos_loss:.3f} "
            f"({'<' if ok else '>='} {OOS_LOSS_THRESHOLD})"
        )
    return tuple(out)


def judge_winner(inputs: VerdictInputs) -> Verdict:
    """Decide whether the sweep's winner is likely a real edge over the benchmark.

    Parameters
    ----------
    inputs : VerdictInputs
        The winner, the sweep-wide p-value, the out-of-sample check and what is reported
        beside them.

    Returns
    -------
    Verdict
        ``likely_real`` from :func:`is_likely_real`; the paragraph names the null, the
        benchmark, the p-value and what it accounts for.

    Notes
    -----
    The sweep-wide p-value compares the winner's studentised excess return with the
    bootstrap distribution of the best of ALL configs on resamples of data with no edge, so
    it accounts for every config tried and for their correlation, without assuming a number
    of independent trials. Its false-positive rate and power are measured by
    ``benchmarks/bench_calibration.py``.
    """
    likely = is_likely_real(inputs.sweep_pvalue, inputs.prob_oos_loss, inputs.alpha, inputs.oos_psr)
    failure = inputs.integrity_failure
    if failure is not None:
        likely = None
        headline = (
            "No verdict: the integrity check failed (recomputed configs do not reproduce "
            "their stored rows)."
        )
    elif likely is None:
        headline = "No verdict: the sweep has no bootstrap replications (bootstrap_reps = 0)."
    elif likely:
        headline = "The winner is likely real: it beats the benchmark after the whole search."
    else:
        headline = "The winner is not distinguishable from selection luck."
    bench = (
        f"; the benchmark's own is {inputs.benchmark_sharpe_ann:.2f}"
        if inputs.benchmark_sharpe_ann is not None
        else ""
    )
    parts = [
        inputs.null,
        f"The sweep tested {inputs.n_configs:,} configurations. The best "
        f"({inputs.winner}) has an annualised Sharpe ratio of excess returns of "
        f"{inputs.winner_sharpe_ann:.2f}{bench}.",
    ]
    if inputs.sweep_pvalue is not None:
        parts.append(
            f"Against the best of all {inputs.n_configs:,} configurations on {inputs.reps:,} "
            f"joint block-bootstrap resamples of data with no edge, its p-value is "
            f"{inputs.sweep_pvalue:.4f}: this accounts for every configuration tried and for "
            "their correlation."
        )
    if inputs.implied_n is not None and inputs.dsr_implied is not None:
        parts.append(
            f"The effective number of trials is about {inputs.implied_n:,.0f}: the bootstrap "
            "maxima are as high as the best of that many independent trials would be; "
            f"deflated at it, its Sharpe ratio has DSR {inputs.dsr_implied:.3f}."
        )
    parts += _size_sentences(inputs)
    if inputs.prob_oos_loss is not None:
        parts.append(
            f"Out of sample (CSCV), the in-sample best lost to the benchmark in "
            f"{inputs.prob_oos_loss:.0%} of the splits"
            + (
                f"; PBO {inputs.pbo:.2f} (reported, not a gate: it cannot see an edge "
                "every configuration shares)."
                if inputs.pbo is not None
                else "."
            )
        )
    if inputs.oos_psr is not None and math.isnan(inputs.oos_psr):
        parts.append(
            "The walk-forward validation in the spec could not be computed (see the out-of-"
            "sample section), so the selection is not shown to hold out of sample."
        )
    elif inputs.oos_psr is not None:
        parts.append(
            f"Re-optimised walk-forward, its out-of-sample excess returns have PSR "
            f"{inputs.oos_psr:.3f} (the rule asks for at least {OOS_PSR_THRESHOLD})."
        )
    if failure is not None:
        parts.append(
            f"Integrity check failed: {failure}. These statistics describe rows that the "
            "sweep's inputs do not give, so no verdict is given."
        )
    parts.append(headline if likely is None else f"Verdict: {headline[0].lower()}{headline[1:]}")
    if not inputs.complete:
        parts.append("The sweep is incomplete; the verdict covers the configs done so far.")
    if likely is not None:
        parts.append(CALIBRATION)
    steps = next_steps(likely, inputs)
    parts.append(steps)
    return Verdict(
        likely,
        headline,
        _reasons(inputs),
        " ".join(parts),
        calibrated_on=CALIBRATED_NULL_FAMILIES if likely is not None else (),
        minimum_detectable_sharpe_ann=inputs.mde_sharpe_ann,
        called_real=inputs.called_real,
        next_steps=steps,
        integrity_failure=failure,
    )


#: What the measured error rates cover, as the verdict says it.
CALIBRATION = (
    "This rule's false-positive rate and power were calibrated on the null families in the "
    "documentation's calibration table (Benchmarks, \"The verdict's error rates\"): "
    f"{', '.join(CALIBRATED_NULL_FAMILIES)}; a market unlike them is outside what was measured."
)


def _years(inputs: VerdictInputs) -> str:
    if inputs.periods is None or not inputs.periods_per_year:
        return "this length"
    return f"this length ({inputs.periods / inputs.periods_per_year:.1f} years)"


def _size_sentences(inputs: VerdictInputs) -> list[str]:
    """The minimum detectable effect and the number called real, as sentences."""
    out = []
    if inputs.mde_sharpe_ann is not None:
        power = inputs.power if inputs.power is not None else 0.8
        out.append(
            f"At {_years(inputs)} and over {inputs.n_configs:,} configurations, the "
            f"sweep-wide test detects with {power:.0%} power only an edge of annualised "
            f"excess Sharpe ratio {inputs.mde_sharpe_ann:.2f} or more (the minimum "
            "detectable effect"
            + (
                f"; one configuration fixed in advance and tested alone would need "
                f"{inputs.single_test_mde_ann:.2f}"
                if inputs.single_test_mde_ann is not None
                else ""
            )
            + ")."
        )
    if inputs.called_real is not None and inputs.fdp_gamma is not None:
        out.append(
            f"FDP-StepM calls {inputs.called_real:,} configuration"
            f"{'' if inputs.called_real == 1 else 's'} real with at most "
            f"{inputs.fdp_gamma:.0%} false discoveries among them (with probability "
            f"{1 - inputs.alpha:.0%})."
        )
    return out


def next_steps(likely: bool | None, inputs: VerdictInputs) -> str:
    """What the reader should do next, given the verdict."""
    if inputs.integrity_failure is not None:
        return (
            "Next: find why recomputed rows differ from the stored ones (a strategy that draws "
            "from global random state, or reads state that changes; `sweep reproduce RUN_DIR` "
            "lists the differences), fix it, and run the sweep again in a new folder."
        )
    if likely is None:
        return (
            "Next: run the sweep with metrics.bootstrap_reps of 200 or more, so that the "
            "whole search can be tested."
        )
    holdout = (
        f" (a holdout as long as this sample detects {inputs.single_test_mde_ann:.2f} with "
        "80% power)"
        if inputs.single_test_mde_ann is not None
        else ""
    )
    if likely:
        return (
            "Next: before trading it, test the winner alone on a holdout the sweep never saw, "
            f"later dates or other assets, where no search is paid for{holdout}."
        )
    return (
        "Next: do not widen the grid (more configurations raise the bar); test the winner "
        f"alone on a holdout, later dates or other assets{holdout}, or lengthen the sample: "
        "the detectable edge falls as one over the square root of the length (about half "
        "at four times as long)."
    )
