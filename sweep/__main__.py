"""``python -m sweep`` and the ``sweep`` console script.

The command line's modules take a moment to import. Before they are imported, SIGTERM is
made to raise like Ctrl-C and numba is given a writable cache folder, so a Ctrl-C (exit
130) or SIGTERM (exit 143) during start-up ends with one line, not a traceback.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Start the CLI (:func:`sweep._cli.main`), stopping cleanly if interrupted while loading."""
    from sweep import _signals

    _signals.install()
    try:
        from sweep._numba_cache import ensure_numba_cache

        ensure_numba_cache()
        from sweep._cli import main as cli_main
    except KeyboardInterrupt as exc:
        what = "terminated (SIGTERM)" if isinstance(exc, _signals.Terminated) else "interrupted"
        sys.stderr.write(f"{what}: sweep stopped while starting\n")
        raise SystemExit(_signals.exit_code(exc)) from None
    cli_main()


if __name__ == "__main__":
    main()
