"""Report section 3: how the cluster was used (sessions, planner, task telemetry, fits).

Task times. A task's *latency* is ``end - submit`` (driver clock to worker clock). With
several tasks in flight per worker a task also waits behind its predecessor, so the report
fits the amortization law to each task's *service time*: ``end - max(submit, end of the
previous task on the same worker)``, the time the worker spent on it including dispatch,
argument fetch, compute and result transport. The first task of every worker in every
session is left out of the fits (process start, imports, JIT compilation) and drawn hollow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from stats import fit_amortization
from sweep.errors import StatsInputError
from sweep.report._load import RunData
from sweep.report._sections import (
    AmortizationFit,
    BatchSizes,
    ExecutionSection,
    Lane,
    PerTaskShare,
    PlannerRow,
    ServiceSeconds,
    TaskStats,
    Unavailable,
    WallRow,
)
from sweep.store._record import Manifest

#: Fewest warm tasks (and distinct batch sizes) a fit of ``T = O + bB`` needs.
MIN_FIT_TASKS = 3


@dataclass(frozen=True)
class ExecutionPlotData:
    """Arrays behind the execution figures (not part of report.json).

    Attributes
    ----------
    tasks : pandas.DataFrame or None
        One row per task with ``session``, ``lane``, ``submit``, ``start``, ``end``
        (seconds since the session's first submit), ``n_configs``, ``service``,
        ``compute`` and ``warm``.
    fits : dict
        ``"service"`` and ``"compute"``: ``(O, b)`` of each fit that succeeded.
    """

    tasks: pd.DataFrame | None
    fits: dict[str, tuple[float, float]] = field(default_factory=dict)


def _lane_label(node: str, worker: str) -> str:
    short = node[:8] if len(node) > 12 else node
    return f"{short}/{worker}"


def task_frame(telemetry: pd.DataFrame) -> pd.DataFrame:
    """Per-task times relative to each session's first submit, with service time and lane.

    Parameters
    ----------
    telemetry : pandas.DataFrame
        The run's telemetry rows (canonical order).

    Returns
    -------
    pandas.DataFrame
        Columns ``session``, ``node``, ``worker``, ``lane``, ``submit``, ``start``, ``end``,
        ``n_configs``, ``latency``, ``service``, ``compute``, ``attempt``, ``warm``; sorted by
        session, lane, end.
    """
    t = telemetry
    session = t["session"].astype(np.int64) if "session" in t else pd.Series(0, index=t.index)
    frame = pd.DataFrame(
        {
            "session": session,
            "node": t["node"].astype(str),
            "worker": t["worker"].astype(str),
            "submit_abs": t["submit_time"].astype(float),
            "start_abs": t["start_time"].astype(float),
            "end_abs": t["end_time"].astype(float),
            "n_configs": t["n_configs"].astype(np.int64),
            "compute": t["compute_seconds"].astype(float),
            "attempt": t["attempt"].astype(np.int64) if "attempt" in t else -1,
        }
    )
    frame["lane"] = [_lane_label(n, w) for n, w in zip(frame["node"], frame["worker"], strict=True)]
    frame = frame.sort_values(["session", "lane", "end_abs", "start_abs"], kind="mergesort")
    prev_end = frame.groupby(["session", "lane"], sort=False)["end_abs"].shift(1)
    began = np.maximum(frame["submit_abs"], prev_end.fillna(-np.inf))
    frame["service"] = frame["end_abs"] - began
    frame["latency"] = frame["end_abs"] - frame["submit_abs"]
    frame["warm"] = prev_end.notna()
    origin = frame.groupby("session")["submit_abs"].transform("min")
    for col in ("submit", "start", "end"):
        frame[col] = frame[f"{col}_abs"] - origin
    frame = frame.drop(columns=["submit_abs", "start_abs", "end_abs"])
    return frame.reset_index(drop=True)


def _fit(sizes: NDArray[Any], seconds: NDArray[Any]) -> AmortizationFit | Unavailable:
    """Fit ``T = O + bB`` where possible; the fit, or the reason there is none."""
    if sizes.shape[0] < MIN_FIT_TASKS or np.unique(sizes).shape[0] < 2:
        return Unavailable(
            reason=(
                f"needs at least {MIN_FIT_TASKS} warm tasks of at least 2 distinct batch sizes; "
                f"the run has {sizes.shape[0]} warm tasks of sizes "
                f"{sorted(set(sizes.tolist()))[:8]}"
            )
        )
    try:
        fit = fit_amortization(sizes, seconds)
    except StatsInputError as exc:
        return Unavailable(reason=str(exc))
    law = fit.law
    note = (
        "the fitted overhead is negative: smaller than these timings can resolve (the law uses 0)"
        if fit.overhead < 0
        else None
    )
    return AmortizationFit(
        note=note,
        overhead_seconds=fit.overhead,
        per_config_seconds=fit.marginal,
        r_squared=fit.r_squared,
        n_tasks=fit.n_points,
        ridge_batch=law.ridge,
        batch_for_90pct=law.batch_for_fraction(0.9),
        batch_for_99pct=law.batch_for_fraction(0.99),
        ceiling_speedup=law.ceiling,
    )


def _planner_rows(manifest: Manifest) -> tuple[PlannerRow, ...]:
    rows = []
    for s in manifest.sessions_in_order():
        plan = s.plan
        info = s.executor_info
        rows.append(
            PlannerRow(
                session=s.id,
                executor=info.kind if info else s.executor,
                workers=info.workers if info else None,
                nodes=info.nodes if info else None,
                address=info.address if info else None,
                ray_version=info.ray_version if info else None,
                source=None if plan is None else plan.source,
                batch_size=None if plan is None else plan.batch_size,
                overhead_seconds=None if plan is None else plan.overhead_seconds,
                transport_seconds=None if plan is None else plan.transport_seconds,
                fixed_in_task_seconds=None if plan is None else plan.fixed_in_task_seconds,
                driver_write_seconds=None if plan is None else plan.driver_write_seconds,
                per_config_seconds=None if plan is None else plan.per_config_seconds,
                target_efficiency=None if plan is None else plan.target_efficiency,
                law_batch=None if plan is None else plan.law_batch,
                clamps=() if plan is None else plan.clamps,
                pilot_tasks=0 if plan is None else len(plan.pilot),
                planning_seconds=None if plan is None else plan.planning_seconds,
                executor_choice=s.executor_choice,
            )
        )
    return tuple(rows)


def _wall_rows(manifest: Manifest, tasks: pd.DataFrame | None) -> tuple[WallRow, ...]:
    """Wall time per session: recorded by the driver, else the span of its tasks."""
    rows = []
    for s in manifest.sessions_in_order():
        wall = s.wall_seconds
        source = "recorded"
        if wall is None:
            span = None
            if tasks is not None:
                mine = tasks[tasks["session"] == s.id]
                if len(mine):
                    span = float(mine["end"].max())
            wall, source = span, "task span (the driver recorded none)" if span else "unknown"
        rows.append(WallRow(session=s.id, wall_seconds=wall, source=source))
    return tuple(rows)


def _lanes(tasks: pd.DataFrame) -> tuple[Lane, ...]:
    out = []
    for (session, lane), g in tasks.groupby(["session", "lane"], sort=True):
        out.append(
            Lane(
                session=int(session),  # type: ignore[call-overload]
                lane=str(lane),
                node=str(g["node"].iloc[0]),
                worker=str(g["worker"].iloc[0]),
                tasks=len(g),
                configs=int(g["n_configs"].sum()),
                busy_seconds=float(g["service"].sum()),
                compute_seconds=float(g["compute"].sum()),
                first_start=float(g["start"].min()),
                last_end=float(g["end"].max()),
            )
        )
    return tuple(out)


#: What the execution section's time measures mean.
DEFINITIONS = {
    "latency": "end - submit of a task",
    "service": "end - max(submit, previous end on the same worker): the worker's time "
    "on the task (dispatch, arguments, compute, result transport)",
    "overhead_share": "1 - sum(compute) / sum(service)",
    "overhead_share_latency": "1 - sum(compute) / sum(end - submit)",
    "warm": "every task but the first of each worker in each session (those are "
    "left out of the fits: process start, imports, JIT compilation)",
}


def _task_stats(
    tasks: pd.DataFrame, wall_total: float, workers_max: int
) -> tuple[TaskStats, dict[str, tuple[float, float]]]:
    """The telemetry's statistics, and ``(O, b)`` of each fit that succeeded."""
    cpu = float(tasks["compute"].sum())
    warm = tasks[tasks["warm"]]
    service_fit = _fit(warm["n_configs"].to_numpy(), warm["service"].to_numpy())
    compute_fit = _fit(warm["n_configs"].to_numpy(), warm["compute"].to_numpy())
    fits = {
        name: (f.overhead_seconds, f.per_config_seconds)
        for name, f in (("service", service_fit), ("compute", compute_fit))
        if isinstance(f, AmortizationFit)
    }
    share = tasks["compute"].clip(lower=0) / tasks["service"].where(tasks["service"] > 0)
    attempts = tasks["attempt"].to_numpy()
    any_share = bool(share.notna().any())
    stats = TaskStats(
        utilisation=cpu / (wall_total * workers_max) if wall_total and workers_max else None,
        tasks_by_session={
            str(k): int(v) for k, v in tasks.groupby("session").size().sort_index().items()
        },
        configs_in_tasks=int(tasks["n_configs"].sum()),
        batch_sizes=BatchSizes(
            min=int(tasks["n_configs"].min()),
            median=float(tasks["n_configs"].median()),
            max=int(tasks["n_configs"].max()),
            distinct=int(tasks["n_configs"].nunique()),
        ),
        workers_seen=int(tasks[["node", "worker"]].drop_duplicates().shape[0]),
        nodes_seen=int(tasks["node"].nunique()),
        overhead_share=1.0 - cpu / float(tasks["service"].sum())
        if tasks["service"].sum() > 0
        else None,
        overhead_share_latency=1.0 - cpu / float(tasks["latency"].sum())
        if tasks["latency"].sum() > 0
        else None,
        overhead_share_per_task=PerTaskShare(
            median=float(1.0 - share.median()) if any_share else None,
            p90=float(1.0 - share.quantile(0.1)) if any_share else None,
        ),
        service_seconds=ServiceSeconds(
            total=float(tasks["service"].sum()),
            median=float(tasks["service"].median()),
            max=float(tasks["service"].max()),
        ),
        fit_service=service_fit,
        fit_compute=compute_fit,
        retries=int((attempts >= 1).sum()),
        attempt_unknown=int((attempts < 0).sum()),
        workers=_lanes(tasks),
    )
    return stats, fits


def execution_section(run: RunData) -> tuple[ExecutionSection, ExecutionPlotData]:
    """Section 3 of the report.

    Parameters
    ----------
    run : RunData
        The run folder, read.

    Returns
    -------
    section : ExecutionSection
        Wall and CPU time, workers and nodes, the planner's choices per session, task
        counts, overhead shares, the fits of ``T = O + bB`` to service and compute times,
        per-worker summaries and retries.
    plot_data : ExecutionPlotData
        Arrays for the timeline and fit figures.
    """
    manifest = run.manifest
    tasks = task_frame(run.telemetry) if run.telemetry is not None else None
    tasks = tasks if tasks is not None and not tasks.empty else None
    walls = _wall_rows(manifest, tasks)
    wall_total = sum(float(w.wall_seconds) for w in walls if w.wall_seconds is not None)
    planner = _planner_rows(manifest)
    stats: TaskStats | None = None
    fits: dict[str, tuple[float, float]] = {}
    if tasks is not None:
        workers_max = max((p.workers or 0 for p in planner), default=0)
        stats, fits = _task_stats(tasks, wall_total, workers_max)
    section = ExecutionSection(
        wall_seconds=wall_total,
        wall_by_session=walls,
        planner=planner,
        definitions=DEFINITIONS,
        telemetry=tasks is not None,
        cpu_seconds=0.0 if tasks is None else float(tasks["compute"].sum()),
        tasks=0 if tasks is None else len(tasks),
        stats=stats,
    )
    return section, ExecutionPlotData(tasks, fits)
