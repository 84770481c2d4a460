"""Evaluate a batch of grid positions: params, ids, seeds, strategy, metrics -> one table.

This is the pure unit of work every executor runs (in-process or in a Ray task). A config's
row depends only on the strategy, its params, the data, the root seed and the metric options.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import Any, Protocol, cast, overload

import numba
import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from stats import (
    FoldSummary,
    NullSummary,
    ResampleDraws,
    merge_fold_summaries,
    merge_null_summaries,
    summarize_folds,
    summarize_null,
)
from strategies import StrategyOutput
from strategies._bar_fills import EXIT_COLUMNS, EXIT_NAMES
from strategies._panel import read_only_hint
from sweep.data._benchmark import benchmark_returns
from sweep.engine._heap import retain_freed_memory
from sweep.engine._metrics import (
    FLOAT_METRICS,
    INT_METRICS,
    block_columns,
    config_metrics,
    shared_draws,
)
from sweep.spec._config_identity import STRATEGY_STREAM, config_ids, config_stream
from sweep.spec._models import MetricOptions
from sweep.spec._resolve import ResolvedSweep
from sweep.store._fold_summary import with_folds
from sweep.store._null_summary import with_summary
from sweep.store._part_environment import with_environment
from sweep.store._row_set_hash import with_part_digest

STATUS_OK = "ok"
STATUS_ERROR = "error"


def metric_settings(sweep: ResolvedSweep) -> MetricOptions:
    """The metric settings of a sweep: its spec's ``[metrics]``."""
    return sweep.spec.metrics


def sweep_draws(sweep: ResolvedSweep) -> ResampleDraws | None:
    """The sweep's shared bootstrap draws (None when ``bootstrap_reps = 0``)."""
    m = sweep.spec.metrics
    if not m.bootstrap_reps:
        return None
    return shared_draws(
        sweep.spec.seed, sweep.n_returns, m.block_length, m.bootstrap_reps, m.bootstrap_method
    )


def _arrow_type(values: NDArray[Any]) -> pa.DataType:
    return {"i": pa.int64(), "f": pa.float64(), "b": pa.bool_()}.get(values.dtype.kind, pa.string())


def results_schema(sweep: ResolvedSweep) -> pa.Schema:
    """The schema of a sweep's results table (and of every part).

    Columns: ``config_id`` (string), ``grid_index`` (int64), one column per parameter in grid
    order, ``status`` (``"ok"``/``"error"``), ``error`` (message or null), the metrics of
    :func:`sweep.engine._metrics.config_metrics`, and, when the grid sets an exit level,
    the exit counts (``exits_stop``, ``exits_take_profit``, ``exits_trailing``,
    ``ambiguous_bars``).
    """
    sum_names, sq_names = block_columns(sweep.spec.metrics.pbo_blocks)
    fields = [
        pa.field("config_id", pa.string(), nullable=False),
        pa.field("grid_index", pa.int64(), nullable=False),
    ]
    fields += [pa.field(a.name, _arrow_type(a.values), nullable=False) for a in sweep.grid.axes]
    fields += [pa.field("status", pa.string(), nullable=False), pa.field("error", pa.string())]
    fields += [pa.field(n, pa.int64(), nullable=False) for n in INT_METRICS[:2]]
    fields += [pa.field(n, pa.float64(), nullable=False) for n in FLOAT_METRICS]
    fields += [pa.field("blk_n", pa.int64(), nullable=False)]
    fields += [pa.field(n, pa.float64(), nullable=False) for n in [*sum_names, *sq_names]]
    if has_exit_columns(sweep):
        fields += [pa.field(n, pa.int64(), nullable=False) for n in EXIT_COLUMNS]
    fields += [pa.field(n, KIND_TYPES[k], nullable=False) for n, k in strategy_columns(sweep)]
    return pa.schema(fields)


#: Arrow type of each kind of column a strategy may add.
KIND_TYPES = {"float": pa.float64(), "int": pa.int64()}


def strategy_columns(sweep: ResolvedSweep) -> list[tuple[str, str]]:
    """The (name, kind) columns the strategy adds to each row (a backtester's statistics).

    ``n_trades`` is the engine's own column: a strategy's value fills it instead.
    """
    declared = getattr(sweep.strategy, "columns", ()) or ()
    return [(str(n), str(k)) for n, k in declared if n != "n_trades"]


def has_exit_columns(sweep: ResolvedSweep) -> bool:
    """Whether the table counts exits: the grid sets an exit level (swept or fixed).

    A grid without one has the table it had before exit levels existed.
    """
    return any(axis.name in EXIT_NAMES for axis in sweep.grid.axes)


