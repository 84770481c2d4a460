"""raysweep: distributed, resumable, auditable parameter sweeps for strategy backtests."""

from sweep._data import Panel, load_panel, make_panel, panel_fingerprint, synthetic_panel
from sweep._driver import RunSummary, run_sweep
from sweep._evaluate import BatchResult, evaluate_batch, results_schema
from sweep._grid import Axis, Grid
from sweep._identity import config_id, config_ids, config_seed, config_stream
from sweep._planner import BatchPlan, PlannerSettings
from sweep._results import load_results, results_hash, results_table
from sweep._spec import MetricOptions, ResolvedSweep, SweepSpec, load_spec, resolve, spec_from_dict
from sweep._table_hash import table_hash
from sweep._version import ENGINE_VERSION
from sweep.errors import SweepError

__version__ = ENGINE_VERSION

__all__ = [
    "ENGINE_VERSION",
    "Axis",
    "BatchPlan",
    "BatchResult",
    "Grid",
    "MetricOptions",
    "Panel",
    "PlannerSettings",
    "ResolvedSweep",
    "RunSummary",
    "SweepError",
    "SweepSpec",
    "__version__",
    "config_id",
    "config_ids",
    "config_seed",
    "config_stream",
    "evaluate_batch",
    "load_panel",
    "load_results",
    "load_spec",
    "make_panel",
    "panel_fingerprint",
    "resolve",
    "results_hash",
    "results_schema",
    "results_table",
    "run_sweep",
    "spec_from_dict",
    "synthetic_panel",
    "table_hash",
]
