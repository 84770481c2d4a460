"""The report's recomputed returns: a seeded sample of configs, streamed a block at a time.

Returns are recomputed only for the descriptive dimensionality of the returns (a seeded
sample above ``max_return_configs``), with :func:`sweep.engine._evaluate.config_returns`,
which depends only on the config, the data and the root seed. Each block of recomputed rows
has its Sharpe ratios checked bit for bit against the stored ones and is then handed to
:class:`ReturnsDimensionality`, which multiplies it into the Gram of
:class:`stats.GramTrials` and drops it: the report never holds the sample's returns (10,000
series of 6,524 periods are 522 MB), unless the dimensionality needs every row at once
(fewer configs than periods, or too many pairs for the exact method).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from stats import (
    EffectiveTrials,
    GramTrials,
    effective_number_of_trials,
    moments_from_path,
    path_statistics,
    trials_from_mean_sq_correlation,
)
from sweep.engine._evaluate import ReturnsRunner, config_returns_blocks
from sweep.errors import USER_ERRORS
from sweep.report._config_scan import RETURNS_STREAM, sample_text
from sweep.report._load import RunData
from sweep.report._options import ReportOptions
from sweep.report._rebuild import rebuild_sweep
from sweep.report._row_check import check_rows
from sweep.report._sections import Dimensionality, ReturnsInfo, SharpeCheck

#: What the dimensionality of the returns is, and why it does not deflate the winner.
DIMENSIONALITY_MEANING = (
    "the dimensionality of the configs' returns (how many independent directions they "
    "span), not a number of trials: a grid of strongly correlated configs has few "
    "dimensions yet its best config is far luckier than the best of that many "
    "independent trials, so it is not used to deflate the winner"
)
#: What rebuilding a recorded sweep may raise: bad input, or a file or module gone.
REBUILD_ERRORS: tuple[type[Exception], ...] = (*USER_ERRORS, OSError, ImportError)
#: Standardised rows held at a time by the dimensionality: 512 x T doubles.
BLOCK_ROWS = 512


class ReturnsDimensionality:
    """The dimensionality of the recomputed returns, fed a block of rows at a time.

    :meth:`start` chooses how: when the exact method multiplies the ``T x T`` Gram (fewer
    periods than configs, few enough pairs: :meth:`stats.GramTrials.same_as_auto`), the
    blocks go into a
    :class:`stats.GramTrials` and are dropped; otherwise they are kept and
    :func:`stats.effective_number_of_trials` runs on all of them.

    Parameters
    ----------
    options : ReportOptions
        ``sample_seed`` and ``eigen_max_dim``.
    """

    def __init__(self, options: ReportOptions) -> None:
        self._options = options
        self._gram: GramTrials | None = None
        self._blocks: list[NDArray[np.float64]] = []
        self._given = 0

    def start(self, configs: int, periods: int) -> None:
        """Expect at most ``configs`` series of ``periods`` periods."""
        if GramTrials.same_as_auto(configs, periods):
            self._gram = GramTrials(
                periods,
                precision="float32",  # the products (relative error ~1e-10 on sum ρ², see stats)
                block_rows=BLOCK_ROWS,
                eigenvalues=periods <= self._options.eigen_max_dim,
                max_eigen_dim=self._options.eigen_max_dim,
            )

    def add(self, returns: NDArray[np.float64]) -> None:
        """Take some recomputed series (finite), one per row."""
        self._given += len(returns)
        if self._gram is not None:
            self._gram.add(returns)
        else:
            self._blocks.append(returns)

    def _trials(self) -> tuple[EffectiveTrials, int]:
        """The estimators, and the series they were given."""
        if self._gram is not None:
            return self._gram.result(), self._given
        returns = np.concatenate(self._blocks) if len(self._blocks) > 1 else self._blocks[0]
        self._blocks = []
        m, t = returns.shape
        return effective_number_of_trials(
            returns,
            method="auto",
            seed=self._options.sample_seed,
            eigenvalues=min(m, t) <= self._options.eigen_max_dim,
            max_eigen_dim=self._options.eigen_max_dim,
            block_rows=BLOCK_ROWS,
            precision="float32",
        ), m

    def result(self, n_total: int, sampled: bool) -> Dimensionality:
        """The dimensionality, as report data (see :func:`dimensionality_record`)."""
        eff, given = self._trials()
        return dimensionality_record(eff, given, n_total, sampled, self._options)


def dimensionality_record(
    eff: EffectiveTrials, given: int, n_total: int, sampled: bool, options: ReportOptions
) -> Dimensionality:
    """The dimensionality of the returns and the other estimators, as report data.

    Not the effective number of trials (that is the bootstrap-implied count, see
    :func:`sweep.report._inference.effective_number`). The headline (``value``) is the
    participation ratio with the finite-sample noise floor of the squared correlations
    removed (``participation_ratio_adjusted`` of :func:`stats.effective_number_of_trials`);
    for a sample (``given`` of ``n_total`` configs) it is extrapolated to all ``n_total``
    configs from the sample's mean squared correlation.
    """
    t = eff.n_obs
    q = eff.mean_sq_pairwise_correlation
    if sampled and math.isfinite(q):
        plain_pr, adjusted, nyholt = trials_from_mean_sq_correlation(n_total, q, t)
        scope = f"extrapolated to all {n_total:,} configs from a sample of {given:,}"
    else:
        plain_pr, adjusted, nyholt = (
            eff.participation_ratio,
            eff.participation_ratio_adjusted,
            eff.nyholt,
        )
        scope = f"over all {eff.n:,} non-constant configs"
    width = min(given, t)
    return Dimensionality(
        value=min(max(adjusted, 1.0), float(n_total)),
        estimator="participation ratio (sum λ)² / sum λ² of the correlation eigenvalues, "
        "finite-sample noise floor 1/(T-1) of each squared correlation removed",
        method=eff.method,
        scope=scope,
        configs_used=eff.n,
        constant_configs_left_out=eff.n_constant,
        pairs_sample_size=eff.sample_size,
        periods=eff.n_obs,
        participation_ratio=min(max(plain_pr, 1.0), float(n_total)),
        participation_ratio_adjusted=min(max(adjusted, 1.0), float(n_total)),
        participation_ratio_se=eff.participation_ratio_se,
        nyholt=min(max(nyholt, 1.0), float(n_total)),
        li_ji=eff.li_ji if not sampled else None,
        galwey=eff.galwey if not sampled else None,
        li_ji_of_sample=eff.li_ji if sampled else None,
        galwey_of_sample=eff.galwey if sampled else None,
        eigen_method=eff.eigen_method,
        eigen_note=None
        if eff.eigen_method != "none"
        else (
            f"Li-Ji and Galwey need the eigenvalues of a {width:,}-square matrix, above "
            f"the report's limit of {options.eigen_max_dim:,} (slow); not computed"
        ),
        mean_pairwise_correlation=eff.mean_pairwise_correlation,
        mean_sq_pairwise_correlation=q,
        meaning=DIMENSIONALITY_MEANING,
    )


class _SharpeTally:
    """The bit-for-bit comparison of recomputed and stored Sharpe ratios, block by block."""

    def __init__(self) -> None:
        self.compared = 0
        self.identical = 0
        self.largest: float | None = None  # nanmax of the differences so far
        self.any_finite = False

    def add(self, again: NDArray[np.float64], stored: NDArray[np.float64]) -> None:
        same = (again == stored) | (np.isnan(again) & np.isnan(stored))
        diff = np.abs(again - stored)
        self.compared += int(same.size)
        self.identical += int(same.sum())
        self.any_finite |= bool(np.isfinite(diff).any())
        if (~np.isnan(diff)).any():
            top = float(np.nanmax(diff))
            self.largest = top if self.largest is None else max(self.largest, top)

    def check(self) -> SharpeCheck:
        return SharpeCheck(
            compared=self.compared,
            identical=self.identical,
            max_abs_difference=self.largest
            if self.any_finite and self.largest is not None
            else 0.0,
        )


def recompute_returns(
    run: RunData,
    options: ReportOptions,
    recompute: ReturnsRunner = config_returns_blocks,
    dimensions: ReturnsDimensionality | None = None,
) -> ReturnsInfo:
    """Recompute the returns of the ok configs (or of a seeded sample of them), a block at a time.

    Parameters
    ----------
    run : RunData
        The run: its sample of the ok configs (``run.scan.returns``, drawn as it was read).
    options : ReportOptions
        ``sample_seed``, named in the sample's description.
    recompute : ReturnsRunner, optional
        What recomputes the sample's returns, in blocks of rows: here by default, or Ray
        tasks (``sweep report --address``); the same series either way.
    dimensions : ReturnsDimensionality, optional
        Given every block of finite rows (in grid order) as it is checked.

    Returns
    -------
    ReturnsInfo
        What was recomputed, how, the bit-for-bit check of the stored Sharpe ratios and
        that of a sample of whole rows (:func:`sweep.report._row_check.check_rows`);
        ``recomputed`` False with a reason when the sweep cannot be rebuilt (data moved or
        changed, strategy gone or changed).
    """
    grid = run.scan.returns.grid_index
    sampled, ok = run.scan.returns.sampled, run.scan.ok
    info = ReturnsInfo(
        configs=len(grid),
        of=ok,
        sampled=sampled,
        sample=(
            sample_text(len(grid), ok, "ok configs", options.sample_seed, RETURNS_STREAM)
            if sampled
            else "every ok config"
        ),
        deterministic=(
            "returns recomputed with sweep's config_returns: a config's returns depend only on "
            "the strategy and its version, the parameters, the data and the root seed, so "
            "these are the series the stored metrics were computed from"
        ),
        recomputed=False,
    )
    stored = run.rows_at(grid, ["sharpe"]).column(0).to_numpy()  # not held
    tally = _SharpeTally()
    kept = dropped = 0
    try:
        sweep = rebuild_sweep(run, options)
        row_check = check_rows(run, sweep, options.sample_seed)
        t = sweep.n_returns
        if dimensions is not None:
            dimensions.start(len(grid), t)
        done = 0
        for block in recompute(sweep, grid):
            mine = stored[done : done + len(block)]
            done += len(block)
            finite = np.isfinite(block).all(axis=1)
            if not finite.all():  # a copy only when some rows must go
                block, mine = block[finite], mine[finite]
            dropped += int((~finite).sum())
            kept += len(block)
            path = path_statistics(block, run.manifest.run_key.pbo_blocks)
            tally.add(moments_from_path(path, t).sharpe, mine)
            if dimensions is not None and len(block):
                dimensions.add(block)
    except REBUILD_ERRORS as exc:
        return replace(info, reason=f"cannot rebuild the sweep: {exc}")
    return replace(
        info,
        configs=kept,
        recomputed=True,
        periods=t,
        non_finite_rows_dropped=dropped,
        sharpe_check=tally.check(),
        row_check=row_check,
    )
