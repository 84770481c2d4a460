"""A lazily indexed parameter grid: axes, zipped groups, constraints, canonical order.

The canonical order is the row-major product of the grid's dimensions in the order they
were declared (the first dimension varies slowest, like ``itertools.product``). A dimension
is one axis, or several axes zipped together (equal lengths, advancing in lockstep).
Constraints filter the product without reordering it. Nothing is materialised: ``grid[i]``
decodes ``i`` as a mixed-radix number; with constraints the grid keeps one count of valid
configs per block of 65,536 product positions and re-evaluates a block on demand.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sweep.common._jsonable import JSONObject
from sweep.errors import GridError
from sweep.spec._constraints import Constraint

_BLOCK = 1 << 16
#: Most values one axis may hold.
MAX_AXIS_SIZE = 10_000_000
#: Most configs (product positions) a grid may hold: 2^53. The driver tracks configs by ranges
#: of int64 grid positions (memory grows with the parts, not the configs), so the bound is
#: what a position must stay: an exact integer everywhere it goes (int64 arithmetic, float64
#: and JSON readers, whose exact integers end at 2^53).
MAX_GRID_SIZE = 1 << 53
#: Most product positions a grid with ``where`` constraints may span: counting its valid
#: configs evaluates the constraints at every product position once (one int64 count per
#: block of 65,536 positions is kept), so the count stays within minutes.
MAX_CONSTRAINED_PRODUCT = 1 << 30
#: Most axis values (all axes together) a grid's description lists, so that a run folder's
#: manifest rebuilds the grid (:meth:`Grid.from_description`) and stays small (a few MB).
MAX_DESCRIBED_VALUES = 1 << 17
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
RESERVED_KEYS = ("where", "zip")
#: A grid parameter's value (one config's, as a Python scalar).
ParamValue = int | float | str | bool


@dataclass(frozen=True, eq=False)
class Axis:
    """One parameter's values, in the order given.

    Axes compare and hash by value: two axes are equal when they have the same name, the
    same kind of values (integer, float, bool or text) and equal values in the same order.
    ``values`` is a read-only view, so an axis's hash cannot change under it.

    Attributes
    ----------
    name : str
        Parameter name.
    values : ndarray
        int64, float64, bool or str values; at least one, all finite.
    """

    name: str
    values: NDArray[Any]

    def __post_init__(self) -> None:
        view = np.asarray(self.values).view()
        view.flags.writeable = False
        object.__setattr__(self, "values", view)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Axis):
            return NotImplemented
        return (
            self.name == other.name
            and self.values.dtype.kind == other.values.dtype.kind
            and self.values.shape == other.values.shape
            and bool(np.array_equal(self.values, other.values))
        )

    def __hash__(self) -> int:
        # Equal numbers hash equal (hash(-0.0) == hash(0.0)), as ``==`` needs. Not cached:
        # text hashes differ between processes, and axes travel to workers by pickle.
        return hash((self.name, self.values.dtype.kind, tuple(self.values.tolist())))

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def describe(self, *, with_values: bool = False) -> JSONObject:
        """Return a JSON-ready description (name, dtype, size, first and last value).

        With ``with_values`` the description also lists every value (``values``), exactly:
        JSON writes a finite float as its shortest repr, which reads back to the same bits.
        """
        first, last = self.values[0].item(), self.values[-1].item()
        doc: JSONObject = {
            "name": self.name,
            "dtype": str(self.values.dtype),
            "size": len(self),
            "first": first,
            "last": last,
        }
        if with_values:
            doc["values"] = self.values.tolist()
        return doc


def axis_from_definition(name: str, definition: Any) -> Axis:
    """Build an :class:`Axis` from a spec definition.

    Parameters
    ----------
    name : str
        Parameter name (used in error messages).
    definition : list, scalar or dict
        A list of values; a single value; ``{"values": [...]}``;
        ``{"start": a, "stop": b, "step": s}`` (integers, stop excluded, like ``range``); or
        ``{"linspace": [start, stop, num]}`` (both ends included, like ``numpy.linspace``).

    Returns
    -------
    Axis
        The axis.
    """
    if isinstance(definition, Mapping):
        return _mapping_axis(name, definition)
    return _list_axis(name, definition)


def _mapping_axis(name: str, definition: Mapping[str, Any]) -> Axis:
    """An axis from ``{values = [...]}``, ``{start, stop, step}`` or ``{linspace = [...]}``."""
    keys = set(definition)
    if keys == {"values"}:
        return axis_from_definition(name, definition["values"])
    if keys <= {"start", "stop", "step"} and {"start", "stop"} <= keys:
        return _range_axis(name, definition["start"], definition["stop"], definition.get("step", 1))
    if keys == {"linspace"}:
        return _linspace_axis(name, definition["linspace"])
    raise GridError(
        f"grid.{name}: expected a list, {{values = [...]}}, {{start, stop, step}} or "
        f"{{linspace = [start, stop, num]}}, got keys {sorted(keys)}"
    )


def _range_axis(name: str, start: Any, stop: Any, step: Any) -> Axis:
    """``range(start, stop, step)`` as an int64 axis (integers only, not empty)."""
    where = f"grid.{name}"
    for label, v in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise GridError(
                f"{where}.{label}: expected an integer (ranges are integer-only; use "
                f"linspace = [start, stop, num] for floats), got {v!r}"
            )
    if step == 0:
        raise GridError(f"{where}.step: expected a non-zero integer, got 0")
    size = len(range(start, stop, step))
    if size == 0:
        raise GridError(f"{where}: range(start={start}, stop={stop}, step={step}) is empty")
    _check_axis_size(where, size, f"range(start={start}, stop={stop}, step={step})")
    _check_int64(where, (start, stop - step))
    return Axis(name, np.arange(start, stop, step, dtype=np.int64))


def _linspace_axis(name: str, spec: Any) -> Axis:
    """``numpy.linspace(start, stop, num)`` (both ends included) as a float64 axis."""
    where = f"grid.{name}"
    if not (isinstance(spec, Sequence) and len(spec) == 3):
        raise GridError(f"{where}.linspace: expected [start, stop, num], got {spec!r}")
    start, stop, num = spec
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise GridError(f"{where}.linspace: num must be a positive integer, got {num!r}")
    _check_axis_size(where, num, f"linspace num = {num}")
    for label, v in (("start", start), ("stop", stop)):
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise GridError(f"{where}.linspace {label}: expected a finite number, got {v!r}")
    return Axis(name, np.linspace(float(start), float(stop), num))


def _list_axis(name: str, definition: Any) -> Axis:
    """An axis from a list of values (or one value) of one type (ints and floats: floats)."""
    where = f"grid.{name}"
    items = list(definition) if isinstance(definition, list | tuple) else [definition]
    if not items:
        raise GridError(f"{where}: expected at least one value, got an empty list")
    _check_axis_size(where, len(items), "a list")
    kinds = {_kind(name, v) for v in items}
    if len(kinds) > 1:
        if kinds == {"int", "float"}:
            kinds = {"float"}
        else:
            raise GridError(f"{where}: values must share one type, got a mix of {sorted(kinds)}")
    kind = kinds.pop()
    dtype = {"int": np.int64, "float": np.float64, "bool": np.bool_, "str": np.str_}[kind]
    return Axis(name, np.asarray(items, dtype=dtype))


def _check_axis_size(where: str, size: int, given: str) -> None:
    """Refuse an axis longer than :data:`MAX_AXIS_SIZE` before its values are built."""
    if size > MAX_AXIS_SIZE:
        raise GridError(
            f"{where}: expected at most {MAX_AXIS_SIZE:,} values per axis (each axis is held in "
            f"memory by the driver and every worker), got {size:,} from {given}"
        )


def _check_int64(where: str, ends: tuple[int, int]) -> None:
    for v in ends:
        if not _INT64_MIN <= v <= _INT64_MAX:
            raise GridError(f"{where}: expected values that fit in 64-bit integers, got {v}")


def _kind(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        _check_int64(f"grid.{name}", (value, value))
        return "int"
    if isinstance(value, float):
        if not math.isfinite(value):
            raise GridError(f"grid.{name}: expected finite values, got {value!r}")
        return "float"
    if isinstance(value, str):
        return "str"
    raise GridError(
        f"grid.{name}: expected numbers, booleans or strings, got {value!r} "
        f"({type(value).__name__})"
    )


def _check_grid_size(radices: Sequence[int], constrained: bool) -> int:
    """The product of the radices (Python ints: no overflow), refused beyond the limits.

    Checked from the axis lengths alone, before anything per config is built.
    """
    size = math.prod(int(r) for r in radices)
    limit, why = (
        (MAX_CONSTRAINED_PRODUCT, "2^30 with constraints: each product position is checked once")
        if constrained
        else (MAX_GRID_SIZE, "2^53: grid positions must stay exact integers")
    )
    if size > limit:
        shape = " x ".join(f"{r:,}" for r in radices)
        raise GridError(
            f"grid: expected at most {limit:,} configs ({why}), got {size:,} configs "
            f"({shape}); split the sweep or coarsen an axis"
        )
    return size


def _first_repeat(columns: Sequence[NDArray[Any]]) -> tuple[int, int] | None:
    """Positions ``(i, j)``, ``i < j``, of the first entry equal to an earlier one, or None.

    Entries are rows across ``columns`` (one column per zipped axis); equality is ``==``
    (so ``-0.0`` equals ``0.0``). A stable sort brings equal entries together in their
    original order; the repeat with the smallest later position is reported.
    """
    n = int(columns[0].shape[0])
    if n < 2:
        return None
    order = np.lexsort(tuple(columns[::-1]))
    same = np.ones(n - 1, dtype=bool)
    for col in columns:
        ordered = col[order]
        same &= ordered[1:] == ordered[:-1]
    pairs = np.flatnonzero(same)
    if pairs.size == 0:
        return None
    k = int(pairs[np.argmin(order[pairs + 1])]) + 1
    starts = np.flatnonzero(np.concatenate(([True], ~same)))
    start = int(starts[np.searchsorted(starts, k, side="right") - 1])
    return int(order[start]), int(order[k])


def _check_unique(dim: Sequence[Axis]) -> None:
    """Refuse a dimension (an axis or a zipped group) that gives one config twice."""
    found = _first_repeat([a.values for a in dim])
    if found is None:
        return
    i, j = found
    why = "a repeated entry is one config (one config id) evaluated twice"
    if len(dim) == 1:
        first, again = dim[0].values[i].item(), dim[0].values[j].item()
        alias = "" if repr(first) == repr(again) else f", {first!r} and {again!r} are equal"
        raise GridError(
            f"grid.{dim[0].name}: expected each value once, but the value {first!r} appears "
            f"more than once (positions {i} and {j}{alias}); {why}"
        )
    entry = ", ".join(f"{a.name}={a.values[i].item()!r}" for a in dim)
    raise GridError(
        f"grid.zip: expected each combination of the group {[a.name for a in dim]} once, but "
        f"{entry} appears more than once (positions {i} and {j}); {why}"
    )


def _checked_names(axes: Sequence[Axis]) -> list[str]:
    """The axes' names, refusing no axes and a name given twice."""
    if not axes:
        raise GridError("grid: expected at least one parameter, got none")
    names = [a.name for a in axes]
    if len(set(names)) != len(names):
        raise GridError(f"grid: parameter names must be unique, got {names}")
    return names


