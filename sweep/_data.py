"""Price panels: loading, validation, the embedded synthetic default, and the fingerprint."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.signal import lfilter

from sweep.errors import DataError

#: Fewest dates a panel may have (a few months of daily data).
MIN_PERIODS = 30
OPTIONAL_FIELDS = ("open", "high", "low")
SYNTHETIC_ASSETS = ("EQUITY", "BONDS", "GOLD")


@dataclass(frozen=True, eq=False)
class Panel:
    """A validated price panel: dates x assets.

    Attributes
    ----------
    dates : ndarray of datetime64[ns]
        Strictly increasing dates.
    assets : tuple of str
        Asset names, one per column.
    close : ndarray of float64, shape (n_dates, n_assets)
        Close prices, finite and positive.
    fields : dict of str to ndarray
        Optional ``open``, ``high``, ``low`` arrays shaped like ``close``.
    """

    dates: NDArray[np.datetime64]
    assets: tuple[str, ...]
    close: NDArray[np.float64]
    fields: dict[str, NDArray[np.float64]] = field(default_factory=dict)

    @property
    def n_periods(self) -> int:
        """Number of dates."""
        return int(self.close.shape[0])

    @property
    def n_assets(self) -> int:
        """Number of assets."""
        return int(self.close.shape[1])

    def describe(self) -> dict[str, Any]:
        """Return a JSON-ready summary: fingerprint, shape, date range, assets."""
        return {
            "fingerprint": panel_fingerprint(self),
            "n_periods": self.n_periods,
            "n_assets": self.n_assets,
            "assets": list(self.assets),
            "first_date": str(pd.Timestamp(self.dates[0]).date()),
            "last_date": str(pd.Timestamp(self.dates[-1]).date()),
            "fields": ["close", *sorted(self.fields)],
        }


def panel_fingerprint(panel: Panel) -> str:
    """Return the sha256 of a panel's exact arrays and labels.

    Parameters
    ----------
    panel : Panel
        The panel.

    Returns
    -------
    str
        Hex sha256 over: the asset names (UTF-8, NUL-separated), the dates as little-endian
        int64 nanoseconds, then ``close`` and each optional field in sorted order as
        little-endian float64 in row-major order, each preceded by its name.
    """
    h = hashlib.sha256()
    h.update(b"raysweep-panel-v1\0")
    h.update("\0".join(panel.assets).encode() + b"\0")
    h.update(panel.dates.astype("datetime64[ns]").astype("<i8").tobytes())
    for name in ["close", *sorted(panel.fields)]:
        arr = panel.close if name == "close" else panel.fields[name]
        h.update(name.encode() + b"\0")
        h.update(np.ascontiguousarray(arr, dtype="<f8").tobytes())
    return h.hexdigest()


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
        One date per row, strictly increasing.
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
    try:
        idx = pd.DatetimeIndex(pd.to_datetime(dates))
    except (ValueError, TypeError) as exc:
        raise DataError(f"{source}: dates could not be parsed as dates: {exc}") from exc
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
    if idx.hasnans:
        raise DataError(f"{source}: date at row {int(np.flatnonzero(idx.isna())[0])} is missing")
    steps = np.diff(idx.asi8)
    if (steps <= 0).any():
        row = int(np.flatnonzero(steps <= 0)[0]) + 1
        kind = "repeats" if steps[row - 1] == 0 else "is earlier than"
        raise DataError(
            f"{source}: dates must be sorted and unique; row {row} ({idx[row].date()}) {kind} "
            f"the row before ({idx[row - 1].date()})"
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
                f"{source}: {name} price at date {idx[row].date()} (row {row}), asset "
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


def load_panel(path: str | Path) -> Panel:
    """Load a wide price table from parquet or CSV.

    Parameters
    ----------
    path : str or Path
        A ``.parquet`` or ``.csv`` file. The first column (or a column named ``date``) holds
        the dates; every other column is an asset's close, or ``<asset>:open``,
        ``<asset>:high``, ``<asset>:low`` for optional OHLC fields (``<asset>:close`` is
        accepted for the close).

    Returns
    -------
    Panel
        The validated panel.
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(f"data.path: file {str(p)!r} does not exist")
    try:
        if p.suffix.lower() == ".parquet":
            df = pd.read_parquet(p)
        elif p.suffix.lower() == ".csv":
            df = pd.read_csv(p)
        else:
            raise DataError(f"data.path: expected a .parquet or .csv file, got {str(p)!r}")
    except DataError:
        raise
    except Exception as exc:
        raise DataError(f"data.path: could not read {str(p)!r}: {exc}") from exc
    if isinstance(df.index, pd.DatetimeIndex):
        df = df.reset_index()
    date_col = "date" if "date" in df.columns else df.columns[0]
    dates = df[date_col]
    rest = [c for c in df.columns if c != date_col]
    if not rest:
        raise DataError(f"{p}: expected at least one asset column besides {date_col!r}")
    close_cols: dict[str, str] = {}
    field_cols: dict[str, dict[str, str]] = {f: {} for f in OPTIONAL_FIELDS}
    for col in rest:
        asset, _, kind = str(col).partition(":")
        kind = kind or "close"
        if kind == "close":
            close_cols[asset] = col
        elif kind in OPTIONAL_FIELDS:
            field_cols[kind][asset] = col
        else:
            raise DataError(f"{p}: column {col!r}: unknown field {kind!r}")
    assets = list(close_cols)
    numeric = df[rest].apply(pd.to_numeric, errors="coerce")
    close = numeric[[close_cols[a] for a in assets]].to_numpy(dtype=np.float64)
    fields = {
        kind: numeric[[cols[a] for a in assets]].to_numpy(dtype=np.float64)
        for kind, cols in field_cols.items()
        if cols and set(cols) == set(assets)
    }
    return make_panel(dates, assets, close, fields, source=str(p))
