"""``sweep bench``: measure the cluster a sweep runs on (overhead, amortization, scaling).

Results are saved as ``<kind>.json`` and ``<kind>.png`` (default ``runs/bench``), where
``sweep report`` finds them for its scaling section.

May import ``common`` to ``plan`` (it runs executors and the planner) and ``report`` (its
figures of bench results); never ``run`` or the CLI.
"""

from sweep.bench._io import write_bench
from sweep.bench._measure_amortization import AmortizationSettings, measure_amortization
from sweep.bench._measure_overhead import OverheadSettings, measure_overhead
from sweep.bench._measure_scaling import ScalingSettings, measure_scaling
from sweep.bench._run import BenchOutcome, run_bench
from sweep.report._bench_figures import plot_amortization, plot_bench, plot_overhead, plot_scaling
from sweep.store._bench_results import BENCH_KINDS, DEFAULT_BENCH_DIR, load_bench, local_reader

__all__ = [
    "BENCH_KINDS",
    "DEFAULT_BENCH_DIR",
    "AmortizationSettings",
    "BenchOutcome",
    "OverheadSettings",
    "ScalingSettings",
    "load_bench",
    "local_reader",
    "measure_amortization",
    "measure_overhead",
    "measure_scaling",
    "plot_amortization",
    "plot_bench",
    "plot_overhead",
    "plot_scaling",
    "run_bench",
    "write_bench",
]