def _group_of(axes: Sequence[Axis], zip_groups: Sequence[Sequence[str]]) -> dict[str, int]:
    """Each zipped axis's group number; groups checked (2+ known names, once, equal lengths)."""
    by_name = {a.name: a for a in axes}
    group_of: dict[str, int] = {}
    for g, group in enumerate(zip_groups):
        if len(group) < 2:
            raise GridError(f"grid.zip: each group needs at least two names, got {list(group)}")
        for n in group:
            if n not in by_name:
                raise GridError(
                    f"grid.zip: {n!r} is not a grid parameter (parameters: {list(by_name)})"
                )
            if n in group_of:
                raise GridError(f"grid.zip: {n!r} appears in more than one group")
            group_of[n] = g
        lengths = {n: len(by_name[n]) for n in group}
        if len(set(lengths.values())) != 1:
            raise GridError(f"grid.zip: zipped axes must have equal lengths, got {lengths}")
    return group_of


def _dimensions(
    axes: Sequence[Axis], zip_groups: Sequence[Sequence[str]], group_of: Mapping[str, int]
) -> list[tuple[Axis, ...]]:
    """The grid's dimensions: one per lone axis, one per zip group at its first axis."""
    by_name = {a.name: a for a in axes}
    dims: list[tuple[Axis, ...]] = []
    seen_groups: set[int] = set()
    for a in axes:
        if a.name not in group_of:
            dims.append((a,))
            continue
        g = group_of[a.name]
        if g not in seen_groups:
            seen_groups.add(g)
            dims.append(tuple(by_name[n] for n in zip_groups[g]))
    return dims


