"""``sweep bench scaling``: throughput at 1..P concurrent workers, and the USL fit.

The same fixed workload (``tasks`` batches of ``batch_size`` configs) runs with at most p
tasks in flight, for p = 1..P; throughput is configs per second of wall time. P may exceed
the machine's cores to show contention: ``sweep bench scaling`` starts a local cluster with
P logical CPUs. On a joined cluster with fewer CPUs than P, each task asks for
``CPUs / P`` of a CPU; Ray then keeps only about one worker process per CPU and starts a
fresh one for the others' tasks, and that start-up cost is part of what is measured
(``cpus_per_task`` in the result says when this applies). The Universal Scalability Law
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
from sweep.executors._ray import ray_identity
from sweep.executors._task import evaluate_on_worker
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
    task: Any, sweep_ref: Any, batches: list[NDArray[np.int64]], limit: int
) -> tuple[float, int]:
    """Run every batch with at most ``limit`` tasks in flight.

    Returns the wall seconds and the number of distinct worker processes used.
    """
    import ray

    pending: list[Any] = []
    workers: set[str] = set()
    source = iter(batches)
    start = time.perf_counter()
    while True:
        while len(pending) < limit:
            batch = next(source, None)
            if batch is None:
                break
            pending.append(task.remote(sweep_ref, batch, ray_identity))
        if not pending:
            break
        ready, pending = ray.wait(pending, num_returns=1)
        for _, timing in ray.get(ready):
            workers.add(f"{timing.node}/{timing.worker}")
    return time.perf_counter() - start, len(workers)


def measure_scaling(sweep: ResolvedSweep, settings: ScalingSettings) -> ScalingResult:
    """Measure throughput at p = 1..P workers on the connected Ray cluster and fit the USL.

    Parameters
    ----------
    sweep : ResolvedSweep
        The sweep whose configs are evaluated.
    settings : ScalingSettings
        Worker counts, workload, rounds.

    Returns
    -------
    ScalingResult
        ``points`` (per p: wall seconds of each round, median throughput in configs/s),
        ``fit`` (sigma, kappa, gamma, p*, peak throughput, R²) and the workload.
    """
    import ray

    cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
    top = settings.max_workers or max(3, 2 * cpus)
    share = min(1.0, cpus / top)
    n_tasks = settings.tasks or 4 * top
    pool = workload_indices(len(sweep.grid), n_tasks * settings.batch_size, settings.seed)
    batches = [
        pool[i * settings.batch_size : (i + 1) * settings.batch_size] for i in range(n_tasks)
    ]
    task = ray.remote(evaluate_on_worker).options(num_cpus=share, max_retries=0)
    warm = ray.remote(_warm_task).options(num_cpus=share, max_retries=0)
    sweep_ref = ray.put(sweep)
    pids = ray.get([warm.remote(sweep_ref, pool[:2], 0.5) for _ in range(top)])
    points = []
    for p in range(1, top + 1):
        runs = [_run_limited(task, sweep_ref, batches, p) for _ in range(settings.rounds)]
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
