"""What the sweep-wide tests need of every config, reduced as the parts are read.

The report's section 5 (StepM, FDP-StepM, Reality Check and SPA, Holm and
Benjamini-Hochberg) takes the configs' ``t``, p-value and mean excess return only through
exact counts and maxima (:class:`stats.TCounts`, :class:`stats.PValueCounts`,
:class:`stats.SweepExtremes`), so they are reduced part by part in the pass that reads the
results and not held per config. The few configs each test lists by name (the first
``config_id`` above a bar, the largest ``t``) are read back afterwards from the parts that
can hold one: each part's largest ``t`` and smallest p-value are kept to tell which.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from stats import (
    NullSummary,
    PValueCounts,
    SweepExtremes,
    TCounts,
    merge_p_value_counts,
    merge_t_counts,
    p_value_counts,
    t_counts_of,
)
from stats._data_snooping import NO_CONFIG
from sweep.store._run_store import RunStore

#: The result columns reduced here.
TESTED_COLUMNS = ("grid_index", "t_stat", "p_value", "excess_mean")


@dataclass(frozen=True)
class TestedConfigs:
    """The ok configs' ``t``, p-values and means, reduced (see the module docstring).

    Attributes
    ----------
    t_counts : TCounts or None
        Their finite ``t`` counted against the merged null summary (None without one).
    p_counts : PValueCounts
        Their finite p-values.
    extremes : SweepExtremes
        Count with a finite ``t`` and mean, the largest ``t`` (ties: the smallest
        ``config_id``) and the largest mean.
    part_max_t, part_min_p : dict of str to float
        Per good part, the largest finite ``t`` and smallest finite p-value of its ok
        configs (-inf and inf when it has none): which parts a listing reads. A part not
        in them (the configs were reduced all at once, as for a v1 folder) may hold any.
    """

    t_counts: TCounts | None = None
    p_counts: PValueCounts = field(
        default_factory=lambda: PValueCounts(np.zeros(0), np.zeros(0, dtype=np.int64))
    )
    extremes: SweepExtremes = field(
        default_factory=lambda: SweepExtremes(0, NO_CONFIG, math.nan, math.nan)
    )
    part_max_t: dict[str, float] = field(default_factory=dict)
    part_min_p: dict[str, float] = field(default_factory=dict)

    @property
    def finite_p(self) -> int:
        """Ok configs with a finite p-value."""
        return int(self.p_counts.counts.sum())

    def parts_above_t(self, parts: list[str], value: float) -> list[str]:
        """Those of ``parts`` that can hold an ok config with ``t > value``."""
        return [n for n in parts if self.part_max_t.get(n, math.inf) > value]

    def parts_at_most_p(self, parts: list[str], value: float) -> list[str]:
        """Those of ``parts`` that can hold an ok config with a p-value ``<= value``."""
        return [n for n in parts if self.part_min_p.get(n, -math.inf) <= value]


class TestedReducer:
    """:class:`TestedConfigs` from the parts as they are read, a part at a time.

    Parameters
    ----------
    summary : NullSummary or None
        The good parts' merged null summary (the values ``t`` is counted between).
    """

    def __init__(self, summary: NullSummary | None) -> None:
        self._summary = summary
        self._t: TCounts | None = None  # a running total: merged as each part comes
        self._p = merge_p_value_counts([])
        self._n = 0
        self._best: tuple[float, str, int] | None = None  # (-t, config_id, grid index)
        self._max_mean = -math.inf
        self._part_max_t: dict[str, float] = {}
        self._part_min_p: dict[str, float] = {}

    def add(
        self,
        name: str | None,
        columns: dict[str, NDArray[np.float64] | NDArray[np.int64]],
        ok: NDArray[np.bool_],
        config_id: pa.Array | pa.ChunkedArray,
    ) -> None:
        """Take the ok configs of one part.

        Parameters
        ----------
        name : str or None
            The part (None: configs of several parts, not told apart).
        columns : dict
            Its :data:`TESTED_COLUMNS`.
        ok : ndarray of bool
            Which rows count: status ok, and the first copy of a repeated config.
        config_id : pyarrow array
            Each row's id (ties of ``t`` go to the smallest; only the tied are read).
        """
        index = np.asarray(columns["grid_index"], dtype=np.int64)[ok]
        t = np.asarray(columns["t_stat"], dtype=np.float64)[ok]
        p = np.asarray(columns["p_value"], dtype=np.float64)[ok]
        mean = np.asarray(columns["excess_mean"], dtype=np.float64)[ok]
        rows = np.flatnonzero(ok)
        finite_t, finite_p = t[np.isfinite(t)], p[np.isfinite(p)]
        if name is not None:
            self._part_max_t[name] = float(finite_t.max()) if finite_t.size else -math.inf
            self._part_min_p[name] = float(finite_p.min()) if finite_p.size else math.inf
        if self._summary is not None:
            self._t = _merged_t(self._t, t_counts_of(self._summary, index, t))
        self._p = merge_p_value_counts([self._p, p_value_counts(finite_p)])
        tested = np.isfinite(t) & np.isfinite(mean)
        if not tested.any():
            return
        self._n += int(tested.sum())
        self._max_mean = max(self._max_mean, float(mean[tested].max()))
        top = float(t[tested].max())
        tied = np.flatnonzero(tested & (t == top))
        ids = config_id.take(pa.array(rows[tied])).to_pylist()
        pick = int(np.argmin(np.asarray(ids, dtype=str)))
        candidate = (-top, str(ids[pick]), int(index[tied[pick]]))
        self._best = candidate if self._best is None else min(self._best, candidate)

    def merge(self, other: TestedReducer) -> None:
        """Take what ``other`` was given (independent of the order of merging).

        The counts are summed and the listed configs united at once (exact integers and a
        union keyed by grid index), so the state stays one :class:`TCounts` and one
        :class:`PValueCounts` however many parts or groups are merged in.
        """
        if other._t is not None:
            self._t = _merged_t(self._t, other._t)
        self._p = merge_p_value_counts([self._p, other._p])
        self._n += other._n
        self._max_mean = max(self._max_mean, other._max_mean)
        if other._best is not None:
            self._best = other._best if self._best is None else min(self._best, other._best)
        self._part_max_t.update(other._part_max_t)
        self._part_min_p.update(other._part_min_p)

    def detached(self) -> TestedReducer:
        """A copy of the state without the null summary it counts against (cheap to ship back).

        The result can be merged into a reducer that holds the summary, not added to.
        """
        state = copy.copy(self)
        state._summary = None
        return state

    def result(self) -> TestedConfigs:
        """What every part added gives."""
        extremes = (
            SweepExtremes(self._n, self._best[2], -self._best[0], self._max_mean)
            if self._best is not None
            else SweepExtremes(0, NO_CONFIG, math.nan, math.nan)
        )
        return TestedConfigs(
            t_counts=self._t,
            p_counts=self._p,
            extremes=extremes,
            part_max_t=self._part_max_t,
            part_min_p=self._part_min_p,
        )


def _merged_t(total: TCounts | None, part: TCounts) -> TCounts:
    """The running :class:`TCounts` with one more part's (or group's) merged in."""
    return part if total is None else merge_t_counts([total, part])


#: Which rows of a part's table a listing takes: a boolean mask over its rows.
RowTest = Callable[[pa.Table], NDArray[np.bool_]]


#: An order of rows, as pyarrow's ``sort_indices`` takes it: ``[(column, "ascending"), ...]``.
Order = list[tuple[str, str]]

#: The order of the results: ``config_id`` ascending.
BY_CONFIG_ID: Order = [("config_id", "ascending")]


def listed_rows(
    store: RunStore,
    parts: list[str],
    columns: list[str],
    where: RowTest,
    most: int,
    order: Order = BY_CONFIG_ID,
) -> pa.Table:
    """The first ``most`` ok rows of some parts that pass ``where``, in ``order``.

    Parameters
    ----------
    store : RunStore
        The run folder.
    parts : list of str
        The good parts that can hold such a row (the others are not read).
    columns : list of str
        Columns to return (``config_id`` and ``status`` are read besides).
    where : callable
        The rows wanted, given a part's table.
    most : int
        Rows returned at most: each part keeps its first ``most`` (so memory is bounded
        by parts, not by the rows that pass).
    order : list of (str, str), default by ``config_id``
        The order, by columns among ``config_id`` and ``columns``; a tie goes to the
        smaller ``config_id``.

    Returns
    -------
    pyarrow.Table
        ``config_id`` and ``columns`` of the rows, a config found in two parts (a repeated
        batch, identical rows) once.
    """
    read = list(dict.fromkeys(["config_id", "status", *columns]))
    keys = [*order, *BY_CONFIG_ID]
    pieces = []
    for name in parts:
        table = store.read_part_columns(name, read)
        keep = ok_rows(table) & where(table)
        if keep.any():
            piece = table.filter(pa.array(keep)).replace_schema_metadata(None)
            pieces.append(piece.take(pc.sort_indices(piece, keys)[:most]))
    if not pieces:
        empty = {c: pa.array([], type=pa.float64()) for c in columns}
        return pa.table({"config_id": pa.array([], type=pa.string()), **empty})
    rows = pa.concat_tables(pieces)
    rows = rows.take(pc.sort_indices(rows, BY_CONFIG_ID))
    ids = rows.column("config_id").to_numpy(zero_copy_only=False)
    first = np.ones(len(ids), dtype=bool)
    first[1:] = ids[1:] != ids[:-1]
    rows = rows.filter(pa.array(first))
    return rows.take(pc.sort_indices(rows, keys)[:most]).select(["config_id", *columns])


def ok_rows(table: pa.Table) -> NDArray[np.bool_]:
    """Which rows of a part's table finished with status ok (a null status is not ok)."""
    ok: NDArray[np.bool_] = pc.fill_null(pc.equal(table.column("status"), "ok"), False).to_numpy()
    return ok


def column_above(column: str, value: float) -> RowTest:
    """Rows whose ``column`` is greater than ``value`` (NaN never is)."""

    def test(table: pa.Table) -> NDArray[np.bool_]:
        return np.asarray(table.column(column).to_numpy(zero_copy_only=False) > value)

    return test


def column_at_most(column: str, value: float) -> RowTest:
    """Rows whose ``column`` is at most ``value`` (NaN never is)."""

    def test(table: pa.Table) -> NDArray[np.bool_]:
        return np.asarray(table.column(column).to_numpy(zero_copy_only=False) <= value)

    return test
