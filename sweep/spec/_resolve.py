"""Resolving a spec: the spec checked against its strategy and its data.

:func:`resolve` checks parameter names and types, windows shorter than the data and the PBO
block count, loads the data and returns a :class:`ResolvedSweep`, the immutable bundle every
executor evaluates. This module orchestrates the grid, the benchmark and the data loaders;
the models themselves (:mod:`sweep.spec._models`) load nothing.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from stats import FoldPlan
from strategies import Execution, Param, Strategy, from_backtesting, get_strategy
from strategies._backtesting import import_class
from strategies._bar_fills import BAR_FIELDS, EXIT_NAMES
from sweep.data._benchmark import check_benchmark
from sweep.data._panels import Panel, load_panel, panel_fingerprint, synthetic_panel
from sweep.errors import (
    GridError,
    SpecError,
    StrategyError,
    StrategySpecError,
    SweepError,
    close_matches,
)
from sweep.spec._grid import RESERVED_KEYS, Axis, Grid, axis_from_definition
from sweep.spec._models import (
    COST_PARAMETERS,
    MIN_PERIODS_PER_BLOCK,
    DataSpec,
    MetricOptions,
    StrategySpec,
    SweepSpec,
)
from sweep.spec._provenance import DataOrigin, StrategyOrigin, strategy_origin
from sweep.spec._validation_spec import fold_plan


@dataclass(frozen=True, eq=False)
class ResolvedSweep:
    """A spec checked against its strategy and data: what executors evaluate.

    Attributes
    ----------
    spec : SweepSpec
        The spec.
    strategy : Strategy
        The strategy instance.
    grid : Grid
        The grid over every strategy parameter (costs and defaults as one-value axes).
    panel : Panel
        The price panel.
    fingerprint : str
        sha256 of the panel (:func:`sweep.panel_fingerprint`).
    origin : DataOrigin or None
        Where the panel came from (None only for a sweep built by hand: then the spec's
        data, see :meth:`data_origin`).
    strategy_origin : StrategyOrigin or None
        How the strategy can be imported again (None: found from the object when needed).
    """

    spec: SweepSpec
    strategy: Strategy
    grid: Grid
    panel: Panel
    fingerprint: str
    origin: DataOrigin | None = None
    strategy_origin: StrategyOrigin | None = None

    @property
    def data_origin(self) -> DataOrigin:
        """Where the panel came from (the spec's data when not recorded otherwise)."""
        return self.origin if self.origin is not None else spec_origin(self.spec)

    @property
    def strategy_source(self) -> StrategyOrigin:
        """How the strategy can be imported again (``_provenance.strategy_origin``)."""
        if self.strategy_origin is not None:
            return self.strategy_origin
        return strategy_origin(self.strategy)

    @property
    def n_returns(self) -> int:
        """Number of return periods of every config (one fewer than the panel's dates)."""
        return self.panel.n_periods - 1

    @functools.cached_property
    def fold_plan(self) -> FoldPlan | None:
        """The out-of-sample folds of ``[validation]`` on this data (None without it)."""
        return fold_plan(self.spec.validation, self.n_returns, self.spec.metrics.periods_per_year)


def load_data(spec: SweepSpec) -> Panel:
    """Load the panel a spec names (the synthetic default or a file or folder)."""
    if spec.data.source == "synthetic":
        return synthetic_panel(seed=spec.data.seed, years=spec.data.years, ohlcv=spec.data.ohlcv)
    if spec.data.source == "memory":
        raise SpecError(
            "data.source: 'memory' means the panel was handed over from Python, so the spec "
            "cannot load it; pass the panel (resolve(spec, panel), sweep.run(..., data=frame)), "
            "or reopen the run folder, which keeps a copy"
        )
    if not spec.data.path:
        raise SpecError("data.path: required when data.source = 'file'")
    return load_panel(spec.data.path, layout=spec.data.layout, fill=spec.data.fill)


def spec_origin(spec: SweepSpec) -> DataOrigin:
    """Where the spec's own data comes from (its synthetic panel or its file)."""
    data = spec.data
    if data.source == "synthetic":
        fields = ", with open, high, low and volume" if data.ohlcv else ""
        return DataOrigin(
            "synthetic", None, f"synthetic panel (seed {data.seed}, {data.years} years{fields})"
        )
    if data.source == "file":
        return DataOrigin("file", data.path, f"file {data.path}")
    return DataOrigin("memory", None, "in-memory panel")


@functools.lru_cache(maxsize=8)
def _synthetic_fingerprint(seed: int, years: int, ohlcv: bool) -> str:
    return panel_fingerprint(synthetic_panel(seed=seed, years=years, ohlcv=ohlcv))


def memory_origin(panel: Panel, what: str = "Panel") -> DataOrigin:
    """The origin of a panel handed over in memory: what it was, its shape and dates."""
    first = str(panel.dates[0].astype("datetime64[D]"))
    last = str(panel.dates[-1].astype("datetime64[D]"))
    assets = ", ".join(panel.assets[:5]) + (", ..." if panel.n_assets > 5 else "")
    return DataOrigin(
        "memory",
        None,
        f"in-memory {what}, {panel.n_periods} dates x {panel.n_assets} assets, {first} to "
        f"{last} ({assets})",
    )


def _given_panel(spec: SweepSpec, panel: Panel) -> tuple[SweepSpec, DataOrigin]:
    """Return the spec and origin of a panel handed to :func:`resolve`.

    The spec's own data when the fingerprints match, else an in-memory panel (the spec's
    data becomes ``memory``).
    """
    data = spec.data
    if data.source == "synthetic" and panel_fingerprint(panel) == _synthetic_fingerprint(
        data.seed, data.years, data.ohlcv
    ):
        return spec, spec_origin(spec)
    if data.source == "file" and data.path:
        try:
            same = panel_fingerprint(load_data(spec)) == panel_fingerprint(panel)
        except SweepError:
            same = False
        if same:
            return spec, spec_origin(spec)
    memory = DataSpec(source="memory", fill=data.fill)
    return spec.model_copy(update={"data": memory}), memory_origin(panel)


def _coerce_axis(axis: Axis, param: Param) -> Axis:
    values = axis.values
    where = f"grid.{axis.name}"
    kind = values.dtype.kind
    if param.kind == "int":
        if kind != "i":
            raise GridError(
                f"{where}: expected integers, got {values.dtype} values like {values[0].item()!r}"
            )
    elif param.kind == "float":
        if kind not in "if":
            raise GridError(
                f"{where}: expected numbers, got {values.dtype} values like {values[0].item()!r}"
            )
        values = values.astype(np.float64)
    elif param.kind == "bool" and kind != "b":
        raise GridError(
            f"{where}: expected true/false, got {values.dtype} values like {values[0].item()!r}"
        )
    if param.minimum is not None and (values < param.minimum).any():
        bad = values[values < param.minimum][0].item()
        raise GridError(f"{where}: expected values >= {param.minimum}, got {bad!r}")
    if param.maximum is not None and (values > param.maximum).any():
        bad = values[values > param.maximum][0].item()
        raise GridError(f"{where}: expected values <= {param.maximum}, got {bad!r}")
    return Axis(axis.name, values)


def _check_windows(grid: Grid, strategy: Strategy, panel: Panel) -> None:
    for param in strategy.params:
        if not param.window:
            continue
        values = grid.axis(param.name).values
        if (values < 1).any():
            raise GridError(
                f"grid.{param.name}: a window must be at least 1 period, got {int(values.min())}"
            )
        if (values >= panel.n_periods).any():
            raise GridError(
                f"grid.{param.name}: a window must be shorter than the data "
                f"({panel.n_periods} periods), got {int(values.max())}"
            )


def _load_strategy(section: StrategySpec) -> Strategy:
    """The spec's strategy; a :class:`StrategyError` is raised again as a spec error."""
    try:
        if section.backtesting is not None:
            return from_backtesting(import_class(section.backtesting), **section.backtest)
        return get_strategy(section.name)
    except StrategyError as exc:
        if isinstance(exc, SweepError):
            raise
        raise StrategySpecError(str(exc)) from exc


def _given_names(spec: SweepSpec, strategy: Strategy) -> list[str]:
    """The grid's parameter names, each checked against the strategy (costs too)."""
    declared = {p.name: p for p in strategy.params}
    given = [k for k in spec.grid if k not in RESERVED_KEYS]
    for section, names in (("grid", given), ("costs", list(spec.costs))):
        for name in names:
            if name in declared:
                continue
            hint = ""
            if name in COST_PARAMETERS:
                hint = (
                    f" {name!r} belongs to the cost model of position-function strategies; "
                    f"{strategy.name!r} is a batch kernel with its own cost parameters."
                )
            raise GridError(
                f"{section}.{name}: strategy {strategy.name!r} has no parameter {name!r} "
                f"(parameters: {sorted(declared)})." + hint + close_matches(name, declared)
            )
    both = sorted(set(given) & set(spec.costs))
    if both:
        raise SpecError(f"costs: {both} also appear in [grid]; give each parameter once")
    return given


def _fixed_axis(spec: SweepSpec, strategy: Strategy, param: Param) -> Axis:
    """The one-value axis of a parameter the grid does not give: its cost or its default."""
    if param.name in spec.costs:
        value: Any = spec.costs[param.name]
    elif param.default is not None:
        value = param.default
    else:
        raise GridError(
            f"grid: strategy {strategy.name!r} needs parameter {param.name!r} "
            f"({param.doc or param.kind}), which the grid does not give"
        )
    return _coerce_axis(axis_from_definition(param.name, [value]), param)


def full_grid(spec: SweepSpec, strategy: Strategy) -> Grid:
    """The grid over every strategy parameter: the spec's axes, then costs and defaults.

    An optional parameter (an exit level) the spec does not name is left out: the strategy
    runs at its default, and the grid, its config ids and its table are those of a grid
    written before the parameter existed.
    """
    given = _given_names(spec, strategy)
    declared = {p.name: p for p in strategy.params}
    base = Grid.from_definition(spec.grid)
    axes = [_coerce_axis(a, declared[a.name]) for a in base.axes]
    axes += [
        _fixed_axis(spec, strategy, p)
        for p in strategy.params
        if p.name not in given and not (p.optional and p.name not in spec.costs)
    ]
    return Grid(axes, [list(g) for g in base.zip_groups], [c.text for c in base.constraints])


def _check_listings(strategy: Strategy, panel: Panel) -> None:
    """Refuse a panel with listings for a strategy that does not declare it honours them.

    A position-function strategy does (its weights are forced to zero where an asset is not
    listed); a batch kernel must say so with ``honours_listings = True``, because the engine
    cannot see its weights.
    """
    if panel.has_listings and not getattr(strategy, "honours_listings", False):
        raise StrategySpecError(
            f"strategy.name: strategy {strategy.name!r} is a batch kernel that does not honour "
            "a panel with listings and delistings (it could hold an asset that is not listed); "
            "use a position-function strategy instead: a built-in (xs_momentum, trend_filter, "
            "rsi_reversion, bollinger_reversion) or your own strategies.position_strategy; a "
            "batch kernel that holds nothing where panel.live is False may declare "
            "honours_listings = True"
        )


def _check_fields(strategy: Strategy, panel: Panel, origin: DataOrigin) -> None:
    """Refuse data without a panel field the strategy reads (its ``fields``, if any).

    A position-function strategy's ``fields`` are the field arguments its function names;
    a batch kernel may declare ``fields`` too (a set of ``open``, ``high``, ``low``,
    ``volume``).
    """
    wanted = sorted(str(f) for f in getattr(strategy, "fields", None) or ())
    missing = [f for f in wanted if f not in panel.fields]
    if not missing:
        return
    raise StrategySpecError(
        f"strategy.name: strategy {strategy.name!r} reads the field {missing[0]!r} (it reads "
        f"{wanted}), which the data does not have: {origin.description} has the fields "
        f"{['close', *sorted(panel.fields)]}; {_fields_hint(origin)}"
    )


def _fields_hint(origin: DataOrigin) -> str:
    """How to give the data the fields it lacks."""
    if origin.kind == "synthetic":
        return "set ohlcv = true in [data] for the synthetic panel's open, high, low and volume"
    return (
        "give the data the field (a wide table's '<asset>:<field>' columns, a long table's "
        "or a per-asset file's field column; see sweep.load_panel)"
    )


def _check_single_asset(strategy: Strategy, panel: Panel) -> None:
    """Refuse a panel of several assets for a strategy that backtests one (backtesting.py)."""
    if getattr(strategy, "single_asset", False) and panel.n_assets > 1:
        shown = ", ".join(repr(a) for a in panel.assets[:8])
        raise StrategySpecError(
            f"data: strategy {strategy.name!r} backtests one asset, and the data has "
            f"{panel.n_assets} ({shown}{', ...' if panel.n_assets > 8 else ''}); pick one: "
            "a file or folder holding that asset only, or from Python the DataFrame's "
            "columns of one asset (prices[['AAPL']])"
        )


def _check_bar_fields(grid: Grid, strategy: Strategy, panel: Panel, origin: DataOrigin) -> None:
    """Refuse exit levels or next-open fills on data without the open, high and low."""
    levels = [
        a.name for a in grid.axes if a.name in EXIT_NAMES and np.any(np.asarray(a.values) != 0)
    ]
    execution = getattr(strategy, "execution", None)
    next_open = isinstance(execution, Execution) and execution.fill == "next_open"
    missing = [f for f in BAR_FIELDS if f not in panel.fields]
    if not missing or not (levels or next_open):
        return
    why = f"the exit levels {levels}" if levels else "fill = 'next_open'"
    raise StrategySpecError(
        f"grid: {why} of strategy {strategy.name!r} fill inside each bar and need its "
        f"{', '.join(BAR_FIELDS)}, which the data does not have ({origin.description} has the "
        f"fields {['close', *sorted(panel.fields)]}); {_fields_hint(origin)}"
    )


def _check_metrics(metrics: MetricOptions, n_returns: int) -> None:
    """Refuse PBO blocks or a bootstrap block length the data's return count cannot hold."""
    per_block = n_returns // metrics.pbo_blocks
    if per_block < MIN_PERIODS_PER_BLOCK:
        raise SpecError(
            f"metrics.pbo_blocks: {metrics.pbo_blocks} blocks leave {per_block} periods per "
            f"block on {n_returns} returns; expected at least {MIN_PERIODS_PER_BLOCK} per block"
        )
    if metrics.bootstrap_reps and metrics.block_length >= n_returns:
        raise SpecError(
            f"metrics.block_length: expected fewer than {n_returns} periods (the data's return "
            f"count), got {metrics.block_length}"
        )


def check_strategy_object(strategy: Any) -> Strategy:
    """Refuse (:class:`StrategySpecError`) an object that is not a Strategy, naming its lack."""
    if isinstance(strategy, Strategy):
        return strategy
    lacking = [m for m in ("name", "version", "params", "evaluate") if not hasattr(strategy, m)]
    raise StrategySpecError(
        "strategy: expected a Strategy (an object with name, version, params and "
        f"evaluate(panel, params, rngs)), a built-in name or an import path, got "
        f"{type(strategy).__name__}" + (f" without {lacking}" if lacking else "")
    )


def resolve(
    spec: SweepSpec, panel: Panel | None = None, *, strategy: Strategy | None = None
) -> ResolvedSweep:
    """Check a spec against its strategy and data and build the full grid.

    Parameters
    ----------
    spec : SweepSpec
        The spec.
    panel : Panel, optional
        The price panel; loaded from the spec when omitted. A panel whose fingerprint is not
        that of the data the spec names is recorded as in-memory data: the returned sweep's
        spec says ``data.source = "memory"`` and the run folder keeps a copy of the panel.
    strategy : Strategy, optional
        The strategy object; imported from ``spec.strategy.name`` when omitted.

    Returns
    -------
    ResolvedSweep
        Strategy, grid (every strategy parameter present, in the grid's order followed by
        fixed costs and defaults in the strategy's order), panel, its fingerprint and where
        the panel came from.
    """
    if panel is None:
        return resolve_with(spec, load_data(spec), spec_origin(spec), strategy)
    spec, origin = _given_panel(spec, panel)
    return resolve_with(spec, panel, origin, strategy)


def resolve_with(
    spec: SweepSpec,
    panel: Panel,
    origin: DataOrigin,
    strategy: Strategy | None = None,
    known_origin: StrategyOrigin | None = None,
) -> ResolvedSweep:
    """:func:`resolve` with the panel's origin already known (a run folder's record)."""
    if strategy is None:
        strategy = _load_strategy(spec.strategy)
    else:
        strategy = check_strategy_object(strategy)
    grid = full_grid(spec, strategy)
    _check_windows(grid, strategy, panel)
    _check_listings(strategy, panel)
    _check_single_asset(strategy, panel)
    _check_fields(strategy, panel, origin)
    _check_bar_fields(grid, strategy, panel, origin)
    _check_metrics(spec.metrics, panel.n_periods - 1)
    check_benchmark(spec.metrics.benchmark, panel)
    resolved = ResolvedSweep(
        spec, strategy, grid, panel, panel_fingerprint(panel), origin, known_origin
    )
    _ = resolved.fold_plan  # folds that do not fit the data are refused here
    return resolved
