"""The report's content as blocks, from report.json's data alone (Markdown and HTML agree)."""

from __future__ import annotations

import json
from typing import Any

from sweep.report._blocks import (
    Block,
    Bullets,
    Code,
    Figure,
    Heading,
    KeyValues,
    Paragraph,
    Table,
    num,
    pct,
    seconds,
)

#: Figures of each section, in order, with their captions.
FIGURES: dict[str, dict[str, str]] = {
    "execution": {
        "task_timeline": "Tasks per worker over time.",
        "task_time_fit": "Task time against batch size, with T = O + b·B fitted.",
    },
    "results": {
        "sharpe_histogram": "Distribution of annualised Sharpe ratios.",
        "heatmap": "A metric over two grid axes.",
        "profile": "A metric along the grid's one varying axis.",
    },
    "multiple_testing": {
        "expected_max_curve": "E[max] of null Sharpe ratios against the number of trials.",
        "pbo_logits": "CSCV logits of the in-sample best's out-of-sample rank.",
        "pbo_degradation": "Out-of-sample against in-sample Sharpe of the in-sample best.",
    },
    "scaling": {
        "bench_overhead": "Per-task overhead measured by `sweep bench overhead`.",
        "bench_amortization": "Measured S(B) against the fitted amortization law.",
        "bench_scaling": "Measured throughput against the Universal Scalability Law.",
    },
}
MAX_ROWS = 40


def _figures(section: str, names: list[str]) -> list[Block]:
    return [Figure(n, c) for n, c in FIGURES[section].items() if n in names]


def _unavailable(part: dict[str, Any] | None) -> str:
    if not part:
        return "not available"
    return f"not available: {part.get('reason') or part.get('error') or 'see report.json'}"


def _axes_text(grid: dict[str, Any]) -> str:
    parts = []
    for a in grid["axes"]:
        if int(a["size"]) == 1:
            parts.append(f"{a['name']} = {num(a['first'])}")
        else:
            parts.append(f"{a['name']}: {a['size']} values ({num(a['first'])} .. {num(a['last'])})")
    extra = []
    if grid.get("zip"):
        extra.append("zipped " + "; ".join("+".join(g) for g in grid["zip"]))
    if grid.get("where"):
        extra.append("where " + " and ".join(grid["where"]))
    return "; ".join(parts) + (f" ({', '.join(extra)})" if extra else "")


def identity_blocks(d: dict[str, Any]) -> list[Block]:
    """Section 1."""
    data = d["data"]
    code = d["code"]
    versions = ", ".join(f"{k} {v}" for k, v in code["versions"].items() if v)
    rows = [
        ("run", d["run_name"]),
        ("run folder", d["run_dir"]),
        ("created", str(d.get("created"))),
        ("spec hash", str(d["spec_hash"])),
        (
            "data",
            f"sha256 {data.get('fingerprint')}; {num(data.get('n_periods'))} dates x "
            f"{num(data.get('n_assets'))} assets ({', '.join(data.get('assets', []))}); "
            f"{data.get('first_date')} to {data.get('last_date')}",
        ),
        ("strategy", f"{d['strategy'].get('name')} version {d['strategy'].get('version')}"),
        (
            "engine version",
            f"{d['engine_version']} (sessions: {', '.join(d['session_engine_versions']) or '–'})",
        ),
        ("root seed", str(d["root_seed"])),
        ("grid", f"{num(d['grid']['size'])} configs: {_axes_text(d['grid'])}"),
        ("metric options", ", ".join(f"{k} = {v}" for k, v in d["metrics"].items())),
        ("git commit", code["git_commit"] or "– (not a git checkout)"),
        ("versions", versions),
    ]
    return [
        Heading(2, "1. Identity"),
        KeyValues(rows),
        Paragraph(code["note"] + ".", "note"),
        Code(json.dumps(d["spec"], indent=2), "json", "The spec, as recorded in the manifest"),
    ]


