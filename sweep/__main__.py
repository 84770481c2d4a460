"""``python -m sweep`` and the ``sweep`` console script.

The command line's modules take a moment to import. Before they are imported, SIGTERM is
made to raise like Ctrl-C and numba is given a writable cache folder, so a Ctrl-C (exit
130) or SIGTERM (exit 143) during start-up ends with one line, not a traceback.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Start the CLI (:func:`sweep.cli._app.main`), stopping cleanly if interrupted loading."""
    try:
        from sweep.common import _signals  # itself inside the guard: it imports threading

        _signals.install()
        from sweep.common._numba_cache import ensure_numba_cache

        ensure_numba_cache()
        from sweep.cli._app import main as cli_main
    except (KeyboardInterrupt, ImportError, RuntimeError) as exc:  # see interrupt_behind
        interrupt = _interrupt_behind(exc)
        if interrupt is None:
            raise
        raise SystemExit(_stopped_while_starting(interrupt)) from None
    cli_main()


def _interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM behind ``exc`` (see :func:`sweep.common._signals.interrupt_behind`)."""
    finder = getattr(sys.modules.get("sweep.common._signals"), "interrupt_behind", None)
    if finder is not None:  # not while sweep.common._signals itself is half imported
        found: KeyboardInterrupt | None = finder(exc)
        return found
    return exc if isinstance(exc, KeyboardInterrupt) else None


def _stopped_while_starting(exc: KeyboardInterrupt) -> int:
    """Say in one line that start-up was interrupted; return the exit code (130 or 143)."""
    signals = sys.modules.get("sweep.common._signals")
    terminated_type = getattr(signals, "Terminated", None)
    terminated = terminated_type is not None and isinstance(exc, terminated_type)
    what = "terminated (SIGTERM)" if terminated else "interrupted"
    sys.stderr.write(f"{what}: sweep stopped while starting\n")
    code = getattr(signals, "exit_code", None)
    return int(code(exc)) if code is not None else 130  # 130: not even _signals loaded


if __name__ == "__main__":
    main()
