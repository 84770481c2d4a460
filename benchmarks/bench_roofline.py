"""Measured configs/s of three kernels against a bound derived from their essential work.

Issue 43, deliverable 1 ("the bound, written down"); the derivation and the operation
counts are in ``docs/benchmarks/roofline.md``. Everything runs in this process on one core:

1. The machine: CPU model, numpy's SIMD levels, numba's target; the clock from a dependent
   chain of scalar float64 adds (latency 3 cycles on Zen 3 and Zen 4); vectorised adds,
   adds + multiplies, and divides per second (loops over an L1-resident array that LLVM
   vectorises, reductions with ``fastmath={"reassoc"}`` so four or more vector accumulators
   run side by side; no FMA contraction); gathered adds per second (the bootstrap's
   block-sum table read at the joint draws' block starts: the engine's own loop and one that
   keeps the accumulators in registers, same bits).
2. configs/s, best of ``--rounds``: momentum on ``examples/momentum.toml``'s 10,000-config
   grid through ``evaluate_batch`` in batches of 1,000 (as ``bench_kernels.py``), without
   bootstrap and with 200 joint replications; ``sma_cross`` on matplotlib's GOOG daily sample
   (1,047 closes, 7,925 configs) as ``bench_sma_cross.py`` times raysweep (the kernel in
   sub-batches of 64, then ``stats.path_statistics``).
3. The bound of each kernel from the measured rates and the counts below, and
   measured / bound; then (unless ``--no-profile``) the momentum stage breakdown from cProfile.

Run: ``python benchmarks/bench_roofline.py [--rounds N] [--no-profile]`` (about 20 s).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import platform
import pstats
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numba
import numpy as np

from stats import path_statistics
from strategies.sma_cross import SmaCross
from sweep import evaluate_batch, load_spec, resolve, spec_from_dict
from sweep.data._panels import make_panel
from sweep.engine._metrics import shared_draws

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SUB_BATCH = 64
#: Latency of a dependent float64 add, cycles (Zen 2, 3 and 4; Intel since Skylake: 4).
ADD_LATENCY = 3


# ---- counts per config-period (derivation: docs/benchmarks/roofline.md) -------------------------
@dataclass(frozen=True)
class Work:
    """Essential work of one kernel: per config-period and per config."""

    ops: float  # adds, subtracts, multiplies, compares, selects, abs, max
    divides: float  # true divides (kept: x / 3 and x * (1/3) differ in the last bit)
    per_config_gathers: float = 0.0  # bootstrap gathered adds (reps x fixed-length blocks)
    per_config_ops: float = 0.0  # per-config, per-replication work (null statistics)
    per_config_divides: float = 0.0


#: momentum (3 assets): positions 29 + 2 divides, isfinite 1, path_statistics of the returns
#: 13 + 1 divide (moments, mean of the next row, equity, drawdown), excess 1,
#: path_statistics of the excess 11 (moments, block sums), turnover 1, fold sums 2.9
#: (3 ops on the 6,295 of 6,524 periods inside fold segments).
MOMENTUM = Work(ops=59.0, divides=3.0)
#: with 200 replications: + prefix sums 1, block-sum table 3, long-run variance 8 per period;
#: 200 x 310 gathered adds per config; per replication 12 ops and 3 divides (last block,
#: mean, p-value count, studentised value, three maxima, top-k test).
MOMENTUM_BOOT = Work(
    ops=59.0 + 12.0,
    divides=3.0,
    per_config_gathers=200 * 310,
    per_config_ops=200 * 12.0,
    per_config_divides=200 * 3.0,
)
#: sma_cross through evaluate_batch (benchmark zero, no bootstrap): held state and outputs 12,
#: isfinite 1, path_statistics with 16 block sums 16 + 1 divide, turnover 1.
SMA_CROSS = Work(ops=30.0, divides=1.0)
#: sma_cross as bench_sma_cross.py times it: held state 12, path_statistics 13 + 1 divide.
SMA_CROSS_KERNEL = Work(ops=25.0, divides=1.0)
#: The issue's counts (its bound: every operation at the add/multiply rate, no divide term).
ISSUE_OPS = {"momentum": 60.0, "momentum_boot": 60.0, "sma_cross": 28.0, "sma_kernel": 28.0}


# ---- machine rates ------------------------------------------------------------------------
@numba.njit(cache=False)
def _dependent_adds(x, reps):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    s = 0.0
    for _ in range(reps):
        for k in range(x.shape[0]):
            s += x[k]
    return s


@numba.njit(cache=False, fastmath={"reassoc", "nsz"})
def _vector_adds(x, reps):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    s = 0.0
    for _ in range(reps):
        for k in range(x.shape[0]):
            s += x[k]
    return s


@numba.njit(cache=False, fastmath={"reassoc", "nsz"})
def _vector_adds_muls(x, reps):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    s = 0.0
    p = 1.0
    for _ in range(reps):
        for k in range(x.shape[0]):
            s += x[k]
            p *= x[k]
    return s + p


@numba.njit(cache=False, error_model="numpy")
def _vector_divides(x, y, out, reps):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    for _ in range(reps):
        for k in range(x.shape[0]):
            out[k] = x[k] / y[k]


@numba.njit(cache=False)
def _add_table_blocks(table, starts, n_fixed, acc):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """The base's gather loop (77e77b2's ``stats._data_snooping._add_table_blocks``), kept
    here as the reference rate of gathered adds: blocks ``0 .. n_fixed - 1`` of every
    replication, read from ``table`` and added to ``acc`` in memory."""
    reps, g = acc.shape
    for j in range(n_fixed):
        for b in range(reps):
            s = starts[j, b]
            for c in range(g):
                acc[b, c] += table[s, c]


@numba.njit(cache=False)
def _gather_in_registers(table, starts_t, n_fixed, acc):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``_add_table_blocks`` (8 columns) with two replications' sums held in registers."""
    for b in range(0, starts_t.shape[0], 2):
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
        e0 = e1 = e2 = e3 = e4 = e5 = e6 = e7 = 0.0
        for j in range(n_fixed):
            s = starts_t[b, j]
            r = starts_t[b + 1, j]
            a0 += table[s, 0]
            a1 += table[s, 1]
            a2 += table[s, 2]
            a3 += table[s, 3]
            a4 += table[s, 4]
            a5 += table[s, 5]
            a6 += table[s, 6]
            a7 += table[s, 7]
            e0 += table[r, 0]
            e1 += table[r, 1]
            e2 += table[r, 2]
            e3 += table[r, 3]
            e4 += table[r, 4]
            e5 += table[r, 5]
            e6 += table[r, 6]
            e7 += table[r, 7]
        acc[b, 0], acc[b, 1], acc[b, 2], acc[b, 3] = a0, a1, a2, a3
        acc[b, 4], acc[b, 5], acc[b, 6], acc[b, 7] = a4, a5, a6, a7
        acc[b + 1, 0], acc[b + 1, 1], acc[b + 1, 2], acc[b + 1, 3] = e0, e1, e2, e3
        acc[b + 1, 4], acc[b + 1, 5], acc[b + 1, 6], acc[b + 1, 7] = e4, e5, e6, e7


