"""Reality Check, SPA and Romano and Wolf's StepM of a whole sweep, from a merged summary.

The configs enter only through what the tests need of them (:mod:`stats._threshold_counts`):
the counts of their ``t`` between the null's stored values, the ``t`` of the configs the top
lists name, the largest ``t`` and mean; so a sweep of any size runs them from per-part
reductions, and the array functions here are those reductions over every config at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from stats._data_snooping import (
    NO_CONFIG,
    NullSummary,
    bootstrap_pvalue_of,
    sweep_wide_pvalue,
)
from stats._generalized_error import allowed_exceedances, critical_value
from stats._threshold_counts import TCounts, rejected_above, t_counts_of
from stats._validation import input_error

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class StepMResult:
    """Romano-Wolf StepM: the configs shown to beat the benchmark, FWER controlled at ``alpha``.

    Attributes
    ----------
    rejected : ndarray of int64 or None
        Grid indices of the configs that beat the benchmark, sorted (None when computed from
        :class:`stats.TCounts`: they are the configs with ``t > threshold``).
    steps : int
        Step-down rounds run.
    exact : bool
        False when, for some replication, every stored top entry had been rejected, so the
        maximum over the remaining configs was bounded above by the last stored entry: the
        critical value is then conservative (never too small) and the set may be smaller than
        with the full null matrix, but FWER control holds.
    count : int
        Configs that beat the benchmark.
    threshold : float
        They are the configs with ``t > threshold`` (``inf`` when none is).
    """

    rejected: IntArray | None
    steps: int
    exact: bool
    count: int = 0
    threshold: float = math.inf


@dataclass(frozen=True)
class DataSnoopingResult:
    """White's Reality Check, Hansen's SPA and Romano-Wolf StepM of a whole sweep.

    Attributes
    ----------
    reps : int
        Bootstrap replications.
    n_configs : int
        Configs tested.
    reality_check_pvalue : float
        White (2000): null max_k E[e_k] <= 0, statistic max_k sqrt(n) ē_k, not studentised.
    spa_pvalue : float
        Hansen (2005), consistent: statistic max(0, max_k t_k).
    best_index : int
        Grid index of the config with the largest ``t_k``.
    stepm : StepMResult
        Configs that beat the benchmark.
    alpha : float
        Level of StepM.
    """

    reps: int
    n_configs: int
    reality_check_pvalue: float
    spa_pvalue: float
    best_index: int
    stepm: StepMResult
    alpha: float


@dataclass(frozen=True)
class SweepExtremes:
    """What the Reality Check and SPA need of the tested configs besides the summary.

    Attributes
    ----------
    n_configs : int
        Configs with a finite ``t`` and mean.
    best_index : int
        Grid index of the one with the largest ``t`` (the first such, in the caller's order).
    best_t : float
        Its ``t``.
    max_mean : float
        The largest mean excess return among them.
    """

    n_configs: int
    best_index: int
    best_t: float
    max_mean: float


def sweep_extremes(grid_index: IntArray, mean: FloatArray, t_stat: FloatArray) -> SweepExtremes:
    """:class:`SweepExtremes` of configs given as arrays (ties: the first config)."""
    ok = np.isfinite(t_stat) & np.isfinite(mean)
    if not ok.any():
        return SweepExtremes(0, NO_CONFIG, math.nan, math.nan)
    best = int(np.flatnonzero(ok)[np.argmax(t_stat[ok])])
    return SweepExtremes(
        int(ok.sum()), int(grid_index[best]), float(t_stat[best]), float(mean[ok].max())
    )


def _max_outside(
    summary: NullSummary, gone: BoolArray, any_rejected: bool
) -> tuple[FloatArray, bool]:
    """Per replication, the largest stored ``s_kb`` of an entry not ``gone`` (rejected).

    Before any config is rejected, the SPA maxima themselves.
    """
    if not any_rejected:
        return summary.spa, True
    free = ~gone
    has = free.any(axis=1)
    first = np.argmax(free, axis=1)
    rows = np.arange(summary.reps)
    # A row whose every entry is gone gets its last stored value: an upper bound of the
    # true maximum, exact only when that entry is padding (the list held every config).
    out = np.where(has, summary.top_value[rows, first], summary.top_value[:, -1])
    exact = bool((has | (summary.top_index[:, -1] == NO_CONFIG)).all())
    return out, exact


def stepm_counted(summary: NullSummary, counts: TCounts, alpha: float = 0.05) -> StepMResult:
    """Romano and Wolf's (2005) step-down test from a merged summary and :class:`TCounts`.

    Parameters
    ----------
    summary : NullSummary
        Merged over the whole sweep.
    counts : TCounts
        The tested configs' ``t``, counted against ``summary``.
    alpha : float, default 0.05
        Family-wise error rate.

    Returns
    -------
    StepMResult
        ``rejected`` is None: the configs that beat the benchmark are those with
        ``t > threshold``.

    Notes
    -----
    Round ``j`` rejects every remaining config with
    ``(1 + #{max over remaining s_b >= t_k}) / (1 + B) <= alpha``, and stops when a round
    rejects nothing. The null of each round recentres as Hansen's consistent SPA does (as arch's
    ``StepM`` does), which is more powerful than recentring every config and keeps FWER control.
    That rule is ``t`` above the ``(a + 1)``-th largest non-NaN null maximum (``a`` the
    exceedances ``alpha`` allows), and the maxima only fall as configs are rejected, so the
    rejected set after each round is every config above the round's critical value.

    References
    ----------
    .. [1] Romano, J. P. and Wolf, M. (2005). "Stepwise multiple testing as formalized data
       snooping". Econometrica 73(4), 1237-1282.
    """
    allowed = allowed_exceedances(summary.reps, alpha)
    entry_t = counts.entry_t(summary)
    threshold, exact, steps = math.inf, True, 0
    while counts.above(threshold) < counts.total:
        steps += 1
        null_max, step_exact = _max_outside(summary, entry_t > threshold, steps > 1)
        exact = exact and step_exact
        c = critical_value(null_max[~np.isnan(null_max)], allowed)
        if not c < threshold or counts.above(c) == counts.above(threshold):
            break
        threshold = c
    return StepMResult(None, steps, exact, counts.above(threshold), threshold)


def stepm(
    summary: NullSummary, grid_index: IntArray, t_stat: FloatArray, alpha: float = 0.05
) -> StepMResult:
    """Romano and Wolf's (2005) step-down test from a merged summary.

    Parameters
    ----------
    summary : NullSummary
        Merged over the whole sweep.
    grid_index, t_stat : ndarray, shape (m,)
        Every tested config's grid position and studentised statistic.
    alpha : float, default 0.05
        Family-wise error rate.

    Returns
    -------
    StepMResult
        With ``rejected``, the grid indices of the configs with ``t > threshold``.

    Notes
    -----
    :func:`stepm_counted` over these configs' :func:`stats.t_counts_of`.

    References
    ----------
    .. [1] Romano, J. P. and Wolf, M. (2005). "Stepwise multiple testing as formalized data
       snooping". Econometrica 73(4), 1237-1282.
    """
    idx = np.asarray(grid_index, dtype=np.int64)
    t = np.asarray(t_stat, dtype=np.float64)
    res = stepm_counted(summary, t_counts_of(summary, idx, t), alpha)
    rejected = rejected_above(idx, t, res.threshold)
    return StepMResult(rejected, res.steps, res.exact, res.count, res.threshold)


def data_snooping_counted(
    summary: NullSummary,
    counts: TCounts,
    extremes: SweepExtremes,
    n_obs: int,
    alpha: float = 0.05,
) -> DataSnoopingResult:
    """Reality Check, SPA and StepM from a merged summary and the configs' reductions.

    Parameters
    ----------
    summary : NullSummary
        :func:`merge_null_summaries` over every part.
    counts : TCounts
        The configs' ``t`` counted against ``summary``.
    extremes : SweepExtremes
        Their count, largest ``t`` and largest mean.
    n_obs : int
        Periods per series.
    alpha : float, default 0.05
        Level of StepM.

    Returns
    -------
    DataSnoopingResult
        StepM's ``rejected`` is None (:func:`stepm_counted`).

    References
    ----------
    .. [1] White, H. (2000). "A reality check for data snooping". Econometrica 68(5),
       1097-1126.
    .. [2] Hansen, P. R. (2005). "A test for superior predictive ability". Journal of
       Business & Economic Statistics 23(4), 365-380.
    .. [3] Romano, J. P. and Wolf, M. (2005). "Stepwise multiple testing as formalized data
       snooping". Econometrica 73(4), 1237-1282.
    """
    if extremes.n_configs == 0 or summary.n_configs == 0:
        raise input_error("t_stat: expected at least one config with a non-constant excess series")
    return DataSnoopingResult(
        reps=summary.reps,
        n_configs=extremes.n_configs,
        reality_check_pvalue=bootstrap_pvalue_of(
            summary.reality_check, math.sqrt(n_obs) * extremes.max_mean
        ),
        spa_pvalue=sweep_wide_pvalue(summary, extremes.best_t),
        best_index=extremes.best_index,
        stepm=stepm_counted(summary, counts, alpha),
        alpha=alpha,
    )


def data_snooping_tests(
    summary: NullSummary,
    grid_index: IntArray,
    mean: FloatArray,
    t_stat: FloatArray,
    n_obs: int,
    alpha: float = 0.05,
) -> DataSnoopingResult:
    """Reality Check, SPA and StepM p-values from a merged summary and the configs' rows.

    Parameters
    ----------
    summary : NullSummary
        :func:`merge_null_summaries` over every part.
    grid_index, mean, t_stat : ndarray, shape (m,)
        Every config's grid position, mean excess return and studentised statistic.
    n_obs : int
        Periods per series.
    alpha : float, default 0.05
        Level of StepM.

    Returns
    -------
    DataSnoopingResult
        :func:`data_snooping_counted` over these configs, with StepM's ``rejected``.

    References
    ----------
    .. [1] White, H. (2000). "A reality check for data snooping". Econometrica 68(5),
       1097-1126.
    .. [2] Hansen, P. R. (2005). "A test for superior predictive ability". Journal of
       Business & Economic Statistics 23(4), 365-380.
    .. [3] Romano, J. P. and Wolf, M. (2005). "Stepwise multiple testing as formalized data
       snooping". Econometrica 73(4), 1237-1282.
    """
    idx = np.asarray(grid_index, dtype=np.int64)
    mean = np.asarray(mean, dtype=np.float64)
    t = np.asarray(t_stat, dtype=np.float64)
    res = data_snooping_counted(
        summary, t_counts_of(summary, idx, t), sweep_extremes(idx, mean, t), n_obs, alpha
    )
    found = res.stepm
    rejected = rejected_above(idx, t, found.threshold)
    return DataSnoopingResult(
        res.reps,
        res.n_configs,
        res.reality_check_pvalue,
        res.spa_pvalue,
        res.best_index,
        StepMResult(rejected, found.steps, found.exact, found.count, found.threshold),
        alpha,
    )
