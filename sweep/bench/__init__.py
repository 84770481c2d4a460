"""``sweep bench``: measure the cluster a sweep runs on (overhead, amortization, scaling).

Results are saved as ``<kind>.json`` and ``<kind>.png`` (default ``runs/bench``), where
``sweep report`` finds them for its scaling section; the records they hold, and how they
are read, are :mod:`sweep.store._bench_results`'s.

May import ``common`` to ``plan`` (it runs executors and the planner) and ``report`` (its
figures of bench results); never ``runner`` or the CLI.
"""

from sweep.bench._measure_amortization import AmortizationSettings, measure_amortization
from sweep.bench._measure_overhead import OverheadSettings, measure_overhead
from sweep.bench._measure_scaling import ScalingSettings, measure_scaling
from sweep.bench._run import BenchOutcome, run_bench

__all__ = [
    "AmortizationSettings",
    "BenchOutcome",
    "OverheadSettings",
    "ScalingSettings",
    "measure_amortization",
    "measure_overhead",
    "measure_scaling",
    "run_bench",
]