def integrity_blocks(d: dict[str, Any]) -> list[Block]:
    """Section 2."""
    c = d["configs"]
    parts = d["parts"]
    match = d["matches_recorded"]
    hash_text = d["table_hash"] or (
        "– (incomplete or bad parts; hash of the results so far: "
        f"{d['table_hash_of_partial_results']})"
    )
    rows = [
        ("table hash", hash_text),
        (
            "recorded by the driver",
            f"{d['recorded_table_hash'] or '–'}"
            + ("" if match is None else (" (matches)" if match else " (DIFFERS)")),
        ),
        ("parts", f"{parts['total']} verified: {parts['good']} good, {len(parts['bad'])} bad"),
        ("quarantined files", num(len(d["quarantined_files"]))),
        (
            "configs",
            f"{num(c['done'])} of {num(c['total'])} done ({num(c['ok'])} ok, {num(c['failed'])} "
            f"failed); {num(c['missing'])} missing",
        ),
        ("sessions", f"{len(d['sessions'])}" + (" (resumed)" if d["resumed"] else "")),
    ]
    blocks: list[Block] = [Heading(2, "2. Integrity"), KeyValues(rows)]
    if parts["bad"]:
        blocks.append(
            Table(["bad part", "reason"], [[b["name"], b["reason"]] for b in parts["bad"]])
        )
    if d["errors"]:
        blocks.append(
            Table(
                ["failed configs", "error"],
                [[num(e["count"]), e["error"]] for e in d["errors"][:MAX_ROWS]],
                caption="Failed configs grouped by error message.",
            )
        )
    blocks.append(
        Table(
            ["session", "start", "end", "host", "executor", "ended", "computed", "failed", "wall"],
            [
                [
                    str(s["id"]) + (" (resumed)" if s["resumed"] else ""),
                    str(s["start"]),
                    str(s["end"] or "–"),
                    str(s["host"]),
                    str(s["executor"]),
                    str(s["status"]) + (" (took over a stale lock)" if s["took_over_lock"] else ""),
                    num(s["configs_computed"]),
                    num(s["configs_failed"]),
                    seconds(s["wall_seconds"]),
                ]
                for s in d["sessions"]
            ],
            caption="Driver sessions"
            + ("; each later session resumed the run." if d["resumed"] else "."),
        )
    )
    blocks.append(Paragraph("Re-check the table hash from the parts with:"))
    blocks.append(Code(d["recheck"], "sh"))
    return blocks


def _fit_text(fit: dict[str, Any]) -> str:
    if not fit.get("available"):
        return _unavailable(fit)
    return (
        f"O = {seconds(fit['overhead_seconds'])}, b = {seconds(fit['per_config_seconds'])} per "
        f"config, R² = {num(fit['r_squared'], 3)} over {fit['n_tasks']} tasks; ridge O/b = "
        f"{num(fit['ridge_batch'], 3)}, B*(0.9) = {num(fit['batch_for_90pct'], 3)}, B*(0.99) = "
        f"{num(fit['batch_for_99pct'], 3)}" + (f" ({fit['note']})" if fit.get("note") else "")
    )


