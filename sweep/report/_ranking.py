"""Report section 4: the best configs, the Sharpe distribution, a metric over two axes."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from numpy.typing import NDArray

from sweep.common._range_set import RangeSet
from sweep.errors import SweepError, close_matches
from sweep.report._load import RunData, counted_rows
from sweep.report._options import ReportOptions
from sweep.report._sections import (
    Distribution,
    HeatmapRecord,
    Histogram,
    NoValues,
    Profile,
    ResultsSection,
    TopRow,
    Unavailable,
)
from sweep.report._streamed_distribution import (
    PassPartial,
    PassPlan,
    StreamedSummary,
    merge,
    reduce_chunk,
    run_pass,
    streamed_summary,
)
from sweep.store._run_store import RunStore

#: Metric columns shown for each top config.
TOP_COLUMNS = (
    "excess_sharpe_ann",
    "sharpe_ann",
    "t_stat",
    "p_value",
    "total_return",
    "max_drawdown",
    "turnover",
    "n_trades",
    "skew",
    "kurtosis",
)
HISTOGRAM_BINS = 40
#: Quantiles reported of a distribution, by label.
QUANTILES = ("5%", "25%", "50%", "75%", "95%")


#: The column of the Sharpe distribution (annualised, over the benchmark).
SHARPE_ANN = "excess_sharpe_ann"

#: Most cells along one axis of the heatmap or the profile. An axis with more values among
#: the configs is cut into this many runs of consecutive values (near-equal counts of
#: values), each cell the maximum over its run: a 10^5-value axis would otherwise put 10^5
#: columns in report.json and in a figure 7 inches wide.
MAX_CELLS_PER_AXIS = 200


@dataclass(frozen=True)
class AxisCells:
    """How one axis's values fall into cells.

    Attributes
    ----------
    first, last : pandas.Index
        The smallest and largest value of each cell (the same when a cell holds one value).
    values : int
        The axis's distinct values among the configs.
    """

    first: pd.Index
    last: pd.Index
    values: int

    @property
    def grouped(self) -> bool:
        """Whether a cell holds more than one value."""
        return len(self.first) < self.values


@dataclass(frozen=True)
class Heatmap:
    """A metric over two grid axes, aggregated by maximum over the others.

    Attributes
    ----------
    x, y : str
        Axis names.
    x_values, y_values : list
        Sorted distinct values of each axis among the ok configs; with more than
        :data:`MAX_CELLS_PER_AXIS`, the first value of each cell (a run of values).
    z : ndarray of float64, shape (len(y_values), len(x_values))
        The metric; NaN where no ok config has that pair.
    metric : str
        The metric column.
    aggregated_over : list of str
        The other multi-valued axes (maximum taken over them).
    chosen : str
        ``"automatic"`` or ``"--heatmap"``.
    x_cells, y_cells : AxisCells
        How each axis's values fall into cells.
    """

    x: str
    y: str
    x_values: list[Any]
    y_values: list[Any]
    z: np.ndarray
    metric: str
    aggregated_over: list[str]
    chosen: str
    x_cells: AxisCells
    y_cells: AxisCells


@dataclass(frozen=True)
class ResultsPlotData:
    """Arrays behind the results figures (not part of report.json)."""

    configs: int
    sharpe_counts: np.ndarray
    sharpe_edges: np.ndarray
    winner_sharpe_ann: float | None
    heatmap: Heatmap | None
    profile: tuple[str, list[Any], np.ndarray, AxisCells] | None


def multi_valued_axes(run: RunData) -> list[str]:
    """Grid axes with more than one value, in grid order."""
    return run.varying


def choose_heatmap_axes(
    run: RunData, requested: tuple[str, str] | None
) -> tuple[tuple[str, str] | None, str]:
    """Pick the heatmap's (x, y) axes.

    Parameters
    ----------
    run : RunData
        The run (the distinct values of each axis among the ok configs).
    requested : tuple of str or None
        ``--heatmap X,Y``; checked against the grid's axes.

    Returns
    -------
    axes : tuple of (str, str) or None
        None when fewer than two axes vary.
    how : str
        ``"--heatmap"`` or ``"automatic"``.
    """
    names = run.param_names
    if requested is not None:
        for name in requested:
            if name not in names:
                raise SweepError(
                    f"--heatmap: {name!r} is not a grid parameter (parameters: {names})."
                    + close_matches(name, names)
                )
        if requested[0] == requested[1]:
            raise SweepError(f"--heatmap: expected two different axes, got {requested[0]!r} twice")
        return requested, "--heatmap"
    varying = multi_valued_axes(run)
    if len(varying) < 2:
        return None, "automatic"
    distinct = {n: len(run.scan.axis_values.get(n, ())) for n in varying}
    best = sorted(varying, key=lambda n: (-distinct[n], varying.index(n)))[:2]
    best.sort(key=varying.index)
    return (best[0], best[1]), "automatic"


def axis_cells(values: list[Any], limit: int = MAX_CELLS_PER_AXIS) -> AxisCells:
    """How an axis's distinct values (ascending) fall into cells.

    The ``m`` values are cut into ``min(m, limit)`` runs: the value of rank ``k`` goes to
    cell ``k * cells // m``.
    """
    ordered = pd.Index(values)
    m = len(ordered)
    cells = min(m, limit)
    cell_of_rank = np.arange(m, dtype=np.int64) * cells // max(m, 1)
    starts = np.searchsorted(cell_of_rank, np.arange(cells))
    ends = np.append(starts[1:], m)[:cells] - 1
    return AxisCells(first=ordered[starts], last=ordered[ends], values=m)


def _cells_of(
    column: Any, values: NDArray[Any], cells: AxisCells
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Each row's cell along one axis, and whether its value is one of the axis's."""
    m = len(values)
    raw = column.to_numpy(zero_copy_only=False) if hasattr(column, "to_numpy") else column
    raw = np.asarray(raw)
    if m == 0:
        return np.zeros(len(raw), dtype=np.int64), np.zeros(len(raw), dtype=bool)
    rank = np.searchsorted(values, raw)
    clipped = np.minimum(rank, m - 1)
    found = (rank < m) & (values[clipped] == raw)
    return clipped * len(cells.first) // m, np.asarray(found, dtype=bool)


