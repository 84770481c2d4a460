"""report.json is the serialisation of the typed sections, and loads back into them."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from sweep.common._jsonable import dumps
from sweep.common._serial import RecordFormatError, from_json, to_json
from sweep.report._build import ReportFormatError, report_from_json
from sweep.report._document import report_document
from sweep.report._render_md import render_markdown
from sweep.report._sections import (
    AmortizationFit,
    Deflated,
    ExecutionSection,
    MultipleTestingSection,
    NoBenchmarks,
    PBOSection,
    ReportData,
    ResultsSection,
    ScalingSection,
    SweepWideTests,
    Unavailable,
)

RUNS = ("complete", "partial", "resumed", "failing")


@pytest.mark.parametrize("name", RUNS)
def test_report_json_loads_back_into_the_record_and_writes_the_same_bytes(reports, name):
    _, files = reports[name]
    text = files.json.read_text(encoding="utf-8")
    data = from_json(ReportData, json.loads(text))
    assert isinstance(data, ReportData)
    assert dumps(to_json(data)) == text
    # The record read back renders the report.md that was written.
    assert render_markdown(report_document(data, list(data.figures))) == files.markdown.read_text(
        encoding="utf-8"
    )


def test_the_loaded_record_is_typed_all_the_way_down(reports):
    report, files = reports["complete"]
    data = from_json(ReportData, json.loads(files.json.read_text(encoding="utf-8")))
    assert isinstance(data.results, ResultsSection)
    assert isinstance(data.execution, ExecutionSection) and data.execution.stats is not None
    assert isinstance(data.execution.stats.fit_service, AmortizationFit | Unavailable)
    mt = data.multiple_testing
    assert isinstance(mt, MultipleTestingSection)
    assert isinstance(mt.sweep_wide, SweepWideTests)
    assert isinstance(mt.pbo, PBOSection)
    assert mt.deflation is not None and isinstance(mt.deflation.naive, Deflated)
    # NoBenchmarks, or a ScalingSection when a developer's runs/bench is in the working folder
    assert type(data.scaling) is type(report.data.scaling)
    assert isinstance(data.scaling, NoBenchmarks | ScalingSection)
    assert data.identity.grid.param_names == report.data.identity.grid.param_names
    # ReportOptions itself; ``progress`` is not saved (it reads back as its default).
    assert replace(data.options, progress=False) == report.data.options
    assert mt.winner is not None and mt.winner == report.data.multiple_testing.winner  # type: ignore[union-attr]
    # The built record and the one read back agree on every value (NaN read back as NaN).
    assert data.integrity == report.data.integrity
    assert data.verdict == report.data.verdict


def test_a_section_the_report_could_not_compute_reads_back_as_unavailable(reports):
    _, files = reports["failing"]
    doc = json.loads(files.json.read_text(encoding="utf-8"))
    doc["multiple_testing"] = {"available": False, "reason": "no config finished with status ok"}
    data = from_json(ReportData, doc)
    assert data.multiple_testing == Unavailable(reason="no config finished with status ok")


def test_another_report_format_is_refused_naming_it(reports):
    _, files = reports["complete"]
    doc = json.loads(files.json.read_text(encoding="utf-8"))
    assert report_from_json(doc).format == "raysweep-report-v1"
    doc["format"] = "raysweep-report-v0"
    with pytest.raises(
        ReportFormatError, match="format 'raysweep-report-v0', expected 'raysweep-report-v1'"
    ):
        report_from_json(doc)
    with pytest.raises(ReportFormatError, match="format 'list'"):
        report_from_json([])


def test_null_floats_read_back_as_nan(reports):
    _, files = reports["complete"]
    doc = json.loads(files.json.read_text(encoding="utf-8"))
    doc["multiple_testing"]["trial_sharpe_variance"] = None
    data = from_json(ReportData, doc)
    assert isinstance(data.multiple_testing, MultipleTestingSection)
    assert math.isnan(data.multiple_testing.trial_sharpe_variance)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["integrity"].pop("configs"), "report.json.integrity: missing key 'configs'"),
        (
            lambda d: d["integrity"]["configs"].__setitem__("done", "ten"),
            "report.json.integrity.configs.done: expected int, got 'ten'",
        ),
        (
            lambda d: d["results"].__setitem__("top", {}),
            "report.json.results.top: expected a JSON array, got dict",
        ),
        (
            lambda d: d.__setitem__("results", {"available": True}),
            "report.json.results: the object matches none of ResultsSection | Unavailable",
        ),
        (
            lambda d: d["identity"].__setitem__("session_engine_versions", "0.1.0"),
            "report.json.identity.session_engine_versions: expected a JSON array, got str",
        ),
    ],
)
def test_a_damaged_report_json_is_refused_naming_where(reports, edit, message):
    _, files = reports["complete"]
    doc = json.loads(files.json.read_text(encoding="utf-8"))
    edit(doc)
    with pytest.raises(RecordFormatError) as info:
        from_json(ReportData, doc)
    assert message in str(info.value)


def test_report_options_read_back_with_their_tuple_types():
    from sweep.report import ReportOptions

    options = ReportOptions(heatmap=("band", "lookback"), allow_import=("a.b",), progress=False)
    doc = to_json(options)
    assert "progress" not in doc and doc["heatmap"] == ["band", "lookback"]
    back = from_json(ReportOptions, doc)
    assert back.heatmap == ("band", "lookback") and back.allow_import == ("a.b",)
    with pytest.raises(RecordFormatError, match=r"\.heatmap: expected 2 items, got 3"):
        from_json(ReportOptions, {**doc, "heatmap": ["a", "b", "c"]})
    with pytest.raises(RecordFormatError, match=r"\.alpha: expected float, got 'x'"):
        from_json(ReportOptions, {**doc, "alpha": "x"})
    with pytest.raises(RecordFormatError, match=r"\.options: expected a JSON object, got list"):
        from_json(ReportOptions, [], "report.json.options")


def test_a_literal_field_is_checked():
    from sweep.report._sections import NoBenchmarks

    ok = from_json(NoBenchmarks, {"available": False, "searched": ["x"], "hint": "h"})
    assert ok == NoBenchmarks(searched=("x",), hint="h")
    with pytest.raises(RecordFormatError, match=r"\.available: expected one of \(False,\)"):
        from_json(NoBenchmarks, {"available": True, "searched": [], "hint": "h"})


def test_a_distribution_of_one_value_keeps_its_null_std_and_of_none_only_its_count():
    from sweep.report._ranking import _summary
    from sweep.report._sections import Distribution, NoValues
    from sweep.report._streamed_distribution import streamed_summary

    def summary(values):
        return _summary(streamed_summary(lambda: [np.array(values, dtype=np.float64)]))

    one = to_json(summary([0.5]))
    assert one["std"] is None and one["count"] == 1
    assert from_json(Distribution | NoValues, one) == summary([0.5])
    assert to_json(summary([])) == {"count": 0}
    assert from_json(Distribution | NoValues, {"count": 0}) == NoValues()


def test_a_report_json_written_before_the_discoveries_and_the_effective_n_still_reads(reports):
    """Earlier reports have no discoveries, detectable effect, effective N or FDP level."""
    from sweep.report._cli_support import _testing_lines

    report, files = reports["complete"]
    doc = json.loads(files.json.read_text(encoding="utf-8"))
    for key in ("discoveries", "detectable", "effective_number_of_trials"):
        doc["multiple_testing"].pop(key)
    doc["options"].pop("fdp_gamma")
    for key in ("calibrated_on", "minimum_detectable_sharpe_ann", "called_real", "next_steps"):
        doc["verdict"].pop(key, None)
    data = report_from_json(doc)
    mt = data.multiple_testing
    assert isinstance(mt, MultipleTestingSection)
    assert mt.discoveries is None and mt.effective_number_of_trials is None
    assert data.verdict is not None and data.verdict.calibrated_on == ()
    assert "How many configs are real" not in render_markdown(report_document(data, []))
    # The closing lines name the effective N from the older key.
    implied = report.data.multiple_testing.implied_trials  # type: ignore[union-attr]
    lines = _testing_lines(mt)
    assert any(f"effective number of trials {implied.n:,.1f}" in line for line in lines)


def test_the_new_parts_read_back_typed(reports):
    from sweep.report._sections import DetectableSharpe, Discoveries, EffectiveNumberOfTrials

    report, files = reports["complete"]
    data = from_json(ReportData, json.loads(files.json.read_text(encoding="utf-8")))
    mt = data.multiple_testing
    assert isinstance(mt, MultipleTestingSection)
    assert isinstance(mt.discoveries, Discoveries)
    assert isinstance(mt.detectable, DetectableSharpe)
    assert isinstance(mt.effective_number_of_trials, EffectiveNumberOfTrials)
    assert mt.discoveries == report.data.multiple_testing.discoveries  # type: ignore[union-attr]
    assert mt.effective_number_of_trials.n == mt.implied_trials.n  # type: ignore[union-attr]
