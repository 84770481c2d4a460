"""backtesting.py strategies on raysweep against backtesting.py's own optimiser.

A 1,000-config grid of backtesting.py's ``SmaCross`` on its GOOG daily data (2,148 bars),
``Backtest(cash=10_000, commission=0.002)``, each side running every config:

1. raysweep in-process (``sweep run --executor local``: every row metric and the joint
   bootstrap, parts written) against ``Backtest.optimize(method="grid")`` in one process
   (``backtesting.Pool`` set to a one-thread pool);
2. raysweep on a local Ray cluster of 2 workers (started before the clock) against
   ``optimize`` with its own multiprocessing pool of 2 processes on the same 2 cores.

It prints the wall times, their ratios, the batch size the amortization law chose and the
O (per task) and b (per config) it measured. Run inside a loopback-only namespace (Ray)::

    unshare -n sh -c 'ip link set lo up && exec "$@"' _ \\
        python benchmarks/bench_backtesting.py [--configs 1000] [--rounds 1]
"""

from __future__ import annotations

import argparse
import multiprocessing
import multiprocessing.dummy
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the tests' SmaCross, importable by Ray's workers too

from tests.backtesting_strategies_for_tests import SmaCross  # noqa: E402

OPTIONS = {"cash": 10_000, "commission": 0.002}


def grid(n: int) -> dict[str, list[int]]:
    """``n`` configs (a product of fast and slow windows, 40 fast values)."""
    fast = list(range(2, 42))
    slow = list(range(45, 45 + max(1, n // len(fast))))
    return {"n1": fast, "n2": slow}


def spec(folder: Path, n: int) -> Path:
    """A spec file sweeping SmaCross over ``n`` configs on GOOG (written with its data)."""
    from backtesting.test import GOOG

    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    GOOG.rename(columns=str.lower).rename_axis("date").to_csv(data / "GOOG.csv")
    g = grid(n)
    text = f"""name = "bench-backtesting"
seed = 1
[data]
path = "{data}"
[strategy]
backtesting = "tests.backtesting_strategies_for_tests:SmaCross"
backtest = {{ cash = 10000, commission = 0.002 }}
[grid]
n1 = {g["n1"]}
n2 = {g["n2"]}
[metrics]
bootstrap_reps = 200
"""
    path = folder / "bt.toml"
    path.write_text(text)
    return path


def raysweep(spec_path: Path, run_dir: Path, executor: str) -> tuple[float, object]:
    """Wall seconds of a whole ``sweep run`` and its session summary."""
    from sweep import load_spec, run_sweep

    start = time.perf_counter()
    summary = run_sweep(load_spec(spec_path), run_dir, executor=executor, progress=False)
    return time.perf_counter() - start, summary


def optimize(n: int, processes: int) -> float:
    """Wall seconds of ``Backtest.optimize`` over the grid, in a fresh child process.

    A child of its own: backtesting.py forks its pool, which must not fork a process that
    holds Ray's threads.
    """
    out = subprocess.run(
        [sys.executable, __file__, "--optimize", str(n), str(processes)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(out.strip().splitlines()[-1])


def _optimize_here(n: int, processes: int) -> float:
    """Wall seconds of ``Backtest.optimize`` over the same grid with ``processes`` workers."""
    import backtesting
    from backtesting.test import GOOG

    if processes == 1:
        backtesting.Pool = lambda *a, **k: multiprocessing.dummy.Pool(1)
    else:
        context = multiprocessing.get_context("fork")
        backtesting.Pool = lambda *a, **k: context.Pool(processes)
    bt = backtesting.Backtest(GOOG, SmaCross, **OPTIONS)
    g = grid(n)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bt.optimize(**g, method="grid", maximize="Sharpe Ratio")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--optimize", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.optimize:  # the child process of optimize()
        print(_optimize_here(*args.optimize))
        return
    import ray

    with tempfile.TemporaryDirectory(prefix="bench-bt-") as tmp:
        folder = Path(tmp)
        spec_path = spec(folder, args.configs)
        n = len(grid(args.configs)["n1"]) * len(grid(args.configs)["n2"])
        best: dict[str, float] = {}
        plans: dict[str, object] = {}

        def keep(name: str, seconds: float) -> None:
            best[name] = min(best.get(name, np.inf), seconds)

        for r in range(args.rounds):
            seconds, summary = raysweep(spec_path, folder / f"local-{r}", "local")
            keep("raysweep in-process", seconds)
            plans["in-process"] = summary.plan  # type: ignore[attr-defined]
            keep("optimize, 1 process", optimize(n, 1))
        ray.init(num_cpus=2, include_dashboard=False)
        try:
            for r in range(args.rounds):
                seconds, summary = raysweep(spec_path, folder / f"ray-{r}", "ray")
                keep("raysweep, Ray 2 workers", seconds)
                plans["ray"] = summary.plan  # type: ignore[attr-defined]
                keep("optimize, 2 processes", optimize(n, 2))
        finally:
            ray.shutdown()
    print(f"{n} configs of SmaCross on GOOG, best of {args.rounds}:")
    for name, seconds in best.items():
        print(f"  {name:26s} {seconds:8.1f} s  {n / seconds:7.1f} configs/s")
    one = best["optimize, 1 process"] / best["raysweep in-process"]
    two = best["optimize, 2 processes"] / best["raysweep, Ray 2 workers"]
    print(f"  raysweep in-process / optimize 1 process: {one:.2f}x (goal 0.95x)")
    print(f"  raysweep Ray 2 workers / optimize 2 processes: {two:.2f}x (goal 1.0x)")
    for where, plan in plans.items():
        p = plan  # a sweep.store._record.Plan
        print(
            f"  plan {where}: batch size {p.batch_size} ({p.source}); "  # type: ignore[attr-defined]
            f"O = {p.overhead_seconds * 1e3:.1f} ms, b = {p.per_config_seconds * 1e3:.1f} ms"  # type: ignore[attr-defined]
        )


if __name__ == "__main__":
    main()
