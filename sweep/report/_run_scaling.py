"""Report section 7, the part that is never empty: scaling from the run's own telemetry.

Whatever ``sweep bench`` results exist, every run that computed something has task
telemetry, and from it:

* ``O`` and ``b``: the fit of ``T = O + b B`` to the warm tasks' service times (the
  execution section's fit, :func:`sweep.report._execution.execution_section`); where that fit
  is not available, the planner's pilot measurement of the latest session that has one;
  else ``b`` = compute seconds per config and ``O`` = the median of (service - compute)
  per task. The source is named.
* the achieved ``S(B)`` at the run's main batch size ``B`` (the most common task size):
  ``B (O + b) / T(B)`` with ``T(B)`` the median service time of the warm tasks of that size,
  against the law's ``S(B) = B (O + b) / (O + b B)`` and its ceiling ``1 + O / b``;
* the crossover between in-process and a local Ray cluster
  (:func:`sweep.plan._forecast.crossover`): from this run's ``O`` and ``b`` for the executor it
  ran on, and for the other one the assumptions ``--executor auto`` makes
  (:mod:`sweep.plan._auto`), listed;
* the USL of ``sweep bench scaling`` when such results were found (then the crossover uses
  it for Ray's capacity).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sweep.executors import LOCAL, assumed_costs, local_cluster_kind, title_of
from sweep.plan._auto import local_workers
from sweep.plan._forecast import CostModel, Scaling, crossover
from sweep.store._bench_results import ScalingResult, UslFit
from sweep.store._record import Session

if TYPE_CHECKING:
    from sweep.report._sections import AmortizationFit, Unavailable


@dataclass(frozen=True)
class UslSummary:
    """The USL of ``sweep bench scaling`` as the run's scaling quotes it."""

    sigma: float
    kappa: float
    peak_workers: float | None
    r_squared: float


@dataclass(frozen=True, kw_only=True)
class RunScaling:
    """Scaling as this run measured it (always present; ``tasks == 0`` when none ran).

    Attributes
    ----------
    tasks : int
        Tasks in the telemetry.
    executor : str
        The backend of the latest session with tasks (``local``, ``ray``, ``dask``).
    workers : int
        Its workers.
    source : str
        Where ``O`` and ``b`` come from, in words.
    overhead_seconds, per_config_seconds : float
        ``O`` and ``b``.
    batch_size : int
        The run's main batch size (the most common task size among warm tasks).
    law_speedup, achieved_speedup, ceiling : float
        ``S(B)`` of the law, achieved (NaN when no warm task has that size), ``1 + O/b``.
    crossover_configs : int or None
        The grid size above which Ray is predicted to beat in-process.
    crossover_basis : tuple of str
        What the crossover assumes.
    usl : UslSummary or None
        ``sigma``, ``kappa``, ``peak_workers``, ``r_squared`` of ``sweep bench scaling``
        when found.
    """

    tasks: int
    executor: str
    workers: int
    source: str
    overhead_seconds: float
    per_config_seconds: float
    batch_size: int
    law_speedup: float
    achieved_speedup: float
    ceiling: float
    crossover_configs: int | None
    crossover_basis: tuple[str, ...]
    usl: UslSummary | None


def _latest_session(sessions: Sequence[Session], tasks: pd.DataFrame) -> Session | None:
    with_tasks = set(tasks["session"].astype(int).tolist())
    chosen = [s for s in sessions if s.id in with_tasks] or sessions
    return chosen[-1] if chosen else None


def _costs(
    fit: AmortizationFit | Unavailable | None, sessions: Sequence[Session], tasks: pd.DataFrame
) -> tuple[float, float, str]:
    if fit is not None and fit.available and fit.per_config_seconds > 0:
        return (
            max(float(fit.overhead_seconds), 0.0),
            float(fit.per_config_seconds),
            f"fit of T = O + bB to {fit.n_tasks} warm tasks' service times "
            f"(R² {fit.r_squared:.3f})",
        )
    for s in reversed(sessions):
        plan = s.plan
        if plan is None:
            continue
        b, o = plan.per_config_seconds, plan.overhead_seconds
        if math.isfinite(b) and math.isfinite(o) and b > 0:
            return float(o), float(b), f"the planner's pilot of session {s.id} (no fit)"
    configs = float(tasks["n_configs"].sum())
    b = float(tasks["compute"].clip(lower=0).sum()) / configs if configs else math.nan
    o = float((tasks["service"] - tasks["compute"]).clip(lower=0).median())
    return o, b, "compute seconds per config and the median per-task overhead (no fit, no pilot)"


