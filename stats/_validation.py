"""Input checks shared by the statistics: each raises ``StatsInputError`` naming the argument."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from stats._stats_errors import StatsInputError

FloatArray = NDArray[np.float64]


def input_error(message: str) -> StatsInputError:
    """Build a :class:`stats.StatsInputError` (a ``ValueError``) with ``message``."""
    return StatsInputError(message)


def _describe(value: Any) -> str:
    arr = np.asarray(value) if not isinstance(value, np.ndarray) else value
    if arr.ndim == 0:
        return repr(value)
    return f"an array of shape {arr.shape}"


def as_float_array(
    name: str, value: ArrayLike, *, ndim: int | None = None, finite: bool = True
) -> FloatArray:
    """Convert to a float64 array, checking the number of dimensions and finiteness."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise input_error(
            f"{name}: expected an array of real numbers, got {type(value).__name__}"
        ) from exc
    if ndim is not None and arr.ndim != ndim:
        raise input_error(
            f"{name}: expected a {ndim}-D array, got {arr.ndim} dimensions (shape {arr.shape})"
        )
    if finite and arr.size and not bool(np.isfinite(arr).all()):
        raise not_finite(name, int((~np.isfinite(arr)).sum()))
    return arr


def not_finite(name: str, bad: int) -> StatsInputError:
    """The error of an array ``name`` with ``bad`` NaN or infinite values."""
    return input_error(f"{name}: expected finite values, got {bad} NaN or infinite")


def as_float(name: str, value: Any, *, finite: bool = True) -> float:
    """Convert a scalar to ``float``, refusing arrays, NaN and (optionally) infinities."""
    arr = np.asarray(value)
    if arr.ndim != 0:
        raise input_error(f"{name}: expected a scalar, got {_describe(value)}")
    try:
        out = float(arr)
    except (TypeError, ValueError) as exc:
        raise input_error(f"{name}: expected a real number, got {value!r}") from exc
    if math.isnan(out) or (finite and math.isinf(out)):
        raise input_error(f"{name}: expected a finite number, got {value!r}")
    return out


def as_int(name: str, value: Any, *, minimum: int | None = None) -> int:
    """Convert an integral scalar to ``int``, refusing fractions, bools and values below min."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        if isinstance(value, float | np.floating) and float(value).is_integer():
            value = int(value)
        else:
            raise input_error(f"{name}: expected an integer, got {value!r}")
    out = int(value)
    if minimum is not None and out < minimum:
        raise input_error(f"{name}: expected an integer >= {minimum}, got {out}")
    return out


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    """Refuse a string that is not one of ``choices``, suggesting close matches."""
    if value not in choices:
        import difflib

        matches = difflib.get_close_matches(str(value), list(choices), n=3, cutoff=0.6)
        hint = (" Did you mean " + " or ".join(repr(m) for m in matches) + "?") if matches else ""
        raise input_error(f"{name}: expected one of {choices}, got {value!r}.{hint}")
    return value
