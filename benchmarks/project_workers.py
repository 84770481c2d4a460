"""Project a sweep and its report to 10^8 and 10^9 configs on W workers (issue 24).

A projection, not a measurement. It combines what was measured on this machine:

* the report's per-step seconds and peak RSS at two or more sizes, in-process
  (``bench_report_scale.py``'s ``report_scale.json``);
* ``sweep verify`` on the same run folders (``--verify``, timed here): the integrity pass
  that ``sweep report --address`` runs as Ray tasks, one per group of parts;
* the amortization law of ``sweep bench amortization`` (``O`` per task, ``b`` per config)
  and the Universal Scalability Law of ``sweep bench scaling`` (sigma, kappa) on this
  machine's Ray (``--bench``, the folder ``sweep bench`` writes).

The model, stated so it can be checked:

* Each report step's seconds are a line ``a + b N`` through the two largest sizes (PBO draws
  at most 10^6 configs and the dimensionality 10^4, so their lines come out flat beyond
  that; the read and the tests over every config grow with N).
* With ``--address`` on W workers, the steps whose passes run as Ray tasks over groups of
  parts or runs of rows (the pass into the reducers, the Sharpe distribution's passes, PBO's
  block statistics and splits, the recomputed returns: :data:`ON_RAY`) and the integrity
  pass take their in-process seconds divided by the USL speedup
  ``S(W) = W / (1 + sigma (W - 1) + kappa W (W - 1))``; the integrity pass's share of the
  read step is ``sweep verify``'s time less the check that no config is held twice, which
  runs in the driver (``--driver-check``: its seconds measured at two sizes or more, one
  pass over the ids' fingerprints). Everything else stays in the driver (that check, the
  merges of the groups' results, the tests from counts, telemetry, figures), and is counted
  there whole, in-process seconds.
* The sweep takes ``N b / S(W)`` plus one task overhead ``O`` per batch of ``--batch``
  configs spread over W workers: ``b`` is the run's own per-config cost (the fit of its
  tasks' service times in ``--run-report``'s report.json), ``O`` the amortization law's
  per-task overhead on this machine's Ray.
* The driver's peak RSS is the line through the two largest sizes' peaks.

Usage::

    python benchmarks/project_workers.py --scale runs/bench/report_scale/report_scale.json \\
        --verify /tmp/growth/run-1000000,/tmp/growth/run-10000000 --bench runs/bench \\
        --run-report /tmp/growth/report-10000000/report.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from bench_report_scale import SWEEP, probed

from stats import usl_throughput
from sweep.store._bench_results import (
    AmortizationResult,
    LawFit,
    ScalingResult,
    UslFit,
    bench_from_json,
)

#: Report steps whose work runs as Ray tasks with ``sweep report --address`` (the driver
#: merges what the tasks return).
ON_RAY = (
    "reduce the results",
    "results",
    "probability of backtest overfitting",
    "recompute returns",
)
READ = "read and verify the run folder"
WORKERS = (1, 2, 16, 64, 256)


def line(sizes: list[int], values: list[float]) -> tuple[float, float]:
    """``(a, b)`` of ``a + b N`` through the two largest sizes."""
    (n1, y1), (n2, y2) = sorted(zip(sizes, values, strict=True))[-2:]
    slope = (y2 - y1) / (n2 - n1)
    return y1 - slope * n1, slope


def at(fit: tuple[float, float], n: float) -> float:
    return max(fit[0] + fit[1] * n, 0.0)


def speedup(workers: int, sigma: float, kappa: float) -> float:
    """USL speedup over one worker: ``X(W) / X(1)``."""
    one = float(usl_throughput(1, sigma, kappa))
    return float(usl_throughput(workers, sigma, kappa)) / one


def contention(scaling: object) -> tuple[float, float, str]:
    """``(sigma, kappa, how)`` from ``sweep bench scaling``.

    Its USL fit when it has one (three worker counts or more); with two, the one-parameter
    USL ``kappa = 0`` (Amdahl's law) through them, ``sigma = (W X(1) / X(W) - 1) / (W - 1)``;
    with less, linear scaling.
    """
    if not isinstance(scaling, ScalingResult):
        return 0.0, 0.0, "no sweep bench scaling result: linear speedup assumed"
    if isinstance(scaling.fit, UslFit):
        f = scaling.fit
        return (
            f.sigma,
            f.kappa,
            (
                f"USL from sweep bench scaling: sigma {f.sigma:.4f}, kappa {f.kappa:.5f} "
                f"(R² {f.r_squared:.3f}, up to {scaling.max_workers} workers)"
            ),
        )
    points = {p.workers: p.throughput for p in scaling.points}
    if 1 in points and len(points) >= 2:
        w = max(points)
        sigma = max((w * points[1] / points[w] - 1.0) / (w - 1.0), 0.0)
        return (
            sigma,
            0.0,
            (
                f"sweep bench scaling measured {len(points)} worker counts (no USL fit): "
                f"X(1) = {points[1]:,.0f}, X({w}) = {points[w]:,.0f} configs/s, so sigma = "
                f"{sigma:.3f} with kappa = 0 (Amdahl's law through them)"
            ),
        )
    return 0.0, 0.0, "sweep bench scaling has one worker count: linear speedup assumed"


def time_verify(folders: list[str]) -> tuple[list[int], list[float]]:
    """Each run folder's config count and ``sweep verify``'s wall seconds on it.

    An entry ``CONFIGS:SECONDS`` is a time measured before (printed by an earlier run).
    """
    sizes, seconds = [], []
    for folder in folders:
        if ":" in folder and not Path(folder).exists():
            configs, took_before = folder.split(":")
            sizes.append(int(configs))
            seconds.append(float(took_before))
            continue
        took, _ = probed([*SWEEP, "verify", folder])
        manifest = json.loads((Path(folder) / "manifest.json").read_text())
        sizes.append(int(manifest["grid"]["size"]))
        seconds.append(took)
    return sizes, seconds


def _bench(folder: Path | None, kind: str) -> object | None:
    path = folder / f"{kind}.json" if folder else None
    if path is None or not path.exists():
        return None
    return bench_from_json(json.loads(path.read_text()), str(path))


def _hms(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=Path, required=True, help="report_scale.json")
    parser.add_argument(
        "--verify", default="", help="run folders to time sweep verify on (or CONFIGS:SECONDS)"
    )
    parser.add_argument("--bench", type=Path, default=None, help="sweep bench results folder")
    parser.add_argument("--targets", default="100000000,1000000000")
    parser.add_argument("--run-report", type=Path, help="report.json of the largest run (b)")
    parser.add_argument("--batch", type=int, default=4914, help="configs per task")
    parser.add_argument(
        "--driver-check",
        default="",
        help="CONFIGS:SECONDS of the conflict check in the driver, at two sizes or more",
    )
    parser.add_argument(
        "--sigma", type=float, default=None, help="contention to assume instead (kappa = 0)"
    )
    parser.add_argument("--out", type=Path, default=Path("runs/bench/project_workers"))
    return parser


def measured_line(
    text: str,
) -> tuple[list[tuple[float, float]], tuple[float, float] | None]:
    """``CONFIGS:SECONDS,...`` as pairs, and the line through them (None with fewer than 2)."""
    pairs = [(float(n), float(v)) for n, v in (p.split(":") for p in text.split(",") if p)]
    if len(pairs) < 2:
        return pairs, None
    return pairs, line([int(n) for n, _ in pairs], [v for _, v in pairs])


def main() -> None:
    args = _parser().parse_args()
    rows = json.loads(args.scale.read_text())
    sizes = [int(r["configs"]) for r in rows]
    amort = _bench(args.bench, "amortization")
    scaling = _bench(args.bench, "scaling")
    law = amort.fit if isinstance(amort, AmortizationResult) else None
    overhead = law.overhead_seconds if isinstance(law, LawFit) else None
    per_config = None
    if args.run_report is not None:
        from_run = json.loads(args.run_report.read_text())["scaling"].get("from_run") or {}
        per_config = from_run.get("per_config_seconds")
    sigma, kappa, usl_note = contention(scaling)
    if args.sigma is not None:
        sigma, kappa, usl_note = args.sigma, 0.0, f"assumed: sigma = {args.sigma}, kappa = 0"

    verify_sizes, verify_seconds = time_verify([f for f in args.verify.split(",") if f])
    steps = sorted({s for r in rows for s in r["step_seconds"]})
    step_fit = {s: line(sizes, [float(r["step_seconds"].get(s, 0.0)) for r in rows]) for s in steps}
    audit_fit = line(verify_sizes, verify_seconds) if len(verify_sizes) >= 2 else None
    checks, check_fit = measured_line(args.driver_check)
    rss_fit = line(sizes, [float(r["report_peak_rss_mib"]) for r in rows])
    wall_fit = line(sizes, [float(r["report_seconds"]) for r in rows])
    startup = at(wall_fit, 0.0)

    lines = [
        "# Projection of a sweep and its report to N configs on W workers (not measured)",
        "",
        f"report steps from {args.scale} (sizes {', '.join(f'{n:,}' for n in sizes)}); "
        + (
            f"sweep verify timed here at {', '.join(f'{n:,}' for n in verify_sizes)}: "
            + ", ".join(f"{s:.1f} s" for s in verify_seconds)
            if verify_sizes
            else "no sweep verify timing (the integrity pass counted in the driver)"
        ),
        usl_note,
        (
            "the conflict check in the driver measured at "
            + ", ".join(f"{int(n):,}: {s:.2f} s" for n, s in checks)
            if checks
            else "no conflict check timing: all of sweep verify counted on Ray (optimistic)"
        ),
        (
            f"O = {overhead:.4f} s per task (sweep bench amortization on this machine's Ray)"
            if overhead is not None
            else "no amortization fit: no task overhead counted"
        ),
        (
            f"b = {per_config * 1e6:.1f} us per config (the run's own tasks, {args.run_report}); "
            f"{args.batch:,} configs per task"
            if per_config
            else "no per-config cost: the sweep is not projected"
        ),
        "",
        "| configs | workers | S(W) | sweep | report | report driver part | report peak RSS |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    record = []
    for n in [int(t) for t in args.targets.split(",")]:
        serial = sum(at(step_fit[s], n) for s in steps)
        on_ray = sum(at(step_fit[s], n) for s in ON_RAY if s in step_fit)
        audit = min(at(audit_fit, n), at(step_fit[READ], n)) if audit_fit else 0.0
        audit = max(audit - (at(check_fit, n) if check_fit else 0.0), 0.0)
        driver = serial - on_ray - audit + startup
        rss = at(rss_fit, n)
        for w in WORKERS:
            s_w = speedup(w, sigma, kappa)
            report = driver + (on_ray + audit) / s_w
            sweep = math.nan
            if per_config:
                sweep = n * per_config / s_w + n / args.batch * (overhead or 0.0) / w
            lines.append(
                f"| {n:,} | {w} | {s_w:.1f} | {_hms(sweep) if math.isfinite(sweep) else 'n/a'} "
                f"| {_hms(report)} | {_hms(driver)} | {rss / 1024:,.1f} GiB |"
            )
            record.append(
                {
                    "configs": n,
                    "workers": w,
                    "speedup": s_w,
                    "sweep_seconds": sweep,
                    "report_seconds": report,
                    "driver_seconds": driver,
                    "report_peak_mib": rss,
                }
            )
    lines += [
        "",
        "The driver part (the audit step beyond sweep verify's share: the conflict check and "
        "the merges; the tests from counts, telemetry, the figures) does not shrink with W; "
        "the driver's peak RSS is the line above (about "
        f"{rss_fit[1] * 1e6:,.1f} MiB per 10^6 configs between the two largest sizes).",
    ]
    text = "\n".join(lines) + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "project_workers.md").write_text(text)
    (args.out / "project_workers.json").write_text(json.dumps(record, indent=1) + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
