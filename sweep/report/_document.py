"""The report's content as blocks, from report.json's data alone (Markdown and HTML agree)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from sweep.executors import LOCAL, local_cluster_kind, title_of
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
from sweep.report._run_scaling import RunScaling
from sweep.report._sections import (
    AmortizationFit,
    Corrections,
    Deflated,
    DetectableSharpe,
    Dimensionality,
    Discoveries,
    Distribution,
    EffectiveNumberOfTrials,
    ErrorGroup,
    ExecutionSection,
    IdentitySection,
    IntegritySection,
    MultipleTestingSection,
    NoBenchmarks,
    OutOfSampleSection,
    PBOSection,
    PlannerRow,
    ReportData,
    ResultsSection,
    RowCheck,
    ScalingSection,
    ScalingSummary,
    TooFewReplications,
    Unavailable,
)
from sweep.report._summary import summary_blocks, verdict_style
from sweep.report._verdict import Verdict
from sweep.store._bench_results import FitFailed, LawFit, PlannerFailed, UslFit
from sweep.store._record import GridRecord, Plan

#: Figures of each section, in order, with their captions.
FIGURES: dict[str, dict[str, str]] = {
    "execution": {
        "task_timeline": "Tasks per worker over time.",
        "task_time_fit": "Task time against batch size, with T = O + b·B fitted.",
    },
    "results": {
        "sharpe_histogram": "Distribution of annualised Sharpe ratios of excess returns.",
        "heatmap": "A metric over two grid axes.",
        "profile": "A metric along the grid's one varying axis.",
    },
    "multiple_testing": {
        "expected_max_curve": "E[max] of null Sharpe ratios against the number of trials.",
        "pbo_logits": "CSCV logits of the in-sample best's out-of-sample rank.",
        "pbo_degradation": "Out-of-sample against in-sample Sharpe of the in-sample best.",
    },
    "out_of_sample": {
        "walk_forward_equity": "Out-of-sample equity: the re-optimised rule, the benchmark "
        "and the full-sample winner held fixed (which used hindsight).",
        "parameter_stability": "The parameters each walk-forward fold chose.",
        "cpcv_paths": "Out-of-sample Sharpe ratio over the CPCV paths.",
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


def _unavailable(part: object) -> str:
    """Why a part is not available (its reason or error), in words."""
    reason = getattr(part, "reason", None) or getattr(part, "error", None)
    if part is None:
        return "not available"
    return f"not available: {reason or 'see report.json'}"


def _axes_text(grid: GridRecord) -> str:
    parts = []
    for axis in grid.axes:
        a = axis.doc
        if axis.size == 1:
            parts.append(f"{axis.name} = {num(a['first'])}")
        else:
            parts.append(f"{axis.name}: {axis.size} values ({num(a['first'])} .. {num(a['last'])})")
    extra = []
    if grid.doc.get("zip"):
        extra.append("zipped " + "; ".join("+".join(g) for g in grid.doc["zip"]))
    if grid.doc.get("where"):
        extra.append("where " + " and ".join(grid.doc["where"]))
    return "; ".join(parts) + (f" ({', '.join(extra)})" if extra else "")


def _as_list(value: object) -> list[object]:
    """``value`` when it is a JSON array, else empty (a field absent from an older record)."""
    return value if isinstance(value, list) else []


def identity_blocks(d: IdentitySection) -> list[Block]:
    """Section 1."""
    data = d.data
    assets = _as_list(data.get("assets"))
    code = d.code
    versions = ", ".join(f"{k} {v}" for k, v in code.versions.items() if v)
    strategy = d.strategy
    rows = [
        ("run", d.run_name),
        ("run folder", d.run_dir),
        ("created", str(d.created)),
        ("spec hash", str(d.spec_hash)),
        (
            "data",
            (f"{d.data_origin}; " if d.data_origin else "")
            + f"sha256 {data.get('fingerprint')}; {num(data.get('n_periods'))} dates x "
            f"{num(data.get('n_assets'))} assets ({', '.join(map(str, assets))}); "
            f"{data.get('first_date')} to {data.get('last_date')}",
        ),
        (
            "strategy",
            f"{strategy.name if strategy else None} version "
            f"{strategy.version if strategy else None}"
            + (f" ({d.strategy_origin})" if d.strategy_origin else ""),
        ),
        (
            "engine version",
            f"{d.engine_version} (sessions: {', '.join(d.session_engine_versions) or '–'})",
        ),
        ("root seed", str(d.root_seed)),
        ("grid", f"{num(d.grid.size)} configs: {_axes_text(d.grid)}"),
        ("metric options", ", ".join(f"{k} = {v}" for k, v in d.metrics.items())),
        ("git commit", code.git_commit or "– (not a git checkout)"),
        ("versions", versions),
    ]
    return [
        Heading(2, "1. Identity"),
        KeyValues(rows),
        Paragraph(code.note + ".", "note"),
        Code(json.dumps(d.spec, indent=2), "json", "The spec, as recorded in the manifest"),
    ]


def error_rows(errors: tuple[ErrorGroup, ...]) -> list[list[str]]:
    """The error groups' rows: the first :data:`MAX_ROWS`, then one row of the rest if any."""
    rows = [[num(e.count), e.error] for e in errors[:MAX_ROWS]]
    rest = errors[MAX_ROWS:]
    if rest:
        rows.append([num(sum(e.count for e in rest)), f"({len(rest):,} other groups)"])
    return rows