def execution_blocks(d: dict[str, Any], figures: list[str]) -> list[Block]:
    """Section 3."""
    blocks: list[Block] = [Heading(2, "3. Execution")]
    rows = [("wall time", seconds(d["wall_seconds"]) + " (sum over sessions)")]
    if d.get("telemetry"):
        rows += [
            ("CPU time", seconds(d["cpu_seconds"]) + " (sum of in-task compute)"),
            ("utilisation", pct(d.get("utilisation")) + " of wall x workers"),
            ("tasks", f"{num(d['tasks'])} ({num(d['configs_in_tasks'])} configs)"),
            (
                "batch sizes",
                f"{d['batch_sizes']['min']} .. {d['batch_sizes']['max']} "
                f"(median {num(d['batch_sizes']['median'])}, {d['batch_sizes']['distinct']} "
                "distinct)",
            ),
            ("workers seen", f"{d['workers_seen']} on {d['nodes_seen']} node(s)"),
            (
                "overhead share",
                f"{pct(d['overhead_share'])} of service time; {pct(d['overhead_share_latency'])} "
                "of latency",
            ),
            (
                "overhead share per task",
                f"median {pct(d['overhead_share_per_task']['median'])}, 90th percentile "
                f"{pct(d['overhead_share_per_task']['p90'])}",
            ),
            ("fit to service time", _fit_text(d["fit_service"])),
            ("fit to compute time", _fit_text(d["fit_compute"])),
            (
                "retries",
                f"{d['retries']} task(s) ran more than once"
                + (f"; {d['attempt_unknown']} attempt(s) unknown" if d["attempt_unknown"] else ""),
            ),
        ]
    else:
        rows.append(("telemetry", "none recorded"))
    blocks.append(KeyValues(rows))
    plan_rows = []
    for p in d["planner"]:
        clamps = "; ".join(p["clamps"]) or "none"
        plan_rows.append(
            [
                str(p["session"]),
                f"{p['executor']} x {num(p['workers'])}"
                + (f" on {p['nodes']} node(s)" if p.get("nodes") else ""),
                str(p["source"]),
                seconds(p["overhead_seconds"]),
                seconds(p["per_config_seconds"]),
                num(p["target_efficiency"]),
                num(p["law_batch"], 3),
                num(p["batch_size"]),
                clamps,
            ]
        )
    if plan_rows:
        blocks.append(
            Table(
                ["session", "executor", "plan", "O", "b", "f", "B*(f)", "chosen B", "clamps"],
                plan_rows,
                caption="The planner's measurements and choice per session.",
            )
        )
    blocks.append(
        Paragraph("; ".join(f"{k}: {v}" for k, v in d["definitions"].items()) + ".", "note")
    )
    blocks += _figures("execution", figures)
    if d.get("workers"):
        blocks.append(
            Table(
                ["session", "worker (node/pid)", "tasks", "configs", "busy", "compute"],
                [
                    [
                        str(w["session"]),
                        w["lane"],
                        num(w["tasks"]),
                        num(w["configs"]),
                        seconds(w["busy_seconds"]),
                        seconds(w["compute_seconds"]),
                    ]
                    for w in d["workers"][:MAX_ROWS]
                ],
                caption="Tasks per worker.",
            )
        )
    return blocks


def results_blocks(d: dict[str, Any], grid: dict[str, Any], figures: list[str]) -> list[Block]:
    """Section 4."""
    blocks: list[Block] = [Heading(2, "4. Results")]
    if not d.get("available"):
        return [*blocks, Paragraph(_unavailable(d))]
    params = [a["name"] for a in grid["axes"] if int(a["size"]) > 1] or [grid["axes"][0]["name"]]
    fixed = [f"{a['name']} = {num(a['first'])}" for a in grid["axes"] if a["name"] not in params]
    cols = [
        "sharpe",
        "sharpe_ann",
        "p_value",
        "total_return",
        "max_drawdown",
        "turnover",
        "n_trades",
    ]
    rows = [
        [
            str(r["rank"]),
            *(num(r["params"][p]) for p in params),
            *(num(r[c]) for c in cols),
            r["config_id"][:12],
        ]
        for r in d["top"]
    ]
    blocks.append(
        Table(
            ["#", *params, *cols, "config_id"],
            rows,
            caption=f"Top {len(rows)} configs by {d['sorted_by']}"
            + (f"; fixed: {', '.join(fixed)}." if fixed else "."),
        )
    )
    s = d["sharpe_ann_summary"]
    if s.get("count"):
        blocks.append(
            Paragraph(
                f"Annualised Sharpe ratios of {num(s['count'])} configs: mean {num(s['mean'])}, "
                f"std {num(s['std'])}, median {num(s['quantiles']['50%'])}, range {num(s['min'])} "
                f"to {num(s['max'])}"
                + (
                    f"; {num(d['constant_configs'])} config(s) have constant returns (no Sharpe)."
                    if d["constant_configs"]
                    else "."
                )
            )
        )
    hm = d.get("heatmap")
    if hm:
        blocks.append(
            Paragraph(
                f"Heatmap: {hm['metric']} over {hm['x']} x {hm['y']} ({hm['chosen']}), "
                f"{hm['aggregation']} over {', '.join(hm['aggregated_over']) or 'no other axis'}; "
                "choose the axes with --heatmap X,Y.",
                "note",
            )
        )
    blocks += _figures("results", figures)
    return blocks


