"""raysweep: distributed, resumable, auditable parameter sweeps for strategy backtests.

Imports run one way: ``sweep`` uses ``strategies`` and ``stats``, which never import it.
Public names are still imported lazily (PEP 562), for start-up: the ``sweep`` console
script imports ``sweep._signals`` and ``sweep._numba_cache`` first, to turn SIGTERM into a
clean exit and to give numba a writable cache folder BEFORE numba loads. An eager
``__init__`` would load the whole engine (numba, pandas, pyarrow, pydantic: about 1.6 s)
before either could happen; ``import sweep.errors`` takes 0.03 s.
"""

import importlib
import typing

from sweep._version import ENGINE_VERSION

_LAZY: dict[str, str] = {
    "Axis": "sweep._grid",
    "BatchPlan": "sweep._planner",
    "BatchResult": "sweep._evaluate",
    "ExecutorChoice": "sweep._record",
    "Grid": "sweep._grid",
    "MetricOptions": "sweep._spec",
    "Panel": "sweep._data",
    "PlannerSettings": "sweep._planner",
    "ResolvedSweep": "sweep._spec",
    "RunSummary": "sweep._driver",
    "SweepError": "sweep.errors",
    "SweepPlan": "sweep._preflight",
    "SweepResult": "sweep._api",
    "SweepSpec": "sweep._spec",
    "check_strategy": "sweep._check_strategy",
    "config_id": "sweep._identity",
    "config_ids": "sweep._identity",
    "config_seed": "sweep._identity",
    "config_stream": "sweep._identity",
    "evaluate_batch": "sweep._evaluate",
    "load_panel": "sweep._data",
    "load_results": "sweep._results",
    "fold_table": "sweep._out_of_sample",
    "load_spec": "sweep._spec",
    "make_panel": "sweep._data",
    "panel_fingerprint": "sweep._data",
    "panel_from_frame": "sweep._data",
    "plan_sweep": "sweep._preflight",
    "python_grid": "sweep._api",
    "report_run": "sweep._api",
    "resume": "sweep._api",
    "run": "sweep._api",
    "resolve": "sweep._spec",
    "results_hash": "sweep._results",
    "results_schema": "sweep._evaluate",
    "results_table": "sweep._results",
    "run_sweep": "sweep._driver",
    "spec_from_dict": "sweep._spec",
    "synthetic_panel": "sweep._data",
    "table_hash": "sweep._table_hash",
}

if typing.TYPE_CHECKING:
    from sweep._api import SweepResult, python_grid, report_run, resume, run
    from sweep._data import (
        Panel,
        load_panel,
        make_panel,
        panel_fingerprint,
        panel_from_frame,
        synthetic_panel,
    )
    from sweep._driver import RunSummary, run_sweep
    from sweep._evaluate import BatchResult, evaluate_batch, results_schema
    from sweep._grid import Axis, Grid
    from sweep._identity import config_id, config_ids, config_seed, config_stream
    from sweep._out_of_sample import fold_table
    from sweep._planner import BatchPlan, PlannerSettings
    from sweep._preflight import SweepPlan, plan_sweep
    from sweep._record import ExecutorChoice
    from sweep._results import load_results, results_hash, results_table
    from sweep._spec import (
        MetricOptions,
        ResolvedSweep,
        SweepSpec,
        load_spec,
        resolve,
        spec_from_dict,
    )
    from sweep._table_hash import table_hash
    from sweep.errors import SweepError

__version__ = ENGINE_VERSION

__all__ = [
    "ENGINE_VERSION",
    "Axis",
    "BatchPlan",
    "BatchResult",
    "ExecutorChoice",
    "Grid",
    "MetricOptions",
    "Panel",
    "PlannerSettings",
    "ResolvedSweep",
    "RunSummary",
    "SweepError",
    "SweepPlan",
    "SweepResult",
    "SweepSpec",
    "__version__",
    "check_strategy",
    "config_id",
    "config_ids",
    "config_seed",
    "config_stream",
    "evaluate_batch",
    "fold_table",
    "load_panel",
    "load_results",
    "load_spec",
    "make_panel",
    "panel_fingerprint",
    "panel_from_frame",
    "plan_sweep",
    "python_grid",
    "report_run",
    "resolve",
    "results_hash",
    "results_schema",
    "results_table",
    "resume",
    "run",
    "run_sweep",
    "spec_from_dict",
    "synthetic_panel",
    "table_hash",
]


def __getattr__(name: str) -> typing.Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'sweep' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
