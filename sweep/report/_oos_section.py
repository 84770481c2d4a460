"""Report section 6, out of sample: walk-forward and CPCV validation of the selection rule."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from sweep.engine._evaluate import ReturnsRunner, config_returns_blocks
from sweep.errors import USER_ERRORS
from sweep.report._load import RunData
from sweep.report._oos_selection import OOS_PSR_THRESHOLD, OutOfSample, out_of_sample
from sweep.report._options import ReportOptions
from sweep.report._rebuild import rebuild_sweep
from sweep.report._sections import CPCVRecord, OutOfSampleSection, Unavailable, WalkForwardRecord
from sweep.spec._resolve import ResolvedSweep


@dataclass(frozen=True)
class OutOfSamplePlotData:
    """Arrays behind the out-of-sample figures (not part of report.json)."""

    result: OutOfSample | None
    dates: NDArray[np.datetime64] | None
    params: list[str]
    periods_per_year: float


#: What rebuilding a recorded sweep may raise: bad input, or a file or module gone.
_REBUILD_ERRORS: tuple[type[Exception], ...] = (*USER_ERRORS, OSError, ImportError)


def _unavailable(reason: str, ppy: float) -> tuple[Unavailable, OutOfSamplePlotData]:
    return Unavailable(reason=reason), OutOfSamplePlotData(None, None, [], ppy)


def _paragraph(result: OutOfSample, ppy: float) -> str:
    parts = []
    wf = result.walk_forward
    if wf is not None:
        n = sum(f.kind == "walk_forward" for f in result.folds)
        eff = (
            f"; walk-forward efficiency {wf.efficiency:.2f} (out-of-sample over in-sample "
            "annualised Sharpe)"
            if math.isfinite(wf.efficiency)
            else ""
        )
        parts.append(
            f"Re-optimised on each of {n} training windows and traded on the window after "
            f"it, the rule 'take the in-sample best' earned an annualised Sharpe ratio of "
            f"excess returns of {wf.sharpe_ann:.2f} over {wf.periods.size:,} out-of-sample "
            f"periods, PSR {wf.psr:.3f} against no excess{eff}. It "
            + ("holds" if wf.holds else "does not hold")
            + f" out of sample by the verdict's rule (PSR >= {OOS_PSR_THRESHOLD})."
        )
    if result.cpcv_path_sharpe is not None and result.cpcv_path_sharpe.size:
        paths = result.cpcv_path_sharpe * math.sqrt(ppy)
        parts.append(
            f"Over {paths.size} combinatorial purged cross-validation paths the out-of-sample "
            f"annualised Sharpe ratio had median {np.nanmedian(paths):.2f} and was below zero "
            f"on {np.mean(paths < 0):.0%} of the paths."
        )
    return " ".join(parts)


def out_of_sample_section(
    run: RunData,
    options: ReportOptions,
    sweep: ResolvedSweep | None = None,
    recompute: ReturnsRunner = config_returns_blocks,
) -> tuple[OutOfSampleSection | Unavailable, OutOfSamplePlotData]:
    """Section 6 of the report.

    Parameters
    ----------
    run : RunData
        The run folder, read (its merged fold summary).
    options : ReportOptions
        ``allow_import`` (the selected configs' returns are recomputed).
    sweep : ResolvedSweep, optional
        The sweep, when the caller holds it (data given in memory); else rebuilt from the
        run folder (:func:`sweep.report._rebuild.rebuild_sweep`).
    recompute : ReturnsRunner, optional
        What recomputes the selected configs' returns: here by default, or Ray tasks
        (``sweep report --address``); the section is the same either way.

    Returns
    -------
    section : OutOfSampleSection or Unavailable
        Folds (windows, choice, in-sample and out-of-sample metric), the stitched
        walk-forward record (Sharpe, PSR, efficiency), CPCV path Sharpe ratios, a paragraph;
        ``available`` False with a reason without ``[validation]``.
    plot_data : OutOfSamplePlotData
    """
    ppy = run.periods_per_year
    if "validation" not in run.manifest.spec:
        return _unavailable(
            "the spec has no [validation] section (walk_forward or cpcv); add one to see how "
            "the selection does on data it did not see",
            ppy,
        )
    if run.fold_summary is None:
        return _unavailable("no part carries a fold summary yet", ppy)
    best = run.scan.ranked.grid_index
    winner = int(best[0]) if best.size else None
    try:
        sweep = sweep or rebuild_sweep(run, options)
        result = out_of_sample(sweep, run.fold_summary, winner, recompute)
    except _REBUILD_ERRORS as exc:
        return _unavailable(f"cannot recompute the selected configs' returns: {exc}", ppy)
    dates = sweep.panel.dates
    walk_forward = None
    if (wf := result.walk_forward) is not None:
        walk_forward = WalkForwardRecord(
            folds=sum(f.kind == "walk_forward" for f in result.folds),
            periods=int(wf.periods.size),
            first=str(dates[int(wf.periods[0])])[:10],
            last=str(dates[int(wf.periods[-1]) + 1])[:10],
            sharpe=wf.sharpe,
            sharpe_ann=wf.sharpe_ann,
            psr=wf.psr,
            in_sample_sharpe_ann=wf.in_sample_sharpe_ann,
            efficiency=wf.efficiency,
            holds=wf.holds,
            rule=f"holds out of sample when PSR >= {OOS_PSR_THRESHOLD}",
            total_return=float(np.prod(1.0 + wf.rule) - 1.0),
            benchmark_total_return=float(np.prod(1.0 + wf.benchmark) - 1.0),
            fixed_winner_total_return=float(np.prod(1.0 + wf.fixed) - 1.0),
        )
    cpcv = None
    if result.cpcv_path_sharpe is not None:
        paths = result.cpcv_path_sharpe * math.sqrt(ppy)
        finite = paths[np.isfinite(paths)]
        cpcv = CPCVRecord(
            splits=sum(f.kind == "cpcv" for f in result.folds),
            paths=int(paths.size),
            path_sharpe_ann=tuple(paths.tolist()),
            median_sharpe_ann=float(np.median(finite)) if finite.size else None,
            prob_negative=float(np.mean(finite < 0)) if finite.size else None,
        )
    section = OutOfSampleSection(
        metric=f"{result.metric} of excess returns over the benchmark, per period",
        folds=tuple(
            {str(k): v for k, v in row.items()}
            for row in result.table(dates).to_dict(orient="records")
        ),
        walk_forward=walk_forward,
        cpcv=cpcv,
        paragraph=_paragraph(result, ppy),
    )
    return section, OutOfSamplePlotData(result, dates, run.param_names, ppy)
