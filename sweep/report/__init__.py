"""``sweep report``: the audit report of a run folder (report.json, report.md, report.html).

Sections: identity, integrity, execution, results, multiple testing with a verdict, and
scaling (when ``sweep bench`` results exist). See :func:`build_report`.

May import ``common``, ``data``, ``spec``, ``store``, ``engine`` and ``plan`` (its cost
model, for the run's own scaling); never ``executors``, ``runner``, ``bench`` or the CLI:
benchmark results reach it as records read from disk (``store._bench_results``).
"""

from sweep.report._build import REPORT_FORMAT, Report, build_report
from sweep.report._options import ReportOptions
from sweep.report._verdict import Verdict, VerdictInputs, judge_winner
from sweep.report._write import ReportFiles, default_out_dir, write_report

__all__ = [
    "REPORT_FORMAT",
    "Report",
    "ReportFiles",
    "ReportOptions",
    "Verdict",
    "VerdictInputs",
    "build_report",
    "default_out_dir",
    "judge_winner",
    "write_report",
]
