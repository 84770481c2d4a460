"""Price panels: loading, validation and the embedded synthetic default.

The :class:`~strategies.Panel` type and :func:`~strategies.panel_fingerprint` live in
``strategies`` (the Strategy protocol names the panel); they are re-exported here. Sources
are read by :mod:`sweep.data._read` (local paths and any URI pyarrow reads), tables are
parsed by :mod:`sweep.data._layouts` (wide, long, a folder of per-asset files), and missing
prices become the live mask by the one rule of :mod:`sweep.data._listing`. The fingerprint is
of the parsed arrays, wherever they came from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.signal import lfilter

from stats import fixed_exp, fixed_log
from strategies import Panel as Panel  # re-exported: sweep.data._panels.Panel is the same class
from strategies import panel_fingerprint as panel_fingerprint
from sweep.data._layouts import (
    FIELDS,
    OPTIONAL_FIELDS,
    Parsed,
    check_sorted_dates,
    detect_layout,
    parse_dates,
    parse_long,
    parse_per_asset,
    parse_wide,
)
from sweep.data._listing import listed_prices
from sweep.data._read import RowName, open_source, read_table, row_label
from sweep.errors import DataError

#: Fewest dates a panel may have (a few months of daily data).
MIN_PERIODS = 30
SYNTHETIC_ASSETS = ("EQUITY", "BONDS", "GOLD")
#: Spawn key of the synthetic panel's open/high/low/volume draws (ASCII "OHLC"): a child of
#: ``SeedSequence(seed)`` apart from the closes' own stream, so the closes do not change.
OHLCV_STREAM = 0x4F484C43


def make_panel(
    dates: Any,
    assets: Any,
    close: Any,
    fields: Mapping[str, ArrayLike] | None = None,
    *,
    source: str = "panel",
    fill: str = "none",
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
        Close prices; NaN where an asset has no price (before its listing or after its
        delisting: see :mod:`sweep.data._listing`).
    fields : dict, optional
        Optional ``open``/``high``/``low``/``volume`` arrays shaped like ``close``.
    source : str
        Where the data came from, for error messages.
    fill : {"none", "ffill"}
        A missing price inside an asset's listed span: an error (``"none"``) or the last
        price carried forward.

    Returns
    -------
    Panel
        The validated panel; ``live`` is None when no price is missing.
    """
    values = dates if isinstance(dates, pd.Series) else pd.Series(dates)
    idx = parse_dates(values.reset_index(drop=True), source, None, row_label)
    return _validated_panel(idx, assets, close, fields, source, row_label, fill=fill)


