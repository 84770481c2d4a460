"""How many configs are real: k-StepM and FDP-StepM from the merged null summaries.

Romano and Wolf's StepM (:func:`stats.stepm`) controls the family-wise error rate, the
probability of even ONE false discovery; over a sweep of thousands of correlated configs it
can only name the very best. Romano, Shaikh and Wolf (2008) relax it in two ways that keep
the bootstrap's joint view of every config (its correlation and the search):

* **k-StepM** controls the generalized family-wise error rate
  ``k-FWER = P(at least k false discoveries) <= alpha``;
* **FDP-StepM** controls the false discovery proportion (FDP, false discoveries over
  discoveries): ``P(FDP > gamma) <= alpha``, by running k-StepM for ``k = 1, 2, ...`` until
  it rejects fewer than ``k / gamma - 1`` configs.

Both run on the same null statistics as StepM and SPA: per replication ``b``, the stored
``NullSummary.top_value[b]`` are the largest recentred studentised statistics ``s_jb`` of the
sweep, with their grid indices. The critical value of a step needs the ``k``-th largest
``s_jb`` over a set of configs, which the stored top lists give exactly while they are deep
enough; beyond them the last stored value bounds it from above (never too small: control
holds, the set may be smaller, and the result says so). Nothing needs a return matrix, so it
scales to the whole sweep like the other sweep-wide tests (invariant 7).

Conventions as in :mod:`stats._data_snooping`: a config "beats the benchmark" when its
expected excess return is positive; a config is rejected at a step when
``(1 + #{q_b >= t}) / (1 + B) <= alpha`` for the step's null ``q``, i.e. when ``t`` exceeds
the step's critical value (the two are the same test: see :func:`critical_value`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from stats._data_snooping import NO_CONFIG, NullSummary
from stats._threshold_counts import TCounts, rejected_above, t_counts_of, tested_configs
from stats._validation import input_error

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

#: Subsets of rejected configs enumerated per step of k-StepM before the bound is used.
MAX_SUBSETS = 1024


@dataclass(frozen=True)
class KStepMResult:
    """k-StepM: the configs that beat the benchmark with the k-FWER controlled at ``alpha``.

    Attributes
    ----------
    k : int
        At most ``k - 1`` false discoveries with probability at least ``1 - alpha``.
    alpha : float
        Level.
    rejected : ndarray of int64 or None
        Grid indices of the configs called real, sorted (None when computed from
        :class:`stats.TCounts`: they are the configs with ``t > threshold``).
    critical_value : float
        A config is called real exactly when its studentised statistic exceeds it: the last
        rejecting step's critical value, or the first step's when none rejects (``inf``
        when the replications are too few for any rejection).
    steps : int
        Step-down rounds run.
    exact : bool
        False when, in some replication of some step, the stored top list held fewer than
        ``k`` entries of the step's set of configs, so the ``k``-th largest was bounded above
        by the list's last entry (conservative; raise ``metrics.stepm_top_k``).
    all_subsets : bool
        True when every step took the maximum over every ``k - 1``-subset of the rejected
        configs, as in the paper; False when some step had more than :data:`MAX_SUBSETS`
        subsets and used a per-replication bound of that maximum (conservative).
    count : int
        Configs called real.
    threshold : float
        They are the configs with ``t > threshold`` (``inf`` when none is).
    """

    k: int
    alpha: float
    rejected: IntArray | None
    critical_value: float
    steps: int
    exact: bool
    all_subsets: bool
    count: int = 0
    threshold: float = math.inf


@dataclass(frozen=True)
class FDPStepMResult:
    """FDP-StepM: configs called real with ``P(FDP > gamma) <= alpha``.

    Attributes
    ----------
    gamma : float
        The tolerated false discovery proportion.
    alpha : float
        The probability that the proportion exceeds ``gamma`` is at most ``alpha``.
    rejected : ndarray of int64 or None
        Grid indices of the configs called real, sorted (None when computed from
        :class:`stats.TCounts`: they are the configs with ``t > threshold``).
    k : int
        The ``k`` of the last k-StepM run (its rejections are the result).
    counts : tuple of int
        Configs rejected by k-StepM for ``k = 1, 2, ...`` as the procedure ran (``counts[0]``
        is StepM's).
    critical_value : float
        The last k-StepM's critical value of ``t``.
    exact, all_subsets : bool
        As :class:`KStepMResult`, over every k-StepM run.
    count : int
        Configs called real.
    threshold : float
        They are the configs with ``t > threshold`` (``inf`` when none is).
    """

    gamma: float
    alpha: float
    rejected: IntArray | None
    k: int
    counts: tuple[int, ...]
    critical_value: float
    exact: bool
    all_subsets: bool
    count: int = 0
    threshold: float = math.inf


def allowed_exceedances(reps: int, alpha: float) -> int:
    """The largest count ``a`` with ``(1 + a) / (1 + reps) <= alpha`` (-1 when none is)."""
    a = min(max(math.floor(alpha * (reps + 1)) - 1, -1), reps)
    # The same float comparison as the p-values (p <= alpha), whatever floor's rounding did.
    while a < reps and (2.0 + a) / (1.0 + reps) <= alpha:
        a += 1
    while a >= 0 and not (1.0 + a) / (1.0 + reps) <= alpha:
        a -= 1
    return a


def _called_real_above(null: FloatArray, allowed: int) -> float:
    """The critical value of a step, never below 0: a config with ``t <= 0`` is never real.

    SPA's statistic is ``max(0, t)`` for the same reason (Hansen 2005): a config whose mean
    excess return is not positive cannot be shown to beat the benchmark. The floor binds
    only when every config is far below the benchmark (all of them recentred).
    """
    return max(critical_value(null, allowed), 0.0)


def critical_value(null: FloatArray, allowed: int) -> float:
    """The critical value of ``t`` for a null of ``B`` replications.

    ``(1 + #{null >= t}) / (1 + B) <= alpha`` holds exactly when ``#{null >= t} <= a``
    (``a`` from :func:`allowed_exceedances`), i.e. when ``t`` is above the ``(a + 1)``-th
    largest null value.
    """
    if allowed < 0:
        return math.inf
    if allowed >= null.shape[0]:
        return -math.inf
    return float(np.sort(null)[null.shape[0] - 1 - allowed])


def _kth_counted(
    values: FloatArray, counted: BoolArray, k: int, complete: BoolArray
) -> tuple[FloatArray, bool]:
    """Per replication, the ``k``-th largest stored value among the counted entries.

    A row whose list holds every config (``complete``) and has fewer
    than ``k`` counted entries has no ``k``-th largest: ``-inf``. Any other such row gets its
    last stored value, an upper bound, and the result is not exact.
    """
    found = np.cumsum(counted, axis=1) >= k
    has = found[:, -1]
    pos = np.argmax(found, axis=1)
    q = values[np.arange(values.shape[0]), pos]
    q = np.where(has, q, np.where(complete, -np.inf, values[:, -1]))
    return q, bool((has | complete).all())


def _step_critical(
    summary: NullSummary,
    rejected_entry: BoolArray,
    k: int,
    allowed: int,
    max_subsets: int,
) -> tuple[float, bool, bool]:
    """One step's critical value: the maximum over ``k - 1``-subsets ``I`` of the rejected.

    The step's null for a subset ``I`` is the ``k``-th largest ``s_jb`` over the configs not
    yet rejected and ``I``. Only rejected configs that appear in the stored lists change it;
    when there are at most :data:`MAX_SUBSETS` subsets of them every one is tried, otherwise
    each replication counts its own ``k - 1`` largest rejected entries (an upper bound of
    every subset's ``k``-th largest, hence of their maximum).
    """
    values, index = summary.top_value, summary.top_index
    pad = index == NO_CONFIG
    # A list holds every config when it ends in padding or the sweep has no more configs.
    complete = pad[:, -1] | (summary.n_configs <= summary.top_k)
    base = ~rejected_entry & ~pad
    seen = np.unique(index[rejected_entry])
    if k == 1:
        q, exact = _kth_counted(values, base, 1, complete)
        return _called_real_above(q, allowed), exact, True
    if seen.size <= k - 1:  # one subset: every rejected config the lists hold
        q, exact = _kth_counted(values, base | rejected_entry, k, complete)
        return _called_real_above(q, allowed), exact, True
    if math.comb(int(seen.size), k - 1) > max_subsets:
        order = np.cumsum(rejected_entry, axis=1)
        counted = base | (rejected_entry & (order <= k - 1))
        q, exact = _kth_counted(values, counted, k, complete)
        return _called_real_above(q, allowed), exact, False
    # rank[b, j]: the entry's position among ``seen`` (seen.size for entries not rejected).
    rank = np.where(rejected_entry, np.searchsorted(seen, index), seen.size)
    best, exact = -math.inf, True
    for subset in itertools.combinations(range(int(seen.size)), k - 1):
        chosen = np.zeros(seen.size + 1, dtype=bool)
        chosen[list(subset)] = True
        q, ok = _kth_counted(values, base | chosen[rank], k, complete)
        best, exact = max(best, _called_real_above(q, allowed)), exact and ok
    return best, exact, True


def _checked(
    summary: NullSummary, grid_index: IntArray, t_stat: FloatArray, alpha: float
) -> tuple[IntArray, FloatArray]:
    if not 0.0 < alpha < 1.0:
        raise input_error(f"alpha: expected a level in (0, 1), got {alpha!r}")
    return tested_configs(grid_index, t_stat)


def _k_stepm(
    summary: NullSummary,
    counts: TCounts,
    k: int,
    alpha: float,
    max_subsets: int,
    entry_t: FloatArray,
) -> KStepMResult:
    allowed = allowed_exceedances(summary.reps, alpha)
    threshold, last, steps, exact, all_subsets = math.inf, math.inf, 0, True, True
    # Every rejected set is the configs with t above the running threshold: a step rejects
    # the remaining configs whose t exceeds its critical value.
    while counts.above(threshold) < counts.total:
        steps += 1
        c, step_exact, step_all = _step_critical(
            summary, entry_t > threshold, k, allowed, max_subsets
        )
        exact, all_subsets, last = exact and step_exact, all_subsets and step_all, c
        if not c < threshold or counts.above(c) == counts.above(threshold):
            break
        threshold = c
    count = counts.above(threshold)
    # Called real exactly when t exceeds it: the last rejecting step's critical value, or
    # the first step's when nothing was called real.
    critical = threshold if count else last
    return KStepMResult(k, alpha, None, critical, steps, exact, all_subsets, count, threshold)


def k_stepm(
    summary: NullSummary,
    grid_index: IntArray,
    t_stat: FloatArray,
    k: int,
    alpha: float = 0.05,
    max_subsets: int = MAX_SUBSETS,
) -> KStepMResult:
    """Romano, Shaikh and Wolf's (2008) k-StepM from a merged null summary.

    Parameters
    ----------
    summary : NullSummary
        Merged over the whole sweep (:func:`stats.merge_null_summaries`).
    grid_index, t_stat : ndarray, shape (m,)
        Every tested config's grid position and studentised statistic (NaN: not tested).
    k : int
        At least 1: control the probability of ``k`` or more false discoveries.
    alpha : float, default 0.05
        Level.
    max_subsets : int, default :data:`MAX_SUBSETS`
        Subsets of the rejected configs tried per step before the per-replication bound.

    Returns
    -------
    KStepMResult

    Notes
    -----
    Step 1 calls real every config with ``t_k > d_1``, ``d_1`` the ``1 - alpha`` bootstrap
    quantile of the ``k``-th largest null statistic over all configs (the ``k``-max). Step
    ``j`` calls real the remaining configs with ``t_k > d_j``,
    ``d_j = max over I ⊆ R_{j-1}, |I| = k - 1`` of the quantile of the ``k``-max over ``I``
    and the configs not yet called real, and the procedure stops when a step adds nothing
    (RSW 2008, Sec. 3; the generic k-StepM of Romano and Wolf 2007). The null statistics are
    StepM's (Hansen's consistent recentring, as arch's ``StepM``), and no critical value is
    taken below 0, so a config is called real only with a positive mean excess return (as
    SPA's ``max(0, t)``). With ``k = 1`` it is StepM, config for config, whenever StepM's
    critical value is positive (the tests check it against :func:`stats.stepm` and arch);
    below 0, which needs every config recentred, StepM rejects no config either, as a
    config with ``t`` above the bar would bring its own null draws into the maximum.
    Quantiles are the ``(1 + #{null >= t}) / (1 + B) <= alpha`` rule of every p-value here.

    Beyond :data:`MAX_SUBSETS` subsets the maximum over ``I`` is replaced by a
    per-replication bound (each replication's own ``k - 1`` largest rejected entries join
    the set), which is at least every subset's null, so control still holds; the paper's
    own shortcut (its "operative" method, subsets of the ``N_max`` least significant
    rejections) is not used because it is an approximation in finite samples.

    References
    ----------
    .. [1] Romano, J. P., Shaikh, A. M. and Wolf, M. (2008). "Formalized data snooping
       based on generalized error rates". Econometric Theory 24(2), 404-447.
    .. [2] Romano, J. P. and Wolf, M. (2007). "Control of generalized error rates in
       multiple testing". Annals of Statistics 35(4), 1378-1408.
    """
    if int(k) != k or k < 1:
        raise input_error(f"k: expected an integer >= 1, got {k!r}")
    idx, t = _checked(summary, grid_index, t_stat, alpha)
    counts = t_counts_of(summary, idx, t)
    res = _k_stepm(summary, counts, int(k), alpha, max_subsets, counts.entry_t(summary))
    return replace(res, rejected=rejected_above(idx, t, res.threshold))


def fdp_stepm(
    summary: NullSummary,
    grid_index: IntArray,
    t_stat: FloatArray,
    gamma: float = 0.1,
    alpha: float = 0.05,
    max_subsets: int = MAX_SUBSETS,
) -> FDPStepMResult:
    """Romano, Shaikh and Wolf's (2008) FDP-StepM: ``P(FDP > gamma) <= alpha``.

    Parameters
    ----------
    summary : NullSummary
        Merged over the whole sweep.
    grid_index, t_stat : ndarray, shape (m,)
        Every tested config's grid position and studentised statistic.
    gamma : float, default 0.1
        Tolerated false discovery proportion, in (0, 1).
    alpha : float, default 0.05
        Probability allowed for the proportion to exceed ``gamma``.
    max_subsets : int, default :data:`MAX_SUBSETS`
        As :func:`k_stepm`.

    Returns
    -------
    FDPStepMResult

    Notes
    -----
    With ``k = 1``, run k-StepM and let ``N_k`` be the number it rejects; while
    ``N_k >= k / gamma - 1``, raise ``k`` by one and run it again; the rejections of the
    last run are the result (RSW 2008, Sec. 4, after Romano and Wolf 2007). When StepM
    rejects fewer than ``1 / gamma - 1`` configs (9 at ``gamma = 0.1``) the result is
    StepM's. It controls the exceedance ``P(FDP > gamma)``, not the false discovery rate
    ``E[FDP]`` of Benjamini and Hochberg; since ``FDP <= 1``,
    ``E[FDP] <= gamma + alpha (1 - gamma)``, and on the simulated sweeps of
    ``benchmarks/bench_discoveries.py`` the mean FDP stays well below ``gamma``.

    References
    ----------
    .. [1] Romano, J. P., Shaikh, A. M. and Wolf, M. (2008). "Formalized data snooping
       based on generalized error rates". Econometric Theory 24(2), 404-447.
    .. [2] Romano, J. P. and Wolf, M. (2007). "Control of generalized error rates in
       multiple testing". Annals of Statistics 35(4), 1378-1408.
    """
    if not 0.0 < gamma < 1.0:
        raise input_error(f"gamma: expected a proportion in (0, 1), got {gamma!r}")
    idx, t = _checked(summary, grid_index, t_stat, alpha)
    res = fdp_stepm_counted(summary, t_counts_of(summary, idx, t), gamma, alpha, max_subsets)
    return replace(res, rejected=rejected_above(idx, t, res.threshold))


def fdp_stepm_counted(
    summary: NullSummary,
    counts: TCounts,
    gamma: float = 0.1,
    alpha: float = 0.05,
    max_subsets: int = MAX_SUBSETS,
) -> FDPStepMResult:
    """:func:`fdp_stepm` from the configs' :class:`stats.TCounts` (no per-config array).

    Parameters
    ----------
    summary : NullSummary
        Merged over the whole sweep.
    counts : TCounts
        The tested configs' ``t`` counted against ``summary`` (merged over the parts).
    gamma, alpha : float
        As :func:`fdp_stepm`.
    max_subsets : int, default :data:`MAX_SUBSETS`
        As :func:`k_stepm`.

    Returns
    -------
    FDPStepMResult
        ``rejected`` is None: the configs called real are those with ``t > threshold``.
    """
    if not 0.0 < gamma < 1.0:
        raise input_error(f"gamma: expected a proportion in (0, 1), got {gamma!r}")
    if not 0.0 < alpha < 1.0:
        raise input_error(f"alpha: expected a level in (0, 1), got {alpha!r}")
    entry_t = counts.entry_t(summary)
    found: list[int] = []
    exact = all_subsets = True
    k = 1
    while True:
        res = _k_stepm(summary, counts, k, alpha, max_subsets, entry_t)
        found.append(res.count)
        exact, all_subsets = exact and res.exact, all_subsets and res.all_subsets
        # Stop when N_k < k / gamma - 1, written without the division: gamma (N_k + 1) < k.
        if gamma * (res.count + 1) < k or res.count >= counts.total:
            break
        k += 1
    return FDPStepMResult(
        gamma,
        alpha,
        None,
        k,
        tuple(found),
        res.critical_value,
        exact,
        all_subsets,
        res.count,
        res.threshold,
    )
