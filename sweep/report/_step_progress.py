"""Progress of a report build: a spinner line per step, step timings, each step's peak memory.

A step's peak resident set size is sampled: a background thread reads ``VmRSS`` from
``/proc/self/status`` every 10 ms while the step runs (Linux; elsewhere the peaks are left
out). Sampling, not resetting the kernel's high-water mark, so the process's own peak
(``VmHWM``, ``getrusage``, ``/usr/bin/time``) stays whole for whoever measures it; an
allocation that lives under 10 ms can be missed.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from sweep.engine._heap import return_freed_memory

_STATUS = Path("/proc/self/status")
#: Seconds between two samples of the resident set size.
SAMPLE_SECONDS = 0.01


def _status_mib(field: str) -> float | None:
    """A ``kB`` field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``) in MiB, or None."""
    try:
        status = _STATUS.read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return None


def rss_mib() -> float | None:
    """The resident set size of this process now, in MiB (None where it cannot be read)."""
    return _status_mib("VmRSS")


class _PeakSampler:
    """The largest resident set size seen between ``start`` and ``stop``, in MiB."""

    def __init__(self) -> None:
        self.peak = rss_mib()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            self._see(rss_mib())

    def _see(self, value: float | None) -> None:
        if value is not None and self.peak is not None:
            self.peak = max(self.peak, value)

    def start(self) -> None:
        if self.peak is not None:
            self._thread.start()

    def stop(self) -> float | None:
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join()
        self._see(rss_mib())
        return self.peak


class Steps:
    """Time named steps, measure each one's peak memory, and on a terminal show each step.

    Parameters
    ----------
    enabled : bool
        Show progress (also requires stderr to be a terminal).
    """

    def __init__(self, enabled: bool) -> None:
        self.seconds: dict[str, float] = {}
        #: Each step's peak resident set size in MiB (empty where it cannot be measured).
        self.peak_rss_mib: dict[str, float] = {}
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
        """Run the body as the step ``name``.

        Its wall time lands in :attr:`seconds` and its peak memory in :attr:`peak_rss_mib`
        (a step run twice keeps the larger peak).
        """
        task = self._progress.add_task(name, total=1) if self._progress is not None else None
        sampler = _PeakSampler()
        sampler.start()
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
            return_freed_memory()  # the next step starts from what is held, not what was
            peak = sampler.stop()
            if peak is not None:
                self.peak_rss_mib[name] = max(peak, self.peak_rss_mib.get(name, 0.0))
            if self._progress is not None and task is not None:
                self._progress.update(task, completed=1)
