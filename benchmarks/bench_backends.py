"""Ray and Dask side by side on this machine, local clusters of 2 workers (issue 41, item 3).

Three measurements, each alternating Ray and Dask round by round (these machines are shared
and noisy; the engine that goes first alternates too):

1. **Per-task overhead O** of each engine (:meth:`sweep.executors.ClusterExecutor.
   measure_overhead`: bursts of pipelined no-op tasks, O = CPUs x elapsed / tasks), for a
   task returning nothing and for one returning a part's worth of rows: the pickled size of
   the :class:`sweep.engine._evaluate.BatchResult` of one batch of the main job at the
   batch the planner chooses for it (its manifest's ``batch_size``).
2. **The main job** (``examples/momentum.toml``, 10,000 configs, 200 replications), the
   whole ``sweep run`` command timed, each run into a fresh folder: ``--executor local``
   vs ``--executor ray --workers 2`` vs ``--executor dask --workers 2`` (each cluster started
   by the command: its start-up is in the time). The CPU-bound ceiling is stated with it:
   the in-process run's compute (the sum of its tasks' ``compute_seconds``) can at best be
   halved on 2 workers, so a cluster run takes at least ``wall_local - compute / 2``
   (and its start-up on top). The table hash of every run is printed (must be one).
3. **The amortization law** on each engine: ``sweep bench amortization`` (one worker, tasks
   streamed two in flight), the measured speed-up over one config per task S(B) against the
   fitted law's ``B (O + a) / (O + b B)``.

Run inside a loopback-only network namespace, niced:
``unshare -n sh -c 'ip link set lo up && exec "$@"' _ nice python benchmarks/bench_backends.py``
(``--rounds``, ``--overhead-rounds``, ``--amortization-rounds``; ``--json FILE`` saves
everything measured).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "examples" / "momentum.toml"
ENGINES = ("ray", "dask")


def run_main_job(kind: str, run_dir: Path) -> dict[str, object]:
    """``sweep run`` of the main job on ``kind``: command seconds, hash, compute, batch."""
    from sweep.store._run_store import RunStore

    command = [sys.executable, "-m", "sweep", "run", str(SPEC), "--executor", kind]
    command += ["--run-dir", str(run_dir), "-q"]
    if kind != "local":
        command += ["--workers", "2"]
    t0 = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr[-3000:]}")
    digest = next(ln for ln in proc.stdout.splitlines() if ln.startswith("table hash:"))
    session = json.loads((run_dir / "manifest.json").read_text())["sessions"][-1]
    telemetry = RunStore(str(run_dir)).read_telemetry().to_pandas()
    return {
        "seconds": seconds,
        "hash": digest.split()[-1],
        "compute_seconds": float(telemetry["compute_seconds"].sum()),
        "session_seconds": session["wall_seconds"],
        "tasks": len(telemetry),
        "batch_size": session["plan"]["batch_size"],
        "planner_overhead_seconds": session["plan"]["overhead_seconds"],
    }


def part_bytes(batch: int) -> int:
    """Pickled bytes of the main job's result of one batch of ``batch`` configs."""
    from sweep import load_spec, resolve
    from sweep.engine._evaluate import evaluate_batch

    sweep = resolve(load_spec(SPEC))
    result = evaluate_batch(sweep, np.arange(batch, dtype=np.int64))
    return len(pickle.dumps(result, protocol=5))


def overheads(rounds: int, payloads: tuple[int, ...]) -> dict[str, dict[int, list[float]]]:
    """O per engine and payload: both clusters up, one round of each alternated."""
    from sweep import load_spec, resolve
    from sweep.executors import ClusterExecutor, make_executor

    sweep = resolve(load_spec(SPEC))
    backends: dict[str, ClusterExecutor] = {}
    for kind in ENGINES:
        backend = make_executor(kind, workers=2)
        assert isinstance(backend, ClusterExecutor)
        backend.start(sweep)
        backends[kind] = backend
    found: dict[str, dict[int, list[float]]] = {k: {p: [] for p in payloads} for k in ENGINES}
    try:
        for payload in payloads:  # warm-up: each engine's workers, the payload's path
            for kind in ENGINES:
                backends[kind].measure_overhead(payload, rounds=1)
        for r in range(rounds):
            order = ENGINES if r % 2 == 0 else ENGINES[::-1]
            for kind in order:
                for payload in payloads:
                    found[kind][payload].append(backends[kind].measure_overhead(payload, 1))
    finally:
        for backend in backends.values():
            backend.close()
    return found


