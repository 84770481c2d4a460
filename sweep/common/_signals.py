"""SIGTERM handled like Ctrl-C: a ``Terminated`` exception, a subclass of KeyboardInterrupt.

``docker stop``, Kubernetes and job schedulers stop a process with SIGTERM. By default that
kills Python without running ``finally`` blocks, which would leave a driver's session marked
``running`` and its lock held. While :func:`sigterm_as_interrupt` is active (the CLI keeps it
for its whole life, :func:`sweep.run_sweep` for a session), SIGTERM raises
:class:`Terminated` in the main thread instead, so the same code that handles Ctrl-C marks
the session interrupted and releases the lock; the CLI then exits 143 (128 + SIGTERM).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

#: Exit code of a command stopped by SIGTERM (128 + 15, as a shell reports it).
EXIT_TERMINATED = 143
#: Exit code of a command stopped by Ctrl-C (128 + 2).
EXIT_INTERRUPTED = 130


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived; handled wherever Ctrl-C is (it is a KeyboardInterrupt)."""


def raise_terminated(signum: int, frame: FrameType | None) -> None:
    """Signal handler: raise :class:`Terminated` (further SIGTERMs are ignored meanwhile)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let the clean-up finish
    raise Terminated()


def exit_code(exc: KeyboardInterrupt) -> int:
    """143 for :class:`Terminated`, 130 for Ctrl-C."""
    return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED


def interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM behind ``exc``, if one caused it; else None.

    A Ctrl-C that lands while a C extension module initialises surfaces as
    ``ImportError: initialization failed``, caused by the KeyboardInterrupt: it is still the
    user stopping the program, not a broken install.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def install() -> bool:
    """Make SIGTERM raise :class:`Terminated` (main thread only); return whether it did."""
    if threading.current_thread() is not threading.main_thread():
        return False
    signal.signal(signal.SIGTERM, raise_terminated)
    return True


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[Callable[[], bool]]:
    """Within the block SIGTERM raises :class:`Terminated`; the previous handler comes back.

    Yields
    ------
    callable
        Installs the handler again (call it after code that replaces it: ``ray.init``
        installs a handler that calls ``sys.exit``). Does nothing outside the main thread.
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    previous = signal.getsignal(signal.SIGTERM)
    install()
    try:
        yield install
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
