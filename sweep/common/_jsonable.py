"""Turn report values into strict JSON: plain Python types, NaN and infinities as null."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

if TYPE_CHECKING:
    #: A value of strict JSON, as :func:`json.loads` returns it (recursive, for mypy).
    JSONValue: TypeAlias = (
        "bool | int | float | str | list[JSONValue] | dict[str, JSONValue] | None"
    )
else:
    # At run time a JSON value is opaque: the generic reader (:mod:`sweep.common._serial`)
    # copies a field annotated with it as it is, without walking the recursive union.
    JSONValue = Any
#: A JSON object: what a record's ``to_json()`` writes and a field of foreign JSON holds.
JSONObject: TypeAlias = dict[str, JSONValue]


def to_jsonable(value: Any) -> Any:
    """Return ``value`` with numpy types made plain and non-finite floats made ``None``.

    Parameters
    ----------
    value : object
        Nested dicts, lists, tuples, numpy arrays and scalars, str, int, float, bool, None.

    Returns
    -------
    object
        The same structure built from dict, list, str, int, float, bool and None only; dict
        keys become strings and keep their order (which the builders make deterministic).
    """
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, np.ndarray):
        return [to_jsonable(v) for v in value.tolist()]
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    raise TypeError(f"report value of type {type(value).__name__} is not JSON-ready: {value!r}")


def dumps(doc: Mapping[str, Any]) -> str:
    """Serialise a report dict as strict, indented JSON (no NaN), ending with a newline."""
    return json.dumps(to_jsonable(doc), indent=2, allow_nan=False, ensure_ascii=False) + "\n"