def _validated_panel(
    idx: pd.DatetimeIndex,
    assets: Any,
    close: Any,
    fields: Mapping[str, ArrayLike] | None,
    source: str,
    row_name: RowName,
    *,
    fill: str = "none",
    where: Any = None,
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
    check_sorted_dates(idx, source, row_name)
    extra: dict[str, NDArray[np.float64]] = {}
    for name, arr in (fields or {}).items():
        if name not in OPTIONAL_FIELDS:
            raise DataError(f"{source}: unknown price field {name!r}; expected {OPTIONAL_FIELDS}")
        extra[name] = np.ascontiguousarray(np.asarray(arr, dtype=np.float64))
        if extra[name].shape != prices.shape:
            raise DataError(f"{source}: field {name!r} must be shaped like close {prices.shape}")
    for name, arr in [("close", prices), *sorted(extra.items())]:
        quantity = name == "volume"
        bad = np.isinf(arr) | (arr < 0 if quantity else arr <= 0)
        if bad.any():
            row, col = (int(v) for v in np.argwhere(bad)[0])
            expected = "finite and zero or more" if quantity else "finite and positive"
            raise DataError(
                f"{source}: {name} at date {idx[row].date()} ({row_name(row)}), asset "
                f"{names[col]!r} is {float(arr[row, col])!r}; {name} must be {expected} "
                "(NaN where missing)"
            )
    listed = listed_prices(
        prices,
        extra,
        idx,
        names,
        fill=fill,
        source=source,
        where=where or (lambda row, col, field: f"{row_name(row)}, asset {names[col]!r}"),
    )
    return Panel(
        idx.values.astype("datetime64[ns]"), names, listed.close, listed.fields, listed.live
    )


def _panel_of(parsed: Parsed, source: str, fill: str) -> Panel:
    arrays = dict(parsed.arrays)
    close = arrays.pop("close")
    return _validated_panel(
        parsed.dates,
        parsed.assets,
        close,
        arrays,
        source,
        parsed.row_name,
        fill=fill,
        where=parsed.where,
    )


def _cholesky_3x3(a: tuple[tuple[float, ...], ...]) -> tuple[tuple[float, ...], ...]:
    """Lower Cholesky factor of a 3 x 3 correlation, in plain arithmetic (no LAPACK)."""
    l00 = math.sqrt(a[0][0])
    l10 = a[1][0] / l00
    l20 = a[2][0] / l00
    l11 = math.sqrt(a[1][1] - l10 * l10)
    l21 = (a[2][1] - l20 * l10) / l11
    l22 = math.sqrt((a[2][2] - l20 * l20) - l21 * l21)
    return ((l00, 0.0, 0.0), (l10, l11, 0.0), (l20, l21, l22))


def synthetic_panel(
    seed: int = 20261130, years: int = 25, start: str = "2000-01-03", *, ohlcv: bool = False
) -> Panel:
    """Generate the embedded default panel: 3 correlated assets with volatility clustering.

    Parameters
    ----------
    seed : int
        Seed of the generator; the same seed gives the same panel, bit for bit.
    years : int
        Length in years of business days (261 per year).
    start : str
        First business day.
    ohlcv : bool
        Also give ``open``, ``high``, ``low`` and ``volume`` consistent with the closes
        (which are the same, bit for bit, with or without them).

    Returns
    -------
    Panel
        Close prices of ``EQUITY``, ``BONDS`` and ``GOLD`` (and the other fields with
        ``ohlcv``).

    Notes
    -----
    Daily log returns are ``mu + m_t + sigma_t * z_t`` with ``z_t`` Gaussian, correlated
    across assets through a fixed Cholesky factor, ``sigma_t`` following a GARCH(1,1)
    recursion (volatility clustering) and ``m_t`` a slow AR(1) drift (half-life of about
    three months) that gives trend-following a faint, realistic edge. The other fields
    are drawn from their own child seed (:func:`_ohlcv_fields`).
    """
    rng = np.random.default_rng(seed)
    n = years * 261
    dates = pd.bdate_range(start=start, periods=n)
    vol = np.array([0.011, 0.005, 0.009])
    mu = np.array([0.0003, 0.0001, 0.0002])
    # The correlated draws in explicit elementwise products and sums in a fixed order (no
    # BLAS: OpenBLAS's dgemm kernel, chosen by CPU, changes the last bits), a Cholesky factor
    # of the fixed correlation computed with correctly rounded square roots, and exp/log
    # from stats' fixed implementation (numpy's and libm's are CPU-dispatched).
    chol = _cholesky_3x3(((1.0, -0.3, 0.1), (-0.3, 1.0, 0.2), (0.1, 0.2, 1.0)))
    raw = rng.standard_normal((n, 3))
    z = np.empty((n, 3))
    z[:, 0] = raw[:, 0] * chol[0][0]
    z[:, 1] = raw[:, 0] * chol[1][0] + raw[:, 1] * chol[1][1]
    z[:, 2] = (raw[:, 0] * chol[2][0] + raw[:, 1] * chol[2][1]) + raw[:, 2] * chol[2][2]
    omega, alpha, beta = 0.02, 0.08, 0.90
    h = np.ones(3)
    eps = np.empty((n, 3))
    for t in range(n):
        eps[t] = np.sqrt(h) * z[t]
        h = omega + alpha * (eps[t] * eps[t]) + beta * h
    phi = float(fixed_exp(float(fixed_log(0.5)) / 63.0))  # half-life 63 days
    shocks = rng.standard_normal((n, 3)) * vol * 0.004
    drift = lfilter([1.0], [1.0, -phi], shocks, axis=0)
    log_returns = mu + drift + vol * eps
    close = 100.0 * fixed_exp(np.cumsum(log_returns, axis=0))
    fields = _ohlcv_fields(seed, close, log_returns, vol) if ohlcv else None
    return make_panel(dates, SYNTHETIC_ASSETS, close, fields, source="synthetic panel")


def _ohlcv_fields(
    seed: int,
    close: NDArray[np.float64],
    log_returns: NDArray[np.float64],
    vol: NDArray[np.float64],
) -> dict[str, NDArray[np.float64]]:
    """Open, high, low and volume for the synthetic closes, from their own child seed.

    Each day's scale is ``s_t = (vol + |r_t|) / 2`` (``r_t`` the close's log return, so the
    range widens with volatility clustering). The open is the previous close times
    ``exp(0.3 s_t z1)`` (an overnight gap; the first open is the first close's);
    ``high = max(open, close) exp(s_t |z2|)`` and ``low = min(open, close) exp(-s_t |z3|)``;
    the volume is a whole number of shares, ``base exp(0.3 z4 + 0.2 |r_t| / vol)``, larger on
    big moves. The ``z`` are standard normal from ``SeedSequence(seed, spawn_key=
    (OHLCV_STREAM,))``; only :func:`stats.fixed_exp` and correctly rounded arithmetic touch
    the values (the same bits on any CPU).
    """
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(OHLCV_STREAM,)))
    z = rng.standard_normal((4, *close.shape))
    size = np.abs(log_returns)
    scale = (vol + size) * 0.5
    previous = np.empty_like(close)
    previous[0] = close[0]
    previous[1:] = close[:-1]
    opens = previous * fixed_exp(0.3 * scale * z[0])
    high = np.maximum(opens, close) * fixed_exp(scale * np.abs(z[1]))
    low = np.minimum(opens, close) * fixed_exp(-(scale * np.abs(z[2])))
    # The factors are >= 1 (<= 1), so these only guard the order against rounding.
    high = np.maximum(high, np.maximum(opens, close))
    low = np.minimum(low, np.minimum(opens, close))
    base = np.array([2.0e6, 5.0e5, 3.0e5])
    volume = np.rint(base * fixed_exp(0.3 * z[3] + 0.2 * (size / vol)))
    return {"open": opens, "high": high, "low": low, "volume": np.maximum(volume, 1.0)}


