"""Rebuild what a run recorded (its data, its sweep) for the report's recomputations.

The data and the strategy are found as ``sweep resume`` finds them
(:func:`sweep.store._trust.resolve_recorded`): the spec's data, the folder's copy of an in-memory
panel, or what Python handed over (:func:`sweep.store._trust.supplying`).
"""

from __future__ import annotations

from dataclasses import replace

from strategies._panel import frozen_panel
from sweep.data._panels import Panel
from sweep.errors import SweepError
from sweep.report._load import RunData
from sweep.report._options import ReportOptions
from sweep.spec._resolve import ResolvedSweep
from sweep.store._trust import SUPPLIED, resolve_recorded
from sweep.store._trust import recorded_panel as _recorded_panel


def recorded_panel(run: RunData) -> Panel:
    """The run's data, checked against the recorded fingerprint."""
    supplied = SUPPLIED.get()
    given = supplied.panel if supplied is not None else None
    return _recorded_panel(run.manifest, run.location, given)


def rebuild_sweep(run: RunData, options: ReportOptions) -> ResolvedSweep:
    """The recorded sweep, its strategy imported only if trusted (:mod:`sweep.store._trust`).

    Its panel's arrays are immutable, as an executor hands them to the strategy
    (:func:`strategies._panel.frozen_panel`), so a recomputation sees what the run saw.
    Whether the strategy may be imported is decided before the data is read.
    """
    sweep = resolve_recorded(run.manifest, run.location, options.allow_import, check_data=True)
    recorded = run.manifest.run_key.strategy
    used = None if recorded is None else recorded.version
    if sweep.strategy.version != used:
        raise SweepError(
            f"strategy {sweep.strategy.name!r} is now version {sweep.strategy.version!r}, the run "
            f"used {used!r}"
        )
    return replace(sweep, panel=frozen_panel(sweep.panel))
