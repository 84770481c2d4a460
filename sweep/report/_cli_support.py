"""Small helpers the ``sweep report`` command uses (kept here so the CLI stays thin)."""

from __future__ import annotations

import textwrap

from sweep.errors import SweepError
from sweep.report._build import Report
from sweep.report._sections import (
    Deflated,
    DetectableSharpe,
    Discoveries,
    EffectiveNumberOfTrials,
    MultipleTestingSection,
    OutOfSampleSection,
    PBOSection,
    Unavailable,
)
from sweep.report._write import ReportFiles

#: Columns of the closing lines (a file path longer than this stays on its line).
WIDTH = 80
#: Where a label's text starts ("tests:    ").
INDENT = 10


def parse_heatmap(text: str | None) -> tuple[str, str] | None:
    """Parse ``--heatmap X,Y`` into two axis names (None when not given)."""
    if text is None:
        return None
    names = [t.strip() for t in text.split(",")]
    if len(names) != 2 or not all(names):
        raise SweepError(f"--heatmap: expected two grid axes as X,Y, got {text!r}")
    return names[0], names[1]


def summary_lines(report: Report, files: ReportFiles) -> list[str]:
    """What ``sweep report`` prints: the files, the headline numbers and the build time."""
    data = report.data
    lines = [
        f"report:   {files.html}",
        f"          {files.markdown}",
        f"          {files.json}",
    ]
    integrity = data.integrity
    lines.append(
        f"table:    {integrity.table_hash or 'incomplete'} "
        f"({integrity.configs.done:,} / {integrity.configs.total:,} configs)"
    )
    testing = data.multiple_testing
    if isinstance(testing, MultipleTestingSection):
        lines += _testing_lines(testing)
    oos = data.out_of_sample
    wf = oos.walk_forward if isinstance(oos, OutOfSampleSection) else None
    if wf:
        lines.append(
            f"oos:      walk-forward {wf.folds} folds, annualised Sharpe "
            f"{wf.sharpe_ann:.2f}, PSR {wf.psr:.3f} "
            f"({'holds' if wf.holds else 'does not hold'})"
        )
    if data.verdict:
        lines.append(f"verdict:  {data.verdict.headline}")
    total = sum(data.generated.step_seconds.values())
    lines.append(f"built in {total:.1f} s")
    return [*lines[:3], *(wrapped for line in lines[3:] for wrapped in _wrap(line))]


def _wrap(line: str) -> list[str]:
    """A closing line folded at :data:`WIDTH` columns under its label."""
    return textwrap.wrap(
        line, WIDTH, subsequent_indent=" " * INDENT, break_long_words=False, break_on_hyphens=False
    )


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _testing_lines(testing: MultipleTestingSection) -> list[str]:
    """The closing lines on the tests, configs called real, trial counts, MDE and PBO."""
    sw = testing.sweep_wide
    tests = sw if not isinstance(sw, Unavailable) else None
    dsr: dict[str, float | None] = {"naive": None, "implied": None}
    if testing.deflation is not None:
        for name, x in (("naive", testing.deflation.naive), ("implied", testing.deflation.implied)):
            dsr[name] = x.dsr if isinstance(x, Deflated) else None
    pbo = testing.pbo.pbo if isinstance(testing.pbo, PBOSection) else None
    effective = testing.effective_number_of_trials
    if not isinstance(effective, EffectiveNumberOfTrials):  # a report without the name
        implied = testing.implied_trials
        n_eff = None if isinstance(implied, Unavailable) else implied.n
    else:
        n_eff = effective.n
    lines = [
        f"tests:    winner's sweep-wide p "
        f"{_fmt(None if tests is None else tests.winner_pvalue, '.4f')}; "
        f"SPA p {_fmt(None if tests is None else tests.spa_pvalue, '.4f')}; StepM "
        f"{_fmt(None if tests is None else tests.stepm.count, ',')} beat the benchmark",
    ]
    called = testing.discoveries
    if isinstance(called, Discoveries):
        lines.append(
            f"real:     {called.count:,} config{'' if called.count == 1 else 's'} at FDP <= "
            f"{called.gamma:.0%} "
            f"(FDP-StepM, {1 - called.alpha:.0%} probability)"
        )
    lines += [
        f"trials:   effective number of trials {_fmt(n_eff, ',.1f')} (naive N "
        f"{testing.naive_n:,}); DSR {_fmt(dsr['implied'], '.3f')} at the effective N, "
        f"{_fmt(dsr['naive'], '.3f')} at the naive; PBO {_fmt(pbo, '.3f')}",
    ]
    detectable = testing.detectable
    if isinstance(detectable, DetectableSharpe):
        lines.append(
            f"detects:  annualised excess Sharpe >= {detectable.sharpe_ann:.2f} at "
            f"{detectable.power:.0%} power ({detectable.single_test_sharpe_ann:.2f} for one "
            "config fixed in advance)"
        )
    return lines
