"""The one error type of ``stats``: bad inputs to a statistic."""


class StatsInputError(ValueError):
    """A statistic was given inputs it cannot use.

    A ``ValueError``, so code that already catches ``ValueError`` keeps working. The message
    names the argument, says what was expected and what was given. ``sweep`` re-exports this
    class as ``sweep.errors.StatsInputError`` (its command line maps it to exit code 2).
    """
