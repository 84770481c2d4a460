"""``sweep run`` and ``sweep report`` as the sweep grows: seconds and peak memory (issue 24).

For each ``--configs`` size, runs the main job's momentum sweep (synthetic panel,
buy-and-hold benchmark, 200 joint bootstrap replications, 16 PBO blocks) widened to that
many configs (100 lookbacks x N/100 bands) in-process, then ``sweep report --executor local``
on it (in-process too: ``bench_report_ray.py`` compares it with a local Ray cluster), each in a
fresh child process whose own peak RSS is read (``RUSAGE_CHILDREN`` of a probe process that
runs only that command). The report's per-step seconds and per-step peak RSS come from its
``report.json`` (``generated.step_seconds`` and ``generated.step_peak_rss_mib``: each step's
own peak, Linux's VmHWM reset at the step's start).

Prints a table per size and per step, fits the growth exponent ``alpha`` of each quantity
(``y = c N^alpha``, least squares on log-log), and writes a log-log plot. With two sizes or
more it states a projection to ``--project`` sizes from those fits: a projection, not a
measurement (and only as good as the power law between the sizes measured).

Usage::

    python benchmarks/bench_report_scale.py                                  # 10^6 configs
    python benchmarks/bench_report_scale.py --configs 100000,1000000,10000000 --root runs/scale
    python benchmarks/bench_report_scale.py --configs 1000000 --root runs/scale   # reuses runs
    python benchmarks/bench_report_scale.py --from runs/bench/report_scale/report_scale.json

Runs live under ``--root`` (kept, reused when their manifest exists) or a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from sweep.common._figures import new_figure, png_bytes

SPEC = """name = "report-scale"
seed = 20261130
[data]
source = "synthetic"
[strategy]
name = "momentum"
[grid]
lookback = {{ start = 20, stop = 320, step = 3 }}
band = {{ linspace = [0.0, 0.02, {bands}] }}
[metrics]
benchmark = "buy_and_hold"
bootstrap_reps = 200
block_length = 21
bootstrap_method = "circular"
pbo_blocks = 16
"""

#: A child that runs its arguments as a command and prints that command's seconds and peak
#: RSS in MiB (its only child, so RUSAGE_CHILDREN's max is that command's own).
PROBE = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "subprocess.run(sys.argv[1:], check=True); "
    "print(time.perf_counter() - t, "
    "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)"
)
SWEEP = [sys.executable, "-m", "sweep"]


def probed(cmd: list[str]) -> tuple[float, float]:
    """Run ``cmd`` in a probe child; its wall seconds and peak RSS in MiB."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *cmd], check=True, capture_output=True, text=True
    ).stdout.split()
    return float(out[-2]), float(out[-1])


@dataclass(frozen=True)
class Measurement:
    """One size: the run's and the report's seconds and peak RSS, and the report's steps."""

    configs: int
    run_seconds: float | None
    run_peak_rss_mib: float | None
    report_seconds: float
    report_peak_rss_mib: float
    step_seconds: dict[str, float]
    step_peak_rss_mib: dict[str, float]


