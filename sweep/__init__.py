"""raysweep: distributed, resumable, auditable parameter sweeps for strategy backtests.

Imports run one way: ``sweep`` uses ``strategies`` and ``stats``, which never import it.
Public names are still imported lazily (PEP 562), for start-up: the ``sweep`` console
script imports ``sweep.common._signals`` and ``sweep.common._numba_cache`` first, to turn
SIGTERM into a clean exit and to give numba a writable cache folder BEFORE numba loads. An eager
``__init__`` would load the whole engine (numba, pandas, pyarrow, pydantic: about 1.6 s)
before either could happen; ``import sweep.errors`` takes 0.03 s.
"""

import importlib
import typing

from sweep._version import ENGINE_VERSION

_LAZY: dict[str, str] = {
    "Axis": "sweep.spec._grid",
    "BatchResult": "sweep.engine._evaluate",
    "Grid": "sweep.spec._grid",
    "MetricOptions": "sweep.spec._models",
    "Panel": "sweep.data._panels",
    "PlannerSettings": "sweep.plan._planner",
    "ReproduceSettings": "sweep.runner._reproduce",
    "Reproduction": "sweep.runner._reproduce",
    "ResolvedSweep": "sweep.spec._resolve",
    "RunSummary": "sweep.runner._driver",
    "SweepError": "sweep.errors",
    "SweepPlan": "sweep.plan._preflight",
    "SweepResult": "sweep._api",
    "SweepSpec": "sweep.spec._models",
    "check_strategy": "sweep.cli._check_strategy",
    "config_id": "sweep.spec._config_identity",
    "config_ids": "sweep.spec._config_identity",
    "config_seed": "sweep.spec._config_identity",
    "config_stream": "sweep.spec._config_identity",
    "evaluate_batch": "sweep.engine._evaluate",
    "load_panel": "sweep.data._panels",
    "load_results": "sweep.store._results",
    "fold_table": "sweep.report._oos_selection",
    "load_spec": "sweep.spec._models",
    "make_panel": "sweep.data._panels",
    "panel_fingerprint": "sweep.data._panels",
    "panel_from_frame": "sweep.data._panels",
    "plan_sweep": "sweep.plan._preflight",
    "python_grid": "sweep._api",
    "report_run": "sweep._api",
    "reproduce": "sweep._api",
    "resume": "sweep._api",
    "run": "sweep._api",
    "resolve": "sweep.spec._resolve",
    "results_hash": "sweep.store._results",
    "results_schema": "sweep.engine._evaluate",
    "results_table": "sweep.store._results",
    "run_sweep": "sweep.runner._driver",
    "spec_from_dict": "sweep.spec._models",
    "synthetic_panel": "sweep.data._panels",
    "table_hash": "sweep.store._table_hash",
}

if typing.TYPE_CHECKING:
    from sweep._api import SweepResult, python_grid, report_run, reproduce, resume, run
    from sweep.data._panels import (
        Panel,
        load_panel,
        make_panel,
        panel_fingerprint,
        panel_from_frame,
        synthetic_panel,
    )
    from sweep.engine._evaluate import BatchResult, evaluate_batch, results_schema
    from sweep.errors import SweepError
    from sweep.plan._planner import PlannerSettings
    from sweep.plan._preflight import SweepPlan, plan_sweep
    from sweep.report._oos_selection import fold_table
    from sweep.runner._driver import RunSummary, run_sweep
    from sweep.runner._reproduce import ReproduceSettings, Reproduction
    from sweep.spec._config_identity import config_id, config_ids, config_seed, config_stream
    from sweep.spec._grid import Axis, Grid
    from sweep.spec._models import MetricOptions, SweepSpec, load_spec, spec_from_dict
    from sweep.spec._resolve import ResolvedSweep, resolve
    from sweep.store._results import load_results, results_hash, results_table
    from sweep.store._table_hash import table_hash

__version__ = ENGINE_VERSION

__all__ = [
    "ENGINE_VERSION",
    "Axis",
    "BatchResult",
    "Grid",
    "MetricOptions",
    "Panel",
    "PlannerSettings",
    "ReproduceSettings",
    "Reproduction",
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
    "reproduce",
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
