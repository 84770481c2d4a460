"""Small helpers the ``sweep report`` command uses (kept here so the CLI stays thin)."""

from __future__ import annotations

from sweep.errors import SweepError
from sweep.report._build import Report
from sweep.report._sections import (
    Deflated,
    MultipleTestingSection,
    OutOfSampleSection,
    PBOSection,
    Unavailable,
)
from sweep.report._write import ReportFiles


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
    return lines


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _testing_lines(testing: MultipleTestingSection) -> list[str]:
    """The summary's lines on the sweep-wide tests, trial counts and PBO."""
    sw = testing.sweep_wide
    tests = sw if not isinstance(sw, Unavailable) else None
    implied = testing.implied_trials
    dsr: dict[str, float | None] = {"naive": None, "implied": None}
    if testing.deflation is not None:
        for name, x in (("naive", testing.deflation.naive), ("implied", testing.deflation.implied)):
            dsr[name] = x.dsr if isinstance(x, Deflated) else None
    pbo = testing.pbo.pbo if isinstance(testing.pbo, PBOSection) else None
    return [
        f"tests:    winner's sweep-wide p "
        f"{_fmt(None if tests is None else tests.winner_pvalue, '.4f')}; "
        f"SPA p {_fmt(None if tests is None else tests.spa_pvalue, '.4f')}; StepM "
        f"{_fmt(None if tests is None else tests.stepm.count, ',')} beat the benchmark",
        f"trials:   naive N {testing.naive_n:,}, bootstrap-implied N "
        f"{_fmt(None if isinstance(implied, Unavailable) else implied.n, ',.1f')}; "
        f"DSR {_fmt(dsr['naive'], '.3f')} (naive), {_fmt(dsr['implied'], '.3f')} (implied); "
        f"PBO {_fmt(pbo, '.3f')}",
    ]