class _LazyGenerators(Sequence[np.random.Generator]):
    """The strategy stream of each config, created on first use (most strategies never ask)."""

    def __init__(self, root_seed: int, ids: Sequence[str]) -> None:
        self._root = root_seed
        self._ids = ids
        self._made: dict[int, np.random.Generator] = {}

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, i: int) -> np.random.Generator: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[np.random.Generator]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i not in self._made:
            seed = config_stream(self._root, self._ids[i], STRATEGY_STREAM)
            self._made[i] = np.random.default_rng(seed)
        return self._made[i]


def config_ids_at(sweep: ResolvedSweep, params: dict[str, NDArray[Any]]) -> list[str]:
    """The config ids of aligned parameter arrays (see :func:`sweep.config_id`)."""
    return config_ids(sweep.strategy.name, sweep.strategy.version, params)


@dataclass(frozen=True)
class BatchResult:
    """The outcome of one batch: its rows and how long the work took inside the task."""

    table: pa.Table
    compute_seconds: float
    n_errors: int
    first_error: str | None


def _checked(output: StrategyOutput, n: int, t: int) -> StrategyOutput:
    shape = output.returns.shape
    if shape != (n, t) or output.turnover.shape != (n, t) or output.n_trades.shape != (n,):
        raise ValueError(
            f"strategy returned returns {shape}, turnover {output.turnover.shape}, n_trades "
            f"{output.n_trades.shape}; expected ({n}, {t}), ({n}, {t}), ({n},)"
        )
    return output


def _run_strategy(
    sweep: ResolvedSweep, params: dict[str, NDArray[Any]], rngs: _LazyGenerators
) -> tuple[StrategyOutput, list[str | None]]:
    """Run the strategy on a sub-batch; if it raises, re-run config by config.

    Returns the output (zero rows for configs that raised) and one error message or None
    per config.
    """
    n, t = len(rngs), sweep.n_returns
    errors: list[str | None] = [None] * n
    try:
        return _checked(sweep.strategy.evaluate(sweep.panel, params, rngs), n, t), errors
    except Exception:
        returns, turnover = np.zeros((n, t)), np.zeros((n, t))
        trades = np.zeros(n, dtype=np.int64)
        exits = np.zeros((n, len(EXIT_COLUMNS)), dtype=np.int64)
        extra = {
            c: np.zeros(n, KIND_TYPES[k].to_pandas_dtype()) for c, k in strategy_columns(sweep)
        }
        for j in range(n):
            one = {k: v[j : j + 1] for k, v in params.items()}
            try:
                out = _checked(sweep.strategy.evaluate(sweep.panel, one, rngs[j : j + 1]), 1, t)
            except Exception as exc:
                errors[j] = f"{type(exc).__name__}: {exc}{read_only_hint(exc)}"
                continue
            returns[j], turnover[j], trades[j] = out.returns[0], out.turnover[0], out.n_trades[0]
            if out.exit_counts is not None:
                exits[j] = out.exit_counts[0]
            for column, values in (out.extra or {}).items():
                extra[column][j] = values[0]
        return StrategyOutput(returns, turnover, trades, exits, extra or None), errors


def config_returns(sweep: ResolvedSweep, indices: NDArray[np.int64]) -> NDArray[np.float64]:
    """Recompute the per-period returns of the configs at grid positions ``indices``.

    Returns depend only on the config, the data and the root seed, so they are recomputed
    exactly (bit for bit the series the stored metrics were computed from) instead of kept.

    Parameters
    ----------
    sweep : ResolvedSweep
        The sweep.
    indices : ndarray of int64
        Grid positions.

    Returns
    -------
    ndarray of float64, shape (len(indices), n_returns)
        One row per index, in the order given; a config whose strategy raises gets NaNs.
    """
    idx = np.asarray(indices, dtype=np.int64)
    out = np.full((idx.shape[0], sweep.n_returns), np.nan)
    for lo in range(0, idx.shape[0], SUB_BATCH):
        chunk = idx[lo : lo + SUB_BATCH]
        params = sweep.grid.params_at(chunk)
        rngs = _LazyGenerators(sweep.spec.seed, config_ids_at(sweep, params))
        output, errors = _run_strategy(sweep, params, rngs)
        failed = np.array([e is not None for e in errors])
        output.returns[failed] = np.nan
        out[lo : lo + chunk.shape[0]] = output.returns
    return out


#: Configs recomputed together when returns are streamed (:func:`config_returns_blocks`).
RETURNS_BLOCK = 512


def config_returns_blocks(
    sweep: ResolvedSweep, indices: NDArray[np.int64], block: int = RETURNS_BLOCK
) -> Iterator[NDArray[np.float64]]:
    """:func:`config_returns` of ``indices`` as consecutive blocks of at most ``block`` rows."""
    idx = np.asarray(indices, dtype=np.int64)
    for lo in range(0, idx.shape[0], block):
        yield config_returns(sweep, idx[lo : lo + block])