def startups(rounds: int) -> dict[str, list[float]]:
    """Seconds from nothing to a local cluster of 2 workers with the sweep shipped, alternated.

    ``make_executor(kind, workers=2).start(sweep)``: the engine's processes started, the
    workers registered, the sweep (its panel) put where every worker reads it; the stop
    after it is not timed.
    """
    from sweep import load_spec, resolve
    from sweep.executors import make_executor

    sweep = resolve(load_spec(SPEC))
    found: dict[str, list[float]] = {k: [] for k in ENGINES}
    for r in range(rounds):
        for kind in ENGINES if r % 2 == 0 else ENGINES[::-1]:
            t0 = time.perf_counter()
            backend = make_executor(kind, workers=2)
            backend.start(sweep)
            found[kind].append(time.perf_counter() - t0)
            backend.close()
            print(f"start-up {kind}: {found[kind][-1]:.2f} s", flush=True)
    return found


def amortization(kind: str, out: Path) -> dict[str, object]:
    """``sweep bench amortization`` on ``kind`` (local cluster): S(B) measured vs the law."""
    from sweep.bench import AmortizationSettings, run_bench
    from sweep.report._bench_figures import amortization_law
    from sweep.store._bench_results import AmortizationResult, LawFit

    settings = AmortizationSettings(planner_configs=0)
    outcome = run_bench("amortization", executor=kind, spec=str(SPEC), out=out, settings=settings)
    result = outcome.result
    assert isinstance(result, AmortizationResult) and isinstance(result.fit, LawFit)
    law = amortization_law(result.fit)
    assert law is not None
    sizes = np.array(result.batch_sizes, dtype=np.float64)
    return {
        "O": result.fit.overhead_seconds,
        "b": result.fit.per_config_seconds,
        "a": result.fit.per_call_config_seconds,
        "r_squared": result.fit.r_squared,
        "batch": list(result.batch_sizes),
        "measured": [p.speedup for p in result.speedup],
        "law": [float(v) for v in law.speedup(sizes)],
        "ceiling": result.fit.ceiling_speedup,
    }


