"""Per-config metrics: the one function every executor and the report use."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from stats import (
    FoldPlan,
    ResampleDraws,
    ReturnMoments,
    annualised_sharpe,
    block_starts_and_lengths,
    bootstrap_long_run_sd,
    centred_resample_means,
    config_null_stats,
    moments_from_path,
    path_statistics,
)
from stats._folds import FoldMetric, excess_fold_values
from stats._row_kernel import paired_path_statistics
from strategies import StrategyOutput
from sweep.spec._config_identity import resample_seed
from sweep.spec._models import MetricOptions

#: Float metric columns, in table order. ``mean`` .. ``kurtosis`` describe the config's own
#: returns; ``excess_*``, ``omega``, ``t_stat`` and ``p_value`` its returns in excess of the
#: spec's benchmark (what the tests use).
FLOAT_METRICS = (
    "mean",
    "std",
    "sharpe",
    "sharpe_ann",
    "skew",
    "kurtosis",
    "total_return",
    "max_drawdown",
    "turnover",
    "excess_mean",
    "excess_std",
    "excess_sharpe",
    "excess_sharpe_ann",
    "excess_skew",
    "excess_kurtosis",
    "omega",
    "t_stat",
    "p_value",
)
#: Integer metric columns, in table order.
INT_METRICS = ("n_obs", "n_trades", "blk_n")


def block_columns(n_blocks: int) -> tuple[list[str], list[str]]:
    """Names of the per-block sum and sum-of-squares columns for ``n_blocks`` PBO blocks."""
    return (
        [f"blk_sum_{i:02d}" for i in range(n_blocks)],
        [f"blk_sumsq_{i:02d}" for i in range(n_blocks)],
    )


@functools.lru_cache(maxsize=4)
def shared_draws(
    root_seed: int, n_obs: int, block_length: int, reps: int, method: str
) -> ResampleDraws:
    """The block-bootstrap draws every config of a sweep is resampled on (joint resampling).

    Drawn once per process (cached) from :func:`sweep.spec._config_identity.resample_seed`: they
    depend on the root seed, the number of periods, the block length, the method and the number of
    replications, never on a config or a batch.
    """
    rng = np.random.default_rng(resample_seed(root_seed, n_obs, block_length, method))
    starts, lengths = block_starts_and_lengths(rng, n_obs, block_length, reps, method)  # type: ignore[arg-type]
    mean_length = float(block_length) if method == "stationary" else 0.0
    return ResampleDraws.from_blocks(n_obs, starts, lengths, mean_length)


@dataclass(frozen=True)
class ConfigMetrics:
    """Every metric column of a batch, and the centred resample means behind the tests.

    Attributes
    ----------
    columns : dict of str to ndarray
        See :func:`config_metrics`.
    centred : ndarray of float64, shape (n, reps), or None
        Null-centred resample means of the excess returns (None when reps = 0).
    fold_values : ndarray of float64, shape (n, n_folds), or None
        The validation metric of the excess returns on each fold's training windows
        (:func:`stats.fold_values`; None without ``[validation]``).
    """

    columns: dict[str, NDArray[np.generic]]
    centred: NDArray[np.float64] | None
    fold_values: NDArray[np.float64] | None = None


def _moment_columns(
    prefix: str, moments: ReturnMoments, ppy: float
) -> dict[str, NDArray[np.float64]]:
    return {
        f"{prefix}mean": moments.mean,
        f"{prefix}std": moments.std,
        f"{prefix}sharpe": moments.sharpe,
        f"{prefix}sharpe_ann": annualised_sharpe(moments.sharpe, ppy),
        f"{prefix}skew": moments.skew,
        f"{prefix}kurtosis": moments.kurtosis,
    }


def config_metrics(
    output: StrategyOutput,
    benchmark: NDArray[np.float64],
    draws: ResampleDraws | None,
    settings: MetricOptions,
    folds: FoldPlan | None = None,
    fold_metric: FoldMetric = "sharpe",
) -> ConfigMetrics:
    """Compute every per-config metric column from a strategy's batch output.

    Parameters
    ----------
    output : StrategyOutput
        Returns (n, T), turnover (n, T) and trade counts (n,).
    benchmark : ndarray of float64, shape (T,)
        The benchmark's returns (:func:`sweep.data._benchmark.benchmark_returns`).
    draws : ResampleDraws or None
        The sweep's shared bootstrap draws (:func:`shared_draws`); None when reps = 0.
    settings : MetricOptions
        The spec's ``[metrics]``: periods per year and the PBO block count are used here
        (the bootstrap options are already in ``draws``).
    folds : FoldPlan, optional
        The ``[validation]`` folds: the fold values are computed when given.
    fold_metric : {"sharpe", "mean"}
        What the fold values measure.

    Returns
    -------
    ConfigMetrics
        Columns ``n_obs``; ``mean``, ``std`` (ddof=1), ``sharpe`` (per period),
        ``sharpe_ann``, ``skew``, ``kurtosis`` (RAW, normal = 3) of the returns;
        ``total_return``, ``max_drawdown``, ``turnover`` (mean one-way turnover per period
        times periods per year), ``n_trades``; the same moments of the excess returns
        (``excess_*``); ``omega`` (the draws' exact long-run sd,
        :func:`stats.bootstrap_long_run_sd`), ``t_stat`` and ``p_value`` from the joint
        resamples (:func:`stats.config_null_stats`; NaN when reps = 0); ``blk_n`` and the
        per-block
        ``blk_sum_XX`` / ``blk_sumsq_XX`` of the excess returns (for PBO).

    Notes
    -----
    Every quantity is a reduction along one config's own row (the draws are shared, not
    batch-dependent), so a row's metrics do not depend on the batch it was computed in
    (invariant 1).
    """
    r = np.ascontiguousarray(output.returns, dtype=np.float64)
    n, t = r.shape
    ppy = settings.periods_per_year
    relative = bool(benchmark.any())
    if relative:  # both series from one pass over the returns; the excess's moments and blocks
        path, excess_path = paired_path_statistics(r, benchmark, settings.pbo_blocks)
    else:
        path = excess_path = path_statistics(r, settings.pbo_blocks)
    excess_moments = moments_from_path(excess_path, t)
    cols: dict[str, NDArray[np.generic]] = {
        "n_obs": np.full(n, t, dtype=np.int64),
        **_moment_columns("", moments_from_path(path, t), ppy),
        "total_return": path.total_return,
        "max_drawdown": path.max_drawdown,
        "turnover": output.turnover.sum(axis=1) / t * ppy,
        "n_trades": output.n_trades.astype(np.int64),
        **_moment_columns("excess_", excess_moments, ppy),
    }
    centred = None
    if draws is not None:  # the bootstrap reads the excess returns themselves
        excess = np.ascontiguousarray(r - benchmark[np.newaxis, :]) if relative else r
        centred = centred_resample_means(excess, draws)
        omega = bootstrap_long_run_sd(excess, draws)
        null = config_null_stats(excess_moments.mean, omega, centred, t)
        cols.update({"omega": null.omega, "t_stat": null.t_stat, "p_value": null.p_value})
    else:
        cols.update({k: np.full(n, np.nan) for k in ("omega", "t_stat", "p_value")})
    cols["blk_n"] = np.full(n, excess_path.block_count, dtype=np.int64)
    sum_names, sq_names = block_columns(settings.pbo_blocks)
    # One transposed copy per table, each column a contiguous row of it (not 2 x 16 copies).
    by_block = np.concatenate([excess_path.block_sum, excess_path.block_sumsq], axis=1).T.copy()
    for name, column in zip([*sum_names, *sq_names], by_block, strict=True):
        cols[name] = column
    values = (
        None
        if folds is None
        else excess_fold_values(r, benchmark if relative else None, folds, fold_metric)
    )
    return ConfigMetrics(cols, centred, values)
