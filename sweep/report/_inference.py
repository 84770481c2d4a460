"""The sweep-wide tests of the report, from the merged null summaries of the parts.

Everything here reads the merged :class:`stats.NullSummary` and the configs' stored rows only:
Reality Check, SPA, StepM, the winner's sweep-wide p-value, the configs called real by
FDP-StepM, the minimum detectable Sharpe ratio and the effective number of trials.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from stats import (
    NullSummary,
    consistent_threshold,
    data_snooping_counted,
    fdp_stepm_counted,
    implied_number_of_trials,
    minimum_detectable_effect,
    norm_ppf,
    sweep_wide_pvalue,
)
from sweep.errors import USER_ERRORS
from sweep.report._load import RunData
from sweep.report._ranking import plain
from sweep.report._sections import (
    Deflated,
    DetectableSharpe,
    Discoveries,
    Discovery,
    EffectiveNumberOfTrials,
    ImpliedTrials,
    StepMResult,
    SweepWideTests,
    Unavailable,
    Winner,
)
from sweep.report._sweep_facts import SweepFacts
from sweep.report._tested_configs import column_above

#: Grid indices listed per StepM set in report.json.
LISTED_IDS = 20


def statistic_text(n_obs: int) -> str:
    """How the tests are computed, in one paragraph (report.json and the rendered report)."""
    return (
        "Excess returns over the benchmark are resampled on the same circular or stationary "
        "blocks for every config (joint resampling). Per config: ω̂ = bootstrap long-run "
        "standard deviation of the excess return (Hansen 2005), t = √n·mean/ω̂, p-value = "
        "(1 + #{null ≥ observed})/(1 + B) on the null-centred resamples. Reality Check (White "
        "2000): max √n·mean, not studentised. SPA (Hansen 2005, consistent): max(0, max t), "
        "configs with t below −√(2 log log n) = "
        f"{consistent_threshold(n_obs):.3f} keep their negative mean in the null. StepM "
        "(Romano and Wolf 2005): step-down on the same studentised null. Maxima are merged "
        "exactly from per-part summaries, so nothing depends on batching."
    )


def sweep_wide_tests(
    run: RunData,
    winner: Winner | None,
    alpha: float,
    n_obs: int,
) -> SweepWideTests | Unavailable:
    """Reality Check, SPA, StepM and the winner's sweep-wide p-value.

    Parameters
    ----------
    run : RunData
        The run folder, read: its merged null summary (None: the sweep has no bootstrap)
        and the ok configs' reductions (:class:`TestedConfigs`); the configs named are read
        back from the parts that can hold them.
    winner : Winner or None
        The winner.
    alpha : float
        Level of StepM.
    n_obs : int
        Periods of each config's returns.

    Returns
    -------
    SweepWideTests or Unavailable
        The p-values, the StepM set and how they were made.
    """
    summary, tested = run.null_summary, run.tested
    if summary is None or tested.t_counts is None:
        return Unavailable(
            reason="the sweep has no bootstrap replications (metrics.bootstrap_reps = 0)"
        )
    try:
        res = data_snooping_counted(summary, tested.t_counts, tested.extremes, n_obs, alpha)
    except USER_ERRORS as exc:
        return Unavailable(reason=str(exc))
    good = run.good_parts
    best = res.best_index
    best_id = run.listed(
        [n for n in good if tested.part_max_t.get(n, math.inf) >= tested.extremes.best_t],
        ["grid_index"],
        lambda table: np.asarray(table.column("grid_index").to_numpy() == best),
        1,
    )
    threshold = res.stepm.threshold
    above = run.listed(
        tested.parts_above_t(good, threshold),
        ["t_stat"],
        column_above("t_stat", threshold),
        LISTED_IDS,
    )
    note = (
        None
        if res.stepm.exact
        else f"every one of the {summary.top_k} null maxima stored per replication belonged "
        "to an already rejected config in some replication, so the step-down used an upper "
        "bound there: the set is conservative (FWER still controlled) and may be smaller than "
        "the full null would give; raise metrics.stepm_top_k to tighten it"
    )
    return SweepWideTests(
        reps=res.reps,
        configs=res.n_configs,
        reality_check_pvalue=res.reality_check_pvalue,
        spa_pvalue=res.spa_pvalue,
        best_t_config_id=str(best_id.column("config_id")[0].as_py()),
        stepm=StepMResult(
            alpha=alpha,
            count=res.stepm.count,
            config_ids=tuple(str(i) for i in above.column("config_id").to_pylist()),
            steps=res.stepm.steps,
            exact=res.stepm.exact,
            top_k=summary.top_k,
            note=note,
        ),
        winner_pvalue=(sweep_wide_pvalue(summary, winner.t_stat) if winner is not None else None),
        statistic=statistic_text(n_obs),
    )


def implied_trials(summary: NullSummary | None, facts: SweepFacts) -> ImpliedTrials | Unavailable:
    """The bootstrap-implied number of trials and the null Sharpe spread behind it.

    The null standard deviation of one config's Sharpe ratio is ``ω̂ / (√n · sd)`` (its
    resampled means divided by its fixed standard deviation); its root mean square over the
    configs scales E[max of N standard normals].
    """
    if summary is None:
        return Unavailable(reason="no bootstrap replications")
    sigma = facts.null_sharpe_std
    finite_max = summary.null_sharpe[np.isfinite(summary.null_sharpe)]
    if sigma is None or finite_max.size == 0:
        return Unavailable(reason="no config with a non-constant excess series")
    target = float(np.mean(finite_max))
    return ImpliedTrials(
        n=implied_number_of_trials(target, sigma),
        mean_null_max_sharpe=target,
        null_sharpe_std=sigma,
        definition=(
            "N such that E[max of N independent null Sharpe ratios] (exact integral) equals the "
            "mean over bootstrap replications of the best null Sharpe ratio of the sweep"
        ),
    )


#: What the effective number of trials is, as the report says it.
EFFECTIVE_N_MEASURED = (
    "the N whose expected maximum of N independent null Sharpe ratios (exact integral, "
    "scaled by the configs' null Sharpe spread) equals the mean over the joint-bootstrap "
    "replications of the best null Sharpe ratio of every config: how many independent "
    "trials would be as lucky as this grid was on data with no edge"
)
#: Why the dimensionality estimators are not the effective number of trials.
NOT_DIMENSIONALITY = (
    "the dimensionality estimators (participation ratio, Nyholt, Li-Ji, Galwey) describe "
    "how many directions the returns span; they are reported under their own names and "
    "do not deflate the winner"
)


def effective_number(
    implied: ImpliedTrials | Unavailable, naive_n: int, at_implied: object
) -> EffectiveNumberOfTrials | Unavailable:
    """The effective number of trials, named, with the winner's DSR at it."""
    if isinstance(implied, Unavailable):
        return implied
    return EffectiveNumberOfTrials(
        n=implied.n,
        naive_n=naive_n,
        measured=EFFECTIVE_N_MEASURED,
        dsr=at_implied.dsr if isinstance(at_implied, Deflated) else None,
        not_dimensionality=NOT_DIMENSIONALITY,
    )


