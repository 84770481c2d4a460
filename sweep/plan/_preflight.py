"""``sweep plan``: know before you launch (grid, measured costs, predicted wall times).

A short pilot on this machine (in-process) and on a cluster (a local one started for it, or
the one at ``--address``; Ray or Dask, ``--executor``) measures what the driver's planner
measures before a run: ``b`` (seconds per config on a worker), ``O`` (seconds per task:
transport, fixed in-task cost, the driver's part write) and the batch size it would choose;
on the cluster also the start-up (starting or joining it, the sweep shipped to it, the
warm-up of every worker and the overhead probes). Pilot results are written to a
temporary folder (the part write is part of ``O``) and thrown away: ``sweep plan`` leaves
nothing behind.

:func:`sweep.plan._forecast.predict_wall` then predicts the wall time of the whole grid
in-process and on 1..N cluster workers, with the cluster's USL when a ``sweep bench
scaling`` result is found (``--bench DIR``, else ``runs/bench``), else linear scaling (said
so), and :func:`sweep.plan._forecast.crossover` names the grid size above which the cluster
beats in-process.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from sweep.common._range_set import RangeSet
from sweep.common._serial import FLATTENED, JSONRecord
from sweep.engine._evaluate import evaluate_batch
from sweep.executors import (
    LOCAL,
    BatchOutcome,
    Executor,
    cluster_named,
    local_cluster_kind,
    make_executor,
)
from sweep.plan._auto import decide
from sweep.plan._forecast import CostModel, Scaling, WallPrediction, crossover, predict_wall
from sweep.plan._planner import PlannerSettings, plan_batches
from sweep.plan._planning_stream import plan_while_running
from sweep.spec._resolve import ResolvedSweep
from sweep.store._record import ExecutorChoice, ExecutorInfo, Plan

#: ``sweep plan --json``'s format.
PLAN_FORMAT = "raysweep-plan-v2"
#: A grid too small for the planner's pilots is timed whole, up to this many configs.
SMALL_PILOT = 256


@dataclass(frozen=True)
class Measured(JSONRecord):
    """What the pilot measured on one executor (its JSON: non-finite floats as null).

    Attributes
    ----------
    executor : str
        The backend's name (``local``, ``ray``, ``dask``).
    workers : int
        Batches that run at once.
    startup_seconds : float
        Paid once before the first batch (a cluster: start or join, ship the sweep, warm-up,
        probes beyond the pilots' own work; in-process: the planning beyond the pilots' work).
    per_config_seconds, overhead_seconds : float
        ``b`` and ``O``.
    batch_size : int
        The planner's batch for this grid.
    pilot_configs : int
        Configs the pilot evaluated (warm-up included).
    plan : Plan
        The planner's full record.
    describe : ExecutorInfo
        :meth:`sweep.executors.Executor.describe`.
    """

    executor: str
    workers: int
    startup_seconds: float
    per_config_seconds: float
    overhead_seconds: float
    batch_size: int
    pilot_configs: int
    plan: Plan
    describe: ExecutorInfo

    def model(self, scaling: Scaling) -> CostModel:
        """The cost model of this executor."""
        return CostModel(
            self.per_config_seconds,
            self.overhead_seconds,
            self.startup_seconds,
            self.workers,
            scaling if self.executor != LOCAL else Scaling(),
        )


@dataclass(frozen=True)
class Prediction:
    """One row of the predicted wall times (its JSON: ``{"executor", **wall}``)."""

    executor: str
    wall: WallPrediction = field(metadata=FLATTENED)


@dataclass(frozen=True)
class AxisSize:
    """One grid axis and its number of values (``{"name", "size"}``)."""

    name: str
    size: int


@dataclass(frozen=True)
class SweepPlan(JSONRecord):
    """What ``sweep plan`` found; ``to_json()`` is ``sweep plan --json``.

    Attributes
    ----------
    format : str
        :data:`PLAN_FORMAT` (the first key of the JSON).
    name : str
        The spec's name.
    configs : int
        Configs in the grid.
    axes : tuple of AxisSize
        Each axis and its number of values, in grid order.
    local, cluster : Measured or None
        The pilot in-process and on the cluster (``cluster`` None when not measured: see
        ``cluster_note``; its ``executor`` names the backend).
    cluster_note : str
        Why the cluster was not measured ("" when it was).
    scaling : Scaling
        ``C(p)`` used for the cluster.
    predictions : tuple of Prediction
        In-process, then the cluster with 1..N workers.
    crossover_configs : int or None
        The grid size above which the cluster with all its workers beats in-process.
    choice : ExecutorChoice
        What ``--executor auto`` would choose from these measurements.
    assumptions : tuple of str
        What the predictions assume.
    """

    format: str = field(default=PLAN_FORMAT, init=False)
    name: str
    configs: int
    axes: tuple[AxisSize, ...]
    local: Measured
    cluster: Measured | None
    cluster_note: str
    scaling: Scaling
    predictions: tuple[Prediction, ...]
    crossover_configs: int | None
    choice: ExecutorChoice
    assumptions: tuple[str, ...]


class _PilotWriter:
    """Writes each pilot result as the driver would (parquet, fsync) into a temp folder."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.count = 0
        self.configs = 0

    def __call__(self, outcome: BatchOutcome) -> float:
        t0 = time.perf_counter()
        path = os.path.join(self.folder, f"pilot-{self.count}.parquet")
        pq.write_table(outcome.result.table, path)
        with open(path, "rb+") as fh:
            os.fsync(fh.fileno())
        os.remove(path)
        self.count += 1
        self.configs += int(outcome.indices.shape[0])
        return time.perf_counter() - t0