class ReturnsRunner(Protocol):
    """What recomputes configs' returns a block of rows at a time.

    Called as ``run(sweep, indices)``; yields consecutive blocks of rows of per-period
    returns, one row per grid position, in the order given, so the caller never holds them
    all: :func:`config_returns_blocks` here, or Ray tasks with ``sweep report --address``
    (:func:`sweep.executors._part_tasks.config_returns_on_ray`), with the same rows.
    """

    def __call__(
        self, sweep: ResolvedSweep, indices: NDArray[np.int64], /
    ) -> Iterable[NDArray[np.float64]]: ...


#: Configs pushed through strategy and metrics together inside one batch (keeps the
#: scratch arrays in cache and the memory of a large batch bounded).
SUB_BATCH = 64


#: One results column of a sub-batch: an array, or the per-config status/error strings.
Column = NDArray[Any] | list[str] | list[str | None]


@dataclass(frozen=True)
class _Rows:
    data: dict[str, Column]
    errors: list[str | None]
    summary: NullSummary | None
    folds: FoldSummary | None


#: Metric columns that are sums over a config's periods: finite returns can still overflow them.
SUM_METRICS = ("mean", "std", "excess_mean", "excess_std", "turnover")


def _period(dates: NDArray[np.datetime64], k: int) -> str:
    """Return period ``k`` as a person reads it: it earns from date ``k`` to date ``k + 1``."""
    first, last = (str(np.datetime_as_string(dates[i], unit="D")) for i in (k, k + 1))
    return f"period {k} ({first} to {last})"