#: Columns of some configs, one array each, a part at a time.
ColumnChunks = Iterable[Mapping[str, Any]]


class CellMaxima:
    """The metric's maximum (NaN skipped) in each cell of ``keys``, fed a part at a time.

    Parameters
    ----------
    keys : list of str
        The axes.
    values : mapping of str to list
        Each axis's distinct values among the configs, ascending.
    metric : str
        The column maximised.
    limit : int
        Most cells per axis.
    """

    def __init__(
        self,
        keys: list[str],
        values: Mapping[str, list[Any]],
        metric: str,
        limit: int = MAX_CELLS_PER_AXIS,
    ) -> None:
        self.keys, self.metric = keys, metric
        self._axes = [axis_cells(values[k], limit) for k in keys]
        self._ordered = [
            np.asarray(values[k], dtype=object if not values[k] else None) for k in keys
        ]
        self._sizes = [len(a.first) for a in self._axes]
        self._best = np.full(math.prod(self._sizes), np.nan)
        self._seen = np.zeros(math.prod(self._sizes), dtype=bool)

    @property
    def columns(self) -> list[str]:
        """The columns :meth:`add` takes."""
        return [*self.keys, self.metric]

    def add(self, chunk: Mapping[str, Any]) -> None:
        """Take some configs' ``keys`` and ``metric`` columns."""
        metric_values = np.asarray(chunk[self.metric], dtype=np.float64)
        cell = np.zeros(len(metric_values), dtype=np.int64)
        held = np.ones(len(metric_values), dtype=bool)
        for key, axis, sorted_values in zip(self.keys, self._axes, self._ordered, strict=True):
            codes, found = _cells_of(chunk[key], sorted_values, axis)
            held &= found
            cell = cell * len(axis.first) + codes
        np.fmax.at(self._best, cell[held], metric_values[held])
        self._seen[cell[held]] = True

    def fresh(self) -> CellMaxima:
        """An empty copy: the same axes and cells, no config added."""
        empty = copy.copy(self)
        empty._best = np.full_like(self._best, np.nan)
        empty._seen = np.zeros_like(self._seen)
        return empty

    def merge(self, other: CellMaxima) -> None:
        """Take the maxima of ``other`` (a :meth:`fresh` copy fed other configs)."""
        np.fmax(self._best, other._best, out=self._best)
        self._seen |= other._seen

    def result(self) -> tuple[pd.Series, list[AxisCells]]:
        """:func:`max_by` of every config added."""
        present = np.flatnonzero(self._seen)
        where = np.unravel_index(present, self._sizes)
        levels = [a.first[w] for a, w in zip(self._axes, where, strict=True)]
        keys = self.keys
        index = (
            pd.MultiIndex.from_arrays(levels, names=keys)
            if len(keys) > 1
            else pd.Index(levels[0], name=keys[0])
        )
        maxima = pd.Series(self._best[present], index=index, name=self.metric).sort_index()
        return maxima, self._axes


