"""JSON read from a part's footer: bounded, and refused with a :class:`RunFolderError`.

A part's footer (its parquet schema metadata) is covered by the part's sha256 name, but
anyone can write a part under the sha256 of whatever bytes they chose: the values a reader
parses from it are checked like any other input. :func:`footer_json` is the one parser of
the footer's JSON values (the fold summary, the environment record, the row digest and the
null summary's header): its size is bounded before it is parsed, and a value that is not
JSON, not UTF-8, nested too deeply to parse (:class:`RecursionError`) or holding an integer
too long to convert is a :class:`RunFolderError` naming the field, never a raw error.
"""

from __future__ import annotations

import json
from typing import Any

from sweep.errors import RunFolderError


def footer_json(blob: bytes, what: str, limit: int | None = None) -> Any:
    """Parse one JSON value of a part's footer.

    Parameters
    ----------
    blob : bytes
        The metadata value.
    what : str
        The field, for the message (``"fold summary"``).
    limit : int, optional
        The most bytes the field may hold (checked before parsing).

    Returns
    -------
    object
        What :func:`json.loads` returns (its structure is the caller's to check).

    Raises
    ------
    RunFolderError
        ``<what>: ...``, one line, naming what is wrong.
    """
    if limit is not None and len(blob) > limit:
        raise RunFolderError(f"{what}: {len(blob):,} bytes, over the {limit:,} it can hold")
    try:
        return json.loads(blob)
    except RecursionError as exc:
        raise RunFolderError(f"{what}: nested too deeply to read") from exc
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError, or an int too long
        raise RunFolderError(f"{what}: not JSON: {' '.join(str(exc).split())}") from exc


def brief(value: object) -> str:
    """A value read from a file as a message shows it: its repr, cut to 40 characters.

    A list or an object whose repr is longer is named by its kind and length instead (a
    forged one may be megabytes).
    """
    text = repr(value)
    if len(text) <= 40:
        return text
    if isinstance(value, dict | list):
        kind = "object of" if isinstance(value, dict) else "array of"
        return f"a JSON {kind} {len(value):,} {'keys' if isinstance(value, dict) else 'values'}"
    return text[:37] + "..."


def is_int(value: object) -> bool:
    """Whether a parsed JSON value is an integer (``true`` and ``false`` are not)."""
    return isinstance(value, int) and not isinstance(value, bool)
