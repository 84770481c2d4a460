"""Which of a grid axis's values some configs take: a bitmap over the axis, folded part by part.

The report needs each grid parameter's distinct values among the ok configs (the heatmap's
axes and cells). A set of them costs a Python object per value (an axis of 10^5 values,
about 10 MB, in every answer of a pass); where the manifest records the axis's values
(:meth:`sweep.spec._grid.Grid.describe`), a value is its position in them, and the values
seen are a boolean array of the axis's length that merges by ``or``. A value the record does
not hold (a folder whose manifest lists no values: only a set can tell) is kept in a set,
as before. The values come back as the parts' column gives them (Python scalars of the
column's Arrow type), ascending, the same whatever the parts or their order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from sweep.store._record import GridRecord


def recorded_axes(grid: GridRecord) -> dict[str, NDArray[Any]]:
    """Each axis's recorded values (as :meth:`sweep.spec._grid.Grid.describe` wrote them).

    Axes whose record lists no values (or an unusable dtype) are left out.
    """
    axes: dict[str, NDArray[Any]] = {}
    for axis in grid.axes:
        values, dtype = axis.doc.get("values"), axis.doc.get("dtype")
        if not isinstance(values, list) or len(values) != axis.size:
            continue
        try:
            axes[axis.name] = np.asarray(values, dtype=np.dtype(str(dtype)) if dtype else None)
        except (TypeError, ValueError):
            continue
    return axes


def _usable(value: Any) -> bool:
    """A value the report lists: not null, not NaN."""
    return value is not None and value == value


class AxisValues:
    """The distinct values of one axis among some configs.

    Parameters
    ----------
    values : ndarray or None
        The axis's recorded values (None: not recorded; a set is kept).
    """

    def __init__(self, values: NDArray[Any] | None) -> None:
        self._values = values
        self._order: NDArray[np.intp] | None = None
        self._sorted: NDArray[Any] | None = None
        self.seen = np.zeros(0 if values is None else len(values), dtype=bool)
        self.extra: set[Any] = set()
        self.arrow_type: pa.DataType | None = None

    def __getstate__(self) -> dict[str, Any]:
        """What travels in an answer: the lookup is left out (rebuilt where it is needed)."""
        state = dict(self.__dict__)
        state["_order"] = state["_sorted"] = None
        return state

    def _lookup(self) -> tuple[NDArray[np.intp], NDArray[Any]]:
        if self._order is None or self._sorted is None:
            assert self._values is not None
            self._order = np.argsort(self._values, kind="stable")
            self._sorted = self._values[self._order]
        return self._order, self._sorted

    def add(self, column: pa.Array | pa.ChunkedArray) -> None:
        """Take the values of some configs (one part's column, its rows that count)."""
        if self.arrow_type is None:
            self.arrow_type = column.type
        distinct = [v for v in column.unique().to_pylist() if _usable(v)]
        if not distinct:
            return
        if self._values is None or not len(self._values):
            self.extra.update(distinct)
            return
        order, ordered = self._lookup()
        try:
            wanted = np.asarray(distinct)
            at = np.minimum(np.searchsorted(ordered, wanted), len(ordered) - 1)
            hit = ordered[at] == wanted
        except (TypeError, ValueError):  # values of another kind than the record's
            self.extra.update(distinct)
            return
        hit = np.asarray(hit, dtype=bool)
        self.seen[order[at[hit]]] = True
        self.extra.update(v for v, h in zip(distinct, hit.tolist(), strict=True) if not h)

    def merge(self, other: AxisValues) -> None:
        """Take the values ``other`` saw (a fresh copy of the same axis, fed other configs)."""
        if self.arrow_type is None:
            self.arrow_type = other.arrow_type
        self.seen |= other.seen
        self.extra |= other.extra

    def result(self) -> list[Any]:
        """The values seen, ascending, as the parts' column gives them."""
        found: list[Any] = []
        if self._values is not None and self.seen.any():
            chosen = self._values[self.seen]
            found = pa.array(chosen.tolist(), type=self.arrow_type).to_pylist()
        return sorted({*found, *self.extra})


def axis_reducers(params: list[str], axes: Mapping[str, NDArray[Any]]) -> dict[str, AxisValues]:
    """One :class:`AxisValues` per parameter, over its recorded values where there are some."""
    return {p: AxisValues(axes.get(p)) for p in params}
