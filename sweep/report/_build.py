"""Build the audit report of a run folder: the data of report.json and its figures."""

from __future__ import annotations

import math
import os
import typing
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sweep._version import ENGINE_VERSION
from sweep.common._jsonable import JSONObject
from sweep.common._serial import RecordFormatError, from_json, to_json
from sweep.engine._evaluate import ReturnsRunner, config_returns_blocks
from sweep.report import _report_plots as plots
from sweep.report._bench_figures import plot_bench
from sweep.report._bench_scaling import scaling_section
from sweep.report._execution import ExecutionPlotData, execution_section
from sweep.report._hypothesis_tests import TestingPlotData, testing_section
from sweep.report._identity_section import identity_section
from sweep.report._integrity import integrity_section
from sweep.report._load import load_run, scan_settings
from sweep.report._oos_section import OutOfSamplePlotData, out_of_sample_section
from sweep.report._options import ReportOptions
from sweep.report._ranking import ResultsPlotData, cell_label, results_section
from sweep.report._run_scaling import run_scaling
from sweep.report._sections import (
    Deflated,
    Generated,
    MultipleTestingSection,
    ReportData,
    Unavailable,
)
from sweep.report._step_progress import Steps
from sweep.store._part_audit import PartAuditor
from sweep.store._part_mapper import PartMapper, map_here
from sweep.store._run_store import utc_now

REPORT_FORMAT = "raysweep-report-v1"


class ReportFormatError(RecordFormatError):
    """A report.json of another format, or one that does not match the report's sections."""


@dataclass(frozen=True)
class Report:
    """A built report.

    Attributes
    ----------
    data : ReportData
        Every section, typed; report.json is its serialisation (:meth:`to_json`). The same
        run folder gives the same data apart from ``generated`` (timestamp and the seconds
        each step took).
    figures : dict of str to bytes
        PNG bytes of each figure, in report order.
    """

    data: ReportData
    figures: dict[str, bytes]

    # Hand-written: report.json is the rule applied to ``data`` alone (the figures are files
    # beside it), with NaN left for the writer to put as null.
    def to_json(self) -> JSONObject:
        """What report.json holds, before NaN is written as null."""
        return typing.cast(JSONObject, to_json(self.data))


def report_from_json(doc: Any) -> ReportData:
    """Read a parsed report.json back into the typed record.

    Raises
    ------
    ReportFormatError
        For another report format (naming it and :data:`REPORT_FORMAT`), or a key missing
        or of the wrong type (naming where).
    """
    found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
    if found != REPORT_FORMAT:
        raise ReportFormatError(f"report.json: format {found!r}, expected {REPORT_FORMAT!r}")
    try:
        return from_json(ReportData, doc)
    except ReportFormatError:
        raise
    except RecordFormatError as exc:
        raise ReportFormatError(str(exc)) from exc


def _execution_figures(p: ExecutionPlotData) -> dict[str, bytes]:
    if p.tasks is None or p.tasks.empty:
        return {}
    return {
        "task_timeline": plots.plot_timeline(p.tasks),
        "task_time_fit": plots.plot_task_fit(p.tasks, p.fits),
    }


def _results_figures(
    p: ResultsPlotData, testing: MultipleTestingSection | Unavailable
) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    if p.configs:
        thresholds = {}
        deflation = testing.deflation if isinstance(testing, MultipleTestingSection) else None
        if deflation is not None:
            for name, x in (("naive", deflation.naive), ("implied", deflation.implied)):
                if isinstance(x, Deflated):
                    thresholds[name] = x.expected_max_sharpe_ann
        out["sharpe_histogram"] = plots.plot_sharpe_histogram(
            p.sharpe_counts, p.sharpe_edges, p.winner_sharpe_ann, thresholds
        )
    if p.heatmap is not None:
        out["heatmap"] = plots.plot_heatmap(p.heatmap)
    elif p.profile is not None:
        axis, values, metric, cells = p.profile
        label = cell_label(axis, cells)
        out["profile"] = plots.plot_profile(label, values, metric, "max sharpe_ann")
    return out


