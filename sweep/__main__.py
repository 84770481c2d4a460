"""``python -m sweep`` and the ``sweep`` console script.

The command line's modules take a moment to import. Before they are imported, SIGTERM is
made to raise like Ctrl-C and numba is given a writable cache folder, so a Ctrl-C (exit
130) or SIGTERM (exit 143) during start-up ends with one line, not a traceback.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Start the CLI (:func:`sweep._cli.main`), stopping cleanly if interrupted while loading."""
    try:
        from sweep import _signals  # itself inside the guard: it imports threading

        _signals.install()
        from sweep._numba_cache import ensure_numba_cache

        ensure_numba_cache()
        from sweep._cli import main as cli_main
    except KeyboardInterrupt as exc:
        raise SystemExit(_stopped_while_starting(exc)) from None
    cli_main()


def _stopped_while_starting(exc: KeyboardInterrupt) -> int:
    """Say in one line that start-up was interrupted; return the exit code (130 or 143)."""
    signals = sys.modules.get("sweep._signals")
    terminated = signals is not None and isinstance(exc, signals.Terminated)
    what = "terminated (SIGTERM)" if terminated else "interrupted"
    sys.stderr.write(f"{what}: sweep stopped while starting\n")
    return int(signals.exit_code(exc)) if signals is not None else 130


if __name__ == "__main__":
    main()
