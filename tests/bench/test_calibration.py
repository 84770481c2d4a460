"""A small fixed-seed run of the verdict's calibration (benchmarks/bench_calibration.py).

The panels, the sweep and the bootstrap are all seeded, so the counts below are the same on
every machine; the bounds are set where a correctly calibrated rule passes for almost any
seeds (Binomial(24, 0.05) >= 5 has probability 0.008), so the test cannot flake and fails
when the verdict's false-positive rate or power is off by a wide margin.
"""

from __future__ import annotations

import pytest

from sweep._calibration import calibration_panel, calibration_spec, judge_panel

pytestmark = pytest.mark.slow


def verdicts(edge: float, seeds: range) -> list[bool]:
    return [
        judge_panel(
            calibration_panel(s, edge, n_days=3000), calibration_spec(s, reps=100)
        ).likely_real
        for s in seeds
    ]


def test_martingale_panels_are_rarely_called_real():
    assert sum(verdicts(0.0, range(100, 124))) <= 4


def test_a_strong_planted_edge_is_usually_found():
    assert sum(verdicts(0.3, range(200, 208))) >= 6