def integrity_blocks(d: IntegritySection) -> list[Block]:
    """Section 2."""
    c = d.configs
    parts = d.parts
    match = d.matches_recorded
    hash_text = d.table_hash or (
        "– (incomplete or bad parts; hash of the results so far: "
        f"{d.table_hash_of_partial_results})"
    )
    rows = [
        ("table hash", hash_text),
        ("table hash version", d.table_hash_version or "–"),
        (
            "recorded by the driver",
            f"{d.recorded_table_hash or '–'}"
            + ("" if match is None else (" (matches)" if match else " (DIFFERS)")),
        ),
        ("null summary hash", d.null_summary_hash or "– (incomplete, or no bootstrap)"),
        ("fold summary hash", d.fold_summary_hash or "– (incomplete, or no validation)"),
        ("parts", f"{parts.total} verified: {parts.good} good, {len(parts.bad)} bad"),
        ("quarantined files", num(len(d.quarantined_files))),
        (
            "configs",
            f"{num(c.done)} of {num(c.total)} done ({num(c.ok)} ok, {num(c.failed)} "
            f"failed); {num(c.missing)} missing",
        ),
        ("sessions", f"{len(d.sessions)}" + (" (resumed)" if d.resumed else "")),
        ("environments", _environments_text(d)),
    ]
    blocks: list[Block] = [Heading(2, "2. Integrity"), KeyValues(rows)]
    if parts.bad:
        blocks.append(Table(["bad part", "reason"], [[b.name, b.reason] for b in parts.bad]))
    if d.environments:
        blocks.append(
            Table(
                ["environment that computed the parts", "parts", "configs"],
                [
                    [
                        "no environment record (parts written before raysweep recorded one)"
                        if u.environment is None
                        else u.environment.describe(),
                        num(u.parts),
                        num(u.configs),
                    ]
                    for u in d.environments
                ],
                caption="Where the bits came from: library versions, CPU and SIMD dispatch, "
                "C library of each part.",
            )
        )
    if d.errors:
        blocks.append(
            Table(
                ["failed configs", "error"],
                error_rows(d.errors),
                caption="Failed configs grouped by error message.",
            )
        )
    blocks.append(
        Table(
            ["session", "start", "end", "host", "executor", "ended", "computed", "failed", "wall"],
            [
                [
                    str(s.id) + (" (resumed)" if s.resumed else ""),
                    str(s.start),
                    str(s.end or "–"),
                    str(s.host),
                    str(s.executor),
                    str(s.status) + (" (took over a stale lock)" if s.took_over_lock else ""),
                    num(s.configs_computed),
                    num(s.configs_failed),
                    seconds(s.wall_seconds),
                ]
                for s in d.sessions
            ],
            caption="Driver sessions"
            + ("; each later session resumed the run." if d.resumed else "."),
        )
    )
    blocks.append(Paragraph("Re-check the table hash from the parts with:"))
    blocks.append(Code(d.recheck, "sh"))
    if d.reproduce:
        blocks.append(
            Paragraph(
                "Re-compute a sample of configs in your own environment and compare them "
                "with the stored ones bit for bit (exit 0 on a full match) with:"
            )
        )
        blocks.append(Code(d.reproduce, "sh"))
    return blocks


def _environments_text(d: IntegritySection) -> str:
    """How many environments computed the table (mixed runs and old folders said so)."""
    uses = d.environments
    if not uses:
        return "– (no parts)"
    if all(u.environment is None for u in uses):
        return "no environment record (the parts were written before raysweep recorded one)"
    recorded = [u for u in uses if u.environment is not None]
    text = f"{len(recorded)} computed the parts"
    if len(recorded) > 1:
        text += " (mixed: see the table below)"
    if len(recorded) < len(uses):
        text += "; some parts have no environment record"
    return text


def _fit_text(fit: AmortizationFit | Unavailable) -> str:
    if isinstance(fit, Unavailable):
        return _unavailable(fit)
    return (
        f"O = {seconds(fit.overhead_seconds)}, b = {seconds(fit.per_config_seconds)} per "
        f"config, R² = {num(fit.r_squared, 3)} over {fit.n_tasks} tasks; ridge O/b = "
        f"{num(fit.ridge_batch, 3)}, B*(0.9) = {num(fit.batch_for_90pct, 3)}, B*(0.99) = "
        f"{num(fit.batch_for_99pct, 3)}" + (f" ({fit.note})" if fit.note else "")
    )


