"""Whether a manifest's grid description is the grid of its own spec.

A run folder's ``manifest.json`` describes its grid twice: the spec (covered by the spec
hash, which the identity records and every part's run binding covers) and the ``grid``
object (:meth:`sweep.spec._grid.Grid.describe`), which lists every axis value and from which
the config id at every position is recomputed (:mod:`sweep.store._row_identity`). The
``grid`` object is covered by no hash, so it is derived again here from the spec and must
agree, value for value and bit for bit, before anything is judged by it:

- the spec's own axes (names, order, sizes, values; an integer axis may be recorded as
  float64, which a float parameter makes of it), its zip groups and constraints, and the
  grid's size;
- every other axis is a fixed parameter (one value): a cost must hold the spec's cost; a
  default is checked against the strategy when the strategy is a built-in of the same version
  (:func:`grid_disagreement` with ``full``), and otherwise only for its form (a bounded name,
  one of the engine's dtypes, one finite value of that dtype). A forged default of a strategy
  outside the registry is caught by the driver that resumes the run, which has the strategy
  (:meth:`sweep.store._run_store.RunStore.check_compatible`).

Nothing here builds an array from the recorded description: the comparison is of JSON
values against the spec's, so an unbounded dtype, a huge integer or a huge list is refused
from its form, in time linear in what the spec itself lists.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from sweep.spec._grid import MAX_DESCRIBED_VALUES, Axis, Grid
from sweep.store._footer_json import brief, is_int

#: The dtypes an axis of the engine has (text axes: ``<U`` and a length, see
#: :data:`MAX_TEXT_LENGTH`).
NUMERIC_DTYPES = ("int64", "float64", "bool")
#: The longest text value (and parameter name) a recorded grid may hold.
MAX_TEXT_LENGTH = 1024
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def grid_disagreement(
    recorded: Mapping[str, Any], spec_grid: Grid, costs: Mapping[str, Any], full: Grid | None
) -> str | None:
    """What the recorded grid description gets wrong about the spec's grid, or None.

    Parameters
    ----------
    recorded : mapping
        The manifest's ``grid`` object, as read.
    spec_grid : Grid
        The spec's own grid (:meth:`sweep.spec._grid.Grid.from_definition` of its ``grid``).
    costs : mapping
        The spec's ``costs`` (values of fixed parameters).
    full : Grid or None
        The full grid (spec axes, costs and strategy defaults, each coerced to its
        parameter's kind) when the strategy is at hand: then the description must be exactly
        its description.

    Returns
    -------
    str or None
        One clause naming the first disagreement (for "manifest.json disagrees with itself:
        <clause>"), or None when the description is the spec's grid.
    """
    axes = recorded.get("axes")
    if not isinstance(axes, list) or not all(isinstance(a, Mapping) for a in axes):
        return "its grid has no list of axes"
    listed = sum(len(a["values"]) for a in axes if isinstance(a.get("values"), list))
    if listed > MAX_DESCRIBED_VALUES:
        return (
            f"its grid lists {listed:,} axis values, more than the {MAX_DESCRIBED_VALUES:,} "
            "a manifest ever lists"
        )
    if full is not None:
        return _exactly(recorded, full)
    found = _shape_disagreement(recorded, spec_grid)
    if found is not None:
        return found
    given = len(spec_grid.axes)
    if len(axes) < given:
        return f"its grid has {len(axes)} axes, its spec gives {given}"
    for axis, doc in zip(spec_grid.axes, axes, strict=False):
        found = _axis_disagreement(doc, axis)
        if found is not None:
            return found
    names = set(spec_grid.names)
    for doc in axes[given:]:
        found = _fixed_axis_disagreement(doc, names, costs)
        if found is not None:
            return found
        names.add(str(doc["name"]))
    return None


def _exactly(recorded: Mapping[str, Any], full: Grid) -> str | None:
    """The recorded description against the one derived from the spec and the strategy.

    A key the recorded description lacks (a folder written before it was recorded) is not
    compared; every key it has must hold the derived value.
    """
    found = _shape_disagreement(recorded, full)
    if found is not None:
        return found
    axes = recorded["axes"]
    if len(axes) != len(full.axes):
        return f"its grid has {len(axes)} axes, its spec and strategy give {len(full.axes)}"
    for doc, axis in zip(axes, full.axes, strict=True):
        found = _axis_keys_disagreement(doc, axis.describe(with_values="values" in doc))
        if found is not None:
            return found
    return None


def _axis_keys_disagreement(doc: Mapping[str, Any], want: Mapping[str, Any]) -> str | None:
    """The first key of a recorded axis that does not hold the derived value, named."""
    for key, value in doc.items():
        if key in want and _same_json(value, want[key]):
            continue
        where = f"its grid's axis {brief(want['name'])}"
        if key not in want:
            return f"{where} has a key {brief(key)} no grid writes"
        if isinstance(value, list) and isinstance(want[key], list) and len(value) == len(want[key]):
            at = next(
                k
                for k, (a, b) in enumerate(zip(value, want[key], strict=True))
                if not _same_json(a, b)
            )
            found, given = brief(value[at]), brief(want[key][at])
            return f"{where}: value {at} is {found}, its spec gives {given}"
        return f"{where}: {key} is {brief(value)}, its spec gives {brief(want[key])}"
    return None


def _shape_disagreement(recorded: Mapping[str, Any], grid: Grid) -> str | None:
    """Size, product size, zip groups and constraints: the spec's grid and the full grid's.

    A key the recorded description lacks (a folder written before it was recorded) is not
    compared; every key it has must hold the derived value.
    """
    derived = {
        "size": len(grid),
        "product_size": grid.product_size,
        "zip": [list(g) for g in grid.zip_groups],
        "where": [c.text for c in grid.constraints],
    }
    for key, want in derived.items():
        if key in recorded and not _same_json(recorded[key], want):
            return f"its grid's {key} is {brief(recorded[key])}, its spec's is {brief(want)}"
    return None


def _axis_disagreement(doc: Mapping[str, Any], axis: Axis) -> str | None:
    """One of the spec's axes, recorded as is or coerced to float64 (a float parameter)."""
    name = brief(axis.name)
    if doc.get("name") != axis.name:
        return f"its grid's axis {brief(doc.get('name'))} is its spec's axis {name}"
    dtype = doc.get("dtype")
    values = axis.values
    if dtype == "float64" and values.dtype.kind == "i":
        values = values.astype(np.float64)
    elif dtype != str(values.dtype):
        return f"its grid's axis {name} has dtype {brief(dtype)}, its spec gives {values.dtype}"
    return _axis_keys_disagreement(
        doc, Axis(axis.name, values).describe(with_values="values" in doc)
    )


def _fixed_axis_disagreement(
    doc: Mapping[str, Any], taken: set[str], costs: Mapping[str, Any]
) -> str | None:
    """An axis beyond the spec's: one value of a cost or of a strategy default."""
    name = doc.get("name")
    if not isinstance(name, str) or not name.isidentifier() or len(name) > MAX_TEXT_LENGTH:
        return f"its grid has an axis named {brief(name)}, not a parameter name"
    if name in taken:
        return f"its grid lists the axis {brief(name)} twice"
    values = doc.get("values")
    if doc.get("size") != 1 or (
        values is not None and (not isinstance(values, list) or len(values) != 1)
    ):
        return f"its grid's fixed parameter {brief(name)} does not hold exactly one value"
    value: Any = values[0] if values is not None else doc.get("first")
    dtype = doc.get("dtype")
    if not _is_of_dtype(value, dtype):
        return f"its grid's fixed parameter {brief(name)} holds {brief(value)} as {brief(dtype)}"
    if not (_same_json(doc.get("first"), value) and _same_json(doc.get("last"), value)):
        return f"its grid's fixed parameter {brief(name)}: first and last are not its value"
    if name in costs and not _same_json(float(value), float(costs[name])):
        return f"its grid's cost {brief(name)} is {brief(value)}, its spec's is {costs[name]!r}"
    return None


def _is_of_dtype(value: Any, dtype: Any) -> bool:
    """Whether a JSON value is one the engine's axis of ``dtype`` writes."""
    if dtype == "bool":
        return isinstance(value, bool)
    if dtype == "int64":
        return is_int(value) and _INT64_MIN <= value <= _INT64_MAX
    if dtype == "float64":
        return type(value) is float and math.isfinite(value)
    return (
        isinstance(dtype, str)
        and isinstance(value, str)
        and 0 < len(value) <= MAX_TEXT_LENGTH
        and dtype == f"<U{len(value)}"
    )


def _same_json(found: Any, want: Any) -> bool:
    """Equal JSON values, of the same kind, floats to the bit (``-0.0`` is not ``0.0``)."""
    if type(found) is not type(want):
        return False
    if isinstance(want, float):
        return math.isfinite(found) and found.hex() == want.hex()
    if isinstance(want, list):
        return len(found) == len(want) and all(map(_same_json, found, want))
    if isinstance(want, dict):
        return found.keys() == want.keys() and all(_same_json(found[k], want[k]) for k in want)
    return bool(found == want)
