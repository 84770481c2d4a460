"""The report's opening summary: what a reviewer reads in ten seconds, before any detail."""

from __future__ import annotations

from collections.abc import Mapping

from sweep.report._blocks import Block, Heading, KeyValues, Paragraph, num
from sweep.report._sections import (
    BenchmarkInfo,
    DetectableSharpe,
    Discoveries,
    EffectiveNumberOfTrials,
    MultipleTestingSection,
    OutOfSampleSection,
    PBOSection,
    ReportData,
    SweepWideTests,
    Unavailable,
    Winner,
)
from sweep.spec._grid import ParamValue
from sweep.store._record import GridRecord


def verdict_style(likely_real: bool | None) -> str:
    """How a verdict is shown: good (likely real), bad (luck) or neutral (no test)."""
    if likely_real is None:
        return "neutral"
    return "good" if likely_real else "bad"


def _params_text(params: Mapping[str, ParamValue], grid: GridRecord) -> str:
    """The parameters that vary across the grid (all of them if none does)."""
    varying = set(grid.varying)
    shown = {k: v for k, v in params.items() if k in varying} or params
    return ", ".join(
        f"{k} = {v:.6g}" if isinstance(v, float) else f"{k} = {v}" for k, v in shown.items()
    )


def _sharpe_row(winner: Winner, benchmark: BenchmarkInfo) -> str:
    text = (
        f"{winner.sharpe_ann:.2f} in excess of the benchmark "
        f"(its own, raw: {winner.own_sharpe_ann:.2f})"
    )
    if benchmark.sharpe_ann is not None:
        text += f"; the benchmark's Sharpe: {benchmark.sharpe_ann:.2f}"
    return text


def _pvalue_row(tests: SweepWideTests | Unavailable, alpha: float) -> str:
    if isinstance(tests, Unavailable):
        return f"not computed: {tests.reason}"
    p = tests.winner_pvalue
    if p is None:
        return "not computed: no winner"
    side = "<=" if p <= alpha else ">"
    return (
        f"{p:.4f} ({side} alpha {alpha:g}) against the best of {num(tests.configs)} "
        f"configs on {num(tests.reps)} joint bootstrap resamples; StepM: "
        f"{num(tests.stepm.count)} configs beat the benchmark"
    )


def _called_real_row(called: Discoveries | Unavailable | None) -> str | None:
    if not isinstance(called, Discoveries):
        return None
    return (
        f"{num(called.count)} of {num(called.configs)} configs beat the benchmark with at most "
        f"{called.gamma:.0%} false discoveries (probability {1 - called.alpha:.0%}, "
        f"FDP-StepM); with none at all: {num(called.stepm_count)} (StepM)"
    )


def _detectable_row(detectable: DetectableSharpe | Unavailable | None) -> str | None:
    if not isinstance(detectable, DetectableSharpe):
        return None
    return (
        f"an annualised excess Sharpe ratio of {detectable.sharpe_ann:.2f} or more is found "
        f"with {detectable.power:.0%} power over {num(detectable.configs)} configs and "
        f"{num(detectable.periods)} periods ({detectable.single_test_sharpe_ann:.2f} for one "
        "config fixed in advance)"
    )


def _effective_row(effective: EffectiveNumberOfTrials | Unavailable | None) -> str | None:
    if not isinstance(effective, EffectiveNumberOfTrials):
        return None
    dsr = f"; the winner's DSR at it {effective.dsr:.3f}" if effective.dsr is not None else ""
    return (
        f"{num(effective.n)}, for {num(effective.naive_n)} configs tried (the N whose "
        f"expected maximum of independent null Sharpe ratios equals the joint bootstrap's)"
        f"{dsr}"
    )


def _walk_forward_row(oos: OutOfSampleSection | Unavailable) -> str | None:
    """The walk-forward result the verdict uses, when the spec asks for one."""
    wf = oos.walk_forward if isinstance(oos, OutOfSampleSection) else None
    if wf is None:
        return None
    return (
        f"{num(wf.folds)} folds re-optimised: annualised Sharpe {wf.sharpe_ann:.2f}, "
        f"PSR {wf.psr:.3f} ({'holds' if wf.holds else 'does not hold'}: PSR >= 0.95)"
    )


def _oos_row(pbo: PBOSection | Unavailable) -> str:
    if isinstance(pbo, Unavailable):
        return f"not computed: {pbo.reason}"
    return (
        f"the in-sample best lost to the benchmark in {pbo.prob_oos_loss:.0%} of "
        f"{num(pbo.splits)} CSCV splits (PBO {pbo.pbo:.2f})"
    )


def summary_blocks(data: ReportData) -> list[Block]:
    """The summary: verdict, winner, Sharpe, p-value, configs called real, MDE, N_eff, hash.

    Parameters
    ----------
    data : ReportData
        The report (as report.json holds it).

    Returns
    -------
    list of Block
        A heading, the verdict's headline, the key numbers and the verdict's paragraph.
    """
    verdict = data.verdict
    mt = data.multiple_testing
    integrity = data.integrity
    blocks: list[Block] = [Heading(2, "Summary")]
    if verdict:
        blocks.append(Paragraph(verdict.headline, verdict_style(verdict.likely_real)))
        if verdict.integrity_failure is not None:
            blocks.append(Paragraph(f"Integrity check failed: {verdict.integrity_failure}.", "bad"))
    else:
        blocks.append(Paragraph("No verdict: no config finished with status ok.", "neutral"))
    c = integrity.configs
    rows = [("configs", f"{num(c.done)} of {num(c.total)} done, {num(c.failed)} failed")]
    winner = mt.winner if isinstance(mt, MultipleTestingSection) else None
    if isinstance(mt, MultipleTestingSection) and winner is not None:
        alpha = mt.sweep_wide.stepm.alpha if isinstance(mt.sweep_wide, SweepWideTests) else 0.05
        rows += [
            (
                "winner",
                f"{_params_text(winner.params, data.identity.grid)} "
                f"(config {winner.config_id[:8]})",
            ),
            ("annualised Sharpe", _sharpe_row(winner, mt.benchmark)),
            ("sweep-wide p-value", _pvalue_row(mt.sweep_wide, alpha)),
        ]
        for label, text in (
            ("configs called real", _called_real_row(mt.discoveries)),
            ("minimum detectable effect", _detectable_row(mt.detectable)),
            ("effective number of trials", _effective_row(mt.effective_number_of_trials)),
        ):
            if text is not None:
                rows.append((label, text))
        rows.append(("out of sample (CSCV)", _oos_row(mt.pbo)))
        walk = _walk_forward_row(data.out_of_sample)
        if walk is not None:
            rows.append(("walk-forward", walk))
    hash_text = integrity.table_hash or "- (incomplete: see Integrity)"
    rows.append(("table hash", hash_text))
    blocks.append(KeyValues(rows))
    if verdict:
        blocks.append(Paragraph(verdict.paragraph, "note"))
    return blocks