def load_panel(path: Any, *, layout: str = "auto", fill: str = "none") -> Panel:
    """Load a price panel from a file or a folder, local or anywhere pyarrow reads.

    Parameters
    ----------
    path : str or Path
        A ``.parquet``, ``.csv`` or ``.csv.gz`` file, or a folder of per-asset files
        (``AAPL.csv``, ``MSFT.parquet``: the file name is the asset); a local path, or a URI
        such as ``s3://bucket/prices.parquet`` (``?endpoint_override=host:port&scheme=http``
        for an S3-compatible store) or ``gs://bucket/prices/``.
    layout : {"auto", "wide", "long"}
        Of a single file. **wide**: a ``date`` column (else the first column) and one close
        column per asset, or ``<asset>:open|high|low|volume|close`` columns (each optional
        field for every asset or none). **long**: columns ``date, asset, close`` and
        optionally ``open, high, low, volume``, one row per date and asset in any order.
        ``auto``: long when the file has an ``asset`` column. A per-asset file has a
        ``date`` column, ``close`` and optionally the other fields. A wide table keeps its
        column order; a long table's and a folder's assets are in name order, and their
        dates are the union of the rows' dates.
    fill : {"none", "ffill"}
        A missing price inside an asset's listed span: an error naming the cell, or the
        last price carried forward.

    Returns
    -------
    Panel
        The validated panel. A price missing before an asset's first or after its last
        close (a listing or a delisting) is filled with the nearest price and the asset is
        not live there (:mod:`sweep.data._listing`).

    Notes
    -----
    Dates are dates or date text, never numbers. A CSV's missing price is an empty cell;
    text such as ``NA`` is refused. Errors name the bad cell: its CSV line as an editor
    numbers it (the header is line 1, blank lines count) or its parquet row (from 0), its
    column, its date and its text; a duplicate (date, asset) names both rows.
    """
    source = open_source(str(path))
    if source.folder:
        return _panel_of(parse_per_asset(source.files, source.location), source.location, fill)
    (file,) = source.files
    df, row_name = read_table(file)
    if detect_layout(list(df.columns), layout, file.label) == "long":
        return _panel_of(parse_long(df, row_name, file.label), file.label, fill)
    return _panel_of(parse_wide(df, row_name, file.label), file.label, fill)


