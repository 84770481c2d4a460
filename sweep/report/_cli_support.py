"""Small helpers the ``sweep report`` command uses (kept here so the CLI stays thin)."""

from __future__ import annotations

from sweep.errors import SweepError
from sweep.report._build import Report
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
    integrity = data["integrity"]
    lines.append(
        f"table:    {integrity['table_hash'] or 'incomplete'} "
        f"({integrity['configs']['done']:,} / {integrity['configs']['total']:,} configs)"
    )
    testing = data["multiple_testing"]
    if testing.get("available"):
        sweep_wide = testing.get("sweep_wide") or {}
        implied = (testing.get("implied_trials") or {}).get("n")
        deflation = testing.get("deflation") or {}
        dsr = {k: (v or {}).get("dsr") for k, v in deflation.items()}
        pbo = testing["pbo"].get("pbo")

        def fmt(value: float | None, spec: str) -> str:
            return "n/a" if value is None else format(value, spec)

        lines.append(
            f"tests:    winner's sweep-wide p {fmt(sweep_wide.get('winner_pvalue'), '.4f')}; "
            f"SPA p {fmt(sweep_wide.get('spa_pvalue'), '.4f')}; StepM "
            f"{fmt((sweep_wide.get('stepm') or {}).get('count'), ',')} beat the benchmark"
        )
        lines.append(
            f"trials:   naive N {testing['naive_n']:,}, bootstrap-implied N "
            f"{fmt(implied, ',.1f')}; DSR {fmt(dsr.get('naive'), '.3f')} (naive), "
            f"{fmt(dsr.get('implied'), '.3f')} (implied); PBO {fmt(pbo, '.3f')}"
        )
    wf = (data.get("out_of_sample") or {}).get("walk_forward")
    if wf:
        lines.append(
            f"oos:      walk-forward {wf['folds']} folds, annualised Sharpe "
            f"{wf['sharpe_ann']:.2f}, PSR {wf['psr']:.3f} "
            f"({'holds' if wf['holds'] else 'does not hold'})"
        )
    if data.get("verdict"):
        lines.append(f"verdict:  {data['verdict']['headline']}")
    total = sum(data["generated"]["step_seconds"].values())
    lines.append(f"built in {total:.1f} s")
    return lines