def _small_grid_costs(
    exe: Executor, sweep: ResolvedSweep, writer: _PilotWriter
) -> tuple[float, float]:
    """``b`` and ``O`` of a grid too small for the planner's pilots: one timed batch."""
    n = min(len(sweep.grid), SMALL_PILOT)
    evaluate_batch(sweep, np.arange(1, dtype=np.int64))  # imports, compiled kernels
    outcomes = list(exe.run([np.arange(n, dtype=np.int64)]))
    write = writer(outcomes[0])
    tel = outcomes[0].telemetry
    b = max(float(tel.compute_seconds) / n, 1e-9)
    return b, max(0.0, float(tel.round_trip_overhead)) + write


def measure(
    sweep: ResolvedSweep,
    kind: str,
    *,
    address: str | None = None,
    workers: int | None = None,
    settings: PlannerSettings | None = None,
) -> Measured:
    """Run the planner's pilot of ``sweep`` on one executor and return what it measured.

    Parameters
    ----------
    sweep : ResolvedSweep
        The sweep.
    kind : str
        The backend (:data:`sweep.executors.KINDS`).
    address, workers : optional
        Cluster address and CPU cap.
    settings : PlannerSettings, optional
        The planner's targets.

    Returns
    -------
    Measured
        ``b``, ``O``, start-up, the batch size and the planner's record.
    """
    settings = settings or PlannerSettings()
    exe = make_executor(kind, address=address, workers=workers)
    todo = RangeSet.full(len(sweep.grid))
    with tempfile.TemporaryDirectory(prefix="sweep-plan-") as folder:
        writer = _PilotWriter(folder)
        t0 = time.perf_counter()
        exe.start(sweep)
        try:
            started = time.perf_counter() - t0
            t1 = time.perf_counter()
            if exe.workers > 1:  # as a run plans on several workers: while they work
                plan = plan_while_running(exe, todo, writer, settings)
            else:
                plan, _ = plan_batches(exe, todo, None, writer, settings)
            planning = time.perf_counter() - t1
            b, o = plan.per_config_seconds, plan.overhead_seconds
            if not math.isfinite(b):  # too small for pilots: time it whole
                b, o = _small_grid_costs(exe, sweep, writer)
                planning = time.perf_counter() - t1
            describe = exe.describe()
            n_workers = exe.workers
        finally:
            exe.close()
    useful = writer.configs * b / n_workers
    return Measured(
        executor=kind,
        workers=n_workers,
        startup_seconds=(started if kind != LOCAL else 0.0) + max(0.0, planning - useful),
        per_config_seconds=b,
        overhead_seconds=o,
        batch_size=plan.batch_size,
        pilot_configs=writer.configs,
        plan=plan,
        describe=describe,
    )


