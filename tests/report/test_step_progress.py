"""Report steps: each step's own peak memory, sampled, and the process's peak left whole."""

from __future__ import annotations

import numpy as np
import pytest

from sweep.report._step_progress import Steps, _status_mib, rss_mib

pytestmark = pytest.mark.skipif(rss_mib() is None, reason="needs /proc/self/status (Linux)")

MIB = 1024 * 1024


def _hold(steps: Steps, name: str, mib: int) -> None:
    """Run step ``name`` holding ``mib`` MiB of touched memory for a while, then free it."""
    with steps.step(name):
        block = np.ones(mib * MIB // 8)
        for _ in range(5):  # several of the sampler's 10 ms periods
            block += 1.0
        del block


def test_each_step_reports_its_own_peak_not_an_earlier_one():
    steps = Steps(enabled=False)
    _hold(steps, "big", 256)
    with steps.step("small"):
        pass
    big, small = steps.peak_rss_mib["big"], steps.peak_rss_mib["small"]
    assert big - small > 200  # the 256 MiB show in the step that held them, and only there
    assert set(steps.seconds) == {"big", "small"}


def test_a_step_run_twice_keeps_its_larger_peak():
    steps = Steps(enabled=False)
    _hold(steps, "twice", 128)
    first = steps.peak_rss_mib["twice"]
    with steps.step("twice"):
        pass
    assert steps.peak_rss_mib["twice"] == first


def test_the_process_peak_is_left_whole():
    """Measuring a step never resets the kernel's high-water mark that time -v reads."""
    steps = Steps(enabled=False)
    _hold(steps, "big", 192)
    with steps.step("after"):
        hwm = _status_mib("VmHWM")
    assert hwm is not None and hwm >= steps.peak_rss_mib["big"] - 1