def testing_blocks(
    d: dict[str, Any], verdict: dict[str, Any] | None, figures: list[str]
) -> list[Block]:
    """Section 5 and the verdict."""
    blocks: list[Block] = [Heading(2, "5. Multiple testing")]
    if not d.get("available"):
        return [
            *blocks,
            Paragraph(_unavailable(d)),
            Heading(3, "Verdict"),
            Paragraph("No verdict: no config finished with status ok.", "neutral"),
        ]
    eff = d.get("effective_n") or {}
    ret = d["returns"]
    rows = [
        ("naive N", f"{num(d['naive_n'])} ({d['naive_n_definition']})"),
        (
            "effective N",
            f"{num(eff.get('value'))} — {eff.get('estimator')}; {eff.get('method')} "
            f"({eff.get('scope')})"
            if eff.get("value") is not None
            else _unavailable(eff or ret),
        ),
    ]
    if eff.get("value") is not None:
        rows += [
            ("mean pairwise correlation", num(eff["mean_pairwise_correlation"])),
            (
                "other estimators",
                "participation ratio without the noise-floor correction "
                f"{num(eff['participation_ratio'])}, "
                f"Nyholt {num(eff['nyholt'])}, Li-Ji "
                f"{num(eff['li_ji'] if eff['li_ji'] is not None else eff['li_ji_of_sample'])}, "
                "Galwey "
                f"{num(eff['galwey'] if eff['galwey'] is not None else eff['galwey_of_sample'])}"
                + (f" ({eff['eigen_note']})" if eff.get("eigen_note") else "")
                + (
                    " (Li-Ji and Galwey of the sample)"
                    if eff.get("li_ji_of_sample") is not None
                    else ""
                ),
            ),
        ]
    rows.append(
        (
            "returns",
            f"{ret['sample']}; "
            + (
                f"{ret['configs']:,} series of {ret['periods']:,} periods; stored Sharpe ratios "
                f"reproduced bit for bit for {ret['sharpe_check']['identical']:,} of "
                f"{ret['sharpe_check']['compared']:,}"
                if ret.get("recomputed")
                else str(ret.get("reason"))
            ),
        )
    )
    rows.append(
        (
            "conventions",
            d["sharpe_convention"] + f"; trial Sharpe std {num(d['trial_sharpe_std'])} per period",
        )
    )
    blocks.append(KeyValues(rows))
    if ret.get("recomputed"):
        blocks.append(Paragraph(ret["deterministic"] + ".", "note"))
    w = d.get("winner")
    defl = d.get("deflation") or {}
    if w:
        blocks.append(
            Paragraph(
                f"Winner: {', '.join(f'{k}={num(v)}' for k, v in w['params'].items())} "
                f"(config {w['config_id']}), Sharpe {num(w['sharpe'])} per period, "
                f"{num(w['sharpe_ann'])} annualised, over {num(w['n_obs'])} periods; skew "
                f"{num(w['skew'])}, raw kurtosis {num(w['kurtosis'])}; bootstrap p-value "
                f"{num(w['p_value'])}."
            )
        )
        table_rows = []
        for name in ("naive", "effective"):
            x = defl.get(name)
            if not x or "dsr" not in x:
                table_rows.append([f"{name} N", _unavailable(x), "", "", "", "", ""])
                continue
            n_text = num(int(x["n_trials"])) if name == "naive" else num(x["n_trials"])
            table_rows.append(
                [
                    f"{name} N = {n_text}",
                    num(x["expected_max_sharpe"]),
                    num(x["expected_max_sharpe_ann"]),
                    num(x["winner_over_expected_max"], 3),
                    num(x["z"], 3),
                    num(x["psr"]),
                    num(x["dsr"]),
                ]
            )
        blocks.append(
            Table(
                [
                    "trials",
                    "E[max] per period",
                    "E[max] annualised",
                    "winner / E[max]",
                    "z",
                    "PSR (vs 0)",
                    "DSR",
                ],
                table_rows,
                caption="Expected best null Sharpe (per period, cross-sectional Sharpe variance "
                "as in the DSR paper) and the winner's PSR and DSR at both counts.",
            )
        )
    pbo = d["pbo"]
    if pbo.get("available"):
        blocks.append(
            KeyValues(
                [
                    (
                        "PBO",
                        f"{num(pbo['pbo'])} over {num(pbo['splits'])} splits of {pbo['blocks']} "
                        f"blocks ({num(pbo['configs'])} configs"
                        + (", sampled" if pbo["sampled"] else "")
                        + ")",
                    ),
                    ("P(out-of-sample loss)", num(pbo["prob_oos_loss"])),
                    (
                        "degradation",
                        f"OOS = {num(pbo['degradation']['intercept'])} + "
                        f"{num(pbo['degradation']['slope'])} x IS "
                        f"(R² {num(pbo['degradation']['r_squared'], 3)})",
                    ),
                    (
                        "in-sample best",
                        f"{pbo['in_sample_best']['distinct_configs']} distinct config(s); most "
                        "often "
                        + ", ".join(
                            f"{m['config_id'][:12]} ({pct(m['share'])})"
                            for m in pbo["in_sample_best"]["most_frequent"][:3]
                        ),
                    ),
                    (
                        "blocks",
                        f"{pbo['periods_per_block']} periods each; first "
                        f"{pbo['leading_periods_dropped']} period(s) dropped",
                    ),
                ]
            )
        )
    else:
        blocks.append(Paragraph("PBO " + _unavailable(pbo)))
    corr = d["corrections"]
    if corr.get("available"):
        blocks.append(
            Paragraph(
                f"Of {num(corr['tests'])} bootstrap p-values, {num(corr['raw'])} are at or below "
                f"{corr['alpha']}; {num(corr['holm'])} survive Holm (family-wise error) and "
                f"{num(corr['benjamini_hochberg'])} survive Benjamini-Hochberg (false discovery "
                "rate)"
                + (
                    f"; the winner's adjusted p-values are {num(corr['winner_holm_adjusted'])} "
                    "(Holm) and "
                    f"{num(corr['winner_bh_adjusted'])} (BH)."
                    if "winner_holm_adjusted" in corr
                    else "."
                )
            )
        )
        if corr.get("note"):
            blocks.append(Paragraph(corr["note"], "note"))
    else:
        blocks.append(Paragraph("Holm and Benjamini-Hochberg: " + _unavailable(corr)))
    spa = d["spa"]
    if spa.get("available"):
        blocks.append(
            Paragraph(
                f"Hansen's SPA test (arch, {spa['bootstrap']} bootstrap, block "
                f"{spa['block_size']}, "
                f"{spa['reps']} reps) on {spa['scope']}: p = {num(spa['pvalue'])} (consistent; "
                "lower "
                f"{num(spa['pvalue_lower'])}, upper {num(spa['pvalue_upper'])}); StepM finds "
                f"{spa['stepm_superior']} config(s) superior at {spa['stepm_alpha']}. Null: "
                f"{spa['null']}."
            )
        )
    else:
        blocks.append(Paragraph("SPA test: " + _unavailable(spa)))
    blocks += _figures("multiple_testing", figures)
    blocks.append(Heading(3, "Verdict"))
    if verdict:
        style = {True: "good", False: "bad"}.get(verdict["likely_real"], "neutral")
        blocks.append(Paragraph(verdict["paragraph"], style))
        blocks.append(Bullets([*verdict["reasons"], verdict["rule"]]))
    else:
        blocks.append(Paragraph("No verdict: no config finished with status ok.", "neutral"))
    return blocks


