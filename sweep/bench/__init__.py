"""``sweep bench``: measure the cluster a sweep runs on (overhead, amortization, scaling).

Results are saved as ``<kind>.json`` and ``<kind>.png`` (default ``runs/bench``), where
``sweep report`` finds them for its scaling section.
"""

from sweep.bench._amortization import AmortizationSettings, measure_amortization
from sweep.bench._io import BENCH_KINDS, load_bench, local_reader, write_bench
from sweep.bench._overhead import OverheadSettings, measure_overhead
from sweep.bench._plots import PLOTS as BENCH_PLOTS
from sweep.bench._plots import plot_amortization, plot_overhead, plot_scaling
from sweep.bench._run import DEFAULT_BENCH_DIR, BenchOutcome, run_bench
from sweep.bench._scaling import ScalingSettings, measure_scaling

__all__ = [
    "BENCH_KINDS",
    "BENCH_PLOTS",
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
    "plot_overhead",
    "plot_scaling",
    "run_bench",
    "write_bench",
]