#: The power the minimum detectable effect is stated at.
DETECTION_POWER = 0.8


def detectable_effect(
    summary: NullSummary | None,
    facts: SweepFacts,
    ok_configs: int,
    alpha: float,
    periods_per_year: float,
) -> DetectableSharpe | Unavailable:
    """The smallest annualised excess Sharpe ratio the sweep-wide test detects at 80% power.

    ``ok_configs`` counts the configs that finished ok (the test's size when the summary
    does not say). See :func:`stats.minimum_detectable_effect` for the model and its
    references.
    """
    if summary is None:
        return Unavailable(reason="no bootstrap replications (metrics.bootstrap_reps = 0)")
    sigma = facts.null_sharpe_std
    if sigma is None or not sigma > 0:
        return Unavailable(reason="no config with a non-constant excess series")
    try:
        d = minimum_detectable_effect(summary, sigma, alpha, DETECTION_POWER)
    except USER_ERRORS as exc:
        return Unavailable(reason=str(exc))
    if not math.isfinite(d.sharpe):
        return Unavailable(
            reason=f"{summary.reps} bootstrap replications cannot reach a p-value of "
            f"{alpha:g} ((1 + 0)/(1 + B) > alpha): no edge is detectable"
        )
    root = math.sqrt(periods_per_year)
    return DetectableSharpe(
        power=DETECTION_POWER,
        alpha=alpha,
        sharpe=d.sharpe,
        sharpe_ann=d.sharpe * root,
        single_test_sharpe_ann=d.single_test_sharpe * root,
        critical_value=d.critical_value,
        sweep_critical_value=d.sweep_critical_value,
        null_sharpe_std=sigma,
        periods=int(facts.max_n_obs or 0),
        configs=summary.n_configs if summary.n_configs else ok_configs,
        model=(
            "a config whose true per-period excess Sharpe ratio is θ has t ≈ N(θ/σ, 1), "
            f"σ = {sigma:.4g} the null spread of one config's Sharpe ratio (block-bootstrap "
            f"long-run variance, so skew, kurtosis and serial dependence are in it); the "
            f"sweep-wide test rejects when t > {d.sweep_critical_value:.3f}, the bootstrap "
            f"{1 - alpha:.0%} quantile of the best studentised null statistic of every "
            f"config; with c = {d.critical_value:.3f} (that quantile, never below "
            f"Φ⁻¹(1 − α) = {norm_ppf(1.0 - alpha):.3f}: a config with an edge brings its own "
            f"null draws into the maximum), MDE = (c + Φ⁻¹({DETECTION_POWER:g}))·σ (Bloom "
            "1995, with the sweep's own critical value). One config fixed in advance and "
            "tested alone needs (Φ⁻¹(1 − α) + Φ⁻¹(power))·σ"
        ),
    )


