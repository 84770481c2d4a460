"""Service times and the O + bB fit from telemetry with known timings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sweep.report._execution import _fit, task_frame
from sweep.report._sections import AmortizationFit, Unavailable


def telemetry(overhead: float, per_config: float, sizes: list[int], in_flight: int) -> pd.DataFrame:
    """One worker; tasks submitted ``in_flight`` at a time; each takes O + bB on the worker."""
    rows, clock, submit = [], 100.0, []
    for k, b in enumerate(sizes):
        submit.append(100.0 if k < in_flight else rows[k - in_flight]["end_time"])
        start = max(clock, submit[k])
        end = start + overhead + per_config * b
        rows.append(
            {
                "submit_time": submit[k],
                "start_time": start + overhead / 2,
                "end_time": end,
                "compute_seconds": per_config * b,
                "n_configs": b,
                "worker": "7",
                "node": "n",
                "attempt": 0,
                "session": 1,
            }
        )
        clock = end
    return pd.DataFrame(rows)


@pytest.mark.parametrize("in_flight", [1, 2])
def test_service_time_removes_queueing_and_the_fit_recovers_o_and_b(in_flight):
    sizes = [16, 64, 32, 128, 8, 64, 256]
    tasks = task_frame(telemetry(0.05, 0.002, sizes, in_flight))
    expected = 0.05 + 0.002 * np.array(sizes)
    assert np.allclose(tasks["service"], expected)
    assert tasks["warm"].tolist() == [False] + [True] * (len(sizes) - 1)
    if in_flight == 2:  # latency includes the wait behind the previous task
        assert (tasks["latency"].iloc[1:] > tasks["service"].iloc[1:] + 0.01).all()
    warm = tasks[tasks["warm"]]
    fit = _fit(warm["n_configs"].to_numpy(), warm["service"].to_numpy())
    assert isinstance(fit, AmortizationFit)
    assert fit.overhead_seconds == pytest.approx(0.05, abs=1e-9)
    assert fit.per_config_seconds == pytest.approx(0.002, rel=1e-9)
    assert fit.ridge_batch == pytest.approx(25.0)
    assert fit.batch_for_90pct == pytest.approx(225.0)


def test_fit_needs_two_batch_sizes():
    fit = _fit(np.array([8, 8, 8]), np.array([0.1, 0.1, 0.1]))
    assert isinstance(fit, Unavailable) and "2 distinct batch sizes" in fit.reason
