"""Pure statistics for parameter sweeps: arrays in, frozen dataclasses or arrays out.

No Ray, no I/O, no global random state: functions that need randomness take a
``numpy.random.Generator``. Sharpe ratios are PER PERIOD unless a name says otherwise.
"""

from stats._bootstrap import (
    BLOCK_METHODS,
    block_starts_and_lengths,
    bootstrap_pvalue,
    bootstrap_sharpe,
)
from stats._moments import ReturnMoments, annualised_sharpe, return_moments, sharpe_ratio

__all__ = [
    "BLOCK_METHODS",
    "ReturnMoments",
    "annualised_sharpe",
    "block_starts_and_lengths",
    "bootstrap_pvalue",
    "bootstrap_sharpe",
    "return_moments",
    "sharpe_ratio",
]
