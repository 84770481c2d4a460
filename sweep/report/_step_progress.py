"""Progress of a report build: one spinner line per step on a terminal, and step timings."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from types import TracebackType

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn


class Steps:
    """Time named steps and, on a terminal, show each one while it runs.

    Parameters
    ----------
    enabled : bool
        Show progress (also requires stderr to be a terminal).
    """

    def __init__(self, enabled: bool) -> None:
        self.seconds: dict[str, float] = {}
        self._progress: Progress | None = None
        if enabled and sys.stderr.isatty():
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("[bold]report[/] {task.description}"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=False,
            )

    def __enter__(self) -> Steps:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Run the body as the step ``name``; its wall time lands in :attr:`seconds`."""
        task = self._progress.add_task(name, total=1) if self._progress is not None else None
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
            if self._progress is not None and task is not None:
                self._progress.update(task, completed=1)
