"""Issue 43's goals: this tree against a base commit, measured against the roofline bound.

Each round runs one child process per tree (the base first, then this tree; alternated,
so both see the same load on a shared machine); each child times every workload once after
a warm-up (numba compilation excluded) on one core. Best of ``--rounds`` per tree and
workload. The bound of each workload is :mod:`bench_roofline`'s (the essential operations
at this machine's measured vector rates, divides and gathers included), measured in this
process after the rounds. Workloads:

- ``momentum``: ``evaluate_batch`` of the main job's 10,000 configs without bootstrap, in
  batches of 1,000 (``examples/momentum.toml``, replications set to 0);
- ``momentum_boot``: the same with its 200 joint replications and null summaries;
- ``sma_cross``: ``evaluate_batch`` of ``examples/sma_cross.toml``'s grid (7,925 configs) on
  GOOG daily (1,047 bars), no bootstrap;
- ``sma_kernel``: ``SmaCross.evaluate`` in sub-batches of 64 plus ``stats.path_statistics``
  (what ``bench_sma_cross.py`` times against vectorbt);
- ``close_book``: ``evaluate_batch`` of ``benchmarks/close_book.toml`` (the built-in
  position function ``xs_momentum``, booked at the close, 1,200 configs);
- ``bar_book``: ``evaluate_batch`` of ``examples/breakout_stops.toml`` (a user's position
  function with stops and take-profits filled inside the bar, 100 configs).

The base tree is exported with ``git archive``; both children import the workloads from
*this* tree's ``benchmarks/bench_roofline.py`` (plain API calls), so only the engine differs.

Run: ``python benchmarks/bench_kernels_against_base.py [--base 77e77b2] [--rounds 5]``
(about 4 minutes at 5 rounds).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_against_base import export  # noqa: E402

#: The commit issue 43 started from (its kernels are the base's).
BASE = "77e77b2"

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from bench_roofline import EXAMPLES, goog_panel, run_batches, sma_cross_rows, without_bootstrap
from sweep import load_spec, resolve

def best(fn):
    fn()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0

boot = resolve(load_spec(EXAMPLES / "momentum.toml"))
plain = without_bootstrap(boot)
panel = goog_panel()
sma = without_bootstrap(resolve(load_spec(EXAMPLES / "sma_cross.toml"), panel))
close_book = resolve(load_spec(sys.argv[1] + "/close_book.toml"))
sys.path.insert(0, str(EXAMPLES))
bar_book = resolve(load_spec(EXAMPLES / "breakout_stops.toml"))
pairs = np.array([(f, s) for f in range(5, 51) for s in range(10, 201) if f < s])

def every(sweep):
    return np.arange(len(sweep.grid), dtype=np.int64)

work = {
    "momentum": (len(plain.grid), lambda: run_batches(plain, every(plain))),
    "momentum_boot": (len(boot.grid), lambda: run_batches(boot, every(boot))),
    "sma_cross": (len(sma.grid), lambda: run_batches(sma, every(sma))),
    "sma_kernel": (pairs.shape[0], lambda: sma_cross_rows(panel, pairs)),
    "close_book": (len(close_book.grid), lambda: run_batches(close_book, every(close_book))),
    "bar_book": (len(bar_book.grid), lambda: run_batches(bar_book, every(bar_book))),
}
print(json.dumps({k: n / best(fn) for k, (n, fn) in work.items()}))
"""

#: Workload -> (label, the roofline's essential work, or None where no bound is derived).
LABELS = {
    "momentum": "momentum, main grid, no bootstrap",
    "momentum_boot": "momentum, 200 reps + null summaries",
    "sma_cross": "sma_cross GOOG, evaluate_batch",
    "sma_kernel": "sma_cross GOOG, kernel + path_statistics",
    "close_book": "xs_momentum (position fn), close book",
    "bar_book": "breakout_stops (position fn), bar book",
}


def measure(tree: Path) -> dict[str, float]:
    """configs/s of every workload, from one child process importing ``tree``."""
    cache = Path(tempfile.gettempdir()) / "raysweep-bench-numba" / tree.resolve().name
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "NUMBA_CACHE_DIR": str(cache),
        "NUMBA_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", CHILD, str(REPO / "benchmarks")],
        capture_output=True,
        text=True,
        cwd=tree,
        env=env,
        check=False,
    )
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    rates: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=BASE)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import bench_roofline as roof

    print(roof.cpu_description())
    with open("/proc/loadavg") as fh:
        print(f"load average before: {fh.read().split()[:3]}")
    best: dict[str, dict[str, float]] = {"base": {}, "head": {}}
    with tempfile.TemporaryDirectory(prefix="bench-kernels-") as tmp:
        base_tree = Path(tmp) / "base"
        export(args.base, base_tree)
        for _ in range(args.rounds):
            for side, tree in (("base", base_tree), ("head", REPO)):
                for key, rate in measure(tree).items():
                    best[side][key] = max(best[side].get(key, 0.0), rate)
    machine = roof.measure_machine(args.rounds)
    periods = {"momentum": 6524, "momentum_boot": 6524, "sma_cross": 1046, "sma_kernel": 1046}
    work = {
        "momentum": roof.MOMENTUM,
        "momentum_boot": roof.MOMENTUM_BOOT,
        "sma_cross": roof.SMA_CROSS,
        "sma_kernel": roof.SMA_CROSS_KERNEL,
    }
    print(
        f"\nbest of {args.rounds} alternated rounds, configs/s on one core; bound: "
        "docs/benchmarks/roofline.md at the rates measured now"
    )
    print(
        f"{'workload':42s} {'base':>9s} {'this tree':>10s} {'ratio':>6s} {'bound':>10s} "
        f"{'base/bnd':>9s} {'tree/bnd':>9s}"
    )
    for key, label in LABELS.items():
        b, h = best["base"][key], best["head"][key]
        if key in work:
            limit = roof.bound(work[key], periods[key], machine, machine.gathers_best)
            tail = f"{limit:10,.0f} {b / limit:9.3f} {h / limit:9.3f}"
        else:
            tail = f"{'-':>10s} {'-':>9s} {'-':>9s}"
        print(f"{label:42s} {b:9,.0f} {h:10,.0f} {h / b:6.2f} {tail}")
    print(f"base: {args.base}; this tree: {_head()}")


def _head() -> str:
    out = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.strip()


if __name__ == "__main__":
    main()
