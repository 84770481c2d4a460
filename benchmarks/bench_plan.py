"""Ray (2 workers) vs in-process on the main job, planning's share, and ``sweep plan``'s
predictions against what then happened: side by side in one run (issue 15).

The sweep is ``examples/momentum.toml`` itself: 10,000 configs, 200 joint bootstrap
replications, walk-forward. Each round runs it in-process (``--executor local``) and on a
2-CPU local Ray cluster started before the clock (``ray.init`` outside the timed span;
each timed run still starts its worker processes' tasks, puts the sweep in the object
store and plans), alternated, ``--rounds`` rounds, best of each; every run's table hash is
checked equal. Printed:

- wall seconds of each and the speedup Ray 2 / in-process (goal >= 1.8x);
- planning's share of the Ray run (``plan.planning_seconds`` over the session's wall
  seconds; goal <= 3%), and the share net of the pilots' own work (their results are
  kept);
- the start-up of a fresh local cluster (``ray.init`` to ready), measured once;
- ``sweep plan``'s predictions (:func:`sweep._preflight.plan_sweep`, in-process and Ray)
  next to the measured wall times;
- where the CPU went during the best Ray run (psutil: the two workers, the driver, Ray's
  own processes) and the speedup that leaves possible on this machine's cores: the
  in-process wall over (all CPU seconds of the Ray run / cores), the bound of a perfectly
  packed run.

``--bands N`` replaces the main grid's 100 bands by N (``--bands 500``: 50,000 configs), to
see how planning's share falls as the sweep grows.

Run inside a loopback-only network namespace (Ray must not bind other addresses):
``unshare -n sh -c 'ip link set lo up && exec "$@"' _ python benchmarks/bench_plan.py``.
"""

from __future__ import annotations

import argparse
import os
import secrets
import tempfile
import time
from pathlib import Path

import psutil

from sweep import load_spec, resolve, run_sweep, spec_from_dict
from sweep._store import RunStore

SPEC = Path(__file__).resolve().parents[1] / "examples" / "momentum.toml"


def cpu_seconds() -> dict[str, float]:
    """CPU seconds so far of this process and its descendants, by role."""
    me = psutil.Process()
    out = {"driver": 0.0, "workers": 0.0, "ray's own processes": 0.0}
    for proc in [me, *me.children(recursive=True)]:
        try:
            times = proc.cpu_times()
            name = proc.name()
        except psutil.Error:
            continue
        role = "driver" if proc.pid == me.pid else "ray's own processes"
        if name.startswith("ray::") and "Agent" not in name:
            role = "workers"
        out[role] += times.user + times.system
    return out


def timed_run(sweep, run_dir: str, executor: str):
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    summary = run_sweep(sweep, run_dir, executor=executor, progress=False)
    seconds = time.perf_counter() - t0
    cpu = {k: v - cpu0[k] for k, v in cpu_seconds().items()}
    return summary, seconds, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--bands", type=int, default=100, help="bands of the grid (main: 100)")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-plan-")
    token = Path(tmp) / "token"
    token.write_text(secrets.token_hex(32))
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token), RAY_TMPDIR=tmp)
    import ray

    from sweep._preflight import plan_sweep

    sweep = resolve(load_spec(SPEC))
    if args.bands != 100:
        doc = sweep.spec.to_dict()
        doc["grid"]["band"] = {"linspace": [0.0, 0.02, args.bands]}
        sweep = resolve(spec_from_dict(doc), sweep.panel)
    t0 = time.perf_counter()
    predicted = plan_sweep(sweep, workers=2)  # starts and stops its own local cluster
    plan_seconds = time.perf_counter() - t0

    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    startup = time.perf_counter() - t0
    best = {"local": float("inf"), "ray": float("inf")}
    hashes = set()
    ray_dir = ""
    ray_cpu: dict[str, float] = {}
    for k in range(args.rounds):
        for executor in ("local", "ray"):
            run_dir = f"{tmp}/run-{executor}{k}"
            summary, seconds, cpu = timed_run(sweep, run_dir, executor)
            hashes.add(summary.table_hash)
            if seconds < best[executor]:
                best[executor] = seconds
                if executor == "ray":
                    ray_dir, ray_cpu = run_dir, cpu
    ray.shutdown()
    assert len(hashes) == 1, f"executors disagree: {hashes}"
    session = RunStore(ray_dir).load_manifest().sessions[-1]
    plan = session.plan
    assert plan is not None and session.wall_seconds
    pilots = plan.warmup_configs + sum(int(p.configs) for p in plan.pilot)
    useful = pilots * plan.per_config_seconds / 2
    share = plan.planning_seconds / session.wall_seconds
    net = (plan.planning_seconds - useful) / session.wall_seconds
    rows = {p.executor + str(p.wall.workers): p.wall.seconds for p in predicted.predictions}
    print(f"main job: {len(sweep.grid):,} configs, 200 reps; best of {args.rounds} alternated")
    print(f"  in-process:            {best['local']:7.2f} s")
    print(f"  Ray, 2 workers:        {best['ray']:7.2f} s (cluster started before the clock)")
    print(f"  speedup Ray 2 / local: {best['local'] / best['ray']:7.2f}x (goal >= 1.8x)")
    print(
        f"  planning in the Ray run: {plan.planning_seconds:.2f} s = {share:.1%} of its "
        f"{session.wall_seconds:.2f} s; {net:.1%} net of the pilots' kept work (goal <= 3%)"
    )
    cores = os.cpu_count() or 1
    total_cpu = sum(ray_cpu.values())
    print(
        "  CPU seconds in the best Ray run: "
        + ", ".join(f"{k} {v:.2f}" for k, v in ray_cpu.items())
        + f"; {total_cpu:.2f} of the {cores * best['ray']:.2f} its wall time gave {cores} cores"
    )
    print(
        f"  => on {cores} cores no Ray run of this work beats {total_cpu / cores:.2f} s: "
        f"at most {best['local'] / (total_cpu / cores):.2f}x in-process here"
    )
    print(f"  local Ray cluster start-up (ray.init): {startup:.2f} s")
    print(f"  same table hash everywhere: {hashes.pop()}")
    print(f"sweep plan (took {plan_seconds:.1f} s) predicted vs measured:")
    print(f"  in-process: {rows['local1']:7.2f} s predicted, {best['local']:7.2f} s measured")
    print(
        f"  Ray 2:      {rows['ray2']:7.2f} s predicted incl. start-up "
        f"{predicted.ray.startup_seconds if predicted.ray else float('nan'):.2f} s; "
        f"measured {best['ray']:7.2f} s + start-up {startup:.2f} s"
    )
    print(f"  crossover: {predicted.crossover_configs} configs; auto: {predicted.choice.chosen}")


if __name__ == "__main__":
    main()
