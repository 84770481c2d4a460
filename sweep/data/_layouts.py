"""Table layouts of price data: wide, long, and a folder of per-asset files.

Each layout is parsed into :class:`Parsed`: dates, assets and one ``(dates, assets)`` array
per field with NaN where the source has no value (a missing price), plus how to name a
source cell in a message. Bad cells (text that is not a number, a price that is not finite
and positive, a negative volume) are refused here, naming the file, the row or line, the
column, the date and the text; what a missing price means is decided afterwards by the one
listing rule (:mod:`sweep.data._listing`).

* **wide**: a ``date`` column (else the first column) and one column per asset (its
  close), or ``<asset>:<field>`` for ``open``, ``high``, ``low``, ``volume``.
* **long**: columns ``date, asset, close`` and optionally ``open, high, low, volume``; one
  row per date and asset, in any order; a (date, asset) pair at most once.
* **per-asset files**: a folder with one file per asset (``AAPL.csv``), named by the asset,
  each with a ``date`` column and ``close`` (and optionally the other fields).
"""

from __future__ import annotations

import datetime
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from sweep.data._listing import CellWhere
from sweep.data._read import RowName, SourceFile, read_table, row_label, stem_of
from sweep.errors import DataError, close_matches

#: Fields besides the close, in every layout.
OPTIONAL_FIELDS = ("open", "high", "low", "volume")
FIELDS = ("close", *OPTIONAL_FIELDS)
#: Columns of a long-format table besides its fields.
LONG_KEYS = ("date", "asset")
LAYOUTS = ("auto", "wide", "long")

#: A date cell written as a plain number (refused: it would be read as nanoseconds).
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_NAN_TEXT = ("nan", "+nan", "-nan")


@dataclass(frozen=True)
class Parsed:
    """A source parsed: dates, assets, fields with NaN where missing, cell names.

    Attributes
    ----------
    dates : DatetimeIndex
        The dates (a wide file's in file order, checked later; sorted otherwise).
    assets : tuple of str
        The assets.
    arrays : dict of str to ndarray
        ``close`` and the optional fields, ``(dates, assets)`` float64, NaN where missing.
    row_name : callable
        Name of a date's row for messages about date order (wide files).
    where : callable
        ``where(row, col)``: the source's name of a cell, or None when it has no row.
    """

    dates: pd.DatetimeIndex
    assets: tuple[str, ...]
    arrays: dict[str, NDArray[np.float64]]
    row_name: RowName
    where: CellWhere


def cell_repr(value: Any) -> str:
    """A cell for a message: text quoted, other values as Python shows them."""
    return repr(value.item() if isinstance(value, np.generic) else value)