def max_by(
    chunks: ColumnChunks,
    keys: list[str],
    values: Mapping[str, list[Any]],
    metric: str,
    limit: int = MAX_CELLS_PER_AXIS,
) -> tuple[pd.Series, list[AxisCells]]:
    """The metric's maximum (NaN skipped) in each cell of ``keys`` with a config.

    Parameters
    ----------
    chunks : iterable of mappings
        The configs' ``keys`` and ``metric`` columns, a part at a time.
    keys : list of str
        The axes.
    values : mapping of str to list
        Each axis's distinct values among the configs, ascending.
    metric : str
        The column maximised.
    limit : int
        Most cells per axis.

    Returns
    -------
    maxima : pandas.Series
        With at most ``limit`` values per key, what ``groupby(keys, sort=True)[metric].max()``
        gives on the plain values; an axis with more values has ``limit`` cells of
        consecutive values (:func:`axis_cells`), indexed by each cell's first value. A
        config whose key is missing is left out, as the group-by does.
    cells : list of AxisCells
        How each axis's values fall into cells.
    """
    maxima = CellMaxima(keys, values, metric, limit)
    for chunk in chunks:
        maxima.add(chunk)
    return maxima.result()


def sharpe_pass_group(
    location: str,
    names: list[str],
    owned: dict[str, RangeSet],
    plan: PassPlan,
    cells: CellMaxima | None,
) -> tuple[PassPartial, CellMaxima | None]:
    """One pass of ``plan`` over the counted ok configs' annualised Sharpe ratios in some parts.

    A Ray task's body (:meth:`RunData.map_counted`). With ``cells``, a :meth:`CellMaxima.fresh`
    copy of it is fed the same rows' axes and metric in the same read (a part is opened once
    for both: its footer dominates the cost of a read when parts are many and small).
    """
    store = RunStore(location)
    mine = None if cells is None else cells.fresh()
    columns = [SHARPE_ANN, *(mine.columns if mine is not None else [])]

    def chunks() -> Iterator[NDArray[np.float64]]:
        for part, keep in counted_rows(store, names, owned, columns):
            if mine is not None:
                mask = pa.array(keep)
                mine.add({c: part.column(c).filter(mask) for c in mine.columns})
            yield part.column(SHARPE_ANN).to_numpy().astype(np.float64, copy=False)[keep]

    return run_pass(chunks, plan), mine


class _SharpePasses:
    """Each pass of the Sharpe distribution over the ok configs, where the run's passes run.

    The first call also feeds ``cells`` from the same read of each part.
    """

    def __init__(self, run: RunData, cells: CellMaxima | None) -> None:
        self._run, self._cells = run, cells
        self.fed = cells is None

    def __call__(self, plan: PassPlan) -> PassPartial:
        template = None if self.fed else self._cells
        total = reduce_chunk(np.empty(0), plan)
        for partial, cells in self._run.map_counted(sharpe_pass_group, (plan, template)):
            if cells is not None and self._cells is not None:
                self._cells.merge(cells)
            total = merge([total, partial])  # exact: the same as merging them all at once
        self.fed = True
        return total


def heatmap(
    run: RunData, found: tuple[pd.Series, list[AxisCells]], axes: tuple[str, str], how: str
) -> Heatmap:
    """The metric's maximum for each (x, y) pair over the other axes (``found``: its cells)."""
    x, y = axes
    maxima, (y_cells, x_cells) = found
    metric = str(maxima.name)
    table = maxima.unstack(x).sort_index(axis=0).sort_index(axis=1)
    others = [n for n in multi_valued_axes(run) if n not in axes]
    return Heatmap(
        x=x,
        y=y,
        x_values=[plain(v) for v in table.columns],
        y_values=[plain(v) for v in table.index],
        z=table.to_numpy(dtype=np.float64),
        metric=metric,
        aggregated_over=others,
        chosen=how,
        x_cells=x_cells,
        y_cells=y_cells,
    )


def cell_label(axis: str, cells: AxisCells) -> str:
    """The axis's name, and how its values fall into cells when a cell holds several."""
    if not cells.grouped:
        return axis
    return f"{axis} ({cells.values:,} values in {len(cells.first)} cells; first value shown)"


def cell_ends(values: list[Any], cells: AxisCells) -> tuple[Any, ...] | None:
    """The last value of the cells starting at ``values``; None when each holds one value."""
    if not cells.grouped:
        return None
    last = dict(zip(cells.first.tolist(), cells.last.tolist(), strict=True))
    return tuple(plain(last[v]) for v in values)


def plain(value: Any) -> Any:
    """A numpy scalar as the Python value (other values as they are)."""
    return value.item() if hasattr(value, "item") else value


def _row(record: pd.Series, rank: int, params: list[str]) -> TopRow:
    return TopRow(
        rank=rank,
        config_id=str(record["config_id"]),
        grid_index=int(record["grid_index"]),
        params={p: plain(record[p]) for p in params},
        **{col: plain(record[col]) for col in TOP_COLUMNS},
    )


