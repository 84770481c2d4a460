"""The report never crashes: strong edge, no edge, constant configs, one config, all failed."""

from __future__ import annotations

import pytest

from sweep import run_sweep, spec_from_dict
from sweep.report import build_report, write_report
from tests.helpers import small_spec_dict
from tests.report.conftest import FAST

PLANTED = "tests.strategies_for_tests:PlantedEdge"
RAISING = "tests.strategies_for_tests:Raising"

CASES = {
    # Every config beats the benchmark by far (arch's StepM used to crash here).
    "strong_edge": small_spec_dict(
        strategy={"name": PLANTED},
        grid={"member": {"start": 0, "stop": 30}, "edge": [0.3]},
        metrics={"bootstrap_reps": 50, "block_length": 10, "pbo_blocks": 8},
    ),
    "no_edge": small_spec_dict(
        strategy={"name": PLANTED},
        grid={"member": {"start": 0, "stop": 30}, "edge": [0.0]},
        metrics={"bootstrap_reps": 50, "block_length": 10, "pbo_blocks": 8},
    ),
    # A band no trailing return reaches: no config ever trades, every excess series is 0.
    "constant": small_spec_dict(
        grid={"lookback": [10, 20, 30], "band": [5.0]},
        metrics={"benchmark": "zero", "bootstrap_reps": 20, "block_length": 10, "pbo_blocks": 8},
    ),
    # Some constant configs among live ones.
    "some_constant": small_spec_dict(
        grid={"lookback": [10, 20, 30], "band": [0.0, 0.01, 5.0]},
        metrics={"benchmark": "zero", "bootstrap_reps": 20, "block_length": 10, "pbo_blocks": 8},
    ),
    "single_config": small_spec_dict(grid={"lookback": [20], "band": [0.0]}),
    "all_failed": small_spec_dict(
        strategy={"name": RAISING}, grid={"lookback": [13, 26, 39], "band": [0.0, 0.01]}
    ),
    "no_bootstrap": small_spec_dict(
        metrics={"bootstrap_reps": 0, "block_length": 10, "pbo_blocks": 8}
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_report_builds_and_writes(tmp_path, case):
    run_sweep(spec_from_dict(CASES[case]), tmp_path / "run", progress=False)
    report = build_report(tmp_path / "run", FAST)
    files = write_report(report, tmp_path / "out")
    text = files.markdown.read_text()
    verdict = report.to_json()["verdict"]
    mt = report.to_json()["multiple_testing"]
    if case == "strong_edge":
        assert verdict["likely_real"] is True
        assert mt["sweep_wide"]["stepm"]["count"] == 30
    elif case == "no_edge":
        assert verdict["likely_real"] is False
    elif case in ("constant", "all_failed"):
        assert verdict is None or verdict["likely_real"] is not True
        assert "Traceback" not in text
    elif case == "no_bootstrap":
        assert verdict["likely_real"] is None and "No verdict" in verdict["headline"]
    elif case == "single_config":
        assert mt["naive_n"] == 1
        assert verdict["likely_real"] in (True, False)
    assert "nan" not in text.lower().split() and "…" not in text