def _out_of_sample_figures(p: OutOfSamplePlotData) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    if p.result is None or p.dates is None:
        return out
    if (wf := p.result.walk_forward) is not None:
        out["walk_forward_equity"] = plots.plot_walk_forward(
            p.dates, wf.periods, wf.rule, wf.fixed, wf.benchmark
        )
        chosen = [f.params for f in p.result.folds if f.kind == "walk_forward"]
        out["parameter_stability"] = plots.plot_parameter_stability(p.params, chosen)
    if p.result.cpcv_path_sharpe is not None and np.isfinite(p.result.cpcv_path_sharpe).any():
        out["cpcv_paths"] = plots.plot_cpcv_paths(
            p.result.cpcv_path_sharpe * math.sqrt(p.periods_per_year)
        )
    return out


def _testing_figures(
    p: TestingPlotData, testing: MultipleTestingSection | Unavailable
) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    if p.curve_n.size:
        out["expected_max_curve"] = plots.plot_expected_max(
            p.curve_n,
            p.curve_sr0,
            p.naive_n,
            p.effective_n,
            p.winner_sharpe,
            (testing.trial_sharpe_std if isinstance(testing, MultipleTestingSection) else None)
            or 0.0,
        )
    if p.pbo is not None:
        out["pbo_logits"] = plots.plot_pbo_logits(p.pbo)
        out["pbo_degradation"] = plots.plot_pbo_degradation(p.pbo)
    return out


def build_report(
    run_dir: str | os.PathLike[str],
    options: ReportOptions | None = None,
    *,
    auditor: PartAuditor | None = None,
    recompute: ReturnsRunner = config_returns_blocks,
    mapper: PartMapper = map_here,
) -> Report:
    """Build the audit report of a run folder.

    Parameters
    ----------
    run_dir : str or path
        The run folder (a path or a URI such as ``s3://bucket/prefix``).
    options : ReportOptions, optional
        Top-k, heatmap axes, benchmark folder, sample sizes, seeds.
    auditor : PartAuditor, optional
        How the parts are checked and re-hashed (:func:`sweep.report._load.load_run`): in
        this process by default, or as Ray tasks (``sweep report --address``). The report
        is the same either way.
    recompute : ReturnsRunner, optional
        What recomputes returns (the dimensionality sample's, the out-of-sample selected
        configs'): here by default, or Ray tasks (``sweep report --address``); the same
        series either way.
    mapper : PartMapper, optional
        Where the passes over the good parts run (the read into the reducers, PBO's two
        passes): here by default, or as Ray tasks over groups of parts (``sweep report
        --address``); the same reductions either way.

    Returns
    -------
    Report
        Sections ``identity``, ``integrity``, ``execution``, ``results``,
        ``multiple_testing``, ``out_of_sample``, ``verdict``, ``scaling``, plus ``options``
        and ``generated``.
    """
    options = options or ReportOptions()
    with Steps(options.progress) as steps:
        run = load_run(run_dir, auditor, scan_settings(options), mapper, steps.step)
        with steps.step("identity and integrity"):
            identity = identity_section(run)
            integrity = integrity_section(run)
        with steps.step("execution telemetry"):
            execution, execution_plot = execution_section(run)
        with steps.step("results"):
            results, results_plot = results_section(run, options)
        with steps.step("out of sample"):
            oos, oos_plot = out_of_sample_section(run, options, recompute=recompute)
        testing, verdict, testing_plot = testing_section(run, options, steps, oos, recompute)
        with steps.step("scaling"):
            scaling, bench = scaling_section(run, options.bench_dir)
            scaling = replace(
                scaling,
                from_run=run_scaling(
                    run.manifest.sessions_in_order(),
                    execution_plot.tasks,
                    execution.stats.fit_service if execution.stats is not None else None,
                    bench.scaling,
                ),
            )
        with steps.step("figures"):
            figures = {
                **_execution_figures(execution_plot),
                **_results_figures(results_plot, testing),
                **_testing_figures(testing_plot, testing),
                **_out_of_sample_figures(oos_plot),
                **{f"bench_{r.kind}": plot_bench(r) for r in bench.found()},
            }
    data = ReportData(
        format=REPORT_FORMAT,
        generated=Generated(
            at=utc_now(),
            by=f"raysweep {ENGINE_VERSION}",
            step_seconds=dict(steps.seconds),
            step_peak_rss_mib=dict(steps.peak_rss_mib),
        ),
        options=options,
        identity=identity,
        integrity=integrity,
        execution=execution,
        results=results,
        multiple_testing=testing,
        out_of_sample=oos,
        verdict=verdict,
        scaling=scaling,
        figures=tuple(figures),
    )
    return Report(data, figures)