def best_seconds(fn: Callable[[], Any], rounds: int) -> float:
    fn()  # compile / warm up
    best = np.inf
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return float(best)


@dataclass(frozen=True)
class Machine:
    clock_hz: float
    adds: float  # vector adds / s
    ops: float  # vector adds + multiplies / s
    divides: float  # vector divides / s
    gathers_engine: float  # gathered adds / s, the engine's loop
    gathers_best: float  # gathered adds / s, accumulators in registers
    sha256_s: float  # seconds per hashlib.sha256 of one 560-byte row, from Python


def cpu_description() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    keep = ("Model name", "CPU family", "Model:", "L2 cache", "Hypervisor")
    lines = [ln.split(":", 1) for ln in out.splitlines() if ln.startswith(keep)]
    from llvmlite import binding
    from numpy._core._multiarray_umath import __cpu_features__ as features

    simd = [k for k in ("AVX2", "FMA3", "AVX512F", "AVX512_SKX") if features.get(k)]
    host = numba.config.CPU_NAME or binding.get_host_cpu_name()
    parts = [f"{k.strip()}: {v.strip()}" for k, v in lines]
    return (
        "; ".join(parts) + f"; numpy CPU features {'/'.join(simd)}; numba target {host}; "
        f"{platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}"
    )


