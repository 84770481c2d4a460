"""Per-config metrics: the one function every executor and the report use."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from stats import (
    annualised_sharpe,
    bootstrap_pvalue,
    bootstrap_sharpe,
    moments_from_path,
    path_statistics,
)
from strategies import StrategyOutput

#: Float metric columns, in table order.
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


@dataclass(frozen=True)
class MetricSettings:
    """The metric options that change results (a copy of the spec's ``[metrics]``)."""

    periods_per_year: float
    bootstrap_reps: int
    block_length: int
    bootstrap_method: str
    pbo_blocks: int


def config_metrics(
    output: StrategyOutput,
    bootstrap_rngs: Sequence[np.random.Generator],
    settings: MetricSettings,
) -> dict[str, NDArray[np.generic]]:
    """Compute every per-config metric column from a strategy's batch output.

    Parameters
    ----------
    output : StrategyOutput
        Returns (n, T), turnover (n, T) and trade counts (n,).
    bootstrap_rngs : sequence of numpy.random.Generator
        One generator per config (the config's bootstrap stream).
    settings : MetricSettings
        Periods per year, bootstrap reps/block length/method, PBO block count.

    Returns
    -------
    dict of str to ndarray
        ``n_obs``, ``mean``, ``std`` (ddof=1), ``sharpe`` (per period), ``sharpe_ann``,
        ``skew``, ``kurtosis`` (RAW, normal = 3), ``total_return``, ``max_drawdown``,
        ``turnover`` (mean one-way turnover per period times periods per year), ``n_trades``,
        ``p_value`` (null-centred block bootstrap; NaN when reps = 0), ``blk_n`` and the
        per-block ``blk_sum_XX`` / ``blk_sumsq_XX`` columns.

    Notes
    -----
    Every quantity is a reduction along one config's own row, so a row's metrics do not
    depend on the batch it was computed in (invariant 1).
    """
    r = np.ascontiguousarray(output.returns, dtype=np.float64)
    n, t = r.shape
    path = path_statistics(r, settings.pbo_blocks)
    moments = moments_from_path(path, t)
    sharpe = moments.sharpe
    cols: dict[str, NDArray[np.generic]] = {
        "n_obs": moments.n_obs,
        "mean": moments.mean,
        "std": moments.std,
        "sharpe": sharpe,
        "sharpe_ann": annualised_sharpe(sharpe, settings.periods_per_year),
        "skew": moments.skew,
        "kurtosis": moments.kurtosis,
        "total_return": path.total_return,
        "max_drawdown": path.max_drawdown,
        "turnover": output.turnover.sum(axis=1) / t * settings.periods_per_year,
        "n_trades": output.n_trades.astype(np.int64),
    }
    if settings.bootstrap_reps > 0:
        boot = bootstrap_sharpe(
            r,
            bootstrap_rngs,
            settings.bootstrap_reps,
            settings.block_length,
            settings.bootstrap_method,  # type: ignore[arg-type]
        )
        cols["p_value"] = bootstrap_pvalue(sharpe, boot)
    else:
        cols["p_value"] = np.full(n, np.nan)
    cols["blk_n"] = np.full(n, path.block_count, dtype=np.int64)
    sum_names, sq_names = block_columns(settings.pbo_blocks)
    for j, name in enumerate(sum_names):
        cols[name] = np.ascontiguousarray(path.block_sum[:, j])
    for j, name in enumerate(sq_names):
        cols[name] = np.ascontiguousarray(path.block_sumsq[:, j])
    return cols