def _usl_text(s: dict[str, Any]) -> str:
    fit = s["fit"]
    if not fit.get("available"):
        return _unavailable(fit)
    peak = fit.get("peak_workers")
    if peak is None or peak > 100 * s["max_workers"]:
        peak_text = "no peak within reach (κ ≈ 0: no retrograde region measured)"
    else:
        peak_text = f"peak at p* = {num(peak, 3)} workers ({num(fit['peak_throughput'])} configs/s)"
    text = (
        f"σ = {num(fit['sigma'])} (contention), κ = {num(fit['kappa'])} (coherency); "
        f"{peak_text}; R² {num(fit['r_squared'], 3)}; measured p = 1..{s['max_workers']} on "
        f"{s['cluster_cpus']} CPU(s)"
    )
    if s.get("cpus_per_task") is not None and s["cpus_per_task"] < 1:
        text += (
            f" with {num(s['cpus_per_task'], 3)} CPU per task (Ray restarts workers beyond "
            "one per CPU; that cost is included)"
        )
    return text


def scaling_blocks(d: dict[str, Any], figures: list[str]) -> list[Block]:
    """Section 6."""
    blocks: list[Block] = [Heading(2, "6. Scaling")]
    if not d.get("available"):
        return [
            *blocks,
            Paragraph(
                f"No benchmark results found (looked in {', '.join(d['searched'])}); {d['hint']}.",
                "note",
            ),
        ]
    rows = [("results from", str(d["source"]))]
    if "overhead" in d:
        o = d["overhead"]
        rows.append(
            (
                "per-task overhead",
                f"{seconds(o['overhead_seconds'])} on {o['workers']} worker(s) ({o['generated']})",
            )
        )
    if "amortization" in d:
        a = d["amortization"]
        fit = a["fit"]
        text = (
            f"O = {seconds(fit['overhead_seconds'])}, b = {seconds(fit['per_config_seconds'])}, "
            f"R² {num(fit['r_squared'], 3)}; ridge O/b = {num(fit['ridge_batch'], 3)}, "
            f"B*(0.9) = {num(fit['batch_for_90pct'], 3)}, ceiling S = "
            f"{num(fit['ceiling_speedup'], 3)}"
            if fit.get("available")
            else _unavailable(fit)
        )
        planner = a.get("planner") or {}
        if planner.get("error"):
            text += f"; {planner['error']}"
        elif planner.get("overhead_seconds") is not None:
            text += (
                f"; the planner estimated O = {seconds(planner['overhead_seconds'])}, "
                f"b = {seconds(planner['per_config_seconds'])}, B*(0.99) = "
                f"{num(planner['law_batch'], 3)}"
            )
        rows.append(("amortization", text))
    if "scaling" in d:
        rows.append(("scaling (USL)", _usl_text(d["scaling"])))
    blocks.append(KeyValues(rows))
    blocks += _figures("scaling", figures)
    return blocks