def panel_from_frame(
    frame: pd.DataFrame, *, layout: str = "auto", fill: str = "none", source: str = "DataFrame"
) -> Panel:
    """Build a panel from a pandas DataFrame, wide or long.

    Parameters
    ----------
    frame : pandas.DataFrame
        **Wide**: dates as a ``DatetimeIndex`` (or a ``date`` column) and one column per
        asset holding its close, or ``asset:field`` columns, or two-level columns whose
        levels are fields (``close``, ``open``, ``high``, ``low``, ``volume``, any case) and
        assets, as ``yfinance`` and ``pandas_datareader`` return them. **Long**: columns
        ``date, asset, close[, open, high, low, volume]``, or a two-level ``(date, asset)``
        index with field columns.
    layout : {"auto", "wide", "long"}
        ``auto``: long when there is an ``asset`` column or a two-level index.
    fill : {"none", "ffill"}
        As :func:`load_panel`.
    source : str
        Name of the frame in messages.

    Returns
    -------
    Panel
        NaN marks a missing price (see :func:`load_panel` for what it means).
    """
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"data: expected a pandas DataFrame, got {type(frame).__name__}")
    df = frame
    if isinstance(df.index, pd.MultiIndex):
        if df.index.nlevels != 2:
            raise DataError(
                f"{source}: a long frame's index must have two levels (date, asset), got "
                f"{df.index.nlevels}"
            )
        names = [n if n in ("date", "asset") else None for n in df.index.names]
        if names.count(None) or len(set(names)) != 2:
            names = ["date", "asset"]
        df = df.rename_axis(names).reset_index()
    elif isinstance(df.columns, pd.MultiIndex):
        df = _flat_columns(df, source)
    named_dates = isinstance(df.index, pd.DatetimeIndex) or df.index.name == "date"
    if "date" not in [str(c) for c in df.columns] and named_dates:
        df = df.rename_axis("date").reset_index()
    else:
        df = df.reset_index(drop=True)
    df = df.copy(deep=False)
    if detect_layout(list(df.columns), layout, source) == "long":
        return _panel_of(parse_long(df, row_label, source), source, fill)
    return _panel_of(parse_wide(df, row_label, source), source, fill)


def _flat_columns(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    """Two-level columns (field, asset) or (asset, field) as ``asset:field`` names."""
    if frame.columns.nlevels != 2:
        raise DataError(
            f"{source}: columns with {frame.columns.nlevels} levels; expected one level of "
            "assets, or two levels (field, asset)"
        )
    levels = [[str(v).lower() for v in frame.columns.get_level_values(i)] for i in (0, 1)]
    field_level = next((i for i in (0, 1) if set(levels[i]) <= set(FIELDS)), None)
    if field_level is None:
        raise DataError(
            f"{source}: two-level columns, but neither level holds only fields {FIELDS}; got "
            f"{sorted(set(levels[0]))[:5]} and {sorted(set(levels[1]))[:5]}"
        )
    assets = [str(v) for v in frame.columns.get_level_values(1 - field_level)]
    names = [
        a if f == "close" else f"{a}:{f}" for a, f in zip(assets, levels[field_level], strict=True)
    ]
    flat = frame.copy(deep=False)
    flat.columns = pd.Index(names)
    return flat
