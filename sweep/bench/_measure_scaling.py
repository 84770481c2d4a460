"""``sweep bench scaling``: throughput at 1..P concurrent workers, and the USL fit.

The same fixed workload (``tasks`` batches of ``batch_size`` configs) runs with at most p
tasks in flight, for p = 1..P; throughput is configs per second of wall time. P may exceed
the machine's cores to show contention: ``sweep bench scaling`` starts a local cluster of P
workers (Ray: P logical CPUs; Dask: P single-thread worker processes). On a joined cluster
with fewer CPUs than P, the backend's
:meth:`sweep.executors.ClusterExecutor.spread_pool` decides: on Ray each task asks for
``CPUs / P`` of a CPU; Ray then keeps only about one worker process per CPU and starts a
fresh one for the others' tasks, and that start-up cost is part of what is measured
(``cpus_per_task`` in the result says when this applies); on Dask the tasks beyond the
worker threads queue. The Universal Scalability Law
is fitted to the relative capacity with gamma fixed at X(1) (:func:`stats.fit_usl`).
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from stats import fit_usl
from sweep.bench._workload import workload_indices
from sweep.engine._evaluate import evaluate_batch
from sweep.errors import USER_ERRORS
from sweep.executors import ClusterExecutor
from sweep.executors._pool import TaskPool, stream_tasks
from sweep.executors._task import Identify, evaluate_on_worker
from sweep.spec._resolve import ResolvedSweep
from sweep.store._bench_results import FitFailed, ScalingPoint, ScalingResult, UslFit


@dataclass(frozen=True)
class ScalingSettings:
    """What ``sweep bench scaling`` measures.

    Attributes
    ----------
    max_workers : int or None
        Largest worker count P (default: twice the cluster's CPUs, at least 3).
    batch_size : int
        Configs per task.
    tasks : int or None
        Tasks in the fixed workload (default ``4 * P``).
    rounds : int
        Repetitions per worker count (the median throughput is used).
    seed : int
        Seed of the sample of grid positions evaluated.
    """

    max_workers: int | None = None
    batch_size: int = 256
    tasks: int | None = None
    rounds: int = 3
    seed: int = 0


def _warm_task(sweep: ResolvedSweep, indices: NDArray[np.int64], delay: float) -> int:
    """Hold a worker for ``delay`` seconds, then load the strategy's kernels in it."""
    time.sleep(delay)
    evaluate_batch(sweep, indices)
    return os.getpid()


def _run_limited(
    pool: TaskPool,
    sweep_ref: Any,
    identify: Identify,
    batches: list[NDArray[np.int64]],
    limit: int,
) -> tuple[float, int]:
    """Run every batch with at most ``limit`` tasks in flight.

    Returns the wall seconds and the number of distinct worker processes used.
    """
    start = time.perf_counter()
    workers = {
        f"{timing.node}/{timing.worker}"
        for _, (_, timing), _ in stream_tasks(
            pool, evaluate_on_worker, batches, lambda b: (sweep_ref, b, identify), limit
        )
    }
    return time.perf_counter() - start, len(workers)


def measure_scaling(
    sweep: ResolvedSweep, settings: ScalingSettings, executor: ClusterExecutor
) -> ScalingResult:
    """Measure throughput at p = 1..P workers on a cluster and fit the USL.

    Parameters
    ----------
    sweep : ResolvedSweep
        The sweep whose configs are evaluated.
    settings : ScalingSettings
        Worker counts, workload, rounds.
    executor : ClusterExecutor
        The backend measured (connected here if it is not yet; the caller closes it).

    Returns
    -------
    ScalingResult
        ``points`` (per p: wall seconds of each round, median throughput in configs/s),
        ``fit`` (sigma, kappa, gamma, p*, peak throughput, R²) and the workload.
    """
    executor.connect()
    cpus = executor.cluster_cpus
    top = settings.max_workers or max(3, 2 * cpus)
    tasks, share = executor.spread_pool(top)
    identify = executor.identify
    n_tasks = settings.tasks or 4 * top
    pool = workload_indices(len(sweep.grid), n_tasks * settings.batch_size, settings.seed)
    batches = [
        pool[i * settings.batch_size : (i + 1) * settings.batch_size] for i in range(n_tasks)
    ]
    sweep_ref = tasks.share(sweep)
    # Warm every worker: ``top`` tasks at once, each holding its worker a moment.
    warming = [tasks.submit(_warm_task, sweep_ref, pool[:2], 0.5) for _ in range(top)]
    pids = [tasks.result(handle) for handle in warming]
    points = []
    for p in range(1, top + 1):
        runs = [
            _run_limited(tasks, sweep_ref, identify, batches, p) for _ in range(settings.rounds)
        ]
        walls = [w for w, _ in runs]
        points.append(
            ScalingPoint(
                workers=p,
                processes=max(n for _, n in runs),
                seconds=tuple(walls),
                throughput=len(pool) / float(statistics.median(walls)),
            )
        )
    fit: UslFit | FitFailed
    try:
        f = fit_usl(
            np.array([pt.workers for pt in points], dtype=np.float64),
            np.array([pt.throughput for pt in points]),
            gamma="fixed",
        )
        fit = UslFit(
            sigma=f.sigma,
            kappa=f.kappa,
            gamma=f.gamma,
            peak_workers=f.peak_workers,
            peak_throughput=f.peak_throughput,
            r_squared=f.r_squared,
        )
    except USER_ERRORS as exc:
        fit = FitFailed(reason=str(exc))
    return ScalingResult(
        cluster_cpus=cpus,
        max_workers=top,
        cpus_per_task=share,
        batch_size=settings.batch_size,
        tasks=n_tasks,
        configs=len(pool),
        rounds=settings.rounds,
        warm_workers=len(set(pids)),
        method="fixed workload; at most p tasks in flight; throughput = configs / median "
        "wall seconds over rounds",
        points=tuple(points),
        fit=fit,
    )
