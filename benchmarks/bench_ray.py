"""Ray executor benchmarks, measured side by side in one run (issue: Ray executor).

On the 10,000-config momentum grid with a 50-rep bootstrap (examples/momentum.toml):

1. auto-batched Ray (2 workers) vs the in-process executor on one core, cluster start-up
   excluded (Ray is started before the clock starts);
2. auto-batched Ray vs one task per config (``--batch-size 1``) on a 1,000-config slice of
   the grid, next to the speedup S(B) the amortization law predicts from the planner's
   measured O and b;
3. overhead at the chosen B from telemetry: in-task overhead share and the share of the
   workers' time not spent computing;
4. Ray Tune ``grid_search`` over a 40-config slice (a trainable that evaluates one config and
   reports its Sharpe) vs raysweep on the same slice: wall-time ratio, results compared.

Run inside a loopback-only network namespace (Ray must not bind other addresses):
``unshare -n sh -c 'ip link set lo up && exec "$@"' _ python benchmarks/bench_ray.py``.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
import time
from pathlib import Path

import numpy as np

from stats import AmortizationLaw
from sweep import load_results, load_spec, resolve, run_sweep, spec_from_dict
from sweep.engine._evaluate import evaluate_batch
from sweep.store._run_store import RunStore

SPEC = Path(__file__).resolve().parents[1] / "examples" / "momentum.toml"


def timed_run(spec, run_dir, **kwargs):
    t0 = time.perf_counter()
    summary = run_sweep(spec, run_dir, progress=False, **kwargs)
    return summary, time.perf_counter() - t0


def telemetry_shares(run_dir: str, workers: int, wall: float) -> dict:
    tel = RunStore(run_dir).read_telemetry().to_pandas()
    in_task = (tel["end_time"] - tel["start_time"]).sum()
    compute = tel["compute_seconds"].sum()
    return {
        "tasks": len(tel),
        "in_task_overhead_share": float(1 - compute / in_task),
        "worker_time_not_computing_share": float(1 - compute / (workers * wall)),
    }


def compare_with_tune(sweep, doc: dict, tmp: str, t_auto: float) -> dict:
    """Ray Tune ``grid_search`` over a 40-config slice vs raysweep on it (skipped without
    ``ray[tune]``, which raysweep does not depend on)."""
    try:
        from ray import tune
    except ImportError as exc:
        return {"skipped": f"{exc} (pip install 'ray[tune]' to compare)"}

    doc["grid"] = {"lookback": {"start": 20, "stop": 24}, "band": {"linspace": [0.0, 0.02, 10]}}
    tiny = resolve(spec_from_dict(doc), sweep.panel)
    _mine, t_mine = timed_run(tiny, f"{tmp}/ray-tiny", executor="ray")

    def trainable(config, sweep_obj):
        idx = int(config["index"])
        table = evaluate_batch(sweep_obj, np.array([idx])).table
        return {"sharpe": float(table.column("sharpe")[0].as_py()), "index": idx}

    t0 = time.perf_counter()
    tuner = tune.Tuner(
        tune.with_parameters(trainable, sweep_obj=tiny),
        param_space={"index": tune.grid_search(list(range(len(tiny.grid))))},
        run_config=tune.RunConfig(storage_path=f"{tmp}/tune", verbose=0),
    )
    grid = tuner.fit()
    t_tune = time.perf_counter() - t0
    tune_sharpe = {r.metrics["index"]: r.metrics["sharpe"] for r in grid}
    frame = load_results(f"{tmp}/ray-tiny").set_index("grid_index")
    agree = all(
        np.isclose(frame.loc[i, "sharpe"], s, rtol=0, atol=0) for i, s in tune_sharpe.items()
    )
    return {
        "configs": len(tiny.grid),
        "tune_seconds": t_tune,
        "raysweep_seconds": t_mine,
        "wall_ratio_tune_over_raysweep": t_tune / t_mine,
        "per_config_ratio_vs_full_grid_run": (t_tune / len(tiny.grid)) / (t_auto / len(sweep.grid)),
        "results_agree_exactly": bool(agree),
    }


def main() -> None:
    tmp = tempfile.mkdtemp(prefix="bench-ray-")
    token = Path(tmp) / "token"
    token.write_text(secrets.token_hex(32))
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token), RAY_TMPDIR=tmp)
    import ray

    spec = load_spec(SPEC)
    sweep = resolve(spec)
    out: dict = {}

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    # Cluster start-up excluded: start both workers and load the compiled kernels first.
    warm = spec.to_dict()
    warm["grid"] = {"lookback": [20, 21], "band": [0.0, 0.01]}
    run_sweep(
        resolve(spec_from_dict(warm), sweep.panel), f"{tmp}/warm", executor="ray", progress=False
    )
    evaluate_batch(sweep, np.arange(4))
    t_local = t_auto = np.inf
    for rep in range(3):  # alternate, keep the best of each (a shared, noisy machine)
        local, t = timed_run(sweep, f"{tmp}/local{rep}", executor="local")
        t_local = min(t_local, t)
        auto, t = timed_run(sweep, f"{tmp}/ray-auto{rep}", executor="ray")
        if t < t_auto:
            t_auto, best_auto = t, rep
        assert auto.table_hash == local.table_hash, "Ray and local disagree"
    auto_dir = f"{tmp}/ray-auto{best_auto}"
    out["full_grid"] = {
        "configs": len(sweep.grid),
        "local_seconds": t_local,
        "ray_auto_seconds": t_auto,
        "speedup_ray2_vs_local1": t_local / t_auto,
        "chosen_batch": auto.plan.batch_size,
        "plan": auto.plan.to_json(),
        "same_table_hash": True,
        **telemetry_shares(auto_dir, 2, t_auto),
    }
    o, b = auto.plan.overhead_seconds, auto.plan.per_config_seconds
    out["full_grid"]["law_overhead_share_at_B"] = float(
        AmortizationLaw(o, b).overhead_share(auto.plan.batch_size)
    )

    doc = spec.to_dict()
    doc["grid"] = {"lookback": {"start": 20, "stop": 50, "step": 3}, "band": doc["grid"]["band"]}
    small = resolve(spec_from_dict(doc), sweep.panel)
    per_call, t_one = timed_run(small, f"{tmp}/ray-b1", executor="ray", batch_size=1)
    batched, t_batched = timed_run(small, f"{tmp}/ray-b-auto", executor="ray")
    assert per_call.table_hash == batched.table_hash
    law = AmortizationLaw(batched.plan.overhead_seconds, batched.plan.per_config_seconds)
    out["per_config_tasks"] = {
        "configs": len(small.grid),
        "one_task_per_config_seconds": t_one,
        "auto_batched_seconds": t_batched,
        "measured_speedup": t_one / t_batched,
        "chosen_batch": batched.plan.batch_size,
        "law_predicted_speedup_S_B": float(law.speedup(batched.plan.batch_size)),
        "law_ceiling": float(law.ceiling),
        "note": "one task per config also writes one part per config (fsync each)",
    }

    out["ray_tune"] = compare_with_tune(sweep, doc, tmp, t_auto)
    ray.shutdown()
    print(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
