"""Progress display for long sweeps (rich), silent when not on a terminal or when asked."""

from __future__ import annotations

import sys
import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)

from sweep.plan._eta import eta


class SweepProgress:
    """Configs done / total, rate and time left (:func:`sweep.plan._eta.eta`) on stderr.

    The rate counts the configs this session computed since :meth:`start_timing` (the
    first batch after planning; pilot configs advance the bar but not the rate), so a
    resumed sweep's estimate is not inflated by the configs done before it.

    Parameters
    ----------
    total : int
        Configs in the grid.
    done : int
        Configs already done (a resumed sweep starts part-way).
    enabled : bool
        Show anything at all (also requires stderr to be a terminal).
    """

    def __init__(self, total: int, done: int, enabled: bool) -> None:
        console = Console(stderr=True)
        self._progress: Progress | None = None
        if enabled and sys.stderr.isatty():
            self._progress = Progress(
                TextColumn("[bold]sweep"),
                BarColumn(bar_width=None),
                MofNCompleteColumn(),
                TaskProgressColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TextColumn("{task.fields[left]}"),
                console=console,
                transient=False,
                expand=False,
            )
            self._task = self._progress.add_task(
                "configs", total=total, completed=done, rate="planning", left=""
            )
        self._total = total
        self._done = done
        self._timed = 0
        self._t0: float | None = None

    def __enter__(self) -> SweepProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def start_timing(self) -> None:
        """Planning is over: the rate counts from now."""
        self._t0 = time.perf_counter()

    def advance(self, n: int) -> None:
        """Record ``n`` more configs done."""
        self._done += n
        if self._t0 is None:
            rate, left = "planning", ""
        else:
            self._timed += n
            estimate = eta(self._timed, time.perf_counter() - self._t0, self._total - self._done)
            rate, left = estimate.rate_text(), f"{estimate.left_text()} left"
        if self._progress is not None:
            self._progress.update(self._task, advance=n, rate=rate, left=left)

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
