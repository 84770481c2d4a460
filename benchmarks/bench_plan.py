"""Ray (2 workers) vs in-process on the main job, the cost of planning, and ``sweep plan``'s
predictions against what then happened: side by side in one run (issue 15).

The sweep is ``examples/momentum.toml`` itself: 10,000 configs, 200 joint bootstrap
replications, walk-forward. Each round runs it in-process (``--executor local``), on a
2-CPU local Ray cluster started before the clock (``ray.init`` outside the timed span;
each timed run still puts the sweep in the object store and plans while it runs), and on
that cluster with the batch size given (the size the planner chose in a first Ray run: no
warm-up, pilots or measurement), alternated, ``--rounds`` rounds (default 5), best of
each (and medians for the cost of planning); every run's table hash is checked equal.
Printed:

- wall seconds of each and the speedup Ray 2 / in-process (goal >= 1.8x);
- the cost of planning: the planned Ray run's wall time minus the given-size one's, and its
  share of the planned run (goal <= 3%), with when the plan was made;
- the start-up of a fresh local cluster (``ray.init`` to ready), measured once;
- ``sweep plan``'s predictions (:func:`sweep.plan._preflight.plan_sweep`, in-process and Ray)
  next to the measured wall times;
- where the CPU went during the best Ray run (psutil: the two workers, the driver, Ray's
  own processes) and the speedup that leaves possible on this machine's cores: the
  in-process wall over (all CPU seconds of the Ray run / cores), the bound of a perfectly
  packed run.

``--bands N`` replaces the main grid's 100 bands by N (``--bands 500``: 50,000 configs), to
see how the shares change as the sweep grows.

Run inside a loopback-only network namespace (Ray must not bind other addresses):
``unshare -n sh -c 'ip link set lo up && exec "$@"' _ python benchmarks/bench_plan.py``.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from sweep import load_spec, resolve, run_sweep, spec_from_dict
from sweep.store._run_store import RunStore

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


def timed_run(sweep, run_dir: str, executor: str, **options):
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    summary = run_sweep(sweep, run_dir, executor=executor, progress=False, **options)
    seconds = time.perf_counter() - t0
    cpu = {k: v - cpu0[k] for k, v in cpu_seconds().items()}
    return summary, seconds, cpu


@dataclass
class Arms:
    """Every timed run of the three arms, the best Ray run's folder and CPU seconds."""

    planned: int
    every: dict[str, list[float]] = field(default_factory=dict)
    hashes: set[str] = field(default_factory=set)
    ray_dir: str = ""
    ray_cpu: dict[str, float] = field(default_factory=dict)

    def best(self, arm: str) -> float:
        return min(self.every[arm])

    def median(self, arm: str) -> float:
        return float(statistics.median(self.every[arm]))


def run_arms(sweep, tmp: str, rounds: int) -> Arms:
    """In-process, Ray planned, Ray with the planner's size given: alternated rounds."""
    # A first Ray run fixes the batch size the planner chooses: the third arm runs Ray with
    # that size given (no pilots, no measurement), so the cost of planning is the
    # difference of the two Ray arms' wall times.
    first = run_sweep(sweep, f"{tmp}/run-first", executor="ray", progress=False)
    options = {"local": {}, "ray": {}, "ray_fixed": {"batch_size": first.plan.batch_size}}
    arms = Arms(first.plan.batch_size, {arm: [] for arm in options}, {first.table_hash})
    for k in range(rounds):
        for arm, extra in options.items():
            run_dir = f"{tmp}/run-{arm}{k}"
            executor = "local" if arm == "local" else "ray"
            summary, seconds, cpu = timed_run(sweep, run_dir, executor, **extra)
            arms.hashes.add(summary.table_hash)
            if arm == "ray" and seconds < min(arms.every[arm], default=float("inf")):
                arms.ray_dir, arms.ray_cpu = run_dir, cpu
            arms.every[arm].append(seconds)
    assert len(arms.hashes) == 1, f"executors disagree: {arms.hashes}"
    return arms


def report_arms(sweep, arms: Arms, rounds: int) -> None:
    session = RunStore(arms.ray_dir).load_manifest().sessions[-1]
    plan = session.plan
    assert plan is not None and session.wall_seconds
    local, ray, fixed = (arms.best(a) for a in ("local", "ray", "ray_fixed"))
    cost, median_cost = ray - fixed, arms.median("ray") - arms.median("ray_fixed")
    print(f"main job: {len(sweep.grid):,} configs, 200 reps; best of {rounds} alternated")
    print(f"  in-process:            {local:7.2f} s")
    print(f"  Ray, 2 workers:        {ray:7.2f} s (cluster started before the clock)")
    print(f"  speedup Ray 2 / local: {local / ray:7.2f}x (goal >= 1.8x)")
    print(f"  Ray, batch size given ({arms.planned}, the planner's choice): {fixed:.2f} s")
    print(
        f"  cost of planning: {cost:+.2f} s = {cost / ray:+.1%} of the planned Ray run, best "
        f"against best; medians {median_cost:+.2f} s = {median_cost / arms.median('ray'):+.1%} "
        "(goal <= 3%)"
    )
    print(
        f"  the plan was made {plan.planning_seconds:.2f} s into the {session.wall_seconds:.2f} s "
        f"session ({plan.source})"
    )
    for arm, times in arms.every.items():
        print(f"  {arm} every round (s): " + " ".join(f"{t:.2f}" for t in sorted(times)))
    cores = os.cpu_count() or 1
    total_cpu = sum(arms.ray_cpu.values())
    print(
        "  CPU seconds in the best Ray run: "
        + ", ".join(f"{k} {v:.2f}" for k, v in arms.ray_cpu.items())
        + f"; {total_cpu:.2f} of the {cores * ray:.2f} its wall time gave {cores} cores"
    )
    print(
        f"  => on {cores} cores no Ray run of this work beats {total_cpu / cores:.2f} s: "
        f"at most {local / (total_cpu / cores):.2f}x in-process here"
    )


def report_plan(predicted, plan_seconds: float, arms: Arms, startup: float) -> None:
    rows = {p.executor + str(p.wall.workers): p.wall.seconds for p in predicted.predictions}
    local, ray = arms.best("local"), arms.best("ray")
    print(f"sweep plan (took {plan_seconds:.1f} s) predicted vs measured:")
    print(f"  in-process: {rows['local1']:7.2f} s predicted, {local:7.2f} s measured")
    print(
        f"  Ray 2:      {rows['ray2']:7.2f} s predicted incl. start-up "
        f"{predicted.ray.startup_seconds if predicted.ray else float('nan'):.2f} s; "
        f"measured {ray:7.2f} s + start-up {startup:.2f} s"
    )
    cross = predicted.crossover_configs
    print(
        f"  crossover: {'none (Ray never first)' if cross is None else f'{cross} configs'}; "
        f"auto: {predicted.choice.chosen}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bands", type=int, default=100, help="bands of the grid (main: 100)")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-plan-")
    token = Path(tmp) / "token"
    token.write_text(secrets.token_hex(32))
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token), RAY_TMPDIR=tmp)
    import ray

    from sweep.plan._preflight import plan_sweep

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
    arms = run_arms(sweep, tmp, args.rounds)
    ray.shutdown()
    report_arms(sweep, arms, args.rounds)
    print(f"  local Ray cluster start-up (ray.init): {startup:.2f} s")
    print(f"  same table hash everywhere: {next(iter(arms.hashes))}")
    report_plan(predicted, plan_seconds, arms, startup)


if __name__ == "__main__":
    main()