# --- dates --------------------------------------------------------------------------------
def parse_dates(
    values: pd.Series, source: str, column: str | None, row_name: RowName, note: str = ""
) -> pd.DatetimeIndex:
    """Parse one date per row; refuse numbers, empty cells and unparseable text by row.

    ``values`` of a datetime dtype are taken as they are (time zones dropped to their
    wall-clock time). Text is parsed with one format for the whole column, inferred from the
    first date (as pandas does).
    """
    where = "" if column is None else f", column {column!r}"
    if isinstance(values.dtype, pd.DatetimeTZDtype):
        values = values.dt.tz_localize(None)
    if values.dtype.kind == "M":
        missing = np.flatnonzero(np.asarray(values.isna()))
        if missing.size:
            raise DataError(f"{source}: {row_name(int(missing[0]))}{where}: the date is missing")
        return pd.DatetimeIndex(values.astype("datetime64[ns]"))
    problem = _date_cell_problem(values)
    if problem is not None:
        row, reason = problem
        number = reason.endswith("is a number, not a date")
        advice = f"{note}; write dates such as 2020-01-31" if number else note
        raise DataError(f"{source}: {row_name(row)}{where}: {reason}{advice}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "could not infer format": each date parsed alone
        try:
            parsed = pd.to_datetime(values, errors="coerce")
        except (ValueError, TypeError, OverflowError) as exc:
            raise DataError(f"{source}{where}: dates could not be parsed: {exc}") from exc
    bad = np.flatnonzero(np.asarray(pd.isna(parsed)))
    if bad.size:
        row = int(bad[0])
        raise DataError(
            f"{source}: {row_name(row)}{where}: {cell_repr(values.iloc[row])} is not a date "
            f"(one format for the whole column, like its first date {cell_repr(values.iloc[0])}; "
            "e.g. 2020-01-31)"
        )
    return pd.DatetimeIndex(pd.DatetimeIndex(parsed).values.astype("datetime64[ns]"))


def check_sorted_dates(dates: pd.DatetimeIndex, source: str, row_name: RowName) -> None:
    """Refuse dates that are not strictly increasing, naming the first offending row."""
    steps = np.diff(dates.asi8)
    if (steps <= 0).any():
        row = int(np.flatnonzero(steps <= 0)[0]) + 1
        kind = "repeats the date of" if steps[row - 1] == 0 else "is earlier than"
        raise DataError(
            f"{source}: dates must be sorted and unique; {row_name(row)} "
            f"({dates[row].date()}) {kind} {row_name(row - 1)} ({dates[row - 1].date()})"
        )


def _date_cell_problem(values: pd.Series) -> tuple[int, str] | None:
    """The first cell that cannot be a date (empty, a number, not date-like), or None."""
    if values.dtype.kind in "iufb":
        return (0, f"{cell_repr(values.iloc[0])} is a number, not a date") if len(values) else None
    for row, value in enumerate(values):
        if isinstance(value, str):
            text = value.strip()
            if not text:
                return row, "the date is empty"
            if _NUMBER.fullmatch(text):
                return row, f"{cell_repr(value)} is a number, not a date"
        elif value is None or pd.isna(value):
            return row, "the date is empty"
        elif not isinstance(value, datetime.date | np.datetime64):
            return row, f"{cell_repr(value)} is not a date"
    return None


def _date_column(columns: Sequence[str], source: str) -> tuple[str, str]:
    """The date column (``date``, else the first) and a note for messages."""
    if not columns:
        raise DataError(f"{source}: the table has no columns; expected a date column")
    if "date" in columns:
        return "date", ""
    first = columns[0]
    return first, (
        f" (there is no 'date' column, so the first column, {first!r}, is read as the dates)"
    )


# --- cells --------------------------------------------------------------------------------
class _BadCell(Exception):
    """The first cell of a column that is neither missing nor a valid value."""

    def __init__(self, row: int, value: float) -> None:
        self.row, self.value = row, value

    def reason(self, raw: Any, quantity: bool) -> str:
        text = raw.strip() if isinstance(raw, str) else raw
        if np.isnan(self.value) and not (isinstance(text, str) and text.lower() in _NAN_TEXT):
            return f"{cell_repr(raw)} is not a number"
        if not np.isfinite(self.value):
            return f"{cell_repr(raw)} is not finite"
        return f"{cell_repr(raw)} is {'negative' if quantity else 'not positive'}"


def _values(column: pd.Series, quantity: bool) -> NDArray[np.float64]:
    """A column as float64 with NaN where missing, or :class:`_BadCell` for its first bad cell.

    Missing: an empty (or blank) text cell, or a null of the frame (None, NaN, NaT in a
    float or object column of a parquet file or DataFrame). Text such as ``NA`` or ``nan``
    is not missing but refused, so that a typo never silently becomes a listing.
    """
    if column.dtype.kind in "iuf":
        values = column.to_numpy(dtype=np.float64)
        missing = np.isnan(values)
    else:
        obj = column.to_numpy(dtype=object)
        missing = np.fromiter(
            (
                (isinstance(v, str) and not v.strip())
                or (not isinstance(v, str) and (v is None or bool(pd.isna(v))))
                for v in obj
            ),
            dtype=bool,
            count=len(obj),
        )
        values = pd.to_numeric(column.where(~missing, None), errors="coerce").to_numpy(
            dtype=np.float64
        )
    invalid = ~np.isfinite(values) | (values < 0 if quantity else values <= 0)
    bad = np.flatnonzero(invalid & ~missing)
    if bad.size:
        raise _BadCell(int(bad[0]), float(values[bad[0]]))
    values = values.copy()
    values[missing] = np.nan
    return values


def _column(
    source: str,
    df: pd.DataFrame,
    col: str,
    dates: pd.DatetimeIndex,
    row_name: RowName,
    field: str,
) -> NDArray[np.float64]:
    """One column as float64 (NaN where missing); a bad cell named with its text."""
    quantity = field == "volume"
    try:
        return _values(df[col], quantity)
    except _BadCell as bad:
        expected = (
            "a volume (a finite number, zero or more)"
            if quantity
            else "a price (a finite, positive number)"
        )
        raise DataError(
            f"{source}: {row_name(bad.row)} ({dates[bad.row].date()}), column {col!r}: "
            f"{bad.reason(_cell_text(row_name, bad.row, df, col), quantity)}; expected "
            f"{expected}, or an empty cell for a missing value"
        ) from None


def _cell_text(row_name: RowName, row: int, df: pd.DataFrame, col: str) -> Any:
    """The cell as written in the file where known, else its value in the frame."""
    text_of = getattr(row_name, "text", None)
    if text_of is not None:
        text = text_of(row, list(df.columns).index(col))
        if text is not None:
            return text
    return df[col].iloc[row]


# --- wide ---------------------------------------------------------------------------------
def price_columns(
    source: str, columns: Sequence[str]
) -> tuple[list[str], dict[str, dict[str, str]]]:
    """Map wide columns to assets: ``(assets, {field: {asset: column}})``, ``close`` included.

    Every optional field must be given for every asset or for none, and only for assets
    that have a close column.
    """
    by_field: dict[str, dict[str, str]] = {f: {} for f in FIELDS}
    for col in columns:
        asset, _, kind = col.partition(":")
        kind = kind or "close"
        if kind not in by_field:
            raise DataError(
                f"{source}: column {col!r}: unknown field {kind!r}; expected one of "
                f"{FIELDS}" + close_matches(kind, by_field)
            )
        if not asset:
            raise DataError(f"{source}: column {col!r} names no asset before ':'")
        if asset in by_field[kind]:
            raise DataError(
                f"{source}: columns {by_field[kind][asset]!r} and {col!r} both give the "
                f"{kind} of asset {asset!r}; expected one column each"
            )
        by_field[kind][asset] = col
    assets = list(by_field["close"])
    for kind in OPTIONAL_FIELDS:
        given = by_field[kind]
        for asset, col in given.items():
            if asset not in by_field["close"]:
                raise DataError(
                    f"{source}: column {col!r} has no close column {asset!r}; expected a "
                    f"close column for every asset with a {kind} column"
                )
        missing = [f"{a}:{kind}" for a in assets if a not in given]
        if given and missing:
            raise DataError(
                f"{source}: {kind} prices are given for {sorted(given)} (columns "
                f"{sorted(given.values())}) but not in columns {missing}; give the {kind} of "
                "every asset or none"
            )
    return assets, {k: v for k, v in by_field.items() if v}


def parse_wide(df: pd.DataFrame, row_name: RowName, source: str) -> Parsed:
    """A wide table: a date column and ``asset`` / ``asset:field`` columns."""
    columns = [str(c) for c in df.columns]
    df.columns = pd.Index(columns)
    date_col, note = _date_column(columns, source)
    rest = [c for c in columns if c != date_col]
    if not rest:
        raise DataError(f"{source}: expected at least one asset column besides {date_col!r}")
    assets, by_field = price_columns(source, rest)
    dates = parse_dates(df[date_col], source, date_col, row_name, note)
    arrays = {
        kind: np.column_stack([_column(source, df, cols[a], dates, row_name, kind) for a in assets])
        for kind, cols in by_field.items()
    }

    def where(row: int, col: int, field: str) -> str:
        name = by_field.get(field, {}).get(assets[col], assets[col])
        return f"{row_name(row)} ({dates[row].date()}), column {name!r}"

    return Parsed(dates, tuple(assets), arrays, row_name, where)


# --- long ---------------------------------------------------------------------------------
def _check_long_columns(source: str, columns: Sequence[str], keys: Sequence[str]) -> list[str]:
    """The fields of a long (or per-asset) table; refuses missing and unknown columns."""
    expected = f"columns {', '.join(keys)}, close[, open, high, low, volume]"
    for key in (*keys, "close"):
        if key not in columns:
            raise DataError(
                f"{source}: missing column {key!r}; expected {expected}, got "
                f"{list(columns)}" + close_matches(key, columns)
            )
    unknown = [c for c in columns if c not in (*keys, *FIELDS)]
    if unknown:
        raise DataError(
            f"{source}: unknown column {unknown[0]!r}; expected {expected}"
            + close_matches(unknown[0], [*keys, *FIELDS])
        )
    return [f for f in FIELDS if f in columns]


def parse_long(df: pd.DataFrame, row_name: RowName, source: str) -> Parsed:
    """A long table: one row per (date, asset), in any order."""
    columns = [str(c) for c in df.columns]
    df.columns = pd.Index(columns)
    fields = _check_long_columns(source, columns, LONG_KEYS)
    dates = parse_dates(df["date"], source, "date", row_name)
    names = df["asset"]
    blank = np.flatnonzero(
        np.fromiter(
            (
                v is None or (isinstance(v, float) and np.isnan(v)) or not str(v).strip()
                for v in names
            ),
            dtype=bool,
            count=len(names),
        )
    )
    if blank.size:
        row = int(blank[0])
        raise DataError(f"{source}: {row_name(row)}, column 'asset': the asset name is empty")
    asset_names = names.astype(str).to_numpy()
    keys = pd.DataFrame({"d": dates.asi8, "a": asset_names})
    dup = np.flatnonzero(keys.duplicated(keep=False).to_numpy())
    if dup.size:
        first = int(dup[0])
        same = dup[
            (keys["d"].to_numpy()[dup] == keys["d"].iloc[first])
            & (asset_names[dup] == asset_names[first])
        ]
        raise DataError(
            f"{source}: {row_name(int(same[0]))} and {row_name(int(same[1]))} both give asset "
            f"{asset_names[first]!r} on {dates[first].date()}; expected one row per date and asset"
        )
    values = {f: _column(source, df, f, dates, row_name, f) for f in fields}
    assets, col_of = np.unique(asset_names, return_inverse=True)
    days, row_of = np.unique(dates.asi8, return_inverse=True)
    source_row = np.full((len(days), len(assets)), -1, dtype=np.int64)
    source_row[row_of, col_of] = np.arange(len(df))
    arrays: dict[str, NDArray[np.float64]] = {}
    for f, v in values.items():
        grid = np.full((len(days), len(assets)), np.nan)
        grid[row_of, col_of] = v
        arrays[f] = grid

    def where(row: int, col: int, field: str) -> str | None:
        at = int(source_row[row, col])
        if at < 0:
            return None
        return f"{row_name(at)} ({dates[at].date()}), asset {assets[col]!r}, column {field!r}"

    day_index = pd.DatetimeIndex(days.astype("datetime64[ns]"))
    return Parsed(day_index, tuple(str(a) for a in assets), arrays, row_label, where)


# --- a folder of per-asset files ----------------------------------------------------------
def parse_per_asset(files: Sequence[SourceFile], folder: str) -> Parsed:
    """A folder of per-asset files: each file's name is its asset; dates are their union."""
    assets: list[str] = []
    frames: list[tuple[pd.DatetimeIndex, dict[str, NDArray[np.float64]], RowName, str]] = []
    for file in files:
        asset = stem_of(file.name)
        if asset in assets:
            raise DataError(
                f"{folder}: two files give asset {asset!r} ({file.name!r} and an earlier one); "
                "expected one file per asset"
            )
        df, row_name = read_table(file)
        columns = [str(c) for c in df.columns]
        df.columns = pd.Index(columns)
        date_col, _ = _date_column(columns, file.label)
        fields = _check_long_columns(
            file.label, ["date", *[c for c in columns if c != date_col]], ("date",)
        )
        dates = parse_dates(df[date_col], file.label, date_col, row_name)
        check_sorted_dates(dates, file.label, row_name)
        values = {f: _column(file.label, df, f, dates, row_name, f) for f in fields}
        assets.append(asset)
        frames.append((dates, values, row_name, file.label))
    field_sets = {tuple(sorted(v)) for _, v, _, _ in frames}
    if len(field_sets) > 1:
        raise DataError(
            f"{folder}: the files give different fields ("
            + "; ".join(f"{label}: {sorted(v)}" for _, v, _, label in frames)
            + "); expected the same fields in every file"
        )
    days = np.unique(np.concatenate([d.asi8 for d, _, _, _ in frames]))
    index = pd.DatetimeIndex(days.astype("datetime64[ns]"))
    positions = [np.searchsorted(days, d.asi8) for d, _, _, _ in frames]
    arrays: dict[str, NDArray[np.float64]] = {}
    for f in frames[0][1]:
        grid = np.full((len(days), len(assets)), np.nan)
        for j, (_, values, _, _) in enumerate(frames):
            grid[positions[j], j] = values[f]
        arrays[f] = grid

    def where(row: int, col: int, field: str) -> str:
        at = np.flatnonzero(positions[col] == row)
        _, _, row_name, label = frames[col]
        day = index[row].date()
        if not at.size:
            return f"{label}: no row for {day}"
        return f"{label}: {row_name(int(at[0]))} ({day}), column {field!r}"

    return Parsed(index, tuple(assets), arrays, row_label, where)


def detect_layout(columns: Sequence[str], layout: str, source: str) -> str:
    """``wide`` or ``long``: as given, or (``auto``) long when there is an ``asset`` column."""
    if layout not in LAYOUTS:
        raise DataError(
            f"data.layout: expected one of {LAYOUTS}, got {layout!r}"
            + close_matches(layout, LAYOUTS)
        )
    if layout != "auto":
        return layout
    return "long" if "asset" in [str(c) for c in columns] else "wide"
