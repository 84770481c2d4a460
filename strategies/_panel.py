"""The price panel the Strategy protocol names, and its fingerprint.

``strategies`` owns this type because a strategy's ``evaluate`` receives it; ``sweep`` builds
and validates panels (``sweep.make_panel``, ``sweep.load_panel``) and re-exports both names.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast

import numpy as np
import pandas as pd
from numpy.typing import NDArray

_Array = TypeVar("_Array", bound=np.ndarray[Any, Any])

#: What a strategy is told when it tries to write into an array the engine shares.
READ_ONLY_HINT = (
    "the prices it is given are read-only and shared by every config of the sweep (a change "
    "would alter other configs' results, by batch); copy them first (prices.copy())"
)


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
        Optional ``open``, ``high``, ``low`` (prices) and ``volume`` arrays shaped like
        ``close``; outside an asset's live span a price field holds its nearest valid value
        and the volume is zero.
    live : ndarray of bool, shape (n_dates, n_assets), or None
        Where each asset is listed: True from its first to its last valid price, False
        before its listing and after its delisting. None means listed everywhere (the panel
        has no missing prices). Outside an asset's live span ``close`` (and each field)
        holds the nearest valid price, so the asset's return there is zero, and no strategy
        may hold it: the engine forces its weight to zero.
    """

    dates: NDArray[np.datetime64]
    assets: tuple[str, ...]
    close: NDArray[np.float64]
    fields: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    live: NDArray[np.bool_] | None = None

    @property
    def n_periods(self) -> int:
        """Number of dates."""
        return int(self.close.shape[0])

    @property
    def n_assets(self) -> int:
        """Number of assets."""
        return int(self.close.shape[1])

    @property
    def live_mask(self) -> NDArray[np.bool_]:
        """Where each asset is listed, ``(n_dates, n_assets)``; all True when ``live`` is None."""
        if self.live is None:
            return np.ones(self.close.shape, dtype=bool)
        return self.live

    @property
    def has_listings(self) -> bool:
        """Whether some asset is not listed on some date (``live`` has a False)."""
        return self.live is not None and not bool(self.live.all())

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
        little-endian float64 in row-major order, each preceded by its name; then, only when
        some asset is not listed on some date (:attr:`Panel.has_listings`), ``live`` and a NUL byte
        followed by the live mask as one byte (0 or 1) per cell in row-major order. A panel
        listed everywhere hashes exactly as before the mask existed.
    """
    h = hashlib.sha256()
    h.update(b"raysweep-panel-v1\0")
    h.update("\0".join(panel.assets).encode() + b"\0")
    h.update(panel.dates.astype("datetime64[ns]").astype("<i8").tobytes())
    for name in ["close", *sorted(panel.fields)]:
        arr = panel.close if name == "close" else panel.fields[name]
        h.update(name.encode() + b"\0")
        h.update(np.ascontiguousarray(arr, dtype="<f8").tobytes())
    live = panel.live
    if live is not None and not bool(live.all()):
        h.update(b"live\0")
        h.update(np.ascontiguousarray(live, dtype=np.uint8).tobytes())
    return h.hexdigest()


def immutable_copy(values: _Array) -> _Array:
    """A copy of ``values`` whose memory is a ``bytes`` object: nothing can write to it.

    ``flags.writeable = False`` alone is a request: the owner of an array's memory may set
    it back to True and write. An array over immutable bytes refuses
    (``ValueError: cannot set WRITEABLE flag to True of this array``), as an array a Ray
    worker reads from the object store does. The layout (C or Fortran order) is kept; a
    non-contiguous array becomes C-contiguous, as it does through Ray's serialisation.
    """
    order: Literal["C", "F"] = (
        "F" if values.flags.f_contiguous and not values.flags.c_contiguous else "C"
    )
    frozen = np.frombuffer(values.tobytes(order=order), dtype=values.dtype)
    return cast(_Array, frozen.reshape(tuple(values.shape), order=order))


def frozen_panel(panel: Panel) -> Panel:
    """The panel with every array an :func:`immutable_copy` (same values and fingerprint).

    What the in-process executor hands a strategy, so that a strategy writing into its
    input fails there as it does on a Ray worker, instead of changing the prices every
    later config sees.
    """
    return Panel(
        immutable_copy(panel.dates),
        panel.assets,
        immutable_copy(panel.close),
        {k: immutable_copy(v) for k, v in panel.fields.items()},
        None if panel.live is None else immutable_copy(panel.live),
    )


def read_only_hint(exc: BaseException) -> str:
    """``"; " + READ_ONLY_HINT`` when ``exc`` is numpy refusing a write, else ``""``."""
    text = str(exc)
    refused = isinstance(exc, ValueError) and (
        "read-only" in text or "WRITEABLE flag" in text or "readonly" in text
    )
    return f"; {READ_ONLY_HINT}" if refused else ""
