"""The errors of ``strategies``, and the close-match hint their messages end with."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class StrategyError(Exception):
    """A strategy cannot be found, imported or parameterised.

    Raised by :func:`strategies.get_strategy` and by a strategy's ``evaluate`` for parameter
    values it cannot use. ``sweep`` re-exports this class as ``sweep.errors.StrategyError``
    (its command line maps it to exit code 2).
    """


def close_matches(name: str, choices: Iterable[str]) -> str:
    """Return a ``" Did you mean ...?"`` suffix for a misspelled name, or ``""``.

    Parameters
    ----------
    name : str
        The name the user gave.
    choices : iterable of str
        The valid names.

    Returns
    -------
    str
        A sentence suggesting the closest valid names, or an empty string.
    """
    matches = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.6)
    if not matches:
        return ""
    return " Did you mean " + " or ".join(repr(m) for m in matches) + "?"
