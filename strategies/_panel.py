"""The price panel the Strategy protocol names, and its fingerprint.

``strategies`` owns this type because a strategy's ``evaluate`` receives it; ``sweep`` builds
and validates panels (``sweep.make_panel``, ``sweep.load_panel``) and re-exports both names.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray


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