def aligned(shape: tuple[int, ...], offset: int = 0) -> np.ndarray:
    """A float64 array whose data starts ``offset`` bytes past a 64-byte (cache line) boundary."""
    size = int(np.prod(shape))
    buf = np.empty(size + 16)
    start = (-buf.ctypes.data % 64 + offset) // 8
    return buf[start : start + size].reshape(shape)


def measure_machine(rounds: int) -> Machine:
    """Rates on cache-line-aligned arrays (a misaligned 64-byte row costs two line reads)."""
    x = aligned((1024,))
    x[:] = 1.0000001
    y = aligned((1024,))
    y[:] = 1.0000003
    out = aligned((1024,))
    reps = 40_000
    n = x.shape[0] * reps
    chain = best_seconds(lambda: _dependent_adds(x, reps), rounds)
    adds = best_seconds(lambda: _vector_adds(x, reps), rounds)
    mixed = best_seconds(lambda: _vector_adds_muls(x, reps), rounds)
    div = best_seconds(lambda: _vector_divides(x, y, out, reps // 4), rounds)
    draws = shared_draws(20261130, 6524, 21, 200, "circular")
    n_fixed = draws.starts.shape[0] - 1
    table = aligned((6524, 8))
    table[:] = np.random.default_rng(0).standard_normal((6524, 8))
    acc = aligned((200, 8))
    starts_t = np.ascontiguousarray(draws.starts.T)
    engine = best_seconds(lambda: _add_table_blocks(table, draws.starts, n_fixed, acc), rounds)
    best = best_seconds(lambda: _gather_in_registers(table, starts_t, n_fixed, acc), rounds)
    gathered = n_fixed * 200 * 8
    row = bytes(560)  # about one results row as the table hash encodes it
    hashes = best_seconds(lambda: [hashlib.sha256(row).digest() for _ in range(10_000)], rounds)
    return Machine(
        clock_hz=ADD_LATENCY * n / chain,
        adds=n / adds,
        ops=2 * n / mixed,
        divides=n / 4 / div,
        gathers_engine=gathered / engine,
        gathers_best=gathered / best,
        sha256_s=hashes / 10_000,
    )


def bound(work: Work, periods: int, m: Machine, gathers: float) -> float:
    """configs/s if every essential operation ran at the measured vector rates."""
    seconds = periods * (work.ops / m.ops + work.divides / m.divides)
    seconds += work.per_config_ops / m.ops + work.per_config_divides / m.divides
    seconds += work.per_config_gathers / gathers if work.per_config_gathers else 0.0
    return 1.0 / seconds


# ---- kernels ------------------------------------------------------------------------------
def without_bootstrap(sweep: Any) -> Any:
    doc = sweep.spec.to_dict()
    doc["metrics"]["bootstrap_reps"] = 0
    return resolve(spec_from_dict(doc), sweep.panel)


def run_batches(sweep: Any, idx: np.ndarray, size: int = 1000) -> None:
    for lo in range(0, idx.shape[0], size):
        evaluate_batch(sweep, idx[lo : lo + size])


def goog_panel() -> Any:
    from matplotlib import cbook

    data = cbook.get_sample_data("goog.npz")["price_data"]
    close = np.asarray(data["adj_close"], dtype=np.float64)
    return make_panel(np.asarray(data["date"]), ["GOOG"], close[:, np.newaxis])


def sma_cross_rows(panel: Any, pairs: np.ndarray) -> None:
    kernel = SmaCross()
    for lo in range(0, pairs.shape[0], SUB_BATCH):
        chunk = pairs[lo : lo + SUB_BATCH]
        params = {
            "fast": chunk[:, 0].astype(np.int64),
            "slow": chunk[:, 1].astype(np.int64),
            "fees": np.full(chunk.shape[0], 0.001),
            "asset": np.zeros(chunk.shape[0], dtype=np.int64),
        }
        path_statistics(kernel.evaluate(panel, params, []).returns)


# ---- stage breakdown ----------------------------------------------------------------------
#: (label, [(file, function)] as cProfile lists them); cumulative times, made disjoint below.
STAGES = (
    (
        "strategy: time loop",
        [("momentum.py", "_banded_positions"), ("sma_cross.py", "_crossover_rows")],
    ),
    (
        "strategy: signals / SMAs, fixed_log",
        [("momentum.py", "evaluate"), ("sma_cross.py", "evaluate")],
    ),
    (
        "path_statistics",
        [("_row_kernel.py", "path_statistics"), ("_row_kernel.py", "paired_path_statistics")],
    ),
    ("fold values", [("_folds.py", "fold_values"), ("_folds.py", "excess_fold_values")]),
    ("centred_resample_means", [("_data_snooping.py", "centred_resample_means")]),
    ("bootstrap_long_run_sd", [("_bootstrap_variance.py", "bootstrap_long_run_sd")]),
    ("config_metrics, rest", [("_metrics.py", "config_metrics")]),
    ("null summaries (summarize_null)", [("_data_snooping.py", "summarize_null")]),
    ("fold summaries (summarize_folds)", [("_folds.py", "summarize_folds")]),
    (
        "finite / overflow checks",
        [("_evaluate.py", "_non_finite_returns"), ("_evaluate.py", "_overflowed_sums")],
    ),
    ("config ids", [("_evaluate.py", "config_ids_at")]),
    ("arrow table", [("_evaluate.py", "_table")]),
    ("row hashing (with_part_digest)", [("_row_set_hash.py", "with_part_digest")]),
    (
        "part metadata (summaries, env)",
        [
            ("_part_environment.py", "with_environment"),
            ("_null_summary.py", "with_summary"),
            ("_fold_summary.py", "with_folds"),
        ],
    ),
)


def stage_shares(sweep: Any, idx: np.ndarray) -> tuple[float, dict[str, float]]:
    """Seconds of evaluate_batch per stage under cProfile, and their total."""
    prof = cProfile.Profile()
    prof.enable()
    run_batches(sweep, idx)
    prof.disable()
    raw: dict[tuple[str, str], float] = {}
    stats: Any = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    for (path, _line, name), (_cc, _nc, _tt, ct, _callers) in stats.items():
        raw[(Path(path).name, name)] = raw.get((Path(path).name, name), 0.0) + ct
    total = raw.get(("_evaluate.py", "evaluate_batch"), 0.0)
    out = {label: sum(raw.get(k, 0.0) for k in keys) for label, keys in STAGES}
    out["strategy: signals / SMAs, fixed_log"] -= out["strategy: time loop"]
    inner = ("path_statistics", "fold values", "centred_resample_means", "bootstrap_long_run_sd")
    out["config_metrics, rest"] -= sum(out[k] for k in inner)
    out["everything else"] = total - sum(out.values())
    return total, out


def print_shares(title: str, sweep: Any, idx: np.ndarray) -> None:
    total, shares = stage_shares(sweep, idx)
    print(f"\n{title}: stage shares of evaluate_batch under cProfile ({total:.2f} s)")
    for stage, seconds in sorted(shares.items(), key=lambda kv: -kv[1]):
        if seconds > 0.0005:
            print(f"  {stage:36s} {seconds:7.3f} s {seconds / total:6.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-profile", action="store_true")
    args = parser.parse_args()
    print(cpu_description())
    with open("/proc/loadavg") as fh:
        print(f"load average before: {fh.read().split()[:3]}")
    m = measure_machine(args.rounds)
    print(
        f"clock (dependent adds x {ADD_LATENCY}): {m.clock_hz / 1e9:.2f} GHz; vector adds "
        f"{m.adds / 1e9:.1f} G/s ({m.adds / m.clock_hz:.1f}/cycle); adds+multiplies "
        f"{m.ops / 1e9:.1f} G/s ({m.ops / m.clock_hz:.1f}/cycle); divides "
        f"{m.divides / 1e9:.2f} G/s ({m.divides / m.clock_hz:.2f}/cycle); gathered adds "
        f"{m.gathers_engine / 1e9:.2f} G/s (engine loop), {m.gathers_best / 1e9:.2f} G/s "
        f"(registers); sha256 of a 560-byte row {m.sha256_s * 1e6:.2f} us"
    )

    boot = resolve(load_spec(EXAMPLES / "momentum.toml"))
    no_boot = without_bootstrap(boot)
    idx = np.arange(len(boot.grid), dtype=np.int64)
    panel = goog_panel()
    sma = without_bootstrap(resolve(load_spec(EXAMPLES / "sma_cross.toml"), panel))
    sidx = np.arange(len(sma.grid), dtype=np.int64)
    pairs = np.array([(f, s) for f in range(5, 51) for s in range(10, 201) if f < s])

    def rate(n: int, fn: Callable[[], Any]) -> float:
        return n / best_seconds(fn, args.rounds)

    measured = {
        "momentum": rate(idx.shape[0], lambda: run_batches(no_boot, idx)),
        "momentum_boot": rate(idx.shape[0], lambda: run_batches(boot, idx)),
        "sma_cross": rate(sidx.shape[0], lambda: run_batches(sma, sidx)),
        "sma_kernel": rate(pairs.shape[0], lambda: sma_cross_rows(panel, pairs)),
    }
    t_mom, t_sma = boot.n_returns, sma.n_returns
    rows = (
        ("momentum, main grid, no bootstrap", "momentum", MOMENTUM, t_mom),
        ("momentum, 200 reps + null summaries", "momentum_boot", MOMENTUM_BOOT, t_mom),
        (f"sma_cross, GOOG {t_sma + 1} bars, evaluate_batch", "sma_cross", SMA_CROSS, t_sma),
        ("sma_cross, GOOG, kernel + path_statistics", "sma_kernel", SMA_CROSS_KERNEL, t_sma),
    )
    print(
        f"\n{'kernel (one core, best of ' + str(args.rounds) + ')':44s} {'ops+div':>8s} "
        f"{'measured':>9s} {'bound':>10s} {'ratio':>6s} {'issue-way':>10s} {'ratio':>6s} "
        f"{'+2 sha256':>10s} {'ratio':>6s}"
    )
    for label, key, work, periods in rows:
        b = bound(work, periods, m, m.gathers_best)
        # The issue's way: its op count, all at the add/multiply rate, no divide term.
        plain = Work(ISSUE_OPS[key], 0.0, work.per_config_gathers, work.per_config_ops)
        b_issue = bound(plain, periods, m, m.gathers_best)
        # Rows made by evaluate_batch also pay a config id and a row digest (sha256 each).
        b_hash = 1.0 / (1.0 / b + 2 * m.sha256_s) if key != "sma_kernel" else b
        count = f"{work.ops:.0f}+{work.divides:.0f}"
        print(
            f"{label:44s} {count:>8s} {measured[key]:9,.0f} {b:10,.0f} "
            f"{measured[key] / b:6.3f} {b_issue:10,.0f} {measured[key] / b_issue:6.3f} "
            f"{b_hash:10,.0f} {measured[key] / b_hash:6.3f}"
        )
    b_engine = bound(MOMENTUM_BOOT, t_mom, m, m.gathers_engine)
    print(
        f"(momentum, 200 reps, gathers at the engine loop's rate: bound {b_engine:,.0f}, "
        f"measured / bound {measured['momentum_boot'] / b_engine:.3f})"
    )
    if args.no_profile:
        return
    print_shares("momentum, no bootstrap", no_boot, idx)
    print_shares("momentum, 200 reps", boot, idx)
    print_shares("sma_cross GOOG, no bootstrap", sma, sidx)


if __name__ == "__main__":
    main()