#: Configs called real listed by name.
LISTED_DISCOVERIES = 10


def discoveries(
    run: RunData,
    params: Sequence[str],
    alpha: float,
    gamma: float,
) -> Discoveries | Unavailable:
    """How many configs are real: FDP-StepM over every config, from the merged summary.

    Parameters
    ----------
    run : RunData
        The run folder, read: its merged null summary and the ok configs' reductions; the
        configs listed are read back from the parts that can hold them.
    params : sequence of str
        Parameter columns shown for the configs listed (those that vary across the grid).
    alpha, gamma : float
        ``P(FDP > gamma) <= alpha`` (``ReportOptions.alpha`` and ``fdp_gamma``).
    """
    summary, counts = run.null_summary, run.tested.t_counts
    if summary is None or counts is None:
        return Unavailable(reason="no bootstrap replications (metrics.bootstrap_reps = 0)")
    if counts.total == 0:
        return Unavailable(reason="no config with a non-constant excess series")
    try:
        res = fdp_stepm_counted(summary, counts, gamma, alpha)
    except USER_ERRORS as exc:
        return Unavailable(reason=str(exc))
    shown = run.listed(
        run.tested.parts_above_t(run.good_parts, res.threshold),
        ["grid_index", "t_stat", "excess_sharpe_ann", *params],
        column_above("t_stat", res.threshold),
        LISTED_DISCOVERIES,
        [("t_stat", "descending"), ("grid_index", "ascending")],
    ).to_pylist()
    first = tuple(
        Discovery(
            rank=i + 1,
            config_id=str(row["config_id"]),
            grid_index=int(row["grid_index"]),
            params={p: plain(row[p]) for p in params},
            t_stat=float(row["t_stat"]),
            excess_sharpe_ann=float(row["excess_sharpe_ann"]),
        )
        for i, row in enumerate(shown)
    )
    notes = []
    if not res.exact:
        notes.append(
            f"in some replication the {summary.top_k} null statistics stored per replication "
            "held fewer than k of a step's configs, so its k-th largest was bounded by the "
            "last one stored: the count is conservative (still controlled) and may be "
            "smaller than the full null would give; raise metrics.stepm_top_k to tighten it"
        )
    if not res.all_subsets:
        notes.append(
            "some step had too many subsets of the rejected configs to try each one, and "
            "used a per-replication bound of their maximum instead: conservative"
        )
    return Discoveries(
        method="FDP-StepM (Romano, Shaikh and Wolf 2008, Econometric Theory 24(2), Sec. 4): "
        "k-StepM for k = 1, 2, ... until it calls real fewer than k/γ − 1 configs",
        gamma=gamma,
        alpha=alpha,
        count=res.count,
        configs=counts.total,
        k=res.k,
        k_counts=res.counts,
        stepm_count=res.counts[0],
        critical_value=res.critical_value if math.isfinite(res.critical_value) else None,
        exact=res.exact,
        all_subsets=res.all_subsets,
        top_k=summary.top_k,
        first=first,
        meaning=(
            f"with probability at least {1 - alpha:.0%}, at most {gamma:.0%} of the configs "
            "called real are false discoveries (configs with no edge over the benchmark); "
            "StepM, beside it, allows no false discovery at all with that probability"
        ),
        note="; ".join(notes) or None,
    )
