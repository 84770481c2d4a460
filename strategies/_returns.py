"""Any backtester as a strategy: one function per config, its equity curve or returns back.

A user writes ``curve = f(data, **params)`` around whatever engine they have (backtesting.py,
a bar loop, another library) and registers it with :func:`returns_strategy`; the engine
aligns the curve to the panel's dates and computes every metric, test and report section
from the period returns, as for any strategy. The adapter for backtesting.py is
:func:`strategies.from_backtesting`.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from strategies._panel import Panel, immutable_copy
from strategies._position import (
    RNG_ARGUMENT,
    _python_value,
    batch_length,
    describe_config,
    masked_copy,
)
from strategies._protocol import Param, StrategyOutput
from strategies._strategy_errors import StrategyError, close_matches

Output = Literal["equity", "returns"]
#: Column kinds a returns strategy may add to each row.
COLUMN_KINDS = ("float", "int")
#: Panel fields in the data a function receives, in this order (those the panel has).
DATA_FIELDS = ("open", "high", "low", "close", "volume")


def panel_frame(panel: Panel) -> pd.DataFrame:
    """The panel as one read-only DataFrame: dates x (field, asset) columns.

    Fields are ``open``, ``high``, ``low``, ``close``, ``volume`` (those the panel has);
    NaN where an asset is not listed, as a position function's prices.
    """
    blocks = {}
    for field in DATA_FIELDS:
        values = panel.close if field == "close" else panel.fields.get(field)
        if values is not None:
            blocks[field] = masked_copy(panel, values)
    columns = pd.MultiIndex.from_tuples(
        [(f, a) for f in blocks for a in panel.assets], names=["field", "asset"]
    )
    data = np.hstack(list(blocks.values()))
    return pd.DataFrame(
        immutable_copy(data), index=pd.DatetimeIndex(panel.dates), columns=columns, copy=False
    )


class ReturnsStrategy:
    """A strategy written as one backtest per config (see :func:`returns_strategy`).

    Attributes
    ----------
    name, version : str
        Identity of the strategy (``version`` must change whenever results change).
    params : tuple of Param
        The declared parameters (the backtester keeps its own costs).
    func : callable
        ``func(data, **params)``: ``data`` the panel (:func:`panel_frame`).
    output : {"equity", "returns"}
        What the function returns.
    columns : tuple of (str, str)
        Extra row columns the function reports, with their kinds (``"float"``, ``"int"``).
    fields : frozenset of str
        Panel fields the function needs besides the close (refused before running
        without them).
    single_asset : bool
        The function takes one asset only (a panel of several is refused before running).
    prepare : callable or None
        Builds what the function receives from the panel's frame, once per batch (the
        backtesting.py adapter's ``Backtest`` object); None: the frame itself.
    """

    #: The engine cannot see its positions: a panel with listings is refused.
    honours_listings = False

    def __init__(  # noqa: PLR0913 - the declaration's parts, each documented
        self,
        func: Callable[..., Any],
        *,
        name: str,
        version: str,
        params: Sequence[Param],
        output: Output,
        columns: Sequence[tuple[str, str]] = (),
        fields: Sequence[str] = (),
        single_asset: bool = False,
        prepare: Callable[[pd.DataFrame], Any] | None = None,
    ) -> None:
        self.func = func
        self.name = name
        self.version = version
        self.params: tuple[Param, ...] = tuple(params)
        self.output: Output = output
        self.columns: tuple[tuple[str, str], ...] = tuple(columns)
        self.fields: frozenset[str] = frozenset(fields)
        self.single_asset = single_asset
        #: Builds what the function receives from the panel's frame once per batch (an
        #: adapter's engine object); None: the frame itself.
        self.prepare = prepare
        #: How a spec names this strategy again (``{"backtesting": path, "backtest": {...}}``
        #: for :func:`strategies.from_backtesting`), or None.
        self.source: dict[str, Any] | None = None
        self.wants_rng = RNG_ARGUMENT in inspect.signature(func).parameters
        self.__doc__ = func.__doc__
        self.__module__ = getattr(func, "__module__", __name__)

    def __repr__(self) -> str:
        return f"ReturnsStrategy({self.name!r}, version={self.version!r})"

    def run(
        self,
        panel: Panel,
        config: Mapping[str, Any],
        rng: np.random.Generator | None = None,
        *,
        data: Any = None,
    ) -> tuple[NDArray[np.float64], dict[str, float]]:
        """One config's period returns (T - 1) and extra column values.

        Raises
        ------
        StrategyError
            The function raised or returned something that is not a curve on the panel's
            dates; the message names the strategy, the config and what was wrong.
        """
        kwargs: dict[str, Any] = {
            p.name: _python_value(p, config.get(p.name, p.default)) for p in self.params
        }
        label = f"strategy {self.name!r} (config {describe_config(kwargs) or 'no parameters'})"
        if self.wants_rng:
            kwargs[RNG_ARGUMENT] = rng if rng is not None else np.random.default_rng(0)
        given = self.data_for(panel) if data is None else data
        argument = given.copy(deep=False) if isinstance(given, pd.DataFrame) else given
        try:
            out = self.func(argument, **kwargs)
        except Exception as exc:
            raise StrategyError(f"{label} raised {type(exc).__name__}: {exc}") from exc
        curve, extra = out if isinstance(out, tuple) and len(out) == 2 else (out, {})
        returns = _period_returns(curve, panel, self.output, label)
        return returns, self._extras(extra, label)

    def _extras(self, extra: Any, label: str) -> dict[str, float]:
        if not isinstance(extra, Mapping):
            raise StrategyError(
                f"{label} returned {type(extra).__name__} beside its curve; expected a mapping "
                f"of its extra columns {[c for c, _ in self.columns]}"
            )
        names = [c for c, _ in self.columns]
        unknown = sorted(set(extra) - set(names))
        if unknown:
            raise StrategyError(
                f"{label} returned the column {unknown[0]!r}, which it does not declare "
                f"(columns: {names})." + close_matches(str(unknown[0]), names)
            )
        values: dict[str, float] = {}
        for column, kind in self.columns:
            value = extra.get(column, math.nan)
            try:
                number = float(value)
            except (TypeError, ValueError) as exc:
                raise StrategyError(
                    f"{label} returned {value!r} for its column {column!r}; expected a number"
                ) from exc
            if kind == "int" and not (math.isfinite(number) and number == int(number)):
                raise StrategyError(
                    f"{label} returned {value!r} for its int column {column!r}; expected a "
                    "whole number"
                )
            values[column] = number
        return values

    def data_for(self, panel: Panel) -> Any:
        """What the function receives for ``panel`` (built once per batch)."""
        frame = panel_frame(panel)
        return frame if self.prepare is None else self.prepare(frame)

    def lookahead_rows(
        self, panel: Panel, config: Mapping[str, Any], rng: np.random.Generator
    ) -> NDArray[np.float64]:
        """Row ``r``: the return of the period ending at date ``r`` (row 0: zero), (T, 1).

        An honest backtest's return up to date ``r`` uses no bar after ``r``: the look-ahead
        check compares these rows up to each cut.
        """
        returns, _ = self.run(panel, config, rng)
        return np.concatenate([[0.0], returns])[:, np.newaxis]

    def evaluate(
        self,
        panel: Panel,
        params: Mapping[str, NDArray[Any]],
        rngs: Sequence[np.random.Generator],
    ) -> StrategyOutput:
        """Run each config's backtest (see :class:`strategies.Strategy`)."""
        n = batch_length(self.name, self.params, params, rngs)
        returns = np.empty((n, panel.n_periods - 1))
        extra = {column: np.empty(n) for column, _ in self.columns}
        data = self.data_for(panel)
        declared = {p.name: p for p in self.params}
        for j in range(n):
            config = {k: _python_value(declared[k], v[j]) for k, v in params.items()}
            rng = rngs[j] if self.wants_rng else None
            returns[j], values = self.run(panel, config, rng, data=data)
            for column, value in values.items():
                extra[column][j] = value
        trades = extra.get("n_trades", np.zeros(n))
        columns = {
            c: extra[c].astype(np.int64) if k == "int" else extra[c]
            for c, k in self.columns
            if c != "n_trades"
        }
        return StrategyOutput(
            returns,
            np.zeros_like(returns),
            np.nan_to_num(trades).astype(np.int64),
            None,
            columns or None,
        )


