"""Report steps: each step's own peak memory, sampled, and the process's peak left whole."""

from __future__ import annotations

import numpy as np
import pytest

from sweep.report._step_progress import Steps, _status_mib, rss_mib

pytestmark = pytest.mark.skipif(
    rss_mib() is None, reason="needs /proc/self/status (Linux)"
)

MIB = 1024 * 1024


def test_each_step_reports_its_own_peak_not_an_earlier_one():
    steps = Steps(enabled=False)
    with steps.step("big"):
        block = np.ones(256 * MIB // 8)  # 256 MiB, touched
        assert block[-1] == 1.0
        del block
    with steps.step("small"):
        pass
    big, small = steps.peak_rss_mib["big"], steps.peak_rss_mib["small"]
    assert big - small > 200  # the 256 MiB show in the step that held them, and only there
    assert set(steps.seconds) == {"big", "small"}


def test_a_step_run_twice_keeps_its_larger_peak():
    steps = Steps(enabled=False)
    with steps.step("twice"):
        block = np.ones(128 * MIB // 8)
        assert block[0] == 1.0
        del block
    first = steps.peak_rss_mib["twice"]
    with steps.step("twice"):
        pass
    assert steps.peak_rss_mib["twice"] == first


def test_the_process_peak_is_left_whole():
    """Measuring a step never resets the kernel's high-water mark that time -v reads."""
    steps = Steps(enabled=False)
    with steps.step("big"):
        block = np.ones(192 * MIB // 8)
        assert block[1] == 1.0
        del block
    with steps.step("after"):
        hwm = _status_mib("VmHWM")
    assert hwm is not None and hwm >= steps.peak_rss_mib["big"] - 1
