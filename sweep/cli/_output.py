"""Checks of the local files and folders a command writes (``results -o``, ``report --out``).

A command checks where it will write before doing any work, so a typo in a path costs a
one-paragraph message (exit 2), not a traceback after minutes of computing; a write that
still fails (a full disk, a permission the check could not see) is reported the same way.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from sweep.errors import SweepError


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _existing_ancestor(path: Path) -> Path:
    """The nearest ancestor of ``path`` (or ``path`` itself) that exists."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(os.sep)


def check_output_file(path: Path, option: str) -> None:
    """Refuse an output file that cannot be written: its folder is missing, or it is a folder.

    Parameters
    ----------
    path : Path
        The file to be written (replaced if it exists).
    option : str
        The option that named it, for the message (e.g. ``"--output"``).
    """
    folder = path.parent
    if path.is_dir():
        raise SweepError(f"{option}: expected a file to write, got the folder {str(path)!r}")
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise SweepError(
            f"{option}: expected a file in an existing folder, got {str(path)!r} "
            f"({str(folder)!r} {what}; create it first)"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise SweepError(
            f"{option}: expected a file in a writable folder, got {str(path)!r} "
            f"(no permission to write in {str(folder)!r})"
        )


def check_output_folder(path: Path, option: str) -> None:
    """Refuse an output folder that cannot be created or written in.

    Parameters
    ----------
    path : Path
        The folder (created with its parents if missing).
    option : str
        The option that named it, for the message (e.g. ``"--out"``).
    """
    base = _existing_ancestor(path)
    if not base.is_dir():
        detail = "is a file" if base == path else f"is under the file {str(base)!r}"
        raise SweepError(
            f"{option}: expected a folder (existing or new), got {str(path)!r}, which {detail}"
        )
    if not os.access(base, os.W_OK | os.X_OK):
        raise SweepError(
            f"{option}: expected a writable folder, got {str(path)!r} "
            f"(no permission to write in {str(base)!r})"
        )


@contextlib.contextmanager
def writing(path: Path, option: str) -> Iterator[None]:
    """Turn an ``OSError`` raised while writing ``path`` into a :class:`SweepError`."""
    try:
        yield
    except OSError as exc:
        raise SweepError(f"{option}: cannot write {str(path)!r}: {_reason(exc)}") from exc
