"""Whole-sweep figures the report takes from result columns it does not hold per config.

Four columns (``n_obs``, ``omega``, ``excess_std``, ``sharpe``) enter the report only through
a few numbers over the configs that finished ok. They are read with the others, reduced here
once, in ``config_id`` order, and dropped: the report holds about a third less per config.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sweep.report._streamed_distribution import exact_mean, scaled_sum

#: Result columns reduced to :class:`SweepFacts` when the results are read, then not held.
REDUCED_COLUMNS = ("n_obs", "omega", "excess_std", "sharpe")


@dataclass(frozen=True)
class SweepFacts:
    """What the report needs of :data:`REDUCED_COLUMNS`, over the configs that finished ok.

    Attributes
    ----------
    first_n_obs : int or None
        Periods of the ok config with the smallest grid index (every config of a sweep has
        the same; None without ok configs).
    max_n_obs : int or None
        The most periods of any ok config.
    null_sharpe_std : float or None
        Root mean square over the ok configs with a non-constant excess series of
        ``ω̂ / (√n · sd)``: a null Sharpe ratio's spread (None without such a config). The
        mean is exact (each square rounded once, their sum exact, divided and rounded
        once), so it does not depend on the order the configs are added in.
    constant_configs : int
        Ok configs whose Sharpe ratio is not finite (a constant return series).
    """

    first_n_obs: int | None = None
    max_n_obs: int | None = None
    null_sharpe_std: float | None = None
    constant_configs: int = 0


def _live(
    n_obs: NDArray[np.float64], omega: NDArray[np.float64], std: NDArray[np.float64]
) -> NDArray[np.bool_]:
    """Configs with a non-constant excess series (a null Sharpe spread is defined)."""
    live: NDArray[np.bool_] = (std > 0) & np.isfinite(omega) & (n_obs > 0)
    return live


def _null_sharpe_sq(
    n_obs: NDArray[np.float64], omega: NDArray[np.float64], std: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Each config's ``(ω̂ / (√n · sd))**2`` (live configs only)."""
    sd_null = omega / (np.sqrt(n_obs) * std)
    squared: NDArray[np.float64] = sd_null**2
    return squared


class FactsReducer:
    """:class:`SweepFacts` from the parts as they are read, a part at a time.

    Holds a few numbers whatever the number of configs: the squared null Sharpe spreads are
    summed exactly (:func:`sweep.report._streamed_distribution.scaled_sum`).
    """

    def __init__(self) -> None:
        self._scaled_squares = 0  # exact sum of the squared spreads, times 2**1074
        self._live = 0
        self._first: tuple[int, int] | None = None  # (grid index, n_obs) of the first ok config
        self._max_n_obs: int | None = None
        self._constant = 0

    def add(
        self, columns: Mapping[str, NDArray[Any]], ok: NDArray[np.bool_], at: NDArray[np.integer]
    ) -> None:
        """Take some configs: their :data:`REDUCED_COLUMNS`, status ok, and their grid indices."""
        if not ok.any():
            return
        at = at[ok]
        n_obs = np.asarray(columns["n_obs"])[ok]
        first = int(np.argmin(at))
        if self._first is None or int(at[first]) < self._first[0]:
            self._first = (int(at[first]), int(n_obs[first]))
        most = int(n_obs.max())
        self._max_n_obs = most if self._max_n_obs is None else max(self._max_n_obs, most)
        self._constant += int((~np.isfinite(np.asarray(columns["sharpe"])[ok])).sum())
        n, omega, std = (
            np.asarray(columns[c], dtype=np.float64)[ok] for c in ("n_obs", "omega", "excess_std")
        )
        live = _live(n, omega, std)
        self._live += int(live.sum())
        self._scaled_squares += scaled_sum(_null_sharpe_sq(n[live], omega[live], std[live]))

    def merge(self, other: FactsReducer) -> None:
        """Take what ``other`` was given (the facts do not depend on the order of merging)."""
        self._scaled_squares += other._scaled_squares
        self._live += other._live
        self._constant += other._constant
        if other._first is not None and (self._first is None or other._first[0] < self._first[0]):
            self._first = other._first
        if other._max_n_obs is not None:
            most = other._max_n_obs
            self._max_n_obs = most if self._max_n_obs is None else max(self._max_n_obs, most)

    def facts(self) -> SweepFacts:
        """The facts of every config added."""
        if self._first is None:
            return SweepFacts()
        spread = math.sqrt(exact_mean(self._scaled_squares, self._live)) if self._live else None
        return SweepFacts(
            first_n_obs=self._first[1],
            max_n_obs=self._max_n_obs,
            null_sharpe_std=spread,
            constant_configs=self._constant,
        )