def report_document(data: dict[str, Any], figures: list[str]) -> list[Block]:
    """Every block of the report, from its JSON data and the names of its figures.

    Parameters
    ----------
    data : dict
        The report (as in report.json).
    figures : list of str
        Names of the figures that exist.

    Returns
    -------
    list of Block
        Title, summary, then sections 1 to 6.
    """
    ident = data["identity"]
    verdict = data.get("verdict")
    blocks: list[Block] = [
        Heading(1, f"Sweep report: {ident['run_name']}"),
        Paragraph(
            f"Generated {data['generated']['at']} by {data['generated']['by']} from "
            f"{ident['run_dir']}. Sharpe ratios are per period unless marked annualised; "
            "kurtosis is raw (normal = 3).",
            "note",
        ),
    ]
    if verdict:
        style = {True: "good", False: "bad"}.get(verdict["likely_real"], "neutral")
        blocks.append(Paragraph(verdict["headline"], style))
    blocks += identity_blocks(ident)
    blocks += integrity_blocks(data["integrity"])
    blocks += execution_blocks(data["execution"], figures)
    blocks += results_blocks(data["results"], ident["grid"], figures)
    blocks += testing_blocks(data["multiple_testing"], verdict, figures)
    blocks += scaling_blocks(data["scaling"], figures)
    return blocks
