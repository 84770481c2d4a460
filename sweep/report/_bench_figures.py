"""Figures of the benchmarks (matplotlib, Agg, no global state), as PNG bytes.

The same functions draw the PNGs ``sweep bench`` writes and the scaling section of
``sweep report``, from the saved JSON alone.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from stats import AmortizationLaw, usl_throughput
from sweep.common._figures import new_figure, png_bytes


def _size_label(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def plot_overhead(data: dict[str, Any]) -> bytes:
    """Per-task overhead O against the no-op's result size, with every round."""
    fig = new_figure(6.0, 3.6)
    ax = fig.add_subplot()
    points = data["points"]
    labels = [_size_label(int(p["payload_bytes"])) for p in points]
    pos = np.arange(len(points))
    ax.bar(pos, [1e3 * p["overhead_seconds"] for p in points], color="#4c72b0", alpha=0.8)
    for i, p in enumerate(points):
        ax.plot([i] * len(p["rounds"]), [1e3 * r for r in p["rounds"]], "k.", ms=4)
    ax.set_xticks(pos, labels)
    ax.set_xlabel("result size of the no-op task")
    ax.set_ylabel("overhead O per task (ms)")
    ax.set_title(f"Per-task overhead on {data.get('workers')} worker(s): median of rounds")
    return png_bytes(fig)


def amortization_law(fit: dict[str, Any]) -> AmortizationLaw | None:
    """The fitted law of an amortization result (None without a fit)."""
    if not fit.get("available"):
        return None
    a = fit.get("per_call_config_seconds")
    return AmortizationLaw(
        overhead=max(float(fit["overhead_seconds"]), 0.0),
        marginal=float(fit["per_config_seconds"]),
        per_call_marginal=None if a is None else max(float(a), 0.0),
    )


def plot_amortization(data: dict[str, Any]) -> bytes:
    """Batched task time against B with ``O + bB``; measured ``S(B)`` against the law."""
    fig = new_figure(10.0, 4.0)
    left, right = fig.subplots(1, 2)
    sizes = np.array(data["batch_sizes"], dtype=np.float64)
    batched = data["batched"]
    for row in batched:
        left.plot([row["batch"]] * len(row["seconds"]), row["seconds"], "k.", ms=4, alpha=0.5)
    left.plot(sizes, [r["median"] for r in batched], "o", color="#4c72b0", label="batched (median)")
    left.plot(
        sizes,
        [p["seconds"] for p in data["per_call"]],
        "s",
        color="#dd8452",
        label="per call (sum)",
    )
    law = amortization_law(data["fit"])
    planner = data.get("planner") or {}
    top = max(2.0 * sizes.max(), 2.0, 1.2 * float(planner.get("law_batch") or 0.0))
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
        sizes, [s["speedup"] for s in data["speedup"]], "o", color="#4c72b0", label="measured S(B)"
    )
    if law is not None:
        right.plot(grid, law.speedup(grid), "-", color="#4c72b0", label="law B(O+a)/(O+bB)")
        right.axhline(law.ceiling, color="grey", ls=":", label=f"ceiling {law.ceiling:.1f}")
        ridge, b90 = law.ridge, law.batch_for_fraction(0.9)
        if ridge > 0:
            right.axvline(ridge, color="#55a868", ls="--", label=f"ridge O/b = {ridge:.1f}")
        if b90 > 0:
            right.axvline(b90, color="#c44e52", ls="--", label=f"B*(0.9) = {b90:.0f}")
    if planner.get("law_batch"):
        right.axvline(
            float(planner["law_batch"]), color="#8172b2", ls=":", label="planner B*(0.99)"
        )
    right.set_xscale("log", base=2)
    right.set_xlabel("batch size B")
    right.set_ylabel("speedup over one config per task")
    right.set_title("Amortization: S(B)")
    right.legend(fontsize=8)
    return png_bytes(fig)


def plot_scaling(data: dict[str, Any]) -> bytes:
    """Measured throughput against workers, the fitted USL, and its peak p*."""
    fig = new_figure(6.5, 4.0)
    ax = fig.add_subplot()
    p = np.array([pt["workers"] for pt in data["points"]], dtype=np.float64)
    x = np.array([pt["throughput"] for pt in data["points"]])
    ax.plot(p, x, "o", color="#4c72b0", label="measured")
    fit = data["fit"]
    if fit.get("available"):
        peak = fit["peak_workers"]
        top = p.max()
        if peak is not None and math.isfinite(peak):
            top = max(top, min(1.5 * peak, 4.0 * p.max()))
        grid = np.linspace(1.0, top, 200)
        ax.plot(
            grid,
            usl_throughput(grid, fit["sigma"], fit["kappa"], fit["gamma"]),
            "-",
            color="#4c72b0",
            label=f"USL σ={fit['sigma']:.3f} κ={fit['kappa']:.4f}",
        )
        ax.plot(grid, fit["gamma"] * grid, ":", color="grey", label="linear")
        if peak is not None and math.isfinite(peak) and peak <= top:
            ax.axvline(peak, color="#c44e52", ls="--", label=f"p* = {peak:.1f}")
    ax.set_ylim(0, 1.25 * float(x.max()))
    ax.set_xlabel("workers p (tasks in flight)")
    ax.set_ylabel("throughput (configs/s)")
    cores = (data.get("cluster") or {}).get("driver_host_cpus")
    ax.set_title(
        f"Scaling on {data.get('cluster_cpus')} Ray CPU(s)"
        + (f" (driver host: {cores} cores)" if cores else "")
    )
    ax.legend(fontsize=8)
    return png_bytes(fig)


#: Figure function of each benchmark kind.
PLOTS = {"overhead": plot_overhead, "amortization": plot_amortization, "scaling": plot_scaling}