def measure(configs: int, root: Path) -> Measurement:
    """Run (unless already done) and report a sweep of ``configs`` configs under ``root``."""
    run_dir = root / f"run-{configs}"
    run_seconds = run_rss = None
    if not (run_dir / "manifest.json").exists():
        spec = root / f"spec-{configs}.toml"
        spec.write_text(SPEC.format(bands=max(1, configs // 100)))
        run_seconds, run_rss = probed(
            [*SWEEP, "run", str(spec), "--run-dir", str(run_dir), "--quiet", "--executor", "local"]
        )
    report_dir = root / f"report-{configs}"
    seconds, rss = probed(
        [*SWEEP, "report", str(run_dir), "--quiet", "--executor", "local", "--out", str(report_dir)]
    )
    generated = json.loads((report_dir / "report.json").read_text())["generated"]
    return Measurement(
        configs=json.loads((run_dir / "manifest.json").read_text())["grid"]["size"],
        run_seconds=run_seconds,
        run_peak_rss_mib=run_rss,
        report_seconds=seconds,
        report_peak_rss_mib=rss,
        step_seconds=generated.get("step_seconds", {}),
        step_peak_rss_mib=generated.get("step_peak_rss_mib", {}),
    )


def power_law(sizes: list[int], values: list[float]) -> tuple[float, float] | None:
    """``(alpha, log c)`` of ``value = c size^alpha``, least squares on logs (None if < 2)."""
    if len(sizes) < 2 or min(values) <= 0:
        return None
    slope, intercept = np.polyfit(np.log(sizes), np.log(values), 1)
    return float(slope), float(intercept)


def _alpha(sizes: list[int], values: list[float]) -> str:
    fit = power_law(sizes, values)
    return "" if fit is None else f"{fit[0]:.2f}"


def _opt(value: float | None, fmt: str) -> str:
    return "" if value is None else format(value, fmt)


def _table(rows: list[Measurement]) -> list[str]:
    lines = [
        "| configs | run s | run peak MiB | report s | report peak MiB | report us/config |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {r.configs:,} | {_opt(r.run_seconds, '.1f')} | {_opt(r.run_peak_rss_mib, ',.0f')} "
        f"| {r.report_seconds:.1f} | {r.report_peak_rss_mib:,.0f} "
        f"| {1e6 * r.report_seconds / r.configs:.1f} |"
        for r in rows
    ]
    return lines


def _step_table(rows: list[Measurement]) -> list[str]:
    sizes = [r.configs for r in rows]
    head = " | ".join(f"{n:,}" for n in sizes)
    lines = [
        f"| step (s / peak MiB) | {head} | alpha (s) | alpha (MiB) |",
        "| --- " * (len(rows) + 3) + "|",
    ]
    for step in rows[-1].step_seconds:
        secs = [r.step_seconds.get(step, 0.0) for r in rows]
        mibs = [r.step_peak_rss_mib.get(step, 0.0) for r in rows]
        cells = " | ".join(f"{s:.2f} / {m:,.0f}" for s, m in zip(secs, mibs, strict=True))
        lines.append(f"| {step} | {cells} | {_alpha(sizes, secs)} | {_alpha(sizes, mibs)} |")
    return lines


def _projections(rows: list[Measurement], targets: list[int]) -> list[str]:
    """Growth exponents, and projections by the power law and by a line ``a + b N``.

    A fixed cost (imports, the panel, the capped samples) flattens the power law between
    small sizes, so a cost that is linear in N beyond them is projected by the line fitted
    to the two largest sizes as well; both are projections, not measurements.
    """
    sizes = [r.configs for r in rows]
    lines = []
    for name, unit, values in (
        ("report seconds", "s", [r.report_seconds for r in rows]),
        ("report peak RSS", "MiB", [r.report_peak_rss_mib for r in rows]),
    ):
        fit = power_law(sizes, values)
        if fit is None:
            continue
        alpha, log_c = fit
        per_config = (values[-1] - values[-2]) / (sizes[-1] - sizes[-2])
        lines.append(
            f"{name}: growth exponent {alpha:.2f} (y = c N^alpha over {sizes}); "
            f"{per_config * 1e6:,.1f} {unit} per 10^6 configs between the two largest sizes"
        )
        lines += [
            f"  projection to {n:,} configs (not measured): "
            f"{float(np.exp(log_c + alpha * np.log(n))):,.0f} {unit} by the power law, "
            f"{values[-1] + per_config * (n - sizes[-1]):,.0f} {unit} by the line"
            for n in targets
        ]
    return lines


def plot(rows: list[Measurement], path: Path) -> None:
    """Log-log: the report's seconds and each step's peak MiB against configs."""
    sizes = [r.configs for r in rows]
    fig = new_figure(11.0, 4.5)
    ax_t, ax_m = fig.subplots(1, 2)
    for ax, per_step, whole in (
        (ax_t, [r.step_seconds for r in rows], [r.report_seconds for r in rows]),
        (ax_m, [r.step_peak_rss_mib for r in rows], [r.report_peak_rss_mib for r in rows]),
    ):
        for i, step in enumerate(per_step[-1]):
            ys = [m.get(step, np.nan) for m in per_step]
            style = "-" if i < 10 else "--"  # ten colours in the cycle: dashed after them
            ax.plot(sizes, ys, style, marker="o", lw=1, label=step)
        ax.plot(sizes, whole, "k-", marker="s", lw=2, label="whole report")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("configs")
        ax.grid(True, which="both", alpha=0.3)
    ax_t.set_ylabel("seconds")
    ax_m.set_ylabel("peak RSS (MiB)")
    ax_m.legend(fontsize=6, loc="upper left")
    ax_t.set_title("sweep report: time per step")
    ax_m.set_title("sweep report: each step's peak memory")
    path.write_bytes(png_bytes(fig))


def measured_rows(sizes: list[int], root: Path | None) -> list[Measurement]:
    """:func:`measure` each size in turn (printing each as it lands), under ``root``."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = root or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        rows = []
        for n in sizes:
            rows.append(measure(n, folder))
            print(json.dumps(asdict(rows[-1])), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="1000000", help="comma-separated sizes")
    parser.add_argument("--root", type=Path, default=None, help="keep (and reuse) runs here")
    parser.add_argument("--project", default="100000000,1000000000", help="sizes to project to")
    parser.add_argument("--out", type=Path, default=Path("runs/bench/report_scale"))
    parser.add_argument(
        "--from", dest="saved", type=Path, help="tabulate and plot a saved report_scale.json"
    )
    args = parser.parse_args()
    if args.saved is not None:
        rows = [Measurement(**r) for r in json.loads(args.saved.read_text())]
    else:
        rows = measured_rows(sorted(int(s) for s in args.configs.split(",")), args.root)
    targets = [int(t) for t in args.project.split(",")]
    text = "\n".join([*_table(rows), "", *_step_table(rows), "", *_projections(rows, targets)])
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report_scale.md").write_text(text + "\n")
    (args.out / "report_scale.json").write_text(json.dumps([asdict(r) for r in rows], indent=1))
    if len(rows) > 1:
        plot(rows, args.out / "report_scale.png")
        print(f"wrote {args.out / 'report_scale.png'}")


if __name__ == "__main__":
    main()
