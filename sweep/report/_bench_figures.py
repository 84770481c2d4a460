"""Figures of the benchmarks (matplotlib, Agg, no global state), as PNG bytes.

The same functions draw the PNGs ``sweep bench`` writes and the scaling section of
``sweep report``, from the saved results alone (:mod:`sweep.store._bench_results`).
"""

from __future__ import annotations

import math

import numpy as np

from stats import AmortizationLaw, usl_throughput
from sweep.common._figures import new_figure, png_bytes
from sweep.executors import recorded_kind, title_of
from sweep.store._bench_results import (
    AmortizationResult,
    BenchResult,
    FitFailed,
    LawFit,
    OverheadResult,
    ScalingResult,
    UslFit,
)
from sweep.store._record import Plan


def _size_label(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def plot_overhead(data: OverheadResult) -> bytes:
    """Per-task overhead O against the no-op's result size, with every round."""
    fig = new_figure(6.0, 3.6)
    ax = fig.add_subplot()
    points = data.points
    labels = [_size_label(int(p.payload_bytes)) for p in points]
    pos = np.arange(len(points))
    ax.bar(pos, [1e3 * p.overhead_seconds for p in points], color="#4c72b0", alpha=0.8)
    for i, p in enumerate(points):
        ax.plot([i] * len(p.rounds), [1e3 * r for r in p.rounds], "k.", ms=4)
    ax.set_xticks(pos, labels)
    ax.set_xlabel("result size of the no-op task")
    ax.set_ylabel("overhead O per task (ms)")
    ax.set_title(f"Per-task overhead on {data.workers} worker(s): median of rounds")
    return png_bytes(fig)


def amortization_law(fit: LawFit | FitFailed) -> AmortizationLaw | None:
    """The fitted law of an amortization result (None without a fit)."""
    if not isinstance(fit, LawFit) or fit.overhead_seconds is None:
        return None
    if fit.per_config_seconds is None:
        return None
    a = fit.per_call_config_seconds
    return AmortizationLaw(
        overhead=max(float(fit.overhead_seconds), 0.0),
        marginal=float(fit.per_config_seconds),
        per_call_marginal=None if a is None else max(float(a), 0.0),
    )


def _law_batch(planner: object) -> float:
    """The planner's B*(0.99), 0 where it has none (no plan, an error, or not finite)."""
    if isinstance(planner, Plan) and math.isfinite(planner.law_batch):
        return float(planner.law_batch)
    return 0.0


def plot_amortization(data: AmortizationResult) -> bytes:
    """Batched task time against B with ``O + bB``; measured ``S(B)`` against the law."""
    fig = new_figure(10.0, 4.0)
    left, right = fig.subplots(1, 2)
    sizes = np.array(data.batch_sizes, dtype=np.float64)
    batched = data.batched
    for row in batched:
        left.plot([row.batch] * len(row.seconds), row.seconds, "k.", ms=4, alpha=0.5)
    left.plot(sizes, [r.median for r in batched], "o", color="#4c72b0", label="batched (median)")
    left.plot(
        sizes,
        [p.seconds for p in data.per_call],
        "s",
        color="#dd8452",
        label="per call (sum)",
    )
    law = amortization_law(data.fit)
    law_batch = _law_batch(data.planner)
    top = max(2.0 * sizes.max(), 2.0, 1.2 * law_batch)
    grid = np.geomspace(1.0, min(top, 64.0 * sizes.max()), 200)
    if law is not None:
        left.plot(grid, law.batched_cost(grid), "-", color="#4c72b0", label="fit O + bB")
        left.plot(grid, law.per_call_cost(grid), "--", color="#dd8452", label="fit B(O + a)")
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xlabel("batch size B (configs per task)")
    left.set_ylabel("seconds")
    left.set_title("Task time")
    left.legend(fontsize=8)
    right.plot(
        sizes, [s.speedup for s in data.speedup], "o", color="#4c72b0", label="measured S(B)"
    )
    if law is not None:
        right.plot(grid, law.speedup(grid), "-", color="#4c72b0", label="law B(O+a)/(O+bB)")
        right.axhline(law.ceiling, color="grey", ls=":", label=f"ceiling {law.ceiling:.1f}")
        ridge, b90 = law.ridge, law.batch_for_fraction(0.9)
        if ridge > 0:
            right.axvline(ridge, color="#55a868", ls="--", label=f"ridge O/b = {ridge:.1f}")
        if b90 > 0:
            right.axvline(b90, color="#c44e52", ls="--", label=f"B*(0.9) = {b90:.0f}")
    if law_batch:
        right.axvline(law_batch, color="#8172b2", ls=":", label="planner B*(0.99)")
    right.set_xscale("log", base=2)
    right.set_xlabel("batch size B")
    right.set_ylabel("speedup over one config per task")
    right.set_title("Amortization: S(B)")
    right.legend(fontsize=8)
    return png_bytes(fig)


def plot_scaling(data: ScalingResult) -> bytes:
    """Measured throughput against workers, the fitted USL, and its peak p*."""
    fig = new_figure(6.5, 4.0)
    ax = fig.add_subplot()
    p = np.array([pt.workers for pt in data.points], dtype=np.float64)
    x = np.array([pt.throughput for pt in data.points])
    ax.plot(p, x, "o", color="#4c72b0", label="measured")
    fit = data.fit
    if isinstance(fit, UslFit):
        peak = fit.peak_workers
        sigma, kappa, gamma = fit.sigma, fit.kappa, fit.gamma
        top = p.max()
        if peak is not None and math.isfinite(peak):
            top = max(top, min(1.5 * peak, 4.0 * p.max()))
        grid = np.linspace(1.0, top, 200)
        ax.plot(
            grid,
            usl_throughput(grid, sigma, kappa, gamma),
            "-",
            color="#4c72b0",
            label=f"USL σ={sigma:.3f} κ={kappa:.4f}",
        )
        ax.plot(grid, gamma * grid, ":", color="grey", label="linear")
        if peak is not None and math.isfinite(peak) and peak <= top:
            ax.axvline(peak, color="#c44e52", ls="--", label=f"p* = {peak:.1f}")
    ax.set_ylim(0, 1.25 * float(x.max()))
    ax.set_xlabel("workers p (tasks in flight)")
    ax.set_ylabel("throughput (configs/s)")
    cores = data.cluster.driver_host_cpus if data.cluster is not None else None
    engine = title_of(recorded_kind(data.cluster.backend if data.cluster is not None else None))
    ax.set_title(
        f"Scaling on {data.cluster_cpus} {engine} CPU(s)"
        + (f" (driver host: {cores} cores)" if cores else "")
    )
    ax.legend(fontsize=8)
    return png_bytes(fig)


def plot_bench(result: BenchResult) -> bytes:
    """The figure of one benchmark result, whichever its kind."""
    if isinstance(result, OverheadResult):
        return plot_overhead(result)
    if isinstance(result, AmortizationResult):
        return plot_amortization(result)
    return plot_scaling(result)
