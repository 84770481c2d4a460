"""The report's opening summary: what a reviewer reads in ten seconds, before any detail."""

from __future__ import annotations

from typing import Any

from sweep.report._blocks import Block, Heading, KeyValues, Paragraph, num


def _params_text(params: dict[str, Any], grid: dict[str, Any]) -> str:
    """The parameters that vary across the grid (all of them if none does)."""
    varying = {str(a["name"]) for a in grid["axes"] if int(a["size"]) > 1}
    shown = {k: v for k, v in params.items() if k in varying} or params
    return ", ".join(
        f"{k} = {v:.6g}" if isinstance(v, float) else f"{k} = {v}" for k, v in shown.items()
    )


def _sharpe_row(winner: dict[str, Any], benchmark: dict[str, Any]) -> str:
    text = (
        f"{winner['sharpe_ann']:.2f} in excess of the benchmark "
        f"(its own, raw: {winner['own_sharpe_ann']:.2f})"
    )
    if benchmark.get("sharpe_ann") is not None:
        text += f"; the benchmark's Sharpe: {benchmark['sharpe_ann']:.2f}"
    return text


def _pvalue_row(tests: dict[str, Any], alpha: float) -> str:
    if not tests.get("available"):
        return f"not computed: {tests.get('reason', 'no bootstrap replications')}"
    p = tests["winner_pvalue"]
    side = "<=" if p <= alpha else ">"
    return (
        f"{p:.4f} ({side} alpha {alpha:g}) against the best of {num(tests['configs'])} "
        f"configs on {num(tests['reps'])} joint bootstrap resamples; StepM: "
        f"{num(tests['stepm']['count'])} configs beat the benchmark"
    )


def _walk_forward_row(oos: dict[str, Any]) -> str | None:
    """The walk-forward result the verdict uses, when the spec asks for one."""
    wf = oos.get("walk_forward") if oos.get("available") else None
    if wf is None:
        return None
    return (
        f"{num(wf['folds'])} folds re-optimised: annualised Sharpe {wf['sharpe_ann']:.2f}, "
        f"PSR {wf['psr']:.3f} ({'holds' if wf['holds'] else 'does not hold'}: PSR >= 0.95)"
    )


def _oos_row(pbo: dict[str, Any]) -> str:
    if not pbo.get("available"):
        return f"not computed: {pbo.get('reason', '')}"
    return (
        f"the in-sample best lost to the benchmark in {pbo['prob_oos_loss']:.0%} of "
        f"{num(pbo['splits'])} CSCV splits (PBO {pbo['pbo']:.2f})"
    )


def summary_blocks(data: dict[str, Any]) -> list[Block]:
    """The summary: verdict, winner, Sharpe against the benchmark, p-value, OOS, hash.

    Parameters
    ----------
    data : dict
        The report (as in report.json).

    Returns
    -------
    list of Block
        A heading, the verdict's headline, the key numbers and the verdict's paragraph.
    """
    verdict = data.get("verdict")
    mt = data["multiple_testing"]
    integrity = data["integrity"]
    blocks: list[Block] = [Heading(2, "Summary")]
    if verdict:
        style = {True: "good", False: "bad"}.get(verdict["likely_real"], "neutral")
        blocks.append(Paragraph(verdict["headline"], style))
    else:
        blocks.append(Paragraph("No verdict: no config finished with status ok.", "neutral"))
    c = integrity["configs"]
    rows = [("configs", f"{num(c['done'])} of {num(c['total'])} done, {num(c['failed'])} failed")]
    winner = mt.get("winner") if mt.get("available") else None
    if winner is not None:
        alpha = float(mt["sweep_wide"].get("stepm", {}).get("alpha", 0.05))
        rows += [
            (
                "winner",
                f"{_params_text(winner['params'], data['identity']['grid'])} "
                f"(config {winner['config_id'][:8]})",
            ),
            ("annualised Sharpe", _sharpe_row(winner, mt["benchmark"])),
            ("sweep-wide p-value", _pvalue_row(mt["sweep_wide"], alpha)),
            ("out of sample (CSCV)", _oos_row(mt["pbo"])),
        ]
        walk = _walk_forward_row(data.get("out_of_sample") or {})
        if walk is not None:
            rows.append(("walk-forward", walk))
    hash_text = integrity["table_hash"] or "- (incomplete: see Integrity)"
    rows.append(("table hash", hash_text))
    blocks.append(KeyValues(rows))
    if verdict:
        blocks.append(Paragraph(verdict["paragraph"], "note"))
    return blocks