def _period_returns(curve: Any, panel: Panel, output: Output, label: str) -> NDArray[np.float64]:
    """The engine's T - 1 period returns from a curve indexed by (some of) the panel's dates.

    An equity curve's missing dates (before it starts, or inside) hold its last value: zero
    returns. A returns series is indexed by the date each period ends on; missing periods
    are zero.
    """
    if isinstance(curve, pd.DataFrame) and curve.shape[1] == 1:
        curve = curve.iloc[:, 0]
    if not isinstance(curve, pd.Series):
        raise StrategyError(
            f"{label} returned {type(curve).__name__}; expected its {output} as a pandas "
            "Series indexed by the panel's dates (or (series, extra columns))"
        )
    if not isinstance(curve.index, pd.DatetimeIndex):
        raise StrategyError(
            f"{label} returned a Series indexed by {type(curve.index).__name__}; expected the "
            "panel's dates (a DatetimeIndex)"
        )
    dates = pd.DatetimeIndex(panel.dates)
    index = curve.index.tz_localize(None) if curve.index.tz is not None else curve.index
    foreign = index.difference(dates)
    if len(foreign):
        shown = ", ".join(str(d.date()) for d in foreign[:3])
        raise StrategyError(
            f"{label} returned {len(foreign)} dates that are not the panel's ({shown}"
            f"{', ...' if len(foreign) > 3 else ''}); expected its {output} on the panel's "
            f"dates ({dates[0].date()} to {dates[-1].date()})"
        )
    if index.has_duplicates:
        raise StrategyError(f"{label} returned a curve with repeated dates")
    values = np.asarray(curve.to_numpy(dtype=np.float64, na_value=np.nan))
    if not np.isfinite(values).all():
        k = int(np.argmin(np.isfinite(values)))
        raise StrategyError(
            f"{label} returned {float(values[k])!r} on {index[k].date()}; expected finite"
        )
    series = pd.Series(values, index=index).sort_index()
    if output == "returns":
        aligned = series.reindex(dates[1:], fill_value=0.0).to_numpy()
        if len(series) and series.index[0] == dates[0]:
            raise StrategyError(
                f"{label} returned a return on the panel's first date {dates[0].date()}; a "
                "period's return is dated by the day it ends, so none ends on the first"
            )
        return np.ascontiguousarray(aligned, dtype=np.float64)
    if (values <= 0).any():
        raise StrategyError(f"{label} returned an equity curve that is not positive")
    equity = series.reindex(dates).ffill().bfill().to_numpy()
    return np.ascontiguousarray(equity[1:] / equity[:-1] - 1.0)


