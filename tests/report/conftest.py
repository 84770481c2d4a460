"""Run folders for the report tests: complete, stopped-then-resumed, with failed configs."""

from __future__ import annotations

import pytest

from sweep import run_sweep, spec_from_dict
from sweep.report import ReportOptions, build_report, write_report
from tests.helpers import StopAfter, small_spec_dict

#: Report options of the tests (no progress bar).
FAST = ReportOptions(progress=False)

RAISING = small_spec_dict(
    name="raising",
    strategy={"name": "tests.strategies_for_tests:Raising"},
    grid={"lookback": {"start": 5, "stop": 45}, "band": [0.0, 0.01]},
)


@pytest.fixture(scope="session")
def runs(tmp_path_factory, small_run):
    """Run folders by name: complete (the session's ``small_run``, read only), partial
    (stopped early), resumed, failing."""
    root = tmp_path_factory.mktemp("runs")
    spec = spec_from_dict(small_spec_dict())
    run_sweep(spec, root / "resumed", batch_size=5, progress=False, executor=StopAfter(3))
    run_sweep(spec, root / "partial", batch_size=5, progress=False, executor=StopAfter(3))
    run_sweep(spec, root / "resumed", batch_size=9, progress=False)
    run_sweep(spec_from_dict(RAISING), root / "failing", batch_size=8, progress=False)
    return {"complete": small_run} | {
        name: root / name for name in ("partial", "resumed", "failing")
    }


@pytest.fixture(scope="session")
def reports(runs, tmp_path_factory):
    """Each run's report, built and written once: name -> (Report, ReportFiles)."""
    out = tmp_path_factory.mktemp("reports")
    built = {}
    for name, run_dir in runs.items():
        report = build_report(run_dir, FAST)
        built[name] = (report, write_report(report, out / name))
    return built