def _scaling(bench: ScalingResult | None) -> tuple[Scaling, UslSummary | None]:
    fit = bench.fit if bench is not None else None
    if not isinstance(fit, UslFit):
        return Scaling(), None
    usl = UslSummary(fit.sigma, fit.kappa, fit.peak_workers, fit.r_squared)
    return (
        Scaling(float(fit.sigma), float(fit.kappa), "USL of sweep bench scaling"),
        usl,
    )


def run_scaling(
    sessions: Sequence[Session],
    tasks: pd.DataFrame | None,
    fit_service: AmortizationFit | Unavailable | None,
    bench_scaling: ScalingResult | None,
) -> RunScaling:
    """Scaling from the run's telemetry (see the module docstring).

    Parameters
    ----------
    sessions : sequence of Session
        The run's driver sessions, in order.
    tasks : pandas.DataFrame or None
        :func:`sweep.report._execution.task_frame` of its telemetry.
    fit_service : AmortizationFit, Unavailable or None
        The execution section's fit of ``T = O + bB`` to the service times.
    bench_scaling : ScalingResult or None
        The ``sweep bench scaling`` result, when found.

    Returns
    -------
    RunScaling
        ``O``, ``b``, achieved and law ``S(B)``, the crossover and the USL.
    """
    scaling, usl = _scaling(bench_scaling)
    if tasks is None or tasks.empty:
        return RunScaling(
            tasks=0,
            executor="",
            workers=0,
            source="no task ran",
            overhead_seconds=math.nan,
            per_config_seconds=math.nan,
            batch_size=0,
            law_speedup=math.nan,
            achieved_speedup=math.nan,
            ceiling=math.nan,
            crossover_configs=None,
            crossover_basis=(),
            usl=usl,
        )
    session = _latest_session(sessions, tasks)
    info = session.executor_info if session is not None else None
    executor = str(
        (info.kind if info else None) or (session.executor if session else None) or "local"
    )
    workers = int((info.workers if info else None) or 1)
    o, b, source = _costs(fit_service, sessions, tasks)
    warm = tasks[tasks["warm"]] if tasks["warm"].any() else tasks
    sizes = warm["n_configs"].to_numpy()
    values, counts = np.unique(sizes, return_counts=True)
    batch = int(values[np.argmax(counts)])
    at_b = warm.loc[warm["n_configs"] == batch, "service"]
    law = batch * (o + b) / (o + b * batch) if b > 0 else math.nan
    achieved = batch * (o + b) / float(at_b.median()) if len(at_b) and b > 0 else math.nan
    cross, basis = _crossover(executor, workers, o, b, scaling, session)
    return RunScaling(
        tasks=len(tasks),
        executor=executor,
        workers=workers,
        source=source,
        overhead_seconds=o,
        per_config_seconds=b,
        batch_size=batch,
        law_speedup=law,
        achieved_speedup=achieved,
        ceiling=1.0 + o / b if b > 0 else math.nan,
        crossover_configs=cross,
        crossover_basis=basis,
        usl=usl,
    )


def _crossover(
    executor: str, workers: int, o: float, b: float, scaling: Scaling, session: Session | None
) -> tuple[int | None, tuple[str, ...]]:
    if not (b > 0 and math.isfinite(b)):
        return None, ("no per-config cost measured",)
    if executor != LOCAL:  # the run's own cluster, its telemetry fitted
        plan = session.plan if session is not None else None
        write = plan.driver_write_seconds if plan is not None else math.nan
        local = CostModel(b, write if math.isfinite(write) else 0.0)
        planned = plan.planning_seconds if plan is not None else math.nan
        startup = planned if math.isfinite(planned) else assumed_costs(executor)[0]
        cluster = CostModel(b, o, float(startup), workers, scaling)
        basis = (
            f"{title_of(executor)}: this run's O and b on {workers} workers, start-up "
            f"{float(startup):.3g} s (its planning; the cluster's own start is not in it)",
            "in-process: the same b, O = the driver's part write",
        )
    else:
        n = local_workers(None)
        kind = local_cluster_kind()
        startup, overhead = assumed_costs(kind)
        local = CostModel(b, o)
        cluster = CostModel(b, max(o, overhead), startup, n, scaling)
        basis = (
            "in-process: this run's O and b",
            f"{title_of(kind)} (assumed, as --executor auto does): {n} workers of this "
            f"machine, start-up {startup:g} s, {overhead * 1e3:g} ms per task, the same b",
        )
    return crossover(local, cluster), (*basis, scaling.source)