def machine() -> dict[str, str]:
    """CPU model, the SIMD levels numpy uses, versions."""
    import io
    from contextlib import redirect_stdout
    from importlib.metadata import version

    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    model = next(
        (ln.split(":", 1)[1].strip() for ln in lscpu.splitlines() if "Model name" in ln), "?"
    )
    buf = io.StringIO()
    with redirect_stdout(buf):
        np.show_runtime()
    return {
        "cpu": f"{model}, {os.cpu_count()} logical CPUs",
        "numpy_runtime": buf.getvalue(),
        "versions": ", ".join(f"{p} {version(p)}" for p in ("numpy", "ray", "dask", "distributed")),
        "python": sys.version.split()[0],
        "load_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="main-job rounds per executor")
    parser.add_argument("--overhead-rounds", type=int, default=7)
    parser.add_argument("--amortization-rounds", type=int, default=1)
    parser.add_argument("--startup-rounds", type=int, default=3)
    parser.add_argument(
        "--startup-only", action="store_true", help="measure only the clusters' start-up"
    )
    parser.add_argument("--json", type=Path, default=None, help="save what was measured")
    parser.add_argument("--from-json", type=Path, default=None, help="print a saved run")
    args = parser.parse_args()
    if args.from_json:
        report(json.loads(args.from_json.read_text()))
        return
    found: dict[str, object] = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    if args.startup_only:
        up = startups(args.startup_rounds)
        for kind, seconds in up.items():
            print(f"{kind}: start-up median {statistics.median(seconds):.2f} s, all {seconds}")
        return
    walls: dict[str, list[dict[str, object]]] = {k: [] for k in ("local", *ENGINES)}
    with tempfile.TemporaryDirectory(prefix="bench-backends-") as tmp:
        # 2. the main job: one untimed run each (numba caches, imports), then alternated rounds
        for kind in ("local", *ENGINES):
            warm = run_main_job(kind, Path(tmp) / f"warm-{kind}")
            print(f"warm-up {kind}: {warm['seconds']:.2f} s", flush=True)
        for r in range(args.rounds):
            kinds = ("local", *ENGINES)
            for kind in kinds[r % 3 :] + kinds[: r % 3]:
                walls[kind].append(run_main_job(kind, Path(tmp) / f"{kind}-{r}"))
                print(f"round {r} {kind}: {walls[kind][-1]['seconds']:.2f} s", flush=True)
        batch = int(statistics.median(int(w["batch_size"]) for w in walls["ray"]))  # type: ignore[call-overload]
        # 1. overhead: no-op, and a part's worth of rows at the planner's batch
        rows = part_bytes(batch)
        o = overheads(args.overhead_rounds, (0, rows))
        up = startups(args.startup_rounds)
        # 3. amortization, alternated
        amort: dict[str, list[dict[str, object]]] = {k: [] for k in ENGINES}
        for r in range(args.amortization_rounds):
            for kind in ENGINES if r % 2 == 0 else ENGINES[::-1]:
                amort[kind].append(amortization(kind, Path(tmp) / f"amort-{kind}-{r}"))
                print(f"amortization {kind} round {r} done", flush=True)
    found["machine"]["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())  # type: ignore[index]
    found.update(
        main_job=walls,
        part_batch=batch,
        part_bytes=rows,
        overhead=o,
        startup=up,
        amortization=amort,
    )
    if args.json:
        args.json.write_text(json.dumps(found, indent=1, default=str))
    report(found)


def _ms(x: float) -> str:
    return f"{1e3 * x:.2f} ms"


def report(found: dict) -> None:  # type: ignore[type-arg]
    """Print the table of ratios."""
    m = found["machine"]
    print(f"\nmachine: {m['cpu']}; {m['versions']}; load {m['load_before']} -> {m['load_after']}")
    print("\n1. per-task overhead O (median over rounds; local clusters of 2 workers)")
    o = found["overhead"]
    for payload in o["ray"]:
        size = int(payload)
        label = f"{size:,} B (a part of {found['part_batch']:,} configs)" if size else "no-op"
        ray_o = statistics.median(o["ray"][payload])
        dask_o = statistics.median(o["dask"][payload])
        print(
            f"  {label:42s} Ray {_ms(ray_o):>9s}  Dask {_ms(dask_o):>9s}  "
            f"Dask/Ray {dask_o / ray_o:.2f}"
        )
    if "startup" in found:
        for kind, seconds in found["startup"].items():
            print(f"  start-up, local cluster of 2 ({kind}): {statistics.median(seconds):.2f} s")
    mj = found["main_job"]
    print(f"\n2. main job, whole command, best / median of {len(mj['local'])} rounds")
    best = {k: min(w["seconds"] for w in v) for k, v in mj.items()}
    med = {k: statistics.median(w["seconds"] for w in v) for k, v in mj.items()}
    compute = statistics.median(w["compute_seconds"] for w in mj["local"])
    for kind in mj:
        session = statistics.median(w["session_seconds"] for w in mj[kind])
        inside = statistics.median(w["compute_seconds"] for w in mj[kind])
        print(
            f"  {kind:6s} {best[kind]:6.2f} s / {med[kind]:6.2f} s   in-process / this: "
            f"{best['local'] / best[kind]:.2f}x best, {med['local'] / med[kind]:.2f}x median; "
            f"session {session:.2f} s, tasks' compute {inside:.2f} s (medians)"
        )
    floor = best["local"] - compute / 2
    print(
        f"  in-process compute (sum of its tasks' compute_seconds, median) {compute:.2f} s: on "
        f"2 workers the command takes at least {floor:.2f} s, a ceiling of "
        f"{best['local'] / floor:.2f}x over in-process before any cluster start-up"
    )
    hashes = {w["hash"] for v in mj.values() for w in v}
    print(f"  table hashes: {sorted(hashes)} ({'one' if len(hashes) == 1 else 'DIFFERENT'})")
    print("\n3. amortization, one worker: measured S(B) against the law B(O+a)/(O+bB)")
    for kind, runs in found["amortization"].items():
        for run in runs:
            print(
                f"  {kind}: O {_ms(run['O'])}, b {_ms(run['b'])}, a {_ms(run['a'])}, "
                f"R² {run['r_squared']:.3f}, ceiling {run['ceiling']:.1f}"
            )
            for b, s, law in zip(run["batch"], run["measured"], run["law"], strict=True):
                print(
                    f"    B {b:4d}: measured {s:7.2f}  law {law:7.2f}  measured/law {s / law:.2f}"
                )


if __name__ == "__main__":
    main()
