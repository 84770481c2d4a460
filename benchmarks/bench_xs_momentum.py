"""Cross-sectional momentum at scale: 500 assets x 5,000 days, 1,000 configs.

A generated panel (geometric random walks, seeded; 30% of the assets list late or delist
early, so the live mask is exercised) and a 1,000-config grid of ``xs_momentum``
(20 lookbacks x 10 values of top_k x 5 skips) with 5 bps fees, 2 bps slippage and 1 bp of
borrow per period. The grid is split evenly over ``--workers`` worker processes (spawned,
as Ray workers are); each builds the panel, resolves the sweep and runs
``sweep.evaluate_batch`` (strategy, accounting and every metric, 200 bootstrap
replications) on its share, and reports its configs/s and its peak resident memory
(``ru_maxrss``) before and after. Wall time and the process's CPU time are both reported:
on a shared machine the CPU time says what a dedicated core would do. Timing starts after
a one-config warm-up (numba compilation excluded).

Run: ``python benchmarks/bench_xs_momentum.py [--configs N] [--workers W]``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import time

import numpy as np
import pandas as pd

N_ASSETS, N_DATES = 500, 5000


def generated_panel(seed: int = 7):  # type: ignore[no-untyped-def]
    from strategies import Panel

    rng = np.random.default_rng(seed)
    close = 40 * np.exp(np.cumsum(rng.normal(0.0002, 0.02, (N_DATES, N_ASSETS)), axis=0))
    live = np.ones((N_DATES, N_ASSETS), dtype=bool)
    for a in rng.choice(N_ASSETS, size=N_ASSETS * 3 // 10, replace=False):
        start, end = sorted(rng.integers(0, N_DATES, size=2))
        live[:start, a] = False
        live[end + 1 :, a] = False
        if start > 0:
            close[:start, a] = close[start, a]
        close[end + 1 :, a] = close[end, a]
    dates = pd.bdate_range("2005-01-03", periods=N_DATES).to_numpy()
    return Panel(dates, tuple(f"S{i:03d}" for i in range(N_ASSETS)), close, {}, live)


def grid() -> dict[str, object]:
    return {
        "lookback": np.linspace(21, 252, 20).round().astype(int).tolist(),
        "top_k": list(range(5, 51, 5)),
        "skip": [0, 5, 10, 21, 42],
    }


def worker(indices: list[int], queue: mp.Queue) -> None:  # type: ignore[type-arg]
    from sweep import evaluate_batch, resolve, spec_from_dict

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    panel = generated_panel()
    spec = spec_from_dict(
        {
            "name": "xs-bench",
            "seed": 1,
            "strategy": {"name": "xs_momentum"},
            "grid": grid(),
            "costs": {"fee_bps": 5.0, "slippage_bps": 2.0, "borrow_bps": 1.0},
            "metrics": {"bootstrap_reps": 200, "block_length": 21, "pbo_blocks": 16},
        }
    )
    sweep = resolve(spec, panel)
    evaluate_batch(sweep, np.array(indices[:1]))  # warm-up: numba compiles
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start, cpu = time.perf_counter(), time.process_time()
    result = evaluate_batch(sweep, np.array(indices, dtype=np.int64))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    queue.put((len(indices), seconds, cpu, base, loaded, peak, result.n_errors))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    positions = np.random.default_rng(0).permutation(1000)[: args.configs].tolist()
    shares = [positions[w :: args.workers] for w in range(args.workers)]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    start = time.perf_counter()
    procs = [ctx.Process(target=worker, args=(s, queue)) for s in shares]
    for p in procs:
        p.start()
    results = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    wall = time.perf_counter() - start
    print(
        f"xs_momentum: {N_ASSETS} assets x {N_DATES} days, {args.configs} configs, "
        f"{args.workers} workers; load {os.getloadavg()}"
    )
    for i, (n, seconds, cpu, base, loaded, peak, errors) in enumerate(results):
        print(
            f"worker {i}: {n} configs in {seconds:.1f} s = {n / seconds:.2f} configs/s "
            f"(CPU time {cpu:.1f} s = {n / cpu:.2f} configs per CPU-second); "
            f"peak RSS {peak / 1024:.0f} MiB (interpreter {base / 1024:.0f} MiB, after panel "
            f"and warm-up {loaded / 1024:.0f} MiB); {errors} failed"
        )
    total = sum(r[0] for r in results)
    slowest = max(r[1] for r in results)
    print(
        f"all workers: {total / slowest:.2f} configs/s (slowest worker's time); "
        f"wall {wall:.1f} s including start-up and compilation"
    )


if __name__ == "__main__":
    main()
