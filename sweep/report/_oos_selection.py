"""Out-of-sample validation of the selection rule, from a run's merged fold summary.

Each fold's in-sample best comes from the parts (:mod:`sweep.store._fold_summary`, exact at any
scale). Only the selected configs' returns are recomputed
(:func:`sweep.engine._evaluate.config_returns`, bit for bit what the sweep computed; here, or as
Ray tasks through a :class:`sweep.engine._evaluate.ReturnsRunner`) and stitched:

- **walk-forward**: the re-optimised rule holds, on each test window, the config that was
  best on the window's training periods; its test returns in time order are the rule's
  out-of-sample track record, compared with the benchmark and with the full-sample winner
  held fixed over the same periods. Walk-forward efficiency (Pardo 2008, ch. 11) is the
  annualised out-of-sample Sharpe ratio over the mean annualised in-sample one of the
  selected configs.
- **CPCV**: each of the C(N, k) k/N paths (López de Prado 2018, ch. 12) takes every group
  from one split that tests it; the spread of the paths' out-of-sample Sharpe ratios, and
  the share below zero, describe the rule on data it did not see.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from stats import (
    FoldSummary,
    cpcv_paths,
    group_bounds,
    probabilistic_sharpe_ratio,
    return_moments,
)
from sweep.data._benchmark import benchmark_returns
from sweep.engine._evaluate import ReturnsRunner, config_returns_blocks
from sweep.errors import RunFolderError
from sweep.spec._grid import ParamValue
from sweep.spec._resolve import ResolvedSweep
from sweep.store._part_mapper import PartMapper, map_here

#: "Holds out of sample" for the verdict when walk-forward is configured: the stitched
#: out-of-sample excess returns have PSR (against a zero excess Sharpe) of at least this.
OOS_PSR_THRESHOLD = 0.95


@dataclass(frozen=True)
class FoldResult:
    """One fold's selection and how it did out of sample.

    Attributes
    ----------
    name, kind : str
        ``wf-00`` ... / ``cpcv-00`` ...; ``"walk_forward"`` or ``"cpcv"``.
    train, test : list of (int, int)
        Period ranges (positions in the return series).
    grid_index : int
        The selected config (-1 if no config had a value).
    params : dict
        Its parameters.
    in_sample : float
        Its training-window metric (the spec's validation metric).
    oos_sharpe : float
        Per-period Sharpe ratio of its excess returns on the test windows.
    """

    name: str
    kind: str
    train: list[tuple[int, int]]
    test: list[tuple[int, int]]
    grid_index: int
    params: dict[str, ParamValue]
    in_sample: float
    oos_sharpe: float


@dataclass(frozen=True)
class WalkForward:
    """The stitched walk-forward track record.

    Attributes
    ----------
    periods : ndarray of int64
        Return-series positions tested, in time order.
    rule, fixed, benchmark : ndarray of float64
        Returns on those periods of the re-optimised rule, of the full-sample winner held
        fixed (NaN when unknown), and of the benchmark.
    excess : ndarray of float64
        The rule's returns in excess of the benchmark.
    sharpe, sharpe_ann : float
        Sharpe ratio of ``excess`` (per period, annualised).
    psr : float
        Probabilistic Sharpe ratio of ``excess`` against zero (Bailey & López de Prado 2012).
    in_sample_sharpe_ann : float
        Mean annualised in-sample Sharpe of the selected configs (NaN for the mean metric).
    efficiency : float
        ``sharpe_ann / in_sample_sharpe_ann`` (NaN unless the in-sample one is positive).
    """

    periods: NDArray[np.int64]
    rule: NDArray[np.float64]
    fixed: NDArray[np.float64]
    benchmark: NDArray[np.float64]
    excess: NDArray[np.float64]
    sharpe: float
    sharpe_ann: float
    psr: float
    in_sample_sharpe_ann: float
    efficiency: float

    @property
    def holds(self) -> bool:
        """The verdict's out-of-sample criterion: PSR >= :data:`OOS_PSR_THRESHOLD`."""
        return bool(self.psr >= OOS_PSR_THRESHOLD)


@dataclass(frozen=True)
class OutOfSample:
    """Everything the report's "Out of sample" section shows.

    Attributes
    ----------
    metric : str
        What picked each fold's best.
    folds : list of FoldResult
        Walk-forward folds, then CPCV splits.
    walk_forward : WalkForward or None
    cpcv_path_sharpe : ndarray of float64 or None
        Per CPCV path, the per-period Sharpe of its stitched excess returns.
    """

    metric: str
    folds: list[FoldResult]
    walk_forward: WalkForward | None
    cpcv_path_sharpe: NDArray[np.float64] | None

    def table(self, dates: NDArray[np.datetime64] | None = None) -> pd.DataFrame:
        """One row per fold: windows (as dates when given), the choice, IS and OOS metric."""
        rows = []
        for f in self.folds:

            def span(windows: list[tuple[int, int]]) -> str:
                if dates is None:
                    return " + ".join(f"{a}..{b - 1}" for a, b in windows)
                # Return t runs from date t to date t + 1.
                return " + ".join(f"{str(dates[a])[:10]}..{str(dates[b])[:10]}" for a, b in windows)

            rows.append(
                {
                    "fold": f.name,
                    "train": span(f.train),
                    "test": span(f.test),
                    "grid_index": f.grid_index,
                    **f.params,
                    f"in_sample_{self.metric}": f.in_sample,
                    "oos_sharpe": f.oos_sharpe,
                }
            )
        return pd.DataFrame(rows)


def _sharpe(x: NDArray[np.float64]) -> float:
    if x.size < 2:
        return math.nan
    return float(return_moments(x[np.newaxis, :]).sharpe[0])


def _recomputed(
    recompute: ReturnsRunner, sweep: ResolvedSweep, indices: NDArray[np.int64]
) -> NDArray[np.float64] | None:
    """The returns of ``indices`` as one matrix, a row per config (None for no config)."""
    if not indices.size:
        return None
    return np.concatenate(list(recompute(sweep, indices)), axis=0)


def _take(series: NDArray[np.float64], windows: list[tuple[int, int]]) -> NDArray[np.float64]:
    return np.concatenate([series[a:b] for a, b in windows]) if windows else np.zeros(0)


def out_of_sample(
    sweep: ResolvedSweep,
    summary: FoldSummary,
    winner_grid_index: int | None,
    recompute: ReturnsRunner = config_returns_blocks,
) -> OutOfSample:
    """Recompute the selected configs' returns and evaluate the selection out of sample.

    Parameters
    ----------
    sweep : ResolvedSweep
        The sweep (with ``[validation]``).
    summary : FoldSummary
        The merged fold summary of its parts.
    winner_grid_index : int or None
        The full-sample winner, held fixed for comparison.
    recompute : ReturnsRunner, optional
        What recomputes the selected configs' returns: here by default, or Ray tasks
        (``sweep report --address``); the same series either way.

    Returns
    -------
    OutOfSample
    """
    plan = sweep.fold_plan
    if plan is None or sweep.spec.validation is None:
        raise RunFolderError("this sweep has no [validation] folds")
    if len(summary.index) != len(plan.folds):
        raise RunFolderError(
            f"the parts' fold summaries have {len(summary.index)} folds, the spec {len(plan.folds)}"
        )
    metric = sweep.spec.validation.metric
    ppy = sweep.spec.metrics.periods_per_year
    bench = benchmark_returns(sweep.spec.metrics.benchmark, sweep.panel)
    fixed = set() if winner_grid_index is None else {int(winner_grid_index)}
    chosen = sorted({int(i) for i in summary.index if i >= 0} | fixed)
    returns = _recomputed(recompute, sweep, np.array(chosen, dtype=np.int64))
    row_of = {g: k for k, g in enumerate(chosen)}
    params = sweep.grid.params_at(np.array(chosen, dtype=np.int64)) if chosen else {}

    def series(grid_index: int) -> NDArray[np.float64]:
        row: NDArray[np.float64] = np.asarray(returns)[row_of[grid_index]]
        return row

    folds = []
    for f, value, gi in zip(plan.folds, summary.value, summary.index, strict=True):
        gi = int(gi)
        test = list(f.test)
        oos = _sharpe(_take(series(gi) - bench, test)) if gi >= 0 else math.nan
        folds.append(
            FoldResult(
                name=f.name,
                kind="walk_forward" if f.name.startswith("wf-") else "cpcv",
                train=list(f.train),
                test=test,
                grid_index=gi,
                params={k: _scalar(v[row_of[gi]]) for k, v in params.items()} if gi >= 0 else {},
                in_sample=float(value) if gi >= 0 else math.nan,
                oos_sharpe=oos,
            )
        )
    wf = [f for f in folds if f.kind == "walk_forward" and f.grid_index >= 0]
    walk = _stitch(wf, series, bench, winner_grid_index, metric, ppy) if wf else None
    cpcv = sweep.spec.validation.cpcv
    path_sharpe = None
    if cpcv is not None:
        splits = [f for f in folds if f.kind == "cpcv"]
        bounds = group_bounds(sweep.n_returns, cpcv.groups)
        path_sharpe = np.array(
            [
                _sharpe(
                    np.concatenate(
                        [
                            (series(splits[s].grid_index) - bench)[bounds[g] : bounds[g + 1]]
                            for g, s in path
                        ]
                    )
                )
                if all(splits[s].grid_index >= 0 for _, s in path)
                else math.nan
                for path in cpcv_paths(cpcv.groups, cpcv.test_groups)
            ]
        )
    return OutOfSample(metric, folds, walk, path_sharpe)


def _scalar(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _stitch(
    folds: list[FoldResult],
    series: Any,
    bench: NDArray[np.float64],
    winner: int | None,
    metric: str,
    ppy: float,
) -> WalkForward:
    periods = np.concatenate([np.arange(a, b) for f in folds for a, b in f.test]).astype(np.int64)
    rule = np.concatenate([_take(series(f.grid_index), f.test) for f in folds])
    fixed = series(winner)[periods] if winner is not None else np.full(periods.size, np.nan)
    excess = rule - bench[periods]
    moments = return_moments(excess[np.newaxis, :])
    sharpe = float(moments.sharpe[0])
    psr = float(
        probabilistic_sharpe_ratio(
            sharpe, excess.size, float(moments.skew[0]), float(moments.kurtosis[0])
        )
    )
    is_ann = (
        float(np.mean([f.in_sample for f in folds])) * math.sqrt(ppy)
        if metric == "sharpe"
        else math.nan
    )
    ann = sharpe * math.sqrt(ppy)
    # Pardo's efficiency compares with a positive in-sample performance; else undefined.
    efficiency = ann / is_ann if math.isfinite(is_ann) and is_ann > 0 else math.nan
    return WalkForward(
        periods, rule, fixed, bench[periods], excess, sharpe, ann, psr, is_ann, efficiency
    )


def fold_table(
    run_dir: str | os.PathLike[str],
    allow_import: tuple[str, ...] = (),
    mapper: PartMapper = map_here,
    recompute: ReturnsRunner = config_returns_blocks,
) -> pd.DataFrame:
    """The fold table of a run folder: each fold's windows, choice and IS / OOS metric.

    Parameters
    ----------
    run_dir : str or path
        A run folder whose spec has ``[validation]``.
    allow_import : tuple of str
        Strategy modules the folder may import (see :mod:`sweep.store._trust`).
    mapper : PartMapper, optional
        Where the parts are checked and their fold summaries read and merged: here by
        default, or Ray tasks over groups of parts (``sweep results --folds --address``).
    recompute : ReturnsRunner, optional
        What recomputes the selected configs' returns: here by default, or Ray tasks.

    Returns
    -------
    pandas.DataFrame
        One row per walk-forward fold and CPCV split (:meth:`OutOfSample.table`); the same
        wherever it was computed.
    """
    from sweep.store._fold_summary import merge_found
    from sweep.store._run_store import RunStore
    from sweep.store._survey import survey_parts
    from sweep.store._trust import resolve_recorded

    store = RunStore(run_dir)
    manifest = store.load_manifest()
    if "validation" not in manifest.spec:
        raise RunFolderError(
            f"run folder {str(run_dir)!r}: its spec has no [validation] section, so it has no folds"
        )
    good = [c.name for c in survey_parts(store, mapper).checks if c.ok]
    summary = merge_found(list(mapper(group_fold_summary, store, good, ())))
    if summary is None:
        raise RunFolderError(f"run folder {str(run_dir)!r} has no fold summaries yet")
    sweep = resolve_recorded(manifest, str(run_dir), allow_import)
    # The table shows each fold's choice only: no full-sample winner is needed.
    return out_of_sample(sweep, summary, None, recompute).table(sweep.panel.dates)


def group_fold_summary(location: str, names: list[str]) -> FoldSummary | None:
    """The merged fold summary of some good parts (a Ray task's body); None if one has none."""
    from sweep.store._fold_summary import merged_folds
    from sweep.store._run_store import RunStore

    store = RunStore(location)
    return merged_folds(store.read_part_schema(n) for n in names)
