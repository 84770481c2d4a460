"""Progress display for long sweeps (rich), silent when not on a terminal or when asked."""

from __future__ import annotations

import sys
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class SweepProgress:
    """Configs done / total, rate and ETA on stderr.

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
                BarColumn(),
                MofNCompleteColumn(),
                TaskProgressColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=console,
                transient=False,
            )
            self._task = self._progress.add_task("configs", total=total, completed=done, rate="")
        self._start_done = done

    def __enter__(self) -> SweepProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def advance(self, n: int, rate: float) -> None:
        """Record ``n`` more configs done at ``rate`` configs/s."""
        if self._progress is not None:
            self._progress.update(self._task, advance=n, rate=f"{rate:,.0f} configs/s")

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
