"""Listings and delistings: THE rule that turns missing prices into a panel's live mask.

An asset is *live* (listed) from its first to its last valid close. Outside that span its
prices are missing in the source (before its listing, after its delisting); the panel holds
there the nearest valid price (back-filled before the listing, forward-filled after the
delisting), so the asset's return there is zero, and :attr:`strategies.Panel.live` is False.
A missing price INSIDE the live span is a gap: an error naming the cell, unless the data
says ``fill = "ffill"`` (carry the last price forward; the asset stays live there).

Open, high and low follow the close's live span: each is filled outside it from its own
nearest value inside it, and a gap inside it is handled as a close gap. Volume is zero
outside the span and on a filled gap (nothing traded there), never carried forward.

No look-ahead: whether an asset is live at ``t`` depends on its prices up to ``t`` for the
listing; a delisting is only known from the absence of later prices, which is why the
engine forces the weight to zero where the asset is not live, and a strategy that holds it
on its last live date earns the zero return of the filled price after it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from sweep.errors import DataError

#: How a gap inside an asset's live span is treated.
Fill = Literal["none", "ffill"]
FILL_MODES: tuple[str, ...] = ("none", "ffill")
#: Fields that are not prices: zero where not live or filled, never carried forward.
QUANTITY_FIELDS = ("volume",)

#: Where a cell of the source is, for messages: ``(row, col, field) -> "line 17 (2020-01-24),
#: column 'AAA'"``, or None when the source has no row for it.
CellWhere = Callable[[int, int, str], str | None]


@dataclass(frozen=True)
class Listed:
    """Prices with missing cells filled and the live mask (None when listed everywhere).

    Attributes
    ----------
    close : ndarray of float64
        Close prices, filled outside each live span (and inside it under ``ffill``).
    fields : dict of str to ndarray
        The optional fields, filled likewise.
    live : ndarray of bool or None
        Where each asset is listed; None when every cell is (the panel had no missing price).
    """

    close: NDArray[np.float64]
    fields: dict[str, NDArray[np.float64]]
    live: NDArray[np.bool_] | None


def _day(dates: pd.DatetimeIndex, row: int) -> str:
    return str(dates[row].date())


def listed_prices(
    close: NDArray[np.float64],
    fields: dict[str, NDArray[np.float64]],
    dates: pd.DatetimeIndex,
    assets: tuple[str, ...],
    *,
    fill: str,
    source: str,
    where: CellWhere,
) -> Listed:
    """Apply the listing rule (module docstring) to prices whose missing cells are NaN.

    Parameters
    ----------
    close : ndarray of float64, shape (n_dates, n_assets)
        Close prices; NaN where missing. Every non-NaN value must already be valid.
    fields : dict of str to ndarray
        Optional fields shaped like ``close`` (NaN where missing).
    dates : DatetimeIndex
        The panel's dates.
    assets : tuple of str
        The panel's assets.
    fill : {"none", "ffill"}
        What a gap inside a live span does: an error, or the last value carried forward.
    source : str
        Where the data came from, for messages.
    where : callable
        ``where(row, col, field)``: the source's name of a cell (``"line 17 (2020-01-24),
        column 'AAA'"``), or None when the source has no row for it (a long-format file
        without that date and asset).

    Returns
    -------
    Listed
        Filled arrays and the live mask.

    Raises
    ------
    DataError
        An asset without any close; a gap inside a live span (unless ``fill = "ffill"``),
        naming the asset, the date, the source's row where there is one and the live span.
    """
    if fill not in FILL_MODES:
        raise DataError(f"data.fill: expected one of {FILL_MODES}, got {fill!r}")
    valid = ~np.isnan(close)
    if valid.all() and not any(np.isnan(f).any() for f in fields.values()):
        return Listed(close, fields, None)
    empty = np.flatnonzero(~valid.any(axis=0))
    if empty.size:
        raise DataError(
            f"{source}: asset {assets[int(empty[0])]!r} has no close price on any date; expected "
            "at least one (drop the asset or give its prices)"
        )
    n = close.shape[0]
    first = valid.argmax(axis=0)
    last = n - 1 - valid[::-1].argmax(axis=0)
    t = np.arange(n)[:, None]
    live = (t >= first) & (t <= last)
    span = _Span(dates, assets, first, last, source, where)
    filled_close = span.filled("close", close, live, fill)
    filled = {name: span.filled(name, arr, live, fill) for name, arr in fields.items()}
    return Listed(filled_close, filled, None if live.all() else live)


@dataclass(frozen=True)
class _Span:
    """The live spans of every asset, and how to name a cell in a message."""

    dates: pd.DatetimeIndex
    assets: tuple[str, ...]
    first: NDArray[np.intp]
    last: NDArray[np.intp]
    source: str
    where: CellWhere

    def gap_error(self, name: str, row: int, col: int, note: str = "") -> DataError:
        asset, day = self.assets[col], _day(self.dates, row)
        cell = self.where(row, col, name) or f"no row for asset {asset!r} on {day}"
        first, last = int(self.first[col]), int(self.last[col])
        return DataError(
            f"{self.source}: {cell}: the {name} is missing inside the listed span of asset "
            f"{asset!r} ({_day(self.dates, first)} to {_day(self.dates, last)}, its first and "
            f"last close){note}; expected a value on every date of the span (a missing price "
            "before the first or after the last is a listing or delisting), or set [data] fill "
            '= "ffill" to carry the last value forward'
        )

    def filled(
        self, name: str, values: NDArray[np.float64], live: NDArray[np.bool_], fill: str
    ) -> NDArray[np.float64]:
        """One array with the rule applied (see the module docstring)."""
        valid = ~np.isnan(values)
        gaps = live & ~valid
        if gaps.any() and fill != "ffill":
            row, col = (int(v) for v in np.argwhere(gaps)[0])
            raise self.gap_error(name, row, col)
        if name in QUANTITY_FIELDS:
            return np.ascontiguousarray(np.where(live & valid, values, 0.0))
        n = values.shape[0]
        t = np.arange(n)[:, None]
        known = live & valid
        # Index of the last known value at or before t (within the span); -1 before it.
        latest = np.maximum.accumulate(np.where(known, t, -1), axis=0)
        at_first = live & (t == self.first) & ~valid
        if at_first.any():  # under ffill: nothing before the first live date to carry
            row, col = (int(v) for v in np.argwhere(at_first)[0])
            raise self.gap_error(name, row, col, " and there is no earlier price to carry")
        cols = np.arange(values.shape[1])[None, :]
        carried = values[np.maximum(latest, 0), cols]
        before = values[self.first, np.arange(values.shape[1])][None, :]
        out = np.where(t < self.first, before, carried)
        return np.ascontiguousarray(out, dtype=np.float64)