@numba.njit(cache=True, nogil=True)
def _first_non_finite(returns):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Per row, the first period whose return is NaN or infinite; -1 where all are finite.

    One read of each row, no temporaries: ``v - v != 0`` exactly when ``v`` is not finite, and
    the count of failures is an integer sum the compiler vectorises; only a row with a
    failure is searched for the first one.
    """
    n, t = returns.shape
    out = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        row = returns[i]
        failures = 0
        for k in range(t):
            failures += row[k] - row[k] != 0.0  # True for NaN too (unordered)
        if failures:
            for k in range(t):
                if not np.isfinite(row[k]):
                    out[i] = k
                    break
    return out


def _non_finite_returns(
    output: StrategyOutput, errors: list[str | None], dates: NDArray[np.datetime64]
) -> StrategyOutput:
    """Fail each config whose returns are not all finite, naming its first bad period.

    Fills ``errors`` in place; the failed rows' returns are set to zero so that the metric
    kernels see finite numbers (their metrics are discarded; other rows are untouched).
    """
    first_bad = _first_non_finite(np.ascontiguousarray(output.returns, dtype=np.float64))
    bad = first_bad >= 0
    if not bad.any():
        return output
    for j in np.flatnonzero(bad):
        k = int(first_bad[j])
        if errors[j] is None:
            errors[j] = (
                f"the return of {_period(dates, k)} is {float(output.returns[j, k])!r}; "
                "a config's returns must all be finite"
            )
    returns = np.where(bad[:, np.newaxis], 0.0, output.returns)
    return replace(output, returns=returns)


def _overflowed_sums(cols: dict[str, NDArray[Any]], errors: list[str | None]) -> None:
    """Fail each config whose finite returns still overflow a sum (a mean of -inf, say)."""
    for name in SUM_METRICS:
        values = np.asarray(cols[name], dtype=np.float64)
        for j in np.flatnonzero(~np.isfinite(values)):
            if errors[j] is None:
                errors[j] = (
                    f"every return is finite, but their {name.replace('_', ' ')} is "
                    f"{float(values[j])!r}: the returns (or turnover) are too large to sum in "
                    "float64"
                )


def _evaluate_rows(
    sweep: ResolvedSweep,
    idx: NDArray[np.int64],
    params: dict[str, NDArray[Any]],
    ids: list[str],
    bench: NDArray[np.float64],
) -> _Rows:
    output, errors = _run_strategy(sweep, params, _LazyGenerators(sweep.spec.seed, ids))
    output = _non_finite_returns(output, errors, sweep.panel.dates)
    validation = sweep.spec.validation
    metrics = config_metrics(
        output,
        bench,
        sweep_draws(sweep),
        metric_settings(sweep),
        sweep.fold_plan,
        validation.metric if validation is not None else "sharpe",
    )
    cols = metrics.columns
    _overflowed_sums(cols, errors)
    failed = np.array([e is not None for e in errors])
    if failed.any():
        for col in cols.values():
            col[failed] = np.nan if col.dtype.kind == "f" else 0
    summary = None
    if metrics.centred is not None:
        ok = ~failed
        summary = summarize_null(
            idx[ok],
            np.asarray(cols["excess_mean"], dtype=np.float64)[ok],
            np.asarray(cols["excess_std"], dtype=np.float64)[ok],
            np.asarray(cols["omega"], dtype=np.float64)[ok],
            metrics.centred[ok],
            sweep.n_returns,
            sweep.spec.metrics.stepm_top_k,
        )
    folds = None
    if metrics.fold_values is not None and (~failed).any():
        folds = summarize_folds(idx[~failed], metrics.fold_values[~failed])
    data: dict[str, Column] = {"config_id": ids, "grid_index": idx, **params}
    data["status"] = [STATUS_ERROR if e else STATUS_OK for e in errors]
    data["error"] = errors
    data.update(cols)
    if has_exit_columns(sweep):
        counts = output.exit_counts
        if counts is None:
            counts = np.zeros((len(ids), len(EXIT_COLUMNS)), dtype=np.int64)
        counts = np.where(failed[:, np.newaxis], 0, counts)
        for k, name in enumerate(EXIT_COLUMNS):
            data[name] = np.ascontiguousarray(counts[:, k], dtype=np.int64)
    for name, kind in strategy_columns(sweep):
        values = (output.extra or {}).get(name)
        if values is None:
            values = np.zeros(len(ids), KIND_TYPES[kind].to_pandas_dtype())
        data[name] = np.where(failed, np.nan if kind == "float" else 0, values).astype(
            KIND_TYPES[kind].to_pandas_dtype()
        )
    return _Rows(data, errors, summary, folds)


def _table(schema: pa.Schema, pieces: list[dict[str, Column]]) -> pa.Table:
    """The sub-batches' columns joined and converted to arrow once per column."""
    if not pieces:
        return schema.empty_table()
    arrays = []
    for f in schema:
        values = [piece[f.name] for piece in pieces]
        if isinstance(values[0], np.ndarray):
            arrays.append(pa.array(np.concatenate(cast(list[NDArray[Any]], values)), type=f.type))
        else:
            arrays.append(pa.array([*chain(*values)], type=f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def evaluate_batch(sweep: ResolvedSweep, indices: NDArray[np.int64]) -> BatchResult:
    """Evaluate the configs at grid positions ``indices`` and return their rows.

    Parameters
    ----------
    sweep : ResolvedSweep
        The sweep.
    indices : ndarray of int64
        Grid positions.

    Returns
    -------
    BatchResult
        One row per index, in the order given. A config whose evaluation raises, whose
        returns are not all finite (the error names the first such period) or whose finite
        returns overflow a sum gets ``status = "error"``, the reason in ``error``, NaN float
        metrics and zero counts; the other configs of its batch are unaffected (a failing
        sub-batch is re-run config by config to isolate the failures). When the sweep
        bootstraps, the table's schema metadata carries the batch's null summary
        (:mod:`sweep.store._null_summary`); it always carries the environment record of
        the process that computed it (:mod:`sweep.store._part_environment`: versions, CPU,
        dispatch), so the part's sha256 name covers where its bits came from, and the
        batch's share of the v2 table hash (:mod:`sweep.store._row_set_hash`: computed on
        the worker, so the driver only adds one value per part).
    """
    start = time.perf_counter()
    retain_freed_memory()  # sub-batches reuse pages instead of faulting in fresh ones
    idx = np.asarray(indices, dtype=np.int64)
    schema = results_schema(sweep)
    pieces: list[dict[str, Column]] = []
    errors: list[str | None] = []
    summaries: list[NullSummary] = []
    fold_summaries: list[FoldSummary] = []
    bench = benchmark_returns(sweep.spec.metrics.benchmark, sweep.panel)
    # Params and ids of the whole batch at once: each distinct value is encoded once.
    params = sweep.grid.params_at(idx)
    ids = config_ids_at(sweep, params)
    for lo in range(0, idx.shape[0], SUB_BATCH):
        part = slice(lo, lo + SUB_BATCH)
        sub_params = {k: v[part] for k, v in params.items()}
        rows = _evaluate_rows(sweep, idx[part], sub_params, ids[part], bench)
        errors += rows.errors
        if rows.summary is not None:
            summaries.append(rows.summary)
        if rows.folds is not None:
            fold_summaries.append(rows.folds)
        pieces.append(rows.data)
    table = _table(schema, pieces)
    table = with_summary(table, merge_null_summaries(summaries) if summaries else None)
    table = with_folds(table, merge_fold_summaries(fold_summaries) if fold_summaries else None)
    table = with_environment(table)
    table = with_part_digest(table, len(sweep.grid))  # the part's share of the v2 table hash
    first = next((e for e in errors if e), None)
    n_errors = sum(e is not None for e in errors)
    return BatchResult(table, time.perf_counter() - start, n_errors, first)
