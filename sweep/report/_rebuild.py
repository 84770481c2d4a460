"""Rebuild what a run recorded (its data, its sweep) for the report's recomputations."""

from __future__ import annotations

from sweep._data import Panel, panel_fingerprint
from sweep._spec import ResolvedSweep, load_data, spec_from_dict
from sweep._trust import resolve_recorded
from sweep.errors import SweepError
from sweep.report._load import RunData
from sweep.report._options import ReportOptions


def recorded_panel(run: RunData) -> Panel:
    """The run's data, loaded from its spec and checked against the recorded fingerprint."""
    panel = load_data(spec_from_dict(dict(run.manifest.spec)))
    fingerprint = panel_fingerprint(panel)
    recorded = run.manifest.run_key.data_fingerprint
    if fingerprint != recorded:
        raise SweepError(
            f"the data the spec names now has fingerprint {fingerprint[:16]}..., the run used "
            f"{str(recorded)[:16]}..."
        )
    return panel


def rebuild_sweep(run: RunData, options: ReportOptions) -> ResolvedSweep:
    """The recorded sweep, its strategy imported only if trusted (:mod:`sweep._trust`)."""
    sweep = resolve_recorded(
        run.manifest, run.location, options.allow_import, panel=recorded_panel(run)
    )
    recorded = run.manifest.run_key.strategy
    used = None if recorded is None else recorded.version
    if sweep.strategy.version != used:
        raise SweepError(
            f"strategy {sweep.strategy.name!r} is now version {sweep.strategy.version!r}, the run "
            f"used {used!r}"
        )
    return sweep
