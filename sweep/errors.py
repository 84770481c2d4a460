"""The one error hierarchy of raysweep.

::

    SweepError                      base class; the CLI maps it to exit code 2 unless noted
    ├── SpecError                   a sweep spec (TOML or Python) is invalid
    │   └── GridError               a parameter grid is invalid (empty, bad axis, bad constraint)
    ├── DataError                   a price panel cannot be loaded or fails validation
    ├── StrategyError               unknown strategy, bad import path, bad parameters
    │   └── UntrustedStrategyError  a run folder names a strategy the user did not allow
    ├── RunFolderError              a run folder is unusable or belongs to another spec
    │   ├── RunLockedError          another live driver holds the run folder's lock
    │   └── CorruptPartError        a part file fails its self-check (name vs bytes)
    ├── ExecutionError              the sweep itself failed (exit code 1)
    │   └── ConfigFailedError       a config raised under ``on_error="raise"``
    └── StatsInputError             a statistic was given inputs it cannot use

Messages name the argument, say what was expected and what was given, and suggest close
matches for misspelled names (see :func:`close_matches`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class SweepError(Exception):
    """Base class of every error raysweep raises on purpose."""

    exit_code = 2


class SpecError(SweepError):
    """A sweep spec is invalid."""


class GridError(SpecError):
    """A parameter grid is invalid."""


class DataError(SweepError):
    """A price panel cannot be loaded or fails validation."""


class StrategyError(SweepError):
    """A strategy cannot be found, imported or parameterised."""


class UntrustedStrategyError(StrategyError):
    """A run folder names a non-built-in strategy the user has not allowed to be imported."""


class RunFolderError(SweepError):
    """A run folder is unusable, or belongs to another spec, data or strategy version."""


class RunLockedError(RunFolderError):
    """Another live driver holds the run folder's lock."""


class CorruptPartError(RunFolderError):
    """A part file's bytes do not match the sha256 in its name."""


class ExecutionError(SweepError):
    """The sweep failed while running."""

    exit_code = 1


class ConfigFailedError(ExecutionError):
    """A config raised while ``on_error="raise"``."""


class StatsInputError(SweepError, ValueError):
    """A statistic was given inputs it cannot use."""


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