def execution_blocks(d: ExecutionSection, figures: list[str]) -> list[Block]:
    """Section 3."""
    blocks: list[Block] = [Heading(2, "3. Execution")]
    rows = [("wall time", seconds(d.wall_seconds) + " (sum over sessions)")]
    t = d.stats
    if d.telemetry and t is not None:
        rows += [
            ("CPU time", seconds(d.cpu_seconds) + " (sum of in-task compute)"),
            ("utilisation", pct(t.utilisation) + " of wall x workers"),
            ("tasks", f"{num(d.tasks)} ({num(t.configs_in_tasks)} configs)"),
            (
                "batch sizes",
                f"{t.batch_sizes.min} .. {t.batch_sizes.max} "
                f"(median {num(t.batch_sizes.median)}, {t.batch_sizes.distinct} "
                "distinct)",
            ),
            ("workers seen", f"{t.workers_seen} on {t.nodes_seen} node(s)"),
            (
                "overhead share",
                f"{pct(t.overhead_share)} of service time; {pct(t.overhead_share_latency)} "
                "of latency",
            ),
            (
                "overhead share per task",
                f"median {pct(t.overhead_share_per_task.median)}, 90th percentile "
                f"{pct(t.overhead_share_per_task.p90)}",
            ),
            ("fit to service time", _fit_text(t.fit_service)),
            ("fit to compute time", _fit_text(t.fit_compute)),
            (
                "retries",
                f"{t.retries} task(s) ran more than once"
                + (f"; {t.attempt_unknown} attempt(s) unknown" if t.attempt_unknown else ""),
            ),
        ]
    else:
        rows.append(("telemetry", "none recorded"))
    blocks.append(KeyValues(rows))
    plan_rows = []
    for p in d.planner:
        clamps = "; ".join(p.clamps) or "none"
        plan_rows.append(
            [
                str(p.session),
                f"{p.executor} x {num(p.workers)}" + (f" on {p.nodes} node(s)" if p.nodes else ""),
                str(p.source),
                seconds(p.overhead_seconds),
                seconds(p.per_config_seconds),
                num(p.target_efficiency),
                num(p.law_batch, 3),
                num(p.batch_size),
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
    choices = [_choice_text(p) for p in d.planner if p.executor_choice is not None]
    if choices:
        blocks.append(KeyValues(choices))
    blocks.append(Paragraph("; ".join(f"{k}: {v}" for k, v in d.definitions.items()) + ".", "note"))
    blocks += _figures("execution", figures)
    if t is not None and t.workers:
        blocks.append(
            Table(
                ["session", "worker (node/pid)", "tasks", "configs", "busy", "compute"],
                [
                    [
                        str(w.session),
                        w.lane,
                        num(w.tasks),
                        num(w.configs),
                        seconds(w.busy_seconds),
                        seconds(w.compute_seconds),
                    ]
                    for w in t.workers[:MAX_ROWS]
                ],
                caption="Tasks per worker.",
            )
        )
    return blocks


def results_blocks(
    d: ResultsSection | Unavailable, grid: GridRecord, figures: list[str]
) -> list[Block]:
    """Section 4."""
    blocks: list[Block] = [Heading(2, "4. Results")]
    if isinstance(d, Unavailable):
        return [*blocks, Paragraph(_unavailable(d))]
    params = grid.varying or [grid.axes[0].name]
    fixed = [f"{a.name} = {num(a.doc['first'])}" for a in grid.axes if a.name not in params]
    cols = (
        "excess_sharpe_ann",
        "sharpe_ann",
        "t_stat",
        "p_value",
        "total_return",
        "max_drawdown",
        "n_trades",
    )
    rows = [
        [
            str(r.rank),
            *(num(r.params[p]) for p in params),
            *(num(getattr(r, c)) for c in cols),
            r.config_id[:12],
        ]
        for r in d.top
    ]
    blocks.append(
        Table(
            ["#", *params, *cols, "config_id"],
            rows,
            caption=f"Top {len(rows)} configs by {d.sorted_by}"
            + (f"; fixed: {', '.join(fixed)}." if fixed else "."),
        )
    )
    s = d.sharpe_ann_summary
    if isinstance(s, Distribution):
        blocks.append(
            Paragraph(
                f"Annualised Sharpe ratios of excess returns of {num(s.count)} configs: mean "
                f"{num(s.mean)}, "
                f"std {num(s.std)}, median {num(s.quantiles['50%'])}, range "
                f"{num(s.min)} to {num(s.max)}"
                + (
                    f"; {num(d.constant_configs)} config(s) have constant returns (no Sharpe)."
                    if d.constant_configs
                    else "."
                )
            )
        )
    hm = d.heatmap
    if hm:
        cells = [
            f"{axis} has {num(distinct)} values, shown in {len(values)} cells of consecutive "
            "values (the maximum over each)"
            for axis, values, distinct in (
                (hm.x, hm.x_values, hm.x_distinct_values),
                (hm.y, hm.y_values, hm.y_distinct_values),
            )
            if distinct
        ]
        blocks.append(
            Paragraph(
                f"Heatmap: {hm.metric} over {hm.x} x {hm.y} ({hm.chosen}), "
                f"{hm.aggregation} over {', '.join(hm.aggregated_over) or 'no other axis'}"
                + "".join(f"; {c}" for c in cells)
                + "; choose the axes with --heatmap X,Y.",
                "note",
            )
        )
    line = d.profile
    if line and line.distinct_values:
        blocks.append(
            Paragraph(
                f"Profile: {line.axis} has {num(line.distinct_values)} values, shown in "
                f"{len(line.values)} cells of consecutive values (the maximum over each).",
                "note",
            )
        )
    blocks += _figures("results", figures)
    return blocks


def _dimensionality_rows(d: MultipleTestingSection) -> list[tuple[str, str]]:
    eff = d.dimensionality
    ret = d.returns
    if not isinstance(eff, Dimensionality):
        return [("dimensionality", _unavailable(eff or ret))]
    li_ji = eff.li_ji if eff.li_ji is not None else eff.li_ji_of_sample
    galwey = eff.galwey if eff.galwey is not None else eff.galwey_of_sample
    check = ret.sharpe_check
    return [
        (
            "dimensionality",
            f"{num(eff.value)} — {eff.estimator}; {eff.method} "
            f"({eff.scope}). This is {eff.meaning}.",
        ),
        (
            "other estimators",
            f"mean pairwise correlation {num(eff.mean_pairwise_correlation)}; participation "
            f"ratio without the noise-floor correction {num(eff.participation_ratio)}, "
            f"Nyholt {num(eff.nyholt)}, Li-Ji {num(li_ji)}, Galwey {num(galwey)}"
            + (f" ({eff.eigen_note})" if eff.eigen_note else ""),
        ),
        (
            "returns",
            f"{ret.sample}; {ret.configs:,} series of {num(ret.periods)} periods; stored "
            f"Sharpe ratios reproduced bit for bit for {num(check and check.identical)} of "
            f"{num(check and check.compared)}",
        ),
        *_row_check_rows(ret.row_check),
    ]


def _row_check_rows(rows: RowCheck | None) -> list[tuple[str, str]]:
    """The recomputed rows (every column by its bytes), and the first mismatches."""
    if rows is None:
        return []
    text = (
        f"{rows.sample}: {num(rows.identical)} of {num(rows.compared)} rows reproduced bit "
        f"for bit on all {num(rows.columns)} columns"
    )
    if rows.identical < rows.compared:
        text += f" — FAILED: {num(rows.values_differing)} value(s) differ; " + "; ".join(
            rows.mismatches
        )
    return [("recomputed rows", text)]


def _sweep_wide_blocks(d: MultipleTestingSection) -> list[Block]:
    sw = d.sweep_wide
    if isinstance(sw, Unavailable):
        return [Paragraph("Sweep-wide tests: " + _unavailable(sw))]
    stepm = sw.stepm
    rows = [
        ("winner's sweep-wide p-value", num(sw.winner_pvalue)),
        ("Hansen's SPA (consistent)", num(sw.spa_pvalue)),
        ("White's Reality Check", num(sw.reality_check_pvalue)),
        (
            "Romano-Wolf StepM",
            f"{num(stepm.count)} config(s) beat the benchmark at FWER {stepm.alpha}"
            + (
                f" (first: {', '.join(c[:12] for c in stepm.config_ids[:5])})"
                if stepm.config_ids
                else ""
            ),
        ),
        ("replications", f"{num(sw.reps)} joint resamples over {num(sw.configs)} configs"),
    ]
    blocks: list[Block] = [KeyValues(rows), Paragraph(sw.statistic, "note")]
    if stepm.note:
        blocks.append(Paragraph("StepM: " + stepm.note + ".", "note"))
    return blocks


def _discoveries_blocks(d: MultipleTestingSection) -> list[Block]:
    """How many configs are real: FDP-StepM's count, its path and the first ones."""
    called = d.discoveries
    if called is None:
        return []
    blocks: list[Block] = [Heading(3, "How many configs are real")]
    if not isinstance(called, Discoveries):
        return [*blocks, Paragraph("FDP-StepM: " + _unavailable(called) + ".")]
    path = ", ".join(f"{k}: {num(n)}" for k, n in enumerate(called.k_counts, start=1))
    blocks.append(
        KeyValues(
            [
                (
                    "called real",
                    f"{num(called.count)} of {num(called.configs)} configs, false discovery "
                    f"proportion at most {called.gamma:.0%} with probability "
                    f"{1 - called.alpha:.0%}",
                ),
                (
                    "StepM (no false discovery)",
                    f"{num(called.stepm_count)} config{'' if called.stepm_count == 1 else 's'}",
                ),
                ("k-StepM path", f"k = {path} (stopped at k = {called.k})"),
                (
                    "critical value",
                    f"called real when t > {num(called.critical_value)}"
                    if called.critical_value is not None
                    else "none: too few replications for any rejection",
                ),
                ("method", called.method),
            ]
        )
    )
    if called.first:
        params = list(called.first[0].params)
        blocks.append(
            Table(
                ["#", *params, "t", "excess Sharpe (ann.)", "config_id"],
                [
                    [
                        str(r.rank),
                        *(num(r.params[p]) for p in params),
                        num(r.t_stat),
                        num(r.excess_sharpe_ann),
                        r.config_id[:12],
                    ]
                    for r in called.first
                ],
                caption=(
                    f"The first {len(called.first)} of the {num(called.count)} configs called "
                    "real, by their studentised statistic t."
                    if called.count > len(called.first)
                    else "The configs called real, by their studentised statistic t."
                ),
            )
        )
    text = called.meaning[0].upper() + called.meaning[1:] + "."
    blocks.append(Paragraph(text + (" " + called.note + "." if called.note else ""), "note"))
    return blocks


def _detectable_blocks(d: MultipleTestingSection) -> list[Block]:
    """The minimum detectable effect of the sweep-wide test."""
    det = d.detectable
    if det is None:
        return []
    blocks: list[Block] = [Heading(3, "Minimum detectable effect")]
    if not isinstance(det, DetectableSharpe):
        return [*blocks, Paragraph("Minimum detectable effect: " + _unavailable(det) + ".")]
    blocks.append(
        KeyValues(
            [
                (
                    f"detected with {det.power:.0%} power",
                    f"annualised excess Sharpe ratio {num(det.sharpe_ann, 3)} "
                    f"({num(det.sharpe)} per period), over {num(det.configs)} configs and "
                    f"{num(det.periods)} periods, at alpha {det.alpha:g}",
                ),
                (
                    "one config fixed in advance",
                    f"{num(det.single_test_sharpe_ann, 3)} (tested alone, as on a holdout as "
                    "long: no search to pay for)",
                ),
                ("model", det.model),
            ]
        )
    )
    blocks.append(
        Paragraph(
            "A verdict of 'not distinguishable from selection luck' means no edge of at least "
            "this size was found; a smaller one could be there.",
            "note",
        )
    )
    return blocks


def _effective_rows(d: MultipleTestingSection) -> list[Block]:
    eff = d.effective_number_of_trials
    if not isinstance(eff, EffectiveNumberOfTrials):
        return []
    return [
        KeyValues(
            [
                (
                    "effective number of trials",
                    f"{num(eff.n)}, for {num(eff.naive_n)} configs tried: {eff.measured}",
                ),
                ("not the dimensionality", eff.not_dimensionality),
            ]
        )
    ]


def _deflation_blocks(d: MultipleTestingSection) -> list[Block]:
    defl = d.deflation
    labels = {"naive": "naive N", "implied": "effective number of trials"}
    table_rows = []
    for name, label in labels.items():
        x = None if defl is None else getattr(defl, name)
        if not isinstance(x, Deflated):
            table_rows.append([label, _unavailable(x), "", "", "", ""])
            continue
        table_rows.append(
            [
                f"{label} = {num(x.n_trials)}",
                num(x.expected_max_sharpe),
                num(x.expected_max_sharpe_ann),
                num(x.winner_over_expected_max, 3),
                num(x.psr),
                num(x.dsr),
            ]
        )
    return [
        Table(
            ["trials", "E[max] per period", "E[max] annualised", "winner / E[max]", "PSR", "DSR"],
            table_rows,
            caption="Deflated Sharpe ratio of the winner's excess returns. Naive N: every "
            "config, scaled by the cross-sectional spread of their Sharpe ratios (as in the DSR "
            "paper). Effective number of trials: the number of independent null trials whose "
            "expected best equals the mean of the sweep's joint-bootstrap maxima (how hard the "
            "grid searched, measured on the data).",
        ),
        *_effective_rows(d),
    ]


def _pbo_blocks(pbo: PBOSection | Unavailable) -> list[Block]:
    if isinstance(pbo, Unavailable):
        return [Paragraph("PBO " + _unavailable(pbo))]
    return [
        KeyValues(
            [
                ("P(out-of-sample loss)", num(pbo.prob_oos_loss)),
                (
                    "PBO",
                    f"{num(pbo.pbo)} over {num(pbo.splits)} splits of {pbo.blocks} "
                    f"blocks ({num(pbo.configs)} configs"
                    + (", sampled" if pbo.sampled else "")
                    + ")",
                ),
                (
                    "degradation",
                    f"OOS = {num(pbo.degradation.intercept)} + "
                    f"{num(pbo.degradation.slope)} x IS "
                    f"(R² {num(pbo.degradation.r_squared, 3)})",
                ),
                (
                    "in-sample best",
                    f"{pbo.in_sample_best.distinct_configs} distinct config(s); most "
                    "often "
                    + ", ".join(
                        f"{m.config_id[:12]} ({pct(m.share)})"
                        for m in pbo.in_sample_best.most_frequent[:3]
                    ),
                ),
                (
                    "blocks",
                    f"{pbo.periods_per_block} periods each; first "
                    f"{pbo.leading_periods_dropped} period(s) dropped",
                ),
            ]
        ),
        Paragraph(
            "PBO is the share of cross-validation splits in which the in-sample best ranks in "
            "the bottom half out of sample: it describes picking within the grid and cannot "
            "see an edge every config shares, so it is reported, not a gate.",
            "note",
        ),
    ]


def _corrections_blocks(corr: Corrections | TooFewReplications | Unavailable) -> list[Block]:
    if not isinstance(corr, Corrections):
        return [Paragraph("Holm and Benjamini-Hochberg: " + _unavailable(corr) + ".", "note")]
    return [
        Paragraph(
            f"Of {num(corr.tests)} per-config p-values, {num(corr.raw)} are at or below "
            f"{corr.alpha}; {num(corr.holm)} survive Holm (family-wise error) and "
            f"{num(corr.benjamini_hochberg)} survive Benjamini-Hochberg (false discovery "
            "rate)"
            + (
                f"; the winner's adjusted p-values are {num(corr.winner_holm_adjusted)} "
                f"(Holm) and {num(corr.winner_bh_adjusted)} (BH)."
                if corr.winner_holm_adjusted is not None
                else "."
            )
        )
    ]


def _verdict_blocks(verdict: Verdict | None) -> list[Block]:
    blocks: list[Block] = [Heading(3, "Verdict")]
    if verdict:
        blocks.append(Paragraph(verdict.paragraph, verdict_style(verdict.likely_real)))
        blocks.append(Bullets([*verdict.reasons, verdict.rule]))

    else:
        blocks.append(Paragraph("No verdict: no config finished with status ok.", "neutral"))
    return blocks


def testing_blocks(
    d: MultipleTestingSection | Unavailable, verdict: Verdict | None, figures: list[str]
) -> list[Block]:
    """Section 5 and the verdict."""
    blocks: list[Block] = [Heading(2, "5. Multiple testing")]
    if isinstance(d, Unavailable):
        return [*blocks, Paragraph(_unavailable(d)), *_verdict_blocks(None)]
    bench = d.benchmark
    blocks.append(Paragraph(bench.null))
    w = d.winner
    if w:
        blocks.append(
            Paragraph(
                f"Winner (highest {d.selection_metric}): "
                f"{', '.join(f'{k}={num(v)}' for k, v in w.params.items())} "
                f"(config {w.config_id}): excess Sharpe {num(w.sharpe)} per period, "
                f"{num(w.sharpe_ann)} annualised (its own Sharpe {num(w.own_sharpe_ann)}"
                + (
                    f"; the benchmark's {num(bench.sharpe_ann)}"
                    if bench.sharpe_ann is not None
                    else ""
                )
                + f"), over {num(w.n_obs)} periods; skew {num(w.skew)}, raw kurtosis "
                f"{num(w.kurtosis)}; t = {num(w.t_stat)}, its own bootstrap p-value "
                f"{num(w.p_value)} (before accounting for the search)."
            )
        )
    blocks.append(Heading(3, "Sweep-wide tests"))
    blocks += _sweep_wide_blocks(d)
    blocks += _corrections_blocks(d.corrections)
    blocks += _discoveries_blocks(d)
    blocks += _detectable_blocks(d)
    blocks.append(Heading(3, "Deflated Sharpe ratio"))
    if w:
        blocks += _deflation_blocks(d)
    blocks.append(Heading(3, "Out of sample (CSCV) and PBO"))
    blocks += _pbo_blocks(d.pbo)
    blocks.append(Heading(3, "Dimensionality of the returns"))
    blocks.append(KeyValues(_dimensionality_rows(d)))
    blocks += _figures("multiple_testing", figures)
    blocks += _verdict_blocks(verdict)
    return blocks


def _fold_table(folds: tuple[Mapping[str, Any], ...]) -> Table:
    shown = folds[:MAX_ROWS]
    skip = {"fold", "train", "test", "grid_index"}
    # Parameters no fold changed (fixed costs, one-value axes) are left out.
    extra = [
        k
        for k in shown[0]
        if k not in skip
        and (k.startswith(("in_sample_", "oos_")) or len({str(f[k]) for f in folds}) > 1)
    ]
    return Table(
        ["fold", "train", "test", *extra],
        [[f["fold"], f["train"], f["test"], *(num(f[k]) for k in extra)] for f in shown],
        caption=f"Each fold's in-sample best ({len(folds)} folds"
        + (f", first {MAX_ROWS} shown" if len(folds) > MAX_ROWS else "")
        + "; `sweep results RUN_DIR --folds` prints them all)",
    )


def out_of_sample_blocks(d: OutOfSampleSection | Unavailable, figures: list[str]) -> list[Block]:
    """Section 6: walk-forward and CPCV validation of the selection."""
    blocks: list[Block] = [Heading(2, "6. Out of sample")]
    if isinstance(d, Unavailable):
        return [*blocks, Paragraph(_unavailable(d))]
    blocks.append(Paragraph(d.paragraph))
    rows = [("selection metric", d.metric)]
    if (wf := d.walk_forward) is not None:
        rows += [
            (
                "walk-forward",
                f"{wf.folds} folds, {num(wf.periods)} out-of-sample periods "
                f"({wf.first} to {wf.last})",
            ),
            ("out-of-sample Sharpe (ann.)", num(wf.sharpe_ann)),
            ("PSR vs no excess", f"{num(wf.psr)} ({wf.rule}: {'yes' if wf.holds else 'no'})"),
            ("in-sample Sharpe of the choices (ann.)", num(wf.in_sample_sharpe_ann)),
            ("walk-forward efficiency", num(wf.efficiency)),
            (
                "total return out of sample",
                f"rule {pct(wf.total_return)}, benchmark {pct(wf.benchmark_total_return)}, "
                f"fixed winner {pct(wf.fixed_winner_total_return)}",
            ),
        ]
    if (cv := d.cpcv) is not None:
        rows += [
            ("CPCV", f"{cv.splits} splits, {cv.paths} paths"),
            ("median path Sharpe (ann.)", num(cv.median_sharpe_ann)),
            ("P(path Sharpe < 0)", num(cv.prob_negative)),
        ]
    blocks.append(KeyValues(rows))
    if d.folds:
        blocks.append(_fold_table(d.folds))
    blocks += _figures("out_of_sample", figures)
    return blocks


def _usl_text(s: ScalingSummary) -> str:
    fit = s.fit
    if not isinstance(fit, UslFit):
        return _bench_unavailable(fit)
    peak = fit.peak_workers
    if peak is None or peak > 100 * s.max_workers:
        peak_text = "no peak within reach (κ ≈ 0: no retrograde region measured)"
    else:
        peak_text = f"peak at p* = {num(peak, 3)} workers ({num(fit.peak_throughput)} configs/s)"
    text = (
        f"σ = {num(fit.sigma)} (contention), κ = {num(fit.kappa)} (coherency); "
        f"{peak_text}; R² {num(fit.r_squared, 3)}; measured p = 1..{s.max_workers} on "
        f"{s.cluster_cpus} CPU(s)"
    )
    if s.cpus_per_task < 1:
        text += (
            f" with {num(s.cpus_per_task, 3)} CPU per task ({title_of(local_cluster_kind())} "
            "restarts workers beyond one per CPU; that cost is included)"
        )
    return text


def _run_scaling_rows(r: RunScaling) -> list[tuple[str, str]]:
    """Section 7's rows from the run's own telemetry (:mod:`sweep.report._run_scaling`)."""
    if not r.tasks:
        return [("this run", "no task ran: nothing to measure")]
    cross = r.crossover_configs
    achieved = r.achieved_speedup
    # The crossover is against the run's own cluster, or, in-process, the local one auto
    # would start (sweep.report._run_scaling).
    cluster = title_of(r.executor if r.executor != LOCAL else local_cluster_kind())
    rows = [
        (
            "this run",
            f"{r.tasks:,} tasks on {r.executor} ({r.workers} worker(s)); O = "
            f"{seconds(r.overhead_seconds)} per task, b = {seconds(r.per_config_seconds)} "
            f"per config, from the {r.source}",
        ),
        (
            "batching S(B)",
            f"at the run's batch B = {r.batch_size:,}: law {num(r.law_speedup, 3)}, "
            + (
                f"achieved {num(achieved, 3)}"
                if math.isfinite(achieved)
                else "achieved not measurable (no warm task of that size)"
            )
            + f" (ceiling 1 + O/b = {num(r.ceiling, 3)})"
            + (
                "; O is negligible next to b here, so the batch size barely matters and an "
                "achieved value off the law is timing noise"
                if math.isfinite(r.ceiling) and r.ceiling < 1.01
                else ""
            ),
        ),
        (
            "crossover",
            (
                f"{cluster} beats in-process above {cross:,} configs"
                if cross is not None
                else f"none: {cluster} is not predicted to beat in-process at any grid size"
            )
            + "; assumes: "
            + "; ".join(r.crossover_basis),
        ),
    ]
    if r.usl:
        rows.append(("USL (bench)", f"σ = {num(r.usl.sigma)}, κ = {num(r.usl.kappa)}"))
    return rows


def _choice_text(p: PlannerRow) -> tuple[str, str]:
    """One session's executor choice: what was asked, what ran, why, the assumptions."""
    c = p.executor_choice
    assert c is not None  # callers pass rows with a choice
    text = f"{c.chosen} (asked: {c.requested}): {c.reason}"
    if c.assumptions:
        text += "; assumed: " + "; ".join(c.assumptions)
    if p.planning_seconds is not None and math.isfinite(p.planning_seconds):
        text += f"; the plan was made {seconds(p.planning_seconds)} into the session"
    return (f"session {p.session} executor", text)


def _bench_unavailable(fit: FitFailed) -> str:
    """Why a benchmark's fit is missing."""
    return f"not available: {fit.reason or 'see report.json'}"


def scaling_blocks(d: ScalingSection | NoBenchmarks, figures: list[str]) -> list[Block]:
    """Section 7: the run's own scaling (never empty), then ``sweep bench`` results."""
    blocks: list[Block] = [Heading(2, "7. Scaling")]
    if d.from_run is not None:
        blocks.append(KeyValues(_run_scaling_rows(d.from_run)))
    if isinstance(d, NoBenchmarks):
        return [
            *blocks,
            Paragraph(
                f"No benchmark results found (looked in {', '.join(d.searched)}); {d.hint}.",
                "note",
            ),
        ]
    rows = [("results from", str(d.source))]
    if d.overhead is not None:
        o = d.overhead
        rows.append(
            (
                "per-task overhead",
                f"{seconds(o.overhead_seconds)} on {o.workers} worker(s) ({o.generated})",
            )
        )
    if d.amortization is not None:
        a = d.amortization
        fit = a.fit
        text = (
            f"O = {seconds(fit.overhead_seconds)}, b = {seconds(fit.per_config_seconds)}, "
            f"R² {num(fit.r_squared, 3)}; ridge O/b = {num(fit.ridge_batch, 3)}, "
            f"B*(0.9) = {num(fit.batch_for_90pct, 3)}, ceiling S = "
            f"{num(fit.ceiling_speedup, 3)}"
            if isinstance(fit, LawFit)
            else _bench_unavailable(fit)
        )
        planner = a.planner
        if isinstance(planner, PlannerFailed) and planner.error:
            text += f"; {planner.error}"
        elif isinstance(planner, Plan) and math.isfinite(planner.overhead_seconds):
            b = planner.per_config_seconds
            text += (
                f"; the planner estimated O = {seconds(planner.overhead_seconds)}, "
                f"b = {seconds(b if math.isfinite(b) else None)}, B*(0.99) = "
                f"{num(planner.law_batch, 3)}"
            )
        rows.append(("amortization", text))
    if d.scaling is not None:
        rows.append(("scaling (USL)", _usl_text(d.scaling)))
    blocks.append(KeyValues(rows))
    blocks += _figures("scaling", figures)
    return blocks


def report_document(data: ReportData, figures: list[str]) -> list[Block]:
    """Every block of the report, from its data and the names of its figures.

    Parameters
    ----------
    data : ReportData
        The report (as report.json holds it, read back).
    figures : list of str
        Names of the figures that exist.

    Returns
    -------
    list of Block
        Title, the summary (:mod:`sweep.report._summary`), then sections 1 to 7.
    """
    ident = data.identity
    blocks: list[Block] = [
        Heading(1, f"Sweep report: {ident.run_name}"),
        Paragraph(
            f"Generated {data.generated.at} by {data.generated.by} from "
            f"{ident.run_dir}. Sharpe ratios are per period unless marked annualised; "
            "kurtosis is raw (normal = 3).",
            "note",
        ),
    ]
    blocks += summary_blocks(data)
    blocks += identity_blocks(ident)
    blocks += integrity_blocks(data.integrity)
    blocks += execution_blocks(data.execution, figures)
    blocks += results_blocks(data.results, ident.grid, figures)
    blocks += testing_blocks(data.multiple_testing, data.verdict, figures)
    blocks += out_of_sample_blocks(data.out_of_sample, figures)
    blocks += scaling_blocks(data.scaling, figures)
    return blocks
