"""The Strategy protocol: a vectorised kernel that evaluates a batch of configs at once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from strategies._panel import Panel


@dataclass(frozen=True)
class Param:
    """Declaration of one strategy parameter.

    Attributes
    ----------
    name : str
        Parameter name as used in the grid.
    kind : {"int", "float", "bool"}
        Value type; int values are accepted for float parameters and converted.
    minimum, maximum : float or None
        Inclusive bounds, if any.
    window : bool
        The parameter is a window or lookback in periods: it must be at least 1 and shorter
        than the price panel.
    default : int, float, bool or None
        Value used when the grid does not mention the parameter (None: required).
    doc : str
        One line for error messages and ``sweep strategies``.
    optional : bool
        Left out of the grid when the spec does not name it (the strategy then runs at
        ``default``): adding such a parameter to a strategy changes no existing grid,
        config id or table. The exit levels are optional.
    """

    name: str
    kind: str
    minimum: float | None = None
    maximum: float | None = None
    window: bool = False
    default: int | float | bool | None = None
    doc: str = ""
    optional: bool = False


@dataclass(frozen=True)
class StrategyOutput:
    """What a strategy returns for a batch of ``n`` configs over ``T`` return periods.

    Attributes
    ----------
    returns : ndarray of float64, shape (n, T)
        Per-period simple returns of each config, net of costs.
    turnover : ndarray of float64, shape (n, T)
        One-way turnover (sum of absolute weight changes) booked in the period whose return
        bears its cost: a trade at the close of ``t`` is booked in period ``t -> t+1`` by
        ``momentum`` (the cost is charged on the new holding) and in period ``t-1 -> t`` by
        ``sma_cross`` (the fee hits equity at the fill, as in vectorbt).
    n_trades : ndarray of int64, shape (n,)
        Number of position changes (per asset) over the whole history.
    exit_counts : ndarray of int64, shape (n, 4), or None
        Per config, the exits decided by the stop-loss, the take-profit and the trailing
        stop, and the bars that held both a stop and the take-profit (None: the strategy
        sets no exit levels).
    extra : dict of str to ndarray, shape (n,) each, or None
        Columns a strategy adds to each row (its ``columns``, e.g. a backtester's own
        statistics).
    """

    returns: NDArray[np.float64]
    turnover: NDArray[np.float64]
    n_trades: NDArray[np.int64]
    exit_counts: NDArray[np.int64] | None = None
    extra: dict[str, NDArray[Any]] | None = None


@runtime_checkable
class Strategy(Protocol):
    """A vectorised backtest kernel.

    A strategy evaluates many configs in one call and must obey raysweep's invariant 1: a
    config's row is bitwise identical whether it is evaluated alone or inside any batch, in
    any order (reduce only along a row's own contiguous axes; no BLAS across configs).
    Bump ``version`` whenever results for the same parameters change.

    A panel with listings (:attr:`Panel.has_listings`) is given only to a strategy whose
    optional attribute ``honours_listings`` is True: it must hold no asset where
    ``panel.live_mask`` is False. :class:`strategies.PositionStrategy` objects do (the shared
    accounting forces those weights to zero); the engine refuses other strategies on such a
    panel.
    """

    name: str
    version: str
    params: tuple[Param, ...]

    def evaluate(
        self,
        panel: Panel,
        params: Mapping[str, NDArray[Any]],
        rngs: Sequence[np.random.Generator],
    ) -> StrategyOutput:
        """Evaluate a batch of configs.

        Parameters
        ----------
        panel : Panel
            The price panel.
        params : mapping of str to ndarray
            One equal-length array per declared parameter.
        rngs : sequence of numpy.random.Generator
            One generator per config, from the config's own seed (ignore if deterministic).

        Returns
        -------
        StrategyOutput
            Returns, turnover and trade counts, one row per config, in input order.
        """
        ...


def group_rows(keys: NDArray[Any]) -> list[tuple[Any, NDArray[np.int64]]]:
    """Group batch rows by a shared parameter value so work is done once per value.

    Parameters
    ----------
    keys : ndarray
        One value per config (e.g. the lookback).

    Returns
    -------
    list of (value, row indices)
        Each distinct value with the rows that use it.
    """
    values, inverse = np.unique(keys, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(values.shape[0] + 1))
    return [(values[i], order[bounds[i] : bounds[i + 1]]) for i in range(values.shape[0])]


def signed_positions_output(
    positions: NDArray[np.int8],
    asset_returns: NDArray[np.float64],
    cost_per_turnover: NDArray[np.float64],
) -> StrategyOutput:
    """Turn equal-weight {-1, 0, +1} positions into returns, turnover and trade counts.

    Parameters
    ----------
    positions : ndarray of int8, shape (n, T, A)
        Position held over period ``t`` in each asset (formed at the close before it).
    asset_returns : ndarray of float64, shape (T, A)
        Simple return of each asset over each period.
    cost_per_turnover : ndarray of float64, shape (n,)
        Cost charged per unit of one-way turnover, as a fraction of equity.

    Returns
    -------
    StrategyOutput
        Weights are ``positions / A``; the return of period ``t`` is the weighted sum of the
        asset returns minus ``cost * turnover_t``, where ``turnover_t`` is the sum of absolute
        weight changes entering period ``t`` (the book starts flat).
    """
    n_assets = positions.shape[2]
    gross = (positions * asset_returns[np.newaxis]).sum(axis=2) / n_assets
    change = np.diff(positions, axis=1, prepend=np.zeros_like(positions[:, :1]))
    abs_change = np.abs(change)
    turnover = abs_change.sum(axis=2, dtype=np.float64) / n_assets
    n_trades = np.count_nonzero(abs_change.reshape(positions.shape[0], -1), axis=1)
    returns = gross - cost_per_turnover[:, np.newaxis] * turnover
    return StrategyOutput(returns, turnover, n_trades.astype(np.int64))