def returns_strategy(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    version: str = "1",
    params: Sequence[Param] = (),
    output: Output = "equity",
    columns: Sequence[tuple[str, str]] = (),
    fields: Sequence[str] = (),
) -> Any:
    """Register ``curve = f(data, **params)``, a whole backtest of one config, as a strategy.

    Parameters
    ----------
    func : callable, optional
        The function (when used as ``@returns_strategy`` without arguments). It receives
        ``data``, the panel as a read-only DataFrame (dates x (field, asset) columns:
        ``data["close"]``, ``data["high"]``, ...; NaN where an asset is not listed), each
        declared parameter as a Python scalar, and ``rng`` (the config's own generator) if
        it has an argument of that name. It runs any engine and returns a pandas Series
        indexed by the panel's dates: the equity curve (``output="equity"``) or the period
        returns dated by the day each period ends (``output="returns"``), optionally with a
        mapping of its extra column values: ``(series, {"n_trades": 12, ...})``. A curve
        that starts later (after a warm-up) is aligned: its missing periods are zero returns.
    name : str, optional
        The strategy's name (default: the function's name).
    version : str
        Bump it whenever results for the same parameters change.
    params : sequence of Param
        The parameters the function takes.
    output : {"equity", "returns"}
        What the function returns.
    columns : sequence of (str, str)
        Extra row columns and their kinds (``"float"`` or ``"int"``); ``n_trades`` fills
        the engine's trade count instead.
    fields : sequence of str
        Panel fields the function needs (``open``, ``high``, ``low``, ``volume``).

    Returns
    -------
    ReturnsStrategy or decorator
        A strategy object (satisfies :class:`strategies.Strategy`).

    Notes
    -----
    The engine computes every metric from the period returns, so a backtester's own costs
    are its own; the row's ``turnover`` is zero. A function that raises or returns
    something else fails that config only, naming the strategy, the config and the fault.
    """

    def wrap(f: Callable[..., Any]) -> ReturnsStrategy:
        label = name if name is not None else getattr(f, "__name__", None)
        if not callable(f) or not isinstance(label, str) or not label:
            raise StrategyError(f"returns_strategy: expected a named function, got {f!r}")
        if output not in ("equity", "returns"):
            raise StrategyError(
                f"returns_strategy {label!r}: output must be 'equity' or 'returns', got {output!r}"
            )
        for column, kind in columns:
            if kind not in COLUMN_KINDS:
                raise StrategyError(
                    f"returns_strategy {label!r}: column {column!r}: kind must be one of "
                    f"{list(COLUMN_KINDS)}, got {kind!r}"
                )
        return ReturnsStrategy(
            f,
            name=label,
            version=version,
            params=params,
            output=output,
            columns=columns,
            fields=fields,
        )

    return wrap(func) if func is not None else wrap
