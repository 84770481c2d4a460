"""The report's figures (matplotlib Agg, no pyplot state), each returned as PNG bytes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from stats import PBOResult
from sweep.common._figures import new_figure, png_bytes
from sweep.report._ranking import Heatmap, cell_label
from sweep.spec._grid import ParamValue

#: Most sessions drawn in the timeline (the latest ones).
TIMELINE_SESSIONS = 6


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def plot_timeline(tasks: pd.DataFrame) -> bytes:
    """Tasks per worker over time: one lane per worker (node/pid), one panel per session."""
    sessions = sorted(tasks["session"].unique().tolist())[-TIMELINE_SESSIONS:]
    lanes_per = [tasks.loc[tasks["session"] == s, "lane"].nunique() for s in sessions]
    height = 1.2 + sum(0.9 + 0.28 * n for n in lanes_per)
    fig = new_figure(10.0, min(height, 14.0))
    axes = fig.subplots(len(sessions), 1, squeeze=False, height_ratios=[1 + n for n in lanes_per])
    for ax, session in zip(axes[:, 0], sessions, strict=True):
        mine = tasks[tasks["session"] == session]
        lanes = sorted(mine["lane"].unique().tolist())
        for y, lane in enumerate(lanes):
            rows = mine[mine["lane"] == lane]
            spans = list(zip(rows["start"], rows["end"] - rows["start"], strict=True))
            colors = ["#4c72b0" if w else "#a1c9f4" for w in rows["warm"]]
            ax.broken_barh(
                spans, (y - 0.35, 0.7), facecolors=colors, edgecolors="white", linewidth=0.3
            )
            ax.hlines([y] * len(rows), rows["submit"], rows["start"], colors="#999999", lw=0.6)
        ax.set_yticks(range(len(lanes)), lanes, fontsize=7)
        ax.set_ylim(-0.7, len(lanes) - 0.3)
        ax.set_title(
            f"session {session}: {len(mine)} tasks on {len(lanes)} worker(s) "
            "(grey: waiting since submission; pale: first task of a worker)",
            fontsize=9,
        )
        ax.set_xlabel("seconds since the session's first submission", fontsize=8)
    return png_bytes(fig)


def plot_task_fit(tasks: pd.DataFrame, fits: dict[str, tuple[float, float]]) -> bytes:
    """Service and compute time per task against its batch size, with ``O + bB`` fits."""
    fig = new_figure(7.0, 4.2)
    ax = fig.add_subplot()
    warm = tasks["warm"].to_numpy()
    n = tasks["n_configs"].to_numpy(dtype=np.float64)
    for col, color, label in (("service", "#4c72b0", "service"), ("compute", "#dd8452", "compute")):
        y = tasks[col].to_numpy()
        ax.plot(n[warm], y[warm], "o", color=color, ms=4, alpha=0.7, label=f"{label} time")
        ax.plot(n[~warm], y[~warm], "o", mfc="none", color=color, ms=5, alpha=0.7)
        if col in fits:
            o, b = fits[col]
            grid = np.linspace(0.0, max(float(n.max()), 1.0) * 1.05, 100)
            ax.plot(
                grid,
                o + b * grid,
                "-",
                color=color,
                label=f"fit: O = {o * 1e3:.3g} ms, b = {b * 1e3:.3g} ms",
            )
    ax.set_xlabel("configs per task B")
    ax.set_ylabel("seconds per task")
    ax.set_title("Task time = O + b·B (hollow: first task per worker, not fitted)")
    ax.legend(fontsize=8)
    return png_bytes(fig)


def plot_sharpe_histogram(
    counts: np.ndarray,
    edges: np.ndarray,
    winner: float | None,
    thresholds: dict[str, float],
) -> bytes:
    """Distribution of annualised Sharpe ratios, the winner and E[max] of null trials.

    ``counts`` and ``edges`` are the finite ratios' histogram (``np.histogram``), drawn as
    ``ax.hist`` draws the ratios themselves; empty when no ratio is finite.
    """
    fig = new_figure(7.0, 3.8)
    ax = fig.add_subplot()
    total = int(counts.sum())
    if counts.size:
        ax.hist(edges[:-1], bins=edges.tolist(), weights=counts, color="#4c72b0", alpha=0.85)
    else:
        ax.hist(np.array([]), bins=40, color="#4c72b0", alpha=0.85)
    if winner is not None:
        ax.axvline(winner, color="#c44e52", lw=2, label=f"winner {winner:.2f}")
    styles = {"naive": ":", "implied": "--"}
    for name, value in thresholds.items():
        ax.axvline(
            value, color="black", ls=styles.get(name, "-."), label=f"E[max], {name} N: {value:.2f}"
        )
    ax.set_xlabel("annualised Sharpe ratio of excess returns")
    ax.set_ylabel("configs")
    ax.set_title(f"Sharpe ratios of {total:,} configs")
    if total == 0:
        ax.text(
            0.5,
            0.5,
            "no config has a finite Sharpe ratio",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    return png_bytes(fig)


def _ticks(values: list[Any], limit: int = 10) -> tuple[list[int], list[str]]:
    step = max(1, math.ceil(len(values) / limit))
    pos = list(range(0, len(values), step))
    return pos, [_fmt(values[i]) for i in pos]


def plot_heatmap(hm: Heatmap) -> bytes:
    """The metric over two grid axes (maximum over the others), best cell starred."""
    fig = new_figure(7.5, 5.5)
    ax = fig.add_subplot()
    z = np.ma.masked_invalid(hm.z)
    image = ax.imshow(z, origin="lower", aspect="auto", cmap="viridis", interpolation="nearest")
    fig.colorbar(
        image, ax=ax, label=f"{hm.metric} (max over {', '.join(hm.aggregated_over) or 'nothing'})"
    )
    if np.isfinite(hm.z).any():
        iy, ix = np.unravel_index(int(np.nanargmax(hm.z)), hm.z.shape)
        ax.plot(ix, iy, "*", color="white", ms=14, mec="black")
    xp, xl = _ticks(hm.x_values)
    yp, yl = _ticks(hm.y_values)
    ax.set_xticks(xp, xl, rotation=45, fontsize=8)
    ax.set_yticks(yp, yl, fontsize=8)
    ax.set_xlabel(cell_label(hm.x, hm.x_cells))
    ax.set_ylabel(cell_label(hm.y, hm.y_cells))
    ax.set_title(f"{hm.metric} over {hm.x} x {hm.y} ({hm.chosen})")
    return png_bytes(fig)


def plot_profile(axis: str, values: list[Any], metric: np.ndarray, name: str) -> bytes:
    """The metric along the one grid axis that varies."""
    fig = new_figure(7.0, 3.8)
    ax = fig.add_subplot()
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    xs = values if numeric else list(range(len(values)))
    ax.plot(xs, metric, "o-", color="#4c72b0", ms=3)
    if not numeric:
        ax.set_xticks(xs, [str(v) for v in values], rotation=45)
    ax.set_xlabel(axis)
    ax.set_ylabel(name)
    ax.set_title(f"{name} along {axis}")
    return png_bytes(fig)


def plot_pbo_logits(pbo: PBOResult) -> bytes:
    """Histogram of the CSCV logits; mass at or left of 0 is the PBO."""
    fig = new_figure(7.0, 3.8)
    ax = fig.add_subplot()
    ax.hist(pbo.logits, bins=30, color="#4c72b0", alpha=0.85)
    ax.axvline(0.0, color="#c44e52", lw=2)
    ax.set_xlabel("logit of the in-sample best's out-of-sample relative rank")
    ax.set_ylabel("splits")
    ax.set_title(f"PBO = {pbo.pbo:.3f} over {pbo.n_splits:,} splits (share of logits <= 0)")
    return png_bytes(fig)


def plot_pbo_degradation(pbo: PBOResult) -> bytes:
    """Out-of-sample against in-sample Sharpe of the in-sample best, per split."""
    fig = new_figure(7.0, 4.2)
    ax = fig.add_subplot()
    ax.plot(pbo.is_performance, pbo.oos_performance, ".", ms=2, alpha=0.3, color="#4c72b0")
    if math.isfinite(pbo.degradation_slope):
        grid = np.linspace(
            float(np.nanmin(pbo.is_performance)), float(np.nanmax(pbo.is_performance)), 50
        )
        ax.plot(
            grid,
            pbo.degradation_intercept + pbo.degradation_slope * grid,
            "-",
            color="#c44e52",
            label=f"OLS slope {pbo.degradation_slope:.2f}, R² {pbo.degradation_r2:.2f}",
        )
        ax.legend(fontsize=8)
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xlabel("in-sample Sharpe of the in-sample best (per period)")
    ax.set_ylabel("its out-of-sample Sharpe")
    ax.set_title(f"Performance degradation; P(out-of-sample loss) = {pbo.prob_oos_loss:.2f}")
    return png_bytes(fig)


def plot_expected_max(
    n: np.ndarray,
    sr0: np.ndarray,
    naive_n: int,
    effective_n: float | None,
    winner: float | None,
    sharpe_std: float,
) -> bytes:
    """E[max] of null per-period Sharpes against N, the sweep's two counts and its winner."""
    from stats import expected_max_sharpe

    fig = new_figure(7.0, 4.0)
    ax = fig.add_subplot()
    ax.plot(n, sr0, "-", color="#4c72b0", label="E[max] of N null Sharpes")
    marks = [("naive N", float(naive_n), "o")]
    if effective_n is not None:
        marks.append(("effective N", effective_n, "s"))
    for label, value, marker in marks:
        y = expected_max_sharpe(value, sharpe_std)
        ax.plot(
            [value], [y], marker, color="#c44e52", ms=8, label=f"{label} = {value:,.1f}: {y:.4f}"
        )
    if winner is not None:
        ax.axhline(winner, color="black", ls="--", label=f"winner {winner:.4f}")
    ax.set_xscale("log")
    ax.set_xlabel("number of independent trials N")
    ax.set_ylabel("Sharpe ratio per period")
    ax.set_title("Expected best Sharpe of N skill-less trials")
    ax.legend(fontsize=8)
    return png_bytes(fig)