class Grid:
    """The lazily indexed product of axes (with zipped groups and constraints).

    Parameters
    ----------
    axes : sequence of Axis
        The parameters, in declaration order.
    zip_groups : sequence of sequence of str, optional
        Groups of axis names that advance together; each group becomes one dimension at the
        position of its first axis. The axes of a group must have equal lengths.
    where : sequence of str, optional
        Constraints such as ``"fast < slow"``; configs that violate any are skipped.

    Examples
    --------
    >>> grid = Grid.from_definition({
    ...     "lookback": {"start": 20, "stop": 320, "step": 3},
    ...     "band": {"linspace": [0.0, 0.02, 100]},
    ... })
    >>> len(grid), grid[0]
    (10000, {'lookback': 20, 'band': 0.0})
    """

    def __init__(
        self,
        axes: Sequence[Axis],
        zip_groups: Sequence[Sequence[str]] = (),
        where: Sequence[str] = (),
    ) -> None:
        names = _checked_names(axes)
        dims = _dimensions(axes, zip_groups, _group_of(axes, zip_groups))
        self.axes: tuple[Axis, ...] = tuple(axes)
        self.zip_groups: tuple[tuple[str, ...], ...] = tuple(tuple(g) for g in zip_groups)
        self.dims: tuple[tuple[Axis, ...], ...] = tuple(dims)
        self.radices: tuple[int, ...] = tuple(len(d[0]) for d in dims)
        self.product_size: int = _check_grid_size(self.radices, bool(where))
        for dim in dims:
            _check_unique(dim)
        self.constraints: tuple[Constraint, ...] = tuple(Constraint(w, names) for w in where)
        if self.product_size == 0:
            raise GridError("grid: the product of the axes is empty")
        if self.constraints and len(self) == 0:
            raise GridError(
                f"grid: no config satisfies the constraints {[c.text for c in self.constraints]}"
            )

    @classmethod
    def from_definition(cls, definition: Mapping[str, Any]) -> Grid:
        """Build a grid from the ``[grid]`` table of a spec.

        Parameters
        ----------
        definition : mapping
            Parameter names to axis definitions (see :func:`axis_from_definition`), plus the
            optional reserved keys ``zip`` (a list of lists of names) and ``where`` (a list of
            constraint strings).

        Returns
        -------
        Grid
            The grid.
        """
        if not isinstance(definition, Mapping):
            raise GridError(f"grid: expected a table of parameters, got {definition!r}")
        axes = [
            axis_from_definition(str(name), spec)
            for name, spec in definition.items()
            if name not in RESERVED_KEYS
        ]
        zip_groups = definition.get("zip", [])
        where = definition.get("where", [])
        if isinstance(where, str):
            where = [where]
        if not isinstance(zip_groups, list) or not all(isinstance(g, list) for g in zip_groups):
            raise GridError(f"grid.zip: expected a list of lists of names, got {zip_groups!r}")
        if not isinstance(where, list):
            raise GridError(f"grid.where: expected a list of strings, got {where!r}")
        return cls(axes, zip_groups, where)

    @classmethod
    def from_description(cls, description: Mapping[str, Any]) -> Grid | None:
        """Rebuild the grid that :meth:`describe` described.

        Parameters
        ----------
        description : mapping
            What :meth:`describe` returned (as JSON read back).

        Returns
        -------
        Grid or None
            The grid: the same axes (names, dtypes and values), zip groups and constraints,
            so the same config at every position. None when an axis lists no ``values`` (a
            grid of more than :data:`MAX_DESCRIBED_VALUES` values, or a description written
            before the values were recorded).

        Raises
        ------
        GridError
            The description is not one of a valid grid.
        """
        axes = description.get("axes")
        if not isinstance(axes, list) or not all(isinstance(a, Mapping) for a in axes):
            raise GridError(f"grid: expected a list of axes, got {axes!r}")
        if not axes or any("values" not in a for a in axes):
            return None
        try:
            built = [
                Axis(str(a["name"]), np.array(a["values"], dtype=np.dtype(str(a["dtype"]))))
                for a in axes
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise GridError(f"grid: an axis's name, dtype or values are not usable: {exc}") from exc
        return cls(built, description.get("zip", []), description.get("where", []))

    @property
    def names(self) -> tuple[str, ...]:
        """Parameter names in declaration order."""
        return tuple(a.name for a in self.axes)

    def axis(self, name: str) -> Axis:
        """Return the axis called ``name``."""
        for a in self.axes:
            if a.name == name:
                return a
        raise KeyError(name)

    # --- constraint bookkeeping -------------------------------------------------------
    def _block_mask(self, block: int) -> NDArray[np.bool_]:
        lo = block * _BLOCK
        flat = np.arange(lo, min(lo + _BLOCK, self.product_size), dtype=np.int64)
        values = self._decode(flat)
        mask = np.ones(flat.shape[0], dtype=bool)
        for c in self.constraints:
            mask &= c.evaluate(values)
        return mask

    @cached_property
    def _block_offsets(self) -> NDArray[np.int64]:
        n_blocks = -(-self.product_size // _BLOCK)
        counts = np.fromiter(
            (int(self._block_mask(b).sum()) for b in range(n_blocks)), np.int64, n_blocks
        )
        return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def __len__(self) -> int:
        if not self.constraints:
            return self.product_size
        return int(self._block_offsets[-1])

    def _flat_positions(self, indices: NDArray[np.int64]) -> NDArray[np.int64]:
        """Map positions in the (filtered) grid to positions in the full product."""
        if not self.constraints:
            return indices
        offsets = self._block_offsets
        blocks = np.searchsorted(offsets, indices, side="right") - 1
        flat = np.empty_like(indices)
        for block in np.unique(blocks):
            sel = blocks == block
            valid = np.flatnonzero(self._block_mask(int(block)))
            flat[sel] = block * _BLOCK + valid[indices[sel] - offsets[block]]
        return flat

    def _decode(self, flat: NDArray[np.int64]) -> dict[str, NDArray[Any]]:
        codes = self._digits(flat)
        return {a.name: a.values[codes[a.name]] for a in self.axes}

    def _digits(self, flat: NDArray[np.int64]) -> dict[str, NDArray[np.int64]]:
        """Each axis's value position at the product positions ``flat`` (mixed radix)."""
        out: dict[str, NDArray[np.int64]] = {}
        rest = flat.copy()
        digits: list[NDArray[np.int64]] = []
        for radix in reversed(self.radices):
            digits.append(rest % radix)
            rest //= radix
        digits.reverse()
        for dim, digit in zip(self.dims, digits, strict=True):
            for a in dim:
                out[a.name] = digit
        return {a.name: out[a.name] for a in self.axes}

    # --- public indexing ----------------------------------------------------------------
    def params_at(self, indices: Sequence[int] | NDArray[np.integer]) -> dict[str, NDArray[Any]]:
        """Return the parameter arrays of the configs at grid positions ``indices``.

        Parameters
        ----------
        indices : array_like of int
            Positions in canonical order, ``0 <= i < len(grid)``.

        Returns
        -------
        dict of str to ndarray
            One array per parameter, aligned with ``indices``.
        """
        return self._decode(self._flat_positions(self._checked_indices(indices)))

    def codes_at(
        self, indices: Sequence[int] | NDArray[np.integer]
    ) -> dict[str, NDArray[np.int64]]:
        """Return where in each axis's values the configs at ``indices`` take theirs.

        ``params_at(indices)[name]`` is ``axis(name).values[codes_at(indices)[name]]``.

        Parameters
        ----------
        indices : array_like of int
            Positions in canonical order, ``0 <= i < len(grid)``.

        Returns
        -------
        dict of str to ndarray of int64
            One array of value positions per parameter, aligned with ``indices``.
        """
        return self._digits(self._flat_positions(self._checked_indices(indices)))

    def _checked_indices(self, indices: Sequence[int] | NDArray[np.integer]) -> NDArray[np.int64]:
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        n = len(self)
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise IndexError(f"grid index out of range 0..{n - 1}")
        return idx

    def __getitem__(self, index: int) -> dict[str, ParamValue]:
        """Return one config as a dict of Python scalars."""
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(f"grid index {index} out of range for a grid of {n} configs")
        arrays = self.params_at(np.array([i]))
        return {k: v[0].item() for k, v in arrays.items()}

    def __iter__(self) -> Iterator[dict[str, ParamValue]]:
        for chunk in self.chunks(4096):
            arrays = self.params_at(chunk)
            for j in range(chunk.shape[0]):
                yield {k: v[j].item() for k, v in arrays.items()}

    def chunks(self, size: int) -> Iterator[NDArray[np.int64]]:
        """Yield consecutive index arrays of at most ``size`` positions, in canonical order."""
        if size < 1:
            raise ValueError(f"size: expected a positive integer, got {size}")
        n = len(self)
        for lo in range(0, n, size):
            yield np.arange(lo, min(lo + size, n), dtype=np.int64)

    def describe(self) -> JSONObject:
        """Return a JSON-ready description of the grid (axes, zip groups, constraints, size).

        The axes list their values when they hold :data:`MAX_DESCRIBED_VALUES` or fewer in
        all, so that :meth:`from_description` rebuilds the grid from the description alone.
        """
        with_values = sum(len(a) for a in self.axes) <= MAX_DESCRIBED_VALUES
        return {
            "size": len(self),
            "product_size": self.product_size,
            "axes": [a.describe(with_values=with_values) for a in self.axes],
            "zip": [list(g) for g in self.zip_groups],
            "where": [c.text for c in self.constraints],
        }