def _summary(summary: StreamedSummary) -> Distribution | NoValues:
    if summary.count == 0 or summary.mean is None or summary.min is None:
        return NoValues()
    return Distribution(
        count=summary.count,
        mean=summary.mean,
        std=summary.std,
        min=summary.min,
        max=float(summary.max) if summary.max is not None else summary.min,
        quantiles={k: float(v) for k, v in zip(QUANTILES, summary.quantiles, strict=True)},
    )


def histogram(counts: np.ndarray, edges: np.ndarray) -> Histogram:
    """A histogram's arrays as the record."""
    return Histogram(counts=tuple(counts.tolist()), edges=tuple(edges.tolist()))


def _heatmap_record(hm: Heatmap) -> HeatmapRecord:
    return HeatmapRecord(
        x=hm.x,
        y=hm.y,
        x_values=tuple(hm.x_values),
        y_values=tuple(hm.y_values),
        z=tuple(tuple(row) for row in hm.z.tolist()),
        metric=hm.metric,
        aggregation="max",
        aggregated_over=tuple(hm.aggregated_over),
        chosen=hm.chosen,
        x_values_to=cell_ends(hm.x_values, hm.x_cells),
        y_values_to=cell_ends(hm.y_values, hm.y_cells),
        x_distinct_values=hm.x_cells.values if hm.x_cells.grouped else None,
        y_distinct_values=hm.y_cells.values if hm.y_cells.grouped else None,
    )


def results_section(
    run: RunData, options: ReportOptions
) -> tuple[ResultsSection | Unavailable, ResultsPlotData]:
    """Section 4 of the report.

    Parameters
    ----------
    run : RunData
        The run folder, read.
    options : ReportOptions
        ``top_k``, ``heatmap``, ``heatmap_metric``.

    Returns
    -------
    section : ResultsSection or Unavailable
        Top-k table, Sharpe summary and histogram, heatmap (or a 1-D profile).
    plot_data : ResultsPlotData
        Arrays for the figures.
    """
    params = run.param_names
    if run.scan.done and options.heatmap_metric not in run.columns:
        raise SweepError(
            f"heatmap metric: unknown column {options.heatmap_metric!r}."
            + close_matches(options.heatmap_metric, run.columns)
        )
    if not run.scan.ok:
        return (
            Unavailable(reason="no config finished with status ok"),
            ResultsPlotData(0, np.array([]), np.array([]), None, None, None),
        )
    best = run.scan.ranked
    shown = run.complete_rows_at(best.grid_index[: options.top_k])
    top = tuple(_row(r, i + 1, params) for i, (_, r) in enumerate(shown.iterrows()))
    axes, how = choose_heatmap_axes(run, options.heatmap)
    varying = multi_valued_axes(run)
    metric = options.heatmap_metric
    cells = None
    if axes:
        cells = CellMaxima([axes[1], axes[0]], run.scan.axis_values, metric)
    elif len(varying) == 1:
        cells = CellMaxima([varying[0]], run.scan.axis_values, metric)
    passes = _SharpePasses(run, cells)
    ann = streamed_summary(
        None, bins=HISTOGRAM_BINS, first=run.scan.sharpe_ann_first, runner=passes
    )
    if not passes.fed:  # no finite value: the summary took no pass of its own
        passes(PassPlan(HISTOGRAM_BINS))
    counts, edges = ann.histogram_counts, ann.histogram_edges
    hm = heatmap(run, cells.result(), axes, how) if axes and cells is not None else None
    profile = None
    if hm is None and cells is not None:
        line, (cut,) = cells.result()
        profile = (varying[0], [plain(v) for v in line.index], line.to_numpy(), cut)
    first = shown if len(shown) else run.complete_rows_at(best.grid_index[:1])
    ann_best = first[SHARPE_ANN]
    winner = float(ann_best.iloc[0]) if len(ann_best) and np.isfinite(ann_best.iloc[0]) else None
    section = ResultsSection(
        sorted_by="excess_sharpe (over the benchmark), descending; ties by config_id",
        top=top,
        sharpe_ann_summary=_summary(ann),
        constant_configs=run.facts.constant_configs,
        sharpe_ann_histogram=histogram(counts, edges),
        heatmap=None if hm is None else _heatmap_record(hm),
        profile=None
        if profile is None
        else Profile(
            axis=profile[0],
            values=tuple(profile[1]),
            metric=options.heatmap_metric,
            max=tuple(profile[2].tolist()),
            values_to=cell_ends(profile[1], profile[3]),
            distinct_values=profile[3].values if profile[3].grouped else None,
        ),
    )
    return section, ResultsPlotData(run.scan.ok, counts, edges, winner, hm, profile)