def bench_scaling(bench_dir: str | None) -> Scaling:
    """The USL of the last ``sweep bench scaling`` (``--bench DIR`` or ``runs/bench``).

    Linear scaling (:class:`Scaling()`, which says so) when there is none or its fit failed.
    """
    from sweep.store._bench_results import DEFAULT_BENCH_DIR, UslFit, load_bench, local_reader

    folder = Path(bench_dir) if bench_dir is not None else Path(DEFAULT_BENCH_DIR)
    found = load_bench(local_reader(folder)).scaling
    if found is None:
        return Scaling(source=f"assumed: linear scaling (no sweep bench scaling in {folder})")
    fit = found.fit
    if not isinstance(fit, UslFit):
        return Scaling(
            source=f"assumed: linear scaling (the USL fit in {folder / 'scaling.json'} failed: "
            f"{fit.reason})"
        )
    return Scaling(
        float(fit.sigma),
        float(fit.kappa),
        f"USL of sweep bench scaling ({folder / 'scaling.json'}, {found.generated}, "
        f"{found.cluster_cpus} CPUs)",
    )


def plan_sweep(
    sweep: ResolvedSweep,
    *,
    address: str | None = None,
    workers: int | None = None,
    kind: str | None = None,
    bench_dir: str | None = None,
    settings: PlannerSettings | None = None,
) -> SweepPlan:
    """Measure ``sweep`` in-process and on a cluster, and predict its wall time.

    Parameters
    ----------
    sweep : ResolvedSweep
        The sweep.
    address : str, optional
        Cluster to join (default: a local cluster is started for the pilot and stopped).
    workers : int, optional
        CPUs of the local cluster (a cap on a joined one): N of the predictions.
    kind : str, optional
        The cluster's backend: ``local`` measures in-process only (no crossover); default
        the one the address names (:func:`sweep.executors.cluster_named`), else the one
        ``auto`` starts locally.
    bench_dir : str, optional
        Where to find ``sweep bench scaling`` results.
    settings : PlannerSettings, optional
        The planner's targets.

    Returns
    -------
    SweepPlan
        Grid, measurements, predictions, crossover and the auto choice.
    """
    settings = settings or PlannerSettings()
    n = len(sweep.grid)
    local = measure(sweep, LOCAL, settings=settings)
    kind = kind or cluster_named("auto", address) or local_cluster_kind()
    cluster = measure(sweep, kind, address=address, workers=workers) if kind != LOCAL else None
    scaling = bench_scaling(bench_dir)
    local_model = local.model(scaling)
    predictions = [Prediction(LOCAL, predict_wall(n, local_model, settings=settings))]
    assumptions = [
        "wall = start-up + (tasks x O + configs x b) / C(p); batches as the planner chooses",
        scaling.source,
    ]
    cross = None
    note = "" if cluster is not None else "not measured (--executor local)"
    if cluster is not None:
        cluster_model = cluster.model(scaling)
        for p in range(1, cluster.workers + 1):
            predictions.append(Prediction(kind, predict_wall(n, cluster_model, p, settings)))
        cross = crossover(local_model, cluster_model, settings)
    choice = decide(
        n,
        local_model,
        None if cluster is None else cluster.model(scaling),
        address=address,
        assumptions=tuple(assumptions),
        settings=settings,
        kind=kind if kind != LOCAL else None,
    )
    return SweepPlan(
        name=sweep.spec.name,
        configs=n,
        axes=tuple(AxisSize(a.name, len(a.values)) for a in sweep.grid.axes),
        local=local,
        cluster=cluster,
        cluster_note=note,
        scaling=scaling,
        predictions=tuple(predictions),
        crossover_configs=cross,
        choice=choice,
        assumptions=tuple(assumptions),
    )
