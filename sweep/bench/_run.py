"""Run one benchmark end to end: cluster, workload, measurement, files, summary table."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from sweep.bench._backend import bench_cluster, bench_executor
from sweep.bench._io import write_bench
from sweep.bench._measure_amortization import AmortizationSettings, measure_amortization
from sweep.bench._measure_overhead import OverheadSettings, measure_overhead
from sweep.bench._measure_scaling import ScalingSettings, measure_scaling
from sweep.bench._workload import bench_sweep
from sweep.errors import SweepError, close_matches
from sweep.executors import cluster_named, local_cluster_kind
from sweep.store._bench_results import (
    BENCH_KINDS,
    DEFAULT_BENCH_DIR,
    AmortizationResult,
    BenchResult,
    LawFit,
    OverheadResult,
    PlannerFailed,
    UslFit,
)
from sweep.store._record import Plan


@dataclass(frozen=True)
class BenchOutcome:
    """A finished benchmark: its result and the files written."""

    result: BenchResult
    files: dict[str, Path]


def run_bench(
    kind: str,
    *,
    executor: str | None = None,
    address: str | None = None,
    workers: int | None = None,
    spec: str | Path | dict[str, Any] | None = None,
    out: str | Path = DEFAULT_BENCH_DIR,
    settings: OverheadSettings | AmortizationSettings | ScalingSettings | None = None,
) -> BenchOutcome:
    """Measure one benchmark on a live cluster of a distributed backend and save it.

    Parameters
    ----------
    kind : {"overhead", "amortization", "scaling"}
        What to measure.
    executor : str, optional
        The backend measured (``ray``, ``dask``); default: the engine ``address`` names
        (:func:`sweep.executors.cluster_named`), else
        :func:`sweep.executors.local_cluster_kind`.
    address : str, optional
        Cluster to join; default: the one this process has joined (Ray), or the scheduler
        in ``DASK_SCHEDULER_ADDRESS`` (Dask), else a new local cluster.
    workers : int, optional
        Overhead: workers of the no-op rounds (and CPUs of a new local cluster); scaling:
        the largest worker count P (default twice the CPUs, at least 3; a new local cluster
        gets P workers, so P may exceed the machine's cores).
    spec : str, Path, dict or None
        Sweep spec whose configs are evaluated (default ``examples/momentum.toml``).
    out : str or Path
        Folder for ``<kind>.json`` and ``<kind>.png``.
    settings : optional
        The kind's settings (defaults sized to about a minute on two cores).

    Returns
    -------
    BenchOutcome
        The result (with ``cluster`` and ``spec``) and the files written.
    """
    if kind not in BENCH_KINDS:
        raise SweepError(
            f"bench: expected one of {list(BENCH_KINDS)}, got {kind!r}."
            + close_matches(kind, BENCH_KINDS)
        )
    engine = executor or cluster_named("auto", address) or local_cluster_kind()
    sweep, source = bench_sweep(spec)
    backend = bench_executor(engine, address)
    top = workers
    if kind == "overhead":
        given = settings.workers if isinstance(settings, OverheadSettings) else None
        backend = bench_executor(engine, address, workers if workers is not None else given)
    elif kind == "scaling" and not backend.joins_existing():
        # A local cluster gets one worker per worker count measured: Ray keeps about one
        # worker process per CPU and restarts the rest after each task, which would be
        # measured; Dask runs one task per worker thread.
        top = workers or max(3, 2 * (os.cpu_count() or 1))
        backend = bench_executor(engine, address, top, oversubscribe=True)
    with bench_cluster(backend) as cluster:
        result: BenchResult
        if kind == "overhead":
            s = settings if isinstance(settings, OverheadSettings) else OverheadSettings()
            if workers is not None:
                s = OverheadSettings(s.payload_bytes, s.rounds, workers)
            result = measure_overhead(sweep, s, backend)
        elif kind == "amortization":
            a = settings if isinstance(settings, AmortizationSettings) else AmortizationSettings()
            result = measure_amortization(sweep, a, backend)
        else:
            c = settings if isinstance(settings, ScalingSettings) else ScalingSettings()
            if top is not None:
                c = ScalingSettings(top, c.batch_size, c.tasks, c.rounds, c.seed)
            result = measure_scaling(sweep, c, backend)
    result = replace(result, cluster=cluster, spec=source)
    return BenchOutcome(result, write_bench(result, out))


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{1e3 * seconds:.3g} ms"


def bench_table(result: BenchResult) -> Table:
    """A rich table summarising a benchmark result (its caption is plain text, not markup)."""
    table = _bench_table(result)
    if isinstance(table.caption, str):  # may quote an error message
        table.caption = Text(table.caption, style="table.caption")
    return table


def _f(value: float | None, spec: str) -> str:
    """``value`` formatted as ``spec`` (None, a null in the file, as Python prints it)."""
    return format(value, spec) if value is not None else format(None)


def _bench_table(result: BenchResult) -> Table:
    if isinstance(result, OverheadResult):
        table = Table("payload (bytes)", "O per task (median)", "rounds", title="per-task overhead")
        for p in result.points:
            table.add_row(f"{p.payload_bytes:,}", _ms(p.overhead_seconds), str(len(p.rounds)))
        return table
    if isinstance(result, AmortizationResult):
        table = Table("B", "batched (median)", "per call (sum)", "S(B)", title="amortization")
        for row, pc, sp in zip(result.batched, result.per_call, result.speedup, strict=True):
            table.add_row(str(row.batch), _ms(row.median), _ms(pc.seconds), f"{sp.speedup:.2f}")
        fit = result.fit
        if isinstance(fit, LawFit):
            table.caption = (
                f"fit: O = {_ms(fit.overhead_seconds)}, b = {_ms(fit.per_config_seconds)}, "
                f"R² = {_f(fit.r_squared, '.3f')}, ridge O/b = {_f(fit.ridge_batch, '.1f')}, "
                f"B*(0.9) = {_f(fit.batch_for_90pct, '.0f')}, "
                f"B*(0.99) = {_f(fit.batch_for_99pct, '.0f')}"
            )
            planner = result.planner
            if isinstance(planner, PlannerFailed) and planner.error:
                table.caption += f"; {planner.error}"
            elif isinstance(planner, Plan) and math.isfinite(planner.overhead_seconds):
                table.caption += (
                    f"; planner: O = {_ms(planner.overhead_seconds)}, "
                    f"b = {_ms(_finite(planner.per_config_seconds))}, B*(0.99) = "
                    f"{_f(_finite(planner.law_batch), '.0f')}"
                )
        else:
            table.caption = f"no fit: {fit.reason}"
        return table
    table = Table("workers p", "throughput (configs/s)", "wall (median)", title="scaling")
    for pt in result.points:
        walls = sorted(pt.seconds)
        table.add_row(str(pt.workers), f"{pt.throughput:,.0f}", f"{walls[len(walls) // 2]:.3f} s")
    usl = result.fit
    table.caption = (
        f"USL: σ = {_f(usl.sigma, '.4f')}, κ = {_f(usl.kappa, '.5f')}, "
        f"p* = {_f(usl.peak_workers, '.1f')}, R² = {_f(usl.r_squared, '.3f')}"
        if isinstance(usl, UslFit)
        else f"no USL fit: {usl.reason}"
    )
    return table


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
