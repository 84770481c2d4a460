"""The one error hierarchy of raysweep.

::

    SweepError                      base class; the CLI maps it to exit code 2 unless noted
    ├── SpecError                   a sweep spec (TOML or Python) is invalid
    │   ├── GridError               a parameter grid is invalid (empty, bad axis, bad constraint)
    │   └── StrategySpecError       the spec's strategy cannot be found, imported or used
    │                               (also a strategies.StrategyError)
    ├── DataError                   a price panel cannot be loaded or fails validation
    ├── UntrustedStrategyError      a run folder names a strategy the user did not allow
    │                               (also a strategies.StrategyError)
    ├── ClusterAddressError         a cluster address is malformed, or nothing answers there
    ├── RunFolderError              a run folder is unusable or belongs to another spec
    │   ├── RunLockedError          another live driver holds the run folder's lock
    │   └── EnvironmentChangedError the run's parts were computed with other library
    │                               versions (or a sample re-computed here did not match)
    └── ExecutionError              the sweep itself failed (exit code 1)
        └── ConfigFailedError       a config raised under ``on_error="raise"``

    strategies.StrategyError        unknown strategy, bad import path, bad parameters
    stats.StatsInputError           a statistic was given inputs it cannot use (a ValueError)

The last two belong to the packages the engine drives (which never import ``sweep``); they
are re-exported here as the same classes, and :data:`USER_ERRORS` and :func:`exit_code` treat
them like a :class:`SweepError`: exit code 2, a one-paragraph message, no traceback.

Messages name the argument, say what was expected and what was given, and suggest close
matches for misspelled names (see :func:`close_matches`, re-exported from ``strategies``).
"""

from __future__ import annotations

from stats import StatsInputError as StatsInputError
from strategies import StrategyError as StrategyError
from strategies import close_matches as close_matches


class SweepError(Exception):
    """Base class of every error the engine raises on purpose."""

    exit_code = 2


class SpecError(SweepError):
    """A sweep spec is invalid."""


class GridError(SpecError):
    """A parameter grid is invalid."""


class StrategySpecError(SpecError, StrategyError):
    """The spec's strategy cannot be found, imported or used (:func:`sweep.resolve`).

    The :class:`StrategyError` of :func:`strategies.get_strategy`, raised again as an engine
    error with the same message, so that ``except SweepError`` and ``except StrategyError``
    both catch it.
    """


class DataError(SweepError):
    """A price panel cannot be loaded or fails validation."""


class UntrustedStrategyError(SweepError, StrategyError):
    """A run folder names a non-built-in strategy the user has not allowed to be imported."""


class ClusterAddressError(SweepError):
    """A cluster address is malformed, or nothing accepts a connection there in time."""


class RunFolderError(SweepError):
    """A run folder is unusable, or belongs to another spec, data or strategy version."""


class RunLockedError(RunFolderError):
    """Another live driver holds the run folder's lock."""


class EnvironmentChangedError(RunFolderError):
    """A run would continue with library versions other than those that computed its parts.

    Raised by ``resume`` (and ``run`` on an existing folder) without
    ``--allow-environment-change``, naming what changed (``numpy 2.4.6 -> 2.3.5``); with it,
    when a sample of finished configs re-computed here does not match bit for bit; and when
    a worker returns a batch computed with other versions than the run's.
    """


class ExecutionError(SweepError):
    """The sweep failed while running."""

    exit_code = 1


class ConfigFailedError(ExecutionError):
    """A config raised while ``on_error="raise"``."""


#: Every error raised on purpose for bad input or a failed sweep: the engine's hierarchy and
#: the errors of ``strategies`` and ``stats``. Catch this tuple where a ``SweepError`` alone
#: would let a strategy's or a statistic's error through.
USER_ERRORS: tuple[type[Exception], ...] = (SweepError, StrategyError, StatsInputError)


def exit_code(exc: Exception) -> int:
    """The command line's exit code for an error of :data:`USER_ERRORS`.

    A :class:`SweepError`'s own ``exit_code`` (2, or 1 for an :class:`ExecutionError`); 2 for
    a :class:`StrategyError` or a :class:`StatsInputError` (bad input).
    """
    return exc.exit_code if isinstance(exc, SweepError) else 2