def plot_walk_forward(
    dates: np.ndarray, periods: np.ndarray, rule: np.ndarray, fixed: np.ndarray, bench: np.ndarray
) -> bytes:
    """Equity of the re-optimised rule, the benchmark and the fixed full-sample winner."""
    fig = new_figure(9.0, 4.2)
    ax = fig.add_subplot()
    when = dates[periods + 1]  # return t is earned by the close of date t + 1
    for series, label, color in (
        (rule, "walk-forward (re-optimised each fold)", "#4c72b0"),
        (bench, "benchmark", "#55a868"),
        (fixed, "full-sample winner held fixed (in-sample choice)", "#c44e52"),
    ):
        if np.isfinite(series).all():
            ax.plot(when, np.cumprod(1.0 + series), lw=1.2, label=label, color=color)
    ax.set_yscale("log")
    ax.set_ylabel("growth of 1 over the out-of-sample periods")
    ax.set_title("Walk-forward: out-of-sample equity")
    ax.legend(fontsize=8)
    return png_bytes(fig)


def plot_parameter_stability(names: list[str], choices: list[dict[str, ParamValue]]) -> bytes:
    """The parameters each walk-forward fold chose, one panel per parameter."""
    shown = [n for n in names if len({c.get(n) for c in choices}) > 1] or names[:1]
    fig = new_figure(9.0, 1.2 + 1.6 * len(shown))
    for k, name in enumerate(shown):
        ax = fig.add_subplot(len(shown), 1, k + 1)
        values = [c.get(name) for c in choices]
        y = [float(v) if isinstance(v, int | float) else math.nan for v in values]
        ax.plot(range(len(choices)), y, "o-", ms=3, color="#4c72b0")
        ax.set_ylabel(name)
        if k == len(shown) - 1:
            ax.set_xlabel("walk-forward fold")
    fig.suptitle("Parameters chosen in each fold")
    return png_bytes(fig)


def plot_cpcv_paths(path_sharpe_ann: np.ndarray) -> bytes:
    """Distribution of the out-of-sample annualised Sharpe ratio over CPCV paths."""
    fig = new_figure(7.0, 3.8)
    ax = fig.add_subplot()
    finite = path_sharpe_ann[np.isfinite(path_sharpe_ann)]
    ax.hist(finite, bins=max(5, min(30, finite.size)), color="#8172b2")
    ax.axvline(0.0, color="grey", lw=0.8)
    ax.set_xlabel("out-of-sample annualised Sharpe of excess returns, per path")
    ax.set_ylabel("paths")
    ax.set_title(f"CPCV: P(out-of-sample Sharpe < 0) = {np.mean(finite < 0):.2f}")
    return png_bytes(fig)
