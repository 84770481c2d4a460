"""Price panels: loading, validation and the embedded synthetic default.

The :class:`~strategies.Panel` type and :func:`~strategies.panel_fingerprint` live in
``strategies`` (the Strategy protocol names the panel); they are re-exported here.
"""

from __future__ import annotations

import csv
import datetime
import re
import warnings
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.signal import lfilter

from strategies import Panel as Panel  # re-exported: sweep._data.Panel is the same class
from strategies import panel_fingerprint as panel_fingerprint
from sweep.errors import DataError, close_matches

#: Fewest dates a panel may have (a few months of daily data).
MIN_PERIODS = 30
OPTIONAL_FIELDS = ("open", "high", "low")
SYNTHETIC_ASSETS = ("EQUITY", "BONDS", "GOLD")


_RowName = Callable[[int], str]

#: A date cell written as a plain number (refused: it would be read as nanoseconds).
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _row(row: int) -> str:
    return f"row {row}"


def _cell(value: Any) -> str:
    """A cell for a message: text quoted, other values as Python shows them."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def make_panel(
    dates: Any,
    assets: Any,
    close: Any,
    fields: dict[str, Any] | None = None,
    *,
    source: str = "panel",
) -> Panel:
    """Validate arrays and build a :class:`Panel`.

    Parameters
    ----------
    dates : array_like of datetime-like
        One date per row, strictly increasing (datetimes or date strings; numbers are
        refused rather than read as nanoseconds since 1970).
    assets : sequence of str
        One name per column, unique.
    close : array_like, shape (n_dates, n_assets)
        Close prices.
    fields : dict, optional
        Optional ``open``/``high``/``low`` arrays shaped like ``close``.
    source : str
        Where the data came from, for error messages.

    Returns
    -------
    Panel
        The validated panel.
    """
    values = dates if isinstance(dates, pd.Series) else pd.Series(dates)
    idx = _parse_dates(values.reset_index(drop=True), source, None, _row)
    return _validated_panel(idx, assets, close, fields, source, _row)


def _parse_dates(
    values: pd.Series, source: str, column: str | None, row_name: _RowName, note: str = ""
) -> pd.DatetimeIndex:
    """Parse one date per row; refuse numbers, empty cells and unparseable text by row.

    ``values`` of a datetime dtype are taken as they are. Text is parsed with one format for
    the whole column, inferred from the first date (as pandas does).
    """
    where = "" if column is None else f", column {column!r}"
    if values.dtype.kind == "M":
        missing = np.flatnonzero(np.asarray(values.isna()))
        if missing.size:
            raise DataError(f"{source}: {row_name(int(missing[0]))}{where}: the date is missing")
        return pd.DatetimeIndex(values)
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
            f"{source}: {row_name(row)}{where}: {_cell(values.iloc[row])} is not a date "
            f"(one format for the whole column, like its first date {_cell(values.iloc[0])}; "
            "e.g. 2020-01-31)"
        )
    return pd.DatetimeIndex(parsed)


def _date_cell_problem(values: pd.Series) -> tuple[int, str] | None:
    """The first cell that cannot be a date (empty, a number, not date-like), or None."""
    if values.dtype.kind in "iufb":
        return (0, f"{_cell(values.iloc[0])} is a number, not a date") if len(values) else None
    for row, value in enumerate(values):
        if isinstance(value, str):
            text = value.strip()
            if not text:
                return row, "the date is empty"
            if _NUMBER.fullmatch(text):
                return row, f"{_cell(value)} is a number, not a date"
        elif value is None or pd.isna(value):
            return row, "the date is empty"
        elif not isinstance(value, datetime.date | np.datetime64):
            return row, f"{_cell(value)} is not a date"
    return None


def _validated_panel(
    idx: pd.DatetimeIndex,
    assets: Any,
    close: Any,
    fields: dict[str, Any] | None,
    source: str,
    row_name: _RowName,
) -> Panel:
    names = tuple(str(a) for a in assets)
    if len(set(names)) != len(names):
        raise DataError(f"{source}: asset names must be unique, got {list(names)}")
    prices = np.ascontiguousarray(np.asarray(close, dtype=np.float64))
    if prices.ndim != 2 or prices.shape != (len(idx), len(names)):
        raise DataError(
            f"{source}: close must be shaped (dates, assets) = ({len(idx)}, {len(names)}), "
            f"got {prices.shape}"
        )
    if len(idx) < MIN_PERIODS:
        raise DataError(f"{source}: expected at least {MIN_PERIODS} dates, got {len(idx)}")
    steps = np.diff(idx.asi8)
    if (steps <= 0).any():
        row = int(np.flatnonzero(steps <= 0)[0]) + 1
        kind = "repeats the date of" if steps[row - 1] == 0 else "is earlier than"
        raise DataError(
            f"{source}: dates must be sorted and unique; {row_name(row)} ({idx[row].date()}) "
            f"{kind} {row_name(row - 1)} ({idx[row - 1].date()})"
        )
    extra: dict[str, NDArray[np.float64]] = {}
    for name, arr in (fields or {}).items():
        if name not in OPTIONAL_FIELDS:
            raise DataError(f"{source}: unknown price field {name!r}; expected {OPTIONAL_FIELDS}")
        extra[name] = np.ascontiguousarray(np.asarray(arr, dtype=np.float64))
        if extra[name].shape != prices.shape:
            raise DataError(f"{source}: field {name!r} must be shaped like close {prices.shape}")
    for name, arr in [("close", prices), *sorted(extra.items())]:
        bad = ~np.isfinite(arr) | (arr <= 0)
        if bad.any():
            row, col = (int(v) for v in np.argwhere(bad)[0])
            raise DataError(
                f"{source}: {name} price at date {idx[row].date()} ({row_name(row)}), asset "
                f"{names[col]!r} is {float(arr[row, col])!r}; prices must be finite and positive"
            )
    return Panel(idx.values.astype("datetime64[ns]"), names, prices, extra)


def synthetic_panel(seed: int = 20261130, years: int = 25, start: str = "2000-01-03") -> Panel:
    """Generate the embedded default panel: 3 correlated assets with volatility clustering.

    Parameters
    ----------
    seed : int
        Seed of the generator; the same seed gives the same panel, bit for bit.
    years : int
        Length in years of business days (261 per year).
    start : str
        First business day.

    Returns
    -------
    Panel
        Close prices of ``EQUITY``, ``BONDS`` and ``GOLD``.

    Notes
    -----
    Daily log returns are ``mu + m_t + sigma_t * z_t`` with ``z_t`` Gaussian, correlated
    across assets through a fixed Cholesky factor, ``sigma_t`` following a GARCH(1,1)
    recursion (volatility clustering) and ``m_t`` a slow AR(1) drift (half-life of about
    three months) that gives trend-following a faint, realistic edge.
    """
    rng = np.random.default_rng(seed)
    n = years * 261
    dates = pd.bdate_range(start=start, periods=n)
    vol = np.array([0.011, 0.005, 0.009])
    mu = np.array([0.0003, 0.0001, 0.0002])
    corr = np.array([[1.0, -0.3, 0.1], [-0.3, 1.0, 0.2], [0.1, 0.2, 1.0]])
    chol = np.linalg.cholesky(corr)
    z = rng.standard_normal((n, 3)) @ chol.T
    omega, alpha, beta = 0.02, 0.08, 0.90
    h = np.ones(3)
    eps = np.empty((n, 3))
    for t in range(n):
        eps[t] = np.sqrt(h) * z[t]
        h = omega + alpha * eps[t] ** 2 + beta * h
    phi = 0.5 ** (1 / 63)
    shocks = rng.standard_normal((n, 3)) * vol * 0.004
    drift = lfilter([1.0], [1.0, -phi], shocks, axis=0)
    log_returns = mu + drift + vol * eps
    close = 100.0 * np.exp(np.cumsum(log_returns, axis=0))
    return make_panel(dates, SYNTHETIC_ASSETS, close, source="synthetic panel")


class _CsvLines:
    """The editor line and text of each data row of a CSV file, read on demand.

    Only an error message needs them, so the file is scanned again with the :mod:`csv`
    module (which follows quoted line breaks) only then. The header is line 1; blank lines
    count as lines but hold no row, as pandas skips them.
    """

    def __init__(self, path: Path, n_rows: int) -> None:
        self._path = path
        self._n_rows = n_rows

    @cached_property
    def _records(self) -> list[tuple[int, list[str]]] | None:
        records: list[tuple[int, list[str]]] = []
        with self._path.open(encoding="utf-8-sig", newline="") as f:
            reader = csv.reader(f)
            previous = 0
            for record in reader:
                if record and not (len(record) == 1 and not record[0].strip()):
                    records.append((previous + 1, record))
                previous = reader.line_num
        rows = records[1:]  # the first record is the header
        return rows if len(rows) == self._n_rows else None

    def __call__(self, row: int) -> str:
        records = self._records
        return f"line {records[row][0]}" if records is not None else f"data row {row + 1}"

    def text(self, row: int, column: int) -> str | None:
        """The text of a cell as written in the file (None when unknown)."""
        records = self._records
        if records is None:
            return None
        cells = records[row][1]
        return cells[column] if column < len(cells) else ""


def _csv_header(path: Path) -> list[str]:
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            for record in csv.reader(f):
                if record:
                    return record
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"data.path: could not read {str(path)!r}: {exc}") from exc
    raise DataError(f"{path}: the file is empty; expected a header line (date, assets)")


def _check_unique_columns(source: str, header: Sequence[str]) -> None:
    seen: dict[str, int] = {}
    for pos, name in enumerate(header, start=1):
        if name in seen:
            raise DataError(
                f"{source}: column {name!r} appears more than once in the header (columns "
                f"{seen[name]} and {pos}); expected unique column names"
            )
        seen[name] = pos


def _read_table(p: Path) -> tuple[pd.DataFrame, _RowName]:
    """Read a file as a frame, with the name of each row for messages."""
    suffix = p.suffix.lower()
    if suffix not in (".parquet", ".csv"):
        raise DataError(f"data.path: expected a .parquet or .csv file, got {str(p)!r}")
    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            _check_unique_columns(str(p), pq.read_schema(p).names)
            df = pd.read_parquet(p)
            return (df.reset_index() if isinstance(df.index, pd.DatetimeIndex) else df), _row
        header = _csv_header(p)
        _check_unique_columns(str(p), header)
        date_col = "date" if "date" in header else header[0]
        df = pd.read_csv(p, dtype={date_col: str}, na_filter=False)
    except DataError:
        raise
    except Exception as exc:
        raise DataError(f"data.path: could not read {str(p)!r}: {exc}") from exc
    return df, _CsvLines(p, len(df))


def _price_columns(
    source: str, columns: Sequence[str]
) -> tuple[list[str], dict[str, dict[str, str]]]:
    """Map columns to assets: ``(assets, {field: {asset: column}})``, ``close`` included.

    Every optional field (``open``, ``high``, ``low``) must be given for every asset or for
    none, and only for assets that have a close column.
    """
    by_field: dict[str, dict[str, str]] = {f: {} for f in ("close", *OPTIONAL_FIELDS)}
    for col in columns:
        asset, _, kind = col.partition(":")
        kind = kind or "close"
        if kind not in by_field:
            raise DataError(
                f"{source}: column {col!r}: unknown field {kind!r}; expected one of "
                f"{('close', *OPTIONAL_FIELDS)}" + close_matches(kind, by_field)
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


def _prices(
    source: str, df: pd.DataFrame, col: str, idx: pd.DatetimeIndex, row_name: _RowName
) -> NDArray[np.float64]:
    """One price column as float64; the first bad cell is named with its text."""
    column = df[col]
    try:
        values = _numbers(column)
    except _BadCell as bad:
        raise DataError(
            f"{source}: {row_name(bad.row)} ({idx[bad.row].date()}), column {col!r}: "
            f"{bad.reason(_cell_text(row_name, bad.row, df, col))}; expected a price (a "
            "finite, positive number)"
        ) from None
    return values


def _cell_text(row_name: _RowName, row: int, df: pd.DataFrame, col: str) -> Any:
    """The cell as written in the file where known, else its value in the frame."""
    if isinstance(row_name, _CsvLines):
        text = row_name.text(row, list(df.columns).index(col))
        if text is not None:
            return text
    return df[col].iloc[row]


class _BadCell(Exception):
    """The first cell of a price column that is not a finite, positive number."""

    def __init__(self, row: int, value: float) -> None:
        self.row, self.value = row, value

    def reason(self, raw: Any) -> str:
        text = raw.strip() if isinstance(raw, str) else raw
        if isinstance(raw, str) and not text:
            return "the cell is empty"
        if np.isnan(self.value) and not (isinstance(text, str) and text.lower() in _NAN_TEXT):
            return f"{_cell(raw)} is not a number"
        if not np.isfinite(self.value):
            return f"{_cell(raw)} is not finite"
        return f"{_cell(raw)} is not positive"


def _numbers(column: pd.Series) -> NDArray[np.float64]:
    """A price column as float64, or :class:`_BadCell` for its first bad cell."""
    if column.dtype.kind in "iuf":
        values = column.to_numpy(dtype=np.float64)
    else:
        values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values) | (values <= 0))
    if bad.size:
        raise _BadCell(int(bad[0]), float(values[bad[0]]))
    return values


_NAN_TEXT = ("nan", "+nan", "-nan")


def load_panel(path: str | Path) -> Panel:
    """Load a wide price table from parquet or CSV.

    Parameters
    ----------
    path : str or Path
        A ``.parquet`` or ``.csv`` file. A column named ``date`` (else the first column)
        holds the dates, as dates or date text, never numbers; every other column is an
        asset's close, or ``<asset>:open``, ``<asset>:high``, ``<asset>:low`` for optional
        OHLC fields (``<asset>:close`` is accepted for the close), given for every asset or
        for none. Column names must be unique.

    Returns
    -------
    Panel
        The validated panel.

    Notes
    -----
    Errors name the bad cell: its CSV line as an editor numbers it (the header is line 1,
    blank lines count) or its parquet row (from 0), its column, its date and its text.
    """
    p = Path(path)
    if p.is_dir():
        raise DataError(f"data.path: {str(p)!r} is a directory; expected a .parquet or .csv file")
    if not p.is_file():
        raise DataError(f"data.path: file {str(p)!r} does not exist")
    df, row_name = _read_table(p)
    columns = [str(c) for c in df.columns]
    df.columns = pd.Index(columns)
    date_col = "date" if "date" in columns else columns[0]
    note = (
        ""
        if date_col == "date"
        else (
            f" (there is no 'date' column, so the first column, {date_col!r}, is read as the dates)"
        )
    )
    rest = [c for c in columns if c != date_col]
    if not rest:
        raise DataError(f"{p}: expected at least one asset column besides {date_col!r}")
    assets, by_field = _price_columns(str(p), rest)
    idx = _parse_dates(df[date_col], str(p), date_col, row_name, note)
    arrays = {
        kind: np.column_stack([_prices(str(p), df, cols[a], idx, row_name) for a in assets])
        for kind, cols in by_field.items()
    }
    close = arrays.pop("close")
    return _validated_panel(idx, assets, close, arrays, str(p), row_name)
