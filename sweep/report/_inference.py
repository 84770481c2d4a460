"""The sweep-wide tests of the report, from the merged null summaries of the parts."""

from __future__ import annotations

import numpy as np
import pandas as pd

from stats import (
    NullSummary,
    consistent_threshold,
    data_snooping_tests,
    implied_number_of_trials,
    sweep_wide_pvalue,
)
from sweep.errors import USER_ERRORS
from sweep.report._sections import ImpliedTrials, StepMResult, SweepWideTests, Unavailable, Winner

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
    summary: NullSummary | None,
    frame: pd.DataFrame,
    winner: Winner | None,
    alpha: float,
) -> SweepWideTests | Unavailable:
    """Reality Check, SPA, StepM and the winner's sweep-wide p-value.

    Parameters
    ----------
    summary : NullSummary or None
        Merged over the good parts (None: the sweep has no bootstrap).
    frame : pandas.DataFrame
        The ok configs (``grid_index``, ``excess_mean``, ``t_stat``, ``config_id``).
    winner : Winner or None
        The winner.
    alpha : float
        Level of StepM.

    Returns
    -------
    SweepWideTests or Unavailable
        The p-values, the StepM set and how they were made.
    """
    if summary is None:
        return Unavailable(
            reason="the sweep has no bootstrap replications (metrics.bootstrap_reps = 0)"
        )
    n_obs = int(frame["n_obs"].iloc[0])
    index = frame["grid_index"].to_numpy(dtype=np.int64)
    t_stat = frame["t_stat"].to_numpy(dtype=np.float64)
    try:
        res = data_snooping_tests(
            summary,
            index,
            frame["excess_mean"].to_numpy(dtype=np.float64),
            t_stat,
            n_obs,
            alpha,
        )
    except USER_ERRORS as exc:
        return Unavailable(reason=str(exc))
    ids = pd.Series(frame["config_id"].to_numpy(), index=index)
    rejected = res.stepm.rejected
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
        best_t_config_id=str(ids[res.best_index]),
        stepm=StepMResult(
            alpha=alpha,
            count=int(rejected.size),
            config_ids=tuple(sorted(str(ids[i]) for i in rejected)[:LISTED_IDS]),
            steps=res.stepm.steps,
            exact=res.stepm.exact,
            top_k=summary.top_k,
            note=note,
        ),
        winner_pvalue=(sweep_wide_pvalue(summary, winner.t_stat) if winner is not None else None),
        statistic=statistic_text(n_obs),
    )


def implied_trials(summary: NullSummary | None, frame: pd.DataFrame) -> ImpliedTrials | Unavailable:
    """The bootstrap-implied number of trials and the null Sharpe spread behind it.

    The null standard deviation of one config's Sharpe ratio is ``ω̂ / (√n · sd)`` (its
    resampled means divided by its fixed standard deviation); its root mean square over the
    configs scales E[max of N standard normals].
    """
    if summary is None:
        return Unavailable(reason="no bootstrap replications")
    n_obs = frame["n_obs"].to_numpy(dtype=np.float64)
    omega = frame["omega"].to_numpy(dtype=np.float64)
    std = frame["excess_std"].to_numpy(dtype=np.float64)
    live = (std > 0) & np.isfinite(omega) & (n_obs > 0)
    finite_max = summary.null_sharpe[np.isfinite(summary.null_sharpe)]
    if not live.any() or finite_max.size == 0:
        return Unavailable(reason="no config with a non-constant excess series")
    sd_null = omega[live] / (np.sqrt(n_obs[live]) * std[live])
    target = float(np.mean(finite_max))
    sigma = float(np.sqrt(np.mean(sd_null**2)))
    return ImpliedTrials(
        n=implied_number_of_trials(target, sigma),
        mean_null_max_sharpe=target,
        null_sharpe_std=sigma,
        definition=(
            "N such that E[max of N independent null Sharpe ratios] (exact integral) equals the "
            "mean over bootstrap replications of the best null Sharpe ratio of the sweep"
        ),
    )
