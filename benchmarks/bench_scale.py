"""Driver memory and resume planning at scale (issue: checkpoint store and driver).

A cheap sweep (momentum without bootstrap on a 2-year panel) of 100,000 and 1,000,000
configs, each run by a fresh driver process that reports its own peak RSS; then a
1,000,000-config run folder left 90% done is resumed and the time to find the remaining
work (re-hash every part, read the grid_index column, build the to-do array) is measured.
Run: ``python benchmarks/bench_scale.py [--out DIR]`` (takes a few minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile

DRIVER = r"""
import json, resource, sys, time
import numpy as np
from sweep import run_sweep, spec_from_dict
from sweep.executors._local import LocalExecutor

n_bands, run_dir, stop_fraction = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
spec = spec_from_dict({
    "name": "scale", "seed": 1, "data": {"source": "synthetic", "years": 2},
    "strategy": {"name": "momentum"},
    "grid": {"lookback": {"start": 2, "stop": 502}, "band": {"linspace": [0.0, 0.02, n_bands]}},
    "metrics": {"bootstrap_reps": 0, "pbo_blocks": 16},
})
total = 500 * n_bands

class StopAt(LocalExecutor):
    def run(self, batches):
        done = 0
        for outcome in super().run(batches):
            yield outcome
            done += len(outcome.indices)
            if done >= stop_fraction * total:
                return

t0 = time.perf_counter()
summary = run_sweep(spec, run_dir, executor=StopAt(), batch_size=5000, progress=False)
print(json.dumps({"configs": total, "done": summary.done, "seconds": time.perf_counter() - t0,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

PLAN = r"""
import json, resource, sys, time
import numpy as np
from sweep.store._run_store import RunStore
store = RunStore(sys.argv[1])
t0 = time.perf_counter()
checks = store.verify_parts()
total = int(store.read_manifest()["grid"]["size"])
done = store.done_mask(total, [c.name for c in checks if c.ok])
todo = np.flatnonzero(~done)
print(json.dumps({"parts": len(checks), "todo": int(todo.shape[0]),
                  "planning_seconds": time.perf_counter() - t0,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(code: str, *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.out) as tmp:
        small = run(DRIVER, "200", f"{tmp}/s100k", "1.0")
        large = run(DRIVER, "2000", f"{tmp}/s1m", "1.0")
        partial = run(DRIVER, "2000", f"{tmp}/p1m", "0.9")
        planning = run(PLAN, f"{tmp}/p1m")
    print(
        json.dumps(
            {
                "sweep_100k": small,
                "sweep_1m": large,
                "partial_1m": partial,
                "resume_planning_1m": planning,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
