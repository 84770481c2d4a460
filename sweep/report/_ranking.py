"""Report section 4: the best configs, the Sharpe distribution, a metric over two axes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from sweep.errors import SweepError, close_matches
from sweep.report._load import RunData, as_categorical, values_of
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


def ok_results(run: RunData) -> pd.DataFrame:
    """The configs whose status is ``ok`` (in ``config_id`` order; no copy when all are)."""
    frame = run.results
    if frame.empty:
        return frame
    ok = (frame["status"] == "ok").to_numpy(dtype=bool)
    return frame if ok.all() else frame[ok]


def ranked(frame: pd.DataFrame, head: int | None = None) -> pd.DataFrame:
    """Configs by Sharpe of excess returns (the selection metric), best first; NaN last.

    Ties go to the smaller ``config_id`` (the frame is in ``config_id`` order, and the sort
    is stable). Only the sort key is sorted, so asking for the ``head`` best copies just
    those rows.
    """
    key = frame["excess_sharpe"].to_numpy(dtype=np.float64)
    order = np.argsort(np.where(np.isnan(key), np.inf, -key), kind="stable")
    return frame.iloc[order if head is None else order[:head]]


def multi_valued_axes(run: RunData) -> list[str]:
    """Grid axes with more than one value, in grid order."""
    return run.varying


def choose_heatmap_axes(
    run: RunData, frame: pd.DataFrame, requested: tuple[str, str] | None
) -> tuple[tuple[str, str] | None, str]:
    """Pick the heatmap's (x, y) axes.

    Parameters
    ----------
    run : RunData
        The run.
    frame : pandas.DataFrame
        The ok configs.
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
    distinct = {n: int(values_of(frame, n).nunique()) for n in varying}
    best = sorted(varying, key=lambda n: (-distinct[n], varying.index(n)))[:2]
    best.sort(key=varying.index)
    return (best[0], best[1]), "automatic"


def axis_cells(
    column: pd.Series, limit: int = MAX_CELLS_PER_AXIS
) -> tuple[NDArray[np.int64], AxisCells]:
    """Each config's cell along one axis (-1: no value), and the cells.

    The values present, in ascending order, are cut into ``min(values, limit)`` runs: the
    value of rank ``k`` (of ``m``) goes to cell ``k * cells // m``.
    """
    series = as_categorical(column)
    codes = series.cat.codes.to_numpy()
    categories = series.cat.categories
    counts = np.bincount(codes[codes >= 0], minlength=len(categories))
    by_value = np.argsort(categories.to_numpy(), kind="stable")
    present = by_value[counts[by_value] > 0]  # categories present, in ascending order
    m = len(present)
    cells = min(m, limit)
    cell_of_rank = np.arange(m, dtype=np.int64) * cells // max(m, 1)
    cell_of_code = np.full(len(categories) + 1, -1, dtype=np.int64)  # code -1 maps to -1
    cell_of_code[present] = cell_of_rank
    starts = np.searchsorted(cell_of_rank, np.arange(cells))
    ends = np.append(starts[1:], m)[:cells] - 1
    return cell_of_code[codes], AxisCells(
        first=categories[present[starts]], last=categories[present[ends]], values=m
    )


def max_by(
    frame: pd.DataFrame, keys: list[str], metric: str, limit: int = MAX_CELLS_PER_AXIS
) -> tuple[pd.Series, list[AxisCells]]:
    """The metric's maximum (NaN skipped) in each cell of ``keys`` with a config.

    With at most ``limit`` values per key, what ``groupby(keys, sort=True)[metric].max()``
    gives on the plain values; an axis with more values has ``limit`` cells of consecutive
    values (:func:`axis_cells`), indexed by each cell's first value. Computed from the
    categoricals' codes: one int64 per config and one float per cell, where the group-by
    would copy every key column as plain values and factorise them again.
    """
    cell = np.zeros(len(frame), dtype=np.int64)
    held = np.ones(len(frame), dtype=bool)
    axes: list[AxisCells] = []
    for key in keys:
        codes, cells = axis_cells(frame[key], limit)
        held &= codes >= 0  # a missing key is left out, as the group-by does
        cell *= len(cells.first)
        cell += codes
        axes.append(cells)
    values = values_of(frame, metric).to_numpy(dtype=np.float64)
    if not held.all():
        cell, values = cell[held], values[held]
    sizes = [len(a.first) for a in axes]
    best = np.full(math.prod(sizes), np.nan)
    np.fmax.at(best, cell, values)
    present = np.flatnonzero(np.bincount(cell, minlength=len(best)))
    where = np.unravel_index(present, sizes)
    levels = [a.first[w] for a, w in zip(axes, where, strict=True)]
    index = (
        pd.MultiIndex.from_arrays(levels, names=keys)
        if len(keys) > 1
        else pd.Index(levels[0], name=keys[0])
    )
    return pd.Series(best[present], index=index, name=metric).sort_index(), axes


def heatmap(
    run: RunData, frame: pd.DataFrame, axes: tuple[str, str], metric: str, how: str
) -> Heatmap:
    """The metric's maximum for each (x, y) pair over the other axes."""
    x, y = axes
    maxima, (y_cells, x_cells) = max_by(frame, [y, x], metric)
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


def _summary(values: np.ndarray) -> Distribution | NoValues:
    if values.size == 0:
        return NoValues()
    q = np.quantile(values, [0.05, 0.25, 0.5, 0.75, 0.95])
    return Distribution(
        count=int(values.size),
        mean=float(values.mean()),
        std=float(values.std(ddof=1)) if values.size > 1 else None,
        min=float(values.min()),
        max=float(values.max()),
        quantiles={k: float(v) for k, v in zip(QUANTILES, q, strict=True)},
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
    frame = ok_results(run)
    params = run.param_names
    if not run.results.empty and options.heatmap_metric not in run.columns:
        raise SweepError(
            f"heatmap metric: unknown column {options.heatmap_metric!r}."
            + close_matches(options.heatmap_metric, run.columns)
        )
    if frame.empty:
        return (
            Unavailable(reason="no config finished with status ok"),
            ResultsPlotData(0, np.array([]), np.array([]), None, None, None),
        )
    best = run.scan.ranked
    shown = run.complete_rows_at(best.grid_index[: options.top_k])
    top = tuple(_row(r, i + 1, params) for i, (_, r) in enumerate(shown.iterrows()))
    ann = frame["excess_sharpe_ann"].to_numpy(dtype=np.float64)
    finite = ann[np.isfinite(ann)]
    counts, edges = (
        np.histogram(finite, bins=HISTOGRAM_BINS) if finite.size else (np.array([]), np.array([]))
    )
    axes, how = choose_heatmap_axes(run, frame, options.heatmap)
    hm = heatmap(run, frame, axes, options.heatmap_metric, how) if axes else None
    profile = None
    varying = multi_valued_axes(run)
    if hm is None and len(varying) == 1:
        axis = varying[0]
        metric = options.heatmap_metric
        line, (cells,) = max_by(frame, [axis], metric)
        profile = (axis, [plain(v) for v in line.index], line.to_numpy(), cells)
    first = run.complete_rows_at(best.grid_index[:1])["excess_sharpe_ann"]
    winner = float(first.iloc[0]) if len(first) and np.isfinite(first.iloc[0]) else None
    section = ResultsSection(
        sorted_by="excess_sharpe (over the benchmark), descending; ties by config_id",
        top=top,
        sharpe_ann_summary=_summary(finite),
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
    return section, ResultsPlotData(ann.size, counts, edges, winner, hm, profile)
