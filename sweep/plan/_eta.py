"""Throughput and time left of a running sweep (the progress bar and ``sweep status``).

One rule for both: the rate is the configs the running session has computed divided by
the seconds since its first batch after planning started (the bar) or since its first task
was submitted (status, from the session's telemetry rows); the time left is the configs not
yet done divided by that rate. Before anything is measured there is no estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Eta:
    """Configs per second and seconds left (NaN where not yet measurable)."""

    configs_per_second: float
    seconds_left: float

    @property
    def known(self) -> bool:
        """Whether a rate has been measured."""
        return math.isfinite(self.configs_per_second) and self.configs_per_second > 0

    def rate_text(self) -> str:
        """``"2,345 configs/s"`` (``"- configs/s"`` before a measurement)."""
        return f"{self.configs_per_second:,.0f} configs/s" if self.known else "- configs/s"

    def left_text(self) -> str:
        """The time left as ``"1h02m"``, ``"3m05s"`` or ``"12s"`` (``"-"`` when unknown)."""
        return format_duration(self.seconds_left) if self.known else "-"


def eta(computed: int, seconds: float, remaining: int) -> Eta:
    """The rate ``computed / seconds`` and the time left ``remaining / rate``.

    Parameters
    ----------
    computed : int
        Configs computed in the measured span.
    seconds : float
        Length of the span.
    remaining : int
        Configs not done yet.

    Returns
    -------
    Eta
        NaN rate and time left when ``computed`` or ``seconds`` is not positive.
    """
    if computed <= 0 or not seconds > 0:
        return Eta(math.nan, math.nan)
    rate = computed / seconds
    return Eta(rate, max(remaining, 0) / rate)


def format_duration(seconds: float) -> str:
    """Seconds as ``"2d03h"``, ``"1h02m"``, ``"3m05s"`` or ``"12s"`` (``"-"`` if not finite)."""
    if not math.isfinite(seconds):
        return "-"
    s = max(0, round(seconds))
    days, rest = divmod(s, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"
