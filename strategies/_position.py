"""Position-function strategies: one function for one config, booked by the shared accounting.

A user writes ``weights = f(prices, **params)`` and registers it with
:func:`position_strategy`; the decorator returns a :class:`PositionStrategy`, an object that
satisfies the :class:`strategies.Strategy` protocol, so the engine sweeps it like any
batch kernel. A function that names ``open``, ``high``, ``low`` or ``volume`` among its
arguments receives that panel field too (:data:`FIELD_ARGUMENTS`).
"""

from __future__ import annotations

import importlib
import inspect
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, overload

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from strategies._accounting import (
    COST_NAMES,
    COST_PARAMS,
    Book,
    account,
    account_bars,
    costs_of,
)
from strategies._bar_fills import EXIT_NAMES, EXIT_PARAMS, Execution
from strategies._panel import Panel, immutable_copy, read_only_hint
from strategies._protocol import Param, StrategyOutput
from strategies._strategy_errors import StrategyError, close_matches

#: What the function's prices argument is.
Inputs = Literal["numpy", "pandas"]
#: Parameter kinds a declaration may use.
KINDS = ("int", "float", "bool")
#: Name of the optional function argument that receives the config's own random generator.
RNG_ARGUMENT = "rng"
#: Panel fields a function receives, shaped and masked like its prices, when it names them.
FIELD_ARGUMENTS = ("open", "high", "low", "volume")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def describe_config(values: Mapping[str, Any]) -> str:
    """``"fast=5, slow=20"``: a config's parameters as a person reads them."""
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


def import_path_of(obj: Any) -> str | None:
    """Return ``module:qualname`` if importing it gives back ``obj``, else None.

    Parameters
    ----------
    obj : object
        A function or strategy object (its ``__module__`` and ``__qualname__`` are used).

    Returns
    -------
    str or None
        ``module:qualname``, or ``module:name`` when the object is bound at module level under
        one other name; None when it is defined in ``__main__`` (a script or a notebook),
        inside a function, or is not reachable in its module.
    """
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not module or not qualname or module == "__main__" or "<" in qualname:
        return None
    home: Any = sys.modules.get(module)
    found = home
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if found is obj:
        return f"{module}:{qualname}"
    # Bound at module level under another name (``fast = position_strategy(slow_impl)``).
    names = [k for k, v in vars(home).items() if v is obj] if home is not None else []
    return f"{module}:{names[0]}" if len(names) == 1 else None


def _python_value(param: Param, value: Any) -> int | float | bool:
    if param.kind == "int":
        return int(value)
    if param.kind == "bool":
        return bool(value)
    return float(value)


class PositionStrategy:
    """A strategy written as one function of prices and one config's parameters.

    Made by :func:`position_strategy`; satisfies :class:`strategies.Strategy`. Its
    ``params`` are the declared parameters followed by the cost parameters and the exit
    levels of the shared accounting (:data:`strategies.COST_PARAMS`,
    :data:`strategies.EXIT_PARAMS`).

    Attributes
    ----------
    name, version : str
        Identity of the strategy (``version`` must change whenever results change).
    params : tuple of Param
        Declared parameters, then ``fee_bps``, ``slippage_bps``, ``fixed_fee``,
        ``borrow_bps``, ``capital``, then the optional exit levels ``stop_loss``,
        ``take_profit``, ``trailing_stop`` (:data:`strategies.EXIT_PARAMS`).
    execution : Execution
        When orders fill and how a bar holding both a stop and the take-profit resolves;
        a rule other than the default is appended to ``version`` (another config id).
    func : callable
        The position function.
    book : Book
        Long-only and gross-leverage cap.
    inputs : {"numpy", "pandas"}
        What the function receives as prices (and as each field it reads).
    jit : bool
        Whether the function is compiled with numba (numpy inputs only).
    fields : frozenset of str
        The panel fields the function reads besides the close: those of
        :data:`FIELD_ARGUMENTS` it names among its arguments after the prices. A sweep on
        data without one of them is refused before anything runs.
    """

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str,
        version: str,
        params: Sequence[Param],
        book: Book,
        inputs: Inputs,
        jit: bool,
        execution: Execution | None = None,
    ) -> None:
        self.func = func
        self.name = name
        self.execution = execution or Execution()
        self.version = version + self.execution.identity()
        self.declared: tuple[Param, ...] = tuple(params)
        self.params: tuple[Param, ...] = (*self.declared, *COST_PARAMS, *EXIT_PARAMS)
        self.book = book
        self.inputs: Inputs = inputs
        self.jit = jit
        #: The accounting forces weights to zero where an asset is not listed.
        self.honours_listings = True
        arguments = list(inspect.signature(func).parameters)
        self.wants_rng = RNG_ARGUMENT in arguments
        self.fields: frozenset[str] = frozenset(set(FIELD_ARGUMENTS) & set(arguments[1:]))
        self._compiled: Callable[..., Any] | None = None
        self.__doc__ = func.__doc__
        self.__module__ = func.__module__
        self.__qualname__ = func.__qualname__
        self.__wrapped__ = func

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle by import path when there is one, else by value.

        By import path, a worker imports the very object; by value, the numba-compiled
        function is left out (a worker compiles its own).
        """
        path = self.import_path
        if path is not None:
            return (_imported, (path,))
        state = dict(self.__dict__)
        state["_compiled"] = None
        return (_restored, (type(self), state))

    def __repr__(self) -> str:
        return f"<PositionStrategy {self.name!r} version {self.version!r}>"

    @property
    def import_path(self) -> str | None:
        """``module:qualname`` under which a spec (or a worker) can import this object.

        None when the function is defined in ``__main__`` or a notebook, or inside another
        function: such a strategy runs in this process (and on workers that receive it
        pickled) but a run folder cannot name it for ``resume`` from the command line.
        """
        return import_path_of(self)

    def _callable(self) -> Callable[..., Any]:
        if not self.jit:
            return self.func
        if self._compiled is None:
            import numba  # only a jit strategy needs the compiler here

            self._compiled = numba.njit(cache=False)(self.func)
        return self._compiled

    def _prices(self, panel: Panel) -> Any:
        """The prices the function sees: NaN where an asset is not listed (read-only).

        They are shared by every config of a call of :meth:`evaluate`, so their memory is
        immutable (:func:`strategies._panel.immutable_copy`): a function that sets
        ``prices.flags.writeable = True`` to write into them fails, naming it, instead of
        changing the prices the next config sees (results that would depend on the batch).
        """
        return self._as_input(panel, panel.close)

    def _as_input(self, panel: Panel, values: NDArray[np.float64]) -> Any:
        """``values`` (shaped like the close) as the function sees it: masked, read-only."""
        frozen = immutable_copy(masked_copy(panel, values))
        if self.inputs == "numpy":
            return frozen
        index = pd.DatetimeIndex(panel.dates)
        return pd.DataFrame(frozen, index=index, columns=list(panel.assets), copy=False)

    def _fields(self, panel: Panel) -> dict[str, Any]:
        """The fields the function reads, each as its prices are (NaN where not listed)."""
        missing = sorted(self.fields - set(panel.fields))
        if missing:
            raise StrategyError(
                f"strategy {self.name!r} reads the panel field {missing[0]!r}, which the panel "
                f"does not have (it reads {sorted(self.fields)}; the panel has "
                f"{['close', *sorted(panel.fields)]})"
            )
        return {name: self._as_input(panel, panel.fields[name]) for name in sorted(self.fields)}

    def weights(
        self,
        panel: Panel,
        config: Mapping[str, Any],
        rng: np.random.Generator | None = None,
        *,
        prices: Any = None,
        fields: Mapping[str, Any] | None = None,
    ) -> NDArray[np.float64]:
        """Call the function for one config and check what it returns.

        Parameters
        ----------
        panel : Panel
            The price panel.
        config : mapping of str to scalar
            Values of the declared parameters (cost parameters are ignored here); a declared
            parameter that is missing takes its default.
        rng : numpy.random.Generator, optional
            Passed as ``rng`` when the function takes it.
        prices : optional
            The function's prices if already built by :meth:`prices_for` (saves a copy).
        fields : mapping of str to array or DataFrame, optional
            The function's field arguments if already built for this panel (saves a copy
            each, as :meth:`evaluate` does once per batch); built from ``panel`` when omitted.

        Returns
        -------
        ndarray of float64, shape (T, A)
            Target weights, finite wherever the asset is listed (NaN elsewhere is allowed).

        Raises
        ------
        StrategyError
            The function raised, or returned something that is not a finite (T, A) array
            of numbers where the assets are listed, or it reads a field the panel does not
            have; the message names the strategy and the config.
        """
        kwargs = self._arguments(config)
        shown = f"config {describe_config(kwargs)}" if kwargs else "no declared parameters"
        label = f"strategy {self.name!r} ({shown})"
        if self.wants_rng:
            kwargs[RNG_ARGUMENT] = rng if rng is not None else np.random.default_rng(0)
        data = self._prices(panel) if prices is None else prices
        if isinstance(data, pd.DataFrame):
            data = data.copy(deep=False)  # a column the function adds stays in its own call
        for key, value in (self._fields(panel) if fields is None else fields).items():
            kwargs[key] = value.copy(deep=False) if isinstance(value, pd.DataFrame) else value
        try:
            out = self._callable()(data, **kwargs)
        except Exception as exc:
            raise StrategyError(
                f"{label} raised {type(exc).__name__}: {exc}{read_only_hint(exc)}"
            ) from exc
        return self._checked(out, panel, label)

    def prices_for(self, panel: Panel) -> Any:
        """The prices argument the function receives for ``panel`` (built once per batch)."""
        return self._prices(panel)

    def _arguments(self, config: Mapping[str, Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        for p in self.declared:
            value = config.get(p.name, p.default)
            if value is None:
                raise StrategyError(
                    f"strategy {self.name!r}: parameter {p.name!r} ({p.doc or p.kind}) has no "
                    f"value and no default; given {sorted(config)}"
                )
            kwargs[p.name] = _python_value(p, value)
        return kwargs

    def _checked(self, out: Any, panel: Panel, label: str) -> NDArray[np.float64]:
        expected = (panel.n_periods, panel.n_assets)
        if isinstance(out, pd.DataFrame):
            out = _aligned(out, panel, label)
        if isinstance(out, pd.Series):
            out = out.to_numpy()
        if not isinstance(out, np.ndarray):
            raise StrategyError(
                f"{label} returned {type(out).__name__}; expected target weights as a numpy "
                f"array or pandas DataFrame of shape {expected} (dates x assets)"
            )
        if out.ndim == 1 and panel.n_assets == 1:
            out = out[:, np.newaxis]
        if out.shape != expected:
            raise StrategyError(
                f"{label} returned weights of shape {out.shape}; expected {expected} "
                f"({panel.n_periods} dates x {panel.n_assets} assets)"
            )
        if out.dtype.kind not in "biuf":
            raise StrategyError(
                f"{label} returned weights of dtype {out.dtype}; expected numbers (float or bool)"
            )
        weights = np.ascontiguousarray(out, dtype=np.float64)
        bad = ~np.isfinite(weights) & panel.live_mask
        if bad.any():
            t, a = (int(i) for i in np.argwhere(bad)[0])
            day = str(np.datetime_as_string(panel.dates[t], unit="D"))
            raise StrategyError(
                f"{label} returned a weight of {float(weights[t, a])!r} for asset "
                f"{panel.assets[a]!r} on {day} (row {t}); weights must be finite wherever the "
                f"asset is listed ({int(bad.sum())} such cells; use 0.0 for no position)"
            )
        return weights

    def _runs(self, params: Mapping[str, NDArray[Any]], n: int) -> list[tuple[int, int]]:
        """(start, end) of each run of consecutive configs with the same declared values.

        Every config is a run of its own when the function takes ``rng``.
        """
        change = np.ones(n, dtype=bool)
        if not self.wants_rng:
            change[1:] = False
            for p in self.declared:
                if p.name in params:
                    values = np.asarray(params[p.name])
                    change[1:] |= values[1:] != values[:-1]
        starts = np.flatnonzero(change)
        ends = [*starts[1:].tolist(), n]
        return list(zip(starts.tolist(), ends, strict=True))

    def evaluate(
        self,
        panel: Panel,
        params: Mapping[str, NDArray[Any]],
        rngs: Sequence[np.random.Generator],
    ) -> StrategyOutput:
        """Evaluate a batch of configs, one function call each (see :class:`strategies.Strategy`).

        Each config's weights are booked by :func:`strategies.account` on its own row, so a
        row is bitwise identical alone or in any batch (given a deterministic function).
        """
        n = batch_length(self.name, self.params, params, rngs)
        n_ret = panel.n_periods - 1
        returns = np.empty((n, n_ret))
        turnover = np.empty((n, n_ret))
        n_trades = np.empty(n, dtype=np.int64)
        prices = self._prices(panel)
        fields = self._fields(panel)
        tradable = panel.live_mask
        declared = {p.name: p for p in self.params}
        counted = any(name in params for name in EXIT_NAMES)
        bars = counted or self.execution.fill == "next_open"
        exit_counts = np.zeros((n, 4), dtype=np.int64) if counted else None
        book_values = [k for k in params if k in COST_NAMES or k in EXIT_NAMES]
        for lo, hi in self._runs(params, n):
            # A run of configs differing only in costs or exit levels holds the same weights:
            # the function runs once for it (a function taking rng: once per config).
            config = {k: _python_value(declared[k], v[lo]) for k, v in params.items()}
            rng = rngs[lo] if self.wants_rng else None
            weights = self.weights(panel, config, rng, prices=prices, fields=fields)
            if bars:
                batch = account_bars(
                    weights,
                    panel.close,
                    tradable,
                    {k: params[k][lo:hi] for k in book_values},
                    self.book,
                    self.execution,
                    panel.fields,
                )
                returns[lo:hi], turnover[lo:hi] = batch.returns, batch.turnover
                n_trades[lo:hi] = batch.n_trades
                if exit_counts is not None:
                    exit_counts[lo:hi] = batch.exit_counts
                continue
            for j in range(lo, hi):
                costs = {k: float(params[k][j]) for k in book_values}
                booked = account(weights, panel.close, tradable, costs_of(costs), self.book)
                returns[j], turnover[j] = booked.returns, booked.turnover
                n_trades[j] = booked.n_trades
        return StrategyOutput(returns, turnover, n_trades, exit_counts)


def masked_copy(panel: Panel, values: NDArray[np.float64]) -> NDArray[np.float64]:
    """A copy of ``values`` (shaped like the close), NaN where the asset is not listed.

    What a strategy's function sees of any panel field (read-only once frozen with
    :func:`strategies._panel.immutable_copy`): it cannot know at ``t`` that an asset lists
    later.
    """
    masked = np.array(values, dtype=np.float64, order="C")
    if panel.live is not None:
        masked[~panel.live] = np.nan
    return masked


def batch_length(
    name: str,
    declared: Sequence[Param],
    params: Mapping[str, NDArray[Any]],
    rngs: Sequence[np.random.Generator],
) -> int:
    """The number of configs in a batch, refusing a parameter the strategy does not declare."""
    names = [p.name for p in declared]
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise StrategyError(
            f"strategy {name!r}: unknown parameters {unknown}; it declares {names}."
            + close_matches(unknown[0], names)
        )
    return len(next(iter(params.values()))) if params else len(rngs)


def _aligned(frame: pd.DataFrame, panel: Panel, label: str) -> Any:
    """A DataFrame of weights as an array in the panel's asset order, its labels checked."""
    assets = list(panel.assets)
    columns: list[Any] = list(frame.columns)
    if frame.shape[1] == len(assets) and set(columns) == set(assets):
        frame = frame[assets]
    elif columns != list(range(frame.shape[1])):
        raise StrategyError(
            f"{label} returned a DataFrame with columns {list(frame.columns)[:5]}...; expected "
            f"the panel's assets {assets[:5]}... (in any order) or unlabelled columns"
        )
    if isinstance(frame.index, pd.DatetimeIndex) and (
        frame.shape[0] != panel.n_periods or not (frame.index.to_numpy() == panel.dates).all()
    ):
        raise StrategyError(
            f"{label} returned a DataFrame whose dates are not the panel's "
            f"({frame.shape[0]} rows from {frame.index[:1].tolist()}; expected "
            f"{panel.n_periods} rows from {panel.dates[0]})"
        )
    return frame.to_numpy()


def _imported(path: str) -> Any:
    """The object at ``module:qualname`` (unpickling a strategy that has an import path)."""
    module, _, qualname = path.partition(":")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def _restored(cls: type[PositionStrategy], state: dict[str, Any]) -> PositionStrategy:
    """A strategy rebuilt from its pickled attributes (one without an import path)."""
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    return obj


def _check_declarations(name: str, func: Callable[..., Any], params: Sequence[Param]) -> None:
    """Refuse declarations the function cannot take, at decoration time."""
    where = f"position_strategy {name!r}"
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise StrategyError(f"{where}: cannot read the function's signature: {exc}") from exc
    args = list(signature.parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if not args or args[0].kind not in positional:
        raise StrategyError(
            f"{where}: the function must take the prices as its first positional argument, "
            f"as in f(prices, **params); its signature is {signature}"
        )
    accepted = {a.name: a for a in args[1:]}
    var_kw = any(a.kind is inspect.Parameter.VAR_KEYWORD for a in args)
    seen: set[str] = set()
    for p in params:
        if not isinstance(p, Param):
            raise StrategyError(
                f"{where}: params: expected strategies.Param declarations, got {p!r}"
            )
        if p.name in seen:
            raise StrategyError(f"{where}: parameter {p.name!r} is declared twice")
        seen.add(p.name)
        reserved = (*COST_NAMES, *EXIT_NAMES, RNG_ARGUMENT, *FIELD_ARGUMENTS)
        if p.name in reserved:
            raise StrategyError(
                f"{where}: parameter name {p.name!r} is reserved (cost parameters "
                f"{list(COST_NAMES)}, exit levels {list(EXIT_NAMES)}, {RNG_ARGUMENT!r} and "
                f"the panel fields {list(FIELD_ARGUMENTS)} are provided by the engine)"
            )
        if p.kind not in KINDS:
            raise StrategyError(
                f"{where}: parameter {p.name!r}: kind must be one of {list(KINDS)}, got "
                f"{p.kind!r}." + close_matches(p.kind, KINDS)
            )
        if p.name not in accepted and not var_kw:
            raise StrategyError(
                f"{where}: parameter {p.name!r} is declared but the function does not accept "
                f"it (its parameters: {list(accepted)})." + close_matches(p.name, accepted)
            )
        _check_default(where, p)
    named = (*positional, inspect.Parameter.KEYWORD_ONLY)
    for arg in args[1:]:
        missing = arg.default is inspect.Parameter.empty and arg.kind in named
        provided = arg.name == RNG_ARGUMENT or arg.name in FIELD_ARGUMENTS
        if missing and arg.name not in seen and not provided:
            raise StrategyError(
                f"{where}: the function's argument {arg.name!r} has no default and is "
                f"not declared (declared: {sorted(seen)}); declare it with "
                "strategies.Param or give it a default." + close_matches(arg.name, seen)
            )


def _check_default(where: str, p: Param) -> None:
    if p.default is None:
        return
    value = p.default
    ok = {
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, int | float) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
    }[p.kind]
    if not ok:
        raise StrategyError(
            f"{where}: parameter {p.name!r}: default {value!r} is not of kind {p.kind!r}"
        )
    if p.minimum is not None and value < p.minimum:
        raise StrategyError(
            f"{where}: parameter {p.name!r}: default {value!r} is below the minimum {p.minimum}"
        )
    if p.maximum is not None and value > p.maximum:
        raise StrategyError(
            f"{where}: parameter {p.name!r}: default {value!r} is above the maximum {p.maximum}"
        )


@overload
def position_strategy(func: Callable[..., Any], /) -> PositionStrategy: ...
@overload
def position_strategy(
    func: None = None,
    /,
    *,
    name: str | None = None,
    version: str = "1",
    params: Sequence[Param] = (),
    long_only: bool = False,
    max_leverage: float | None = None,
    inputs: Inputs = "numpy",
    jit: bool = False,
    fill: str = "close",
    ambiguous: str = "stop_first",
) -> Callable[[Callable[..., Any]], PositionStrategy]: ...
def position_strategy(  # noqa: PLR0913 - keyword-only options of a public decorator
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    version: str = "1",
    params: Sequence[Param] = (),
    long_only: bool = False,
    max_leverage: float | None = None,
    inputs: Inputs = "numpy",
    jit: bool = False,
    fill: str = "close",
    ambiguous: str = "stop_first",
) -> PositionStrategy | Callable[[Callable[..., Any]], PositionStrategy]:
    """Register ``weights = f(prices, **params)`` as a strategy the engine can sweep.

    Parameters
    ----------
    func : callable, optional
        The position function (when used as ``@position_strategy`` without arguments).
        It receives the prices (dates x assets; NaN where an asset is not listed, so it
        cannot see a listing before it happens) and one config's declared parameters as
        Python scalars (and ``rng``, the config's own ``numpy.random.Generator``, if it has
        an argument of that name; and each of ``open``, ``high``, ``low``, ``volume`` it
        names, that panel field shaped, masked and read-only as the prices). It returns the
        target weight of each asset formed at each close, as a fraction of equity, shaped
        like the prices (a 1-D array is accepted for one asset). Weights must be finite
        wherever the asset is listed.
    name : str, optional
        The strategy's name (default: the function's name).
    version : str
        Bump it whenever results for the same parameters change (it is part of every
        config id).
    params : sequence of Param
        The parameters the function takes (type, bounds, window, default). The cost
        parameters of :data:`strategies.COST_PARAMS` and the exit levels of
        :data:`strategies.EXIT_PARAMS` are appended.
    long_only : bool
        Negative weights are held as zero.
    max_leverage : float, optional
        Cap on gross exposure per period (weights scaled down proportionally above it).
    inputs : {"numpy", "pandas"}
        Prices (and fields) as read-only float64 arrays or as DataFrames (DatetimeIndex x
        asset names).
    jit : bool
        Compile the function with ``numba.njit`` (numpy inputs only). A function numba
        cannot compile fails every config with numba's message; use ``jit=False`` then.
    fill : {"close", "next_open"}
        Orders formed at a close fill at that close (default) or at the next bar's open
        (the panel must have ``open``, ``high`` and ``low``).
    ambiguous : {"stop_first", "take_profit_first"}
        The exit taken on a bar whose range holds both the stop and the take-profit level.

    Returns
    -------
    PositionStrategy or decorator
        A strategy object (satisfies :class:`strategies.Strategy`).

    Raises
    ------
    StrategyError
        A declaration the function cannot take (a declared parameter it does not accept, an
        argument without default that is not declared, a bad kind or default, a reserved
        name), or bad options; the message names the strategy.

    Notes
    -----
    Accounting (:func:`strategies.account`): the weight formed at the close of ``t`` earns
    ``t -> t + 1``; orders fill at the close with slippage; fees, fixed fees and borrow are
    charged as stated there; weights of assets not listed at ``t`` are forced to zero. The
    exit levels ``stop_loss``, ``take_profit`` and ``trailing_stop`` are parameters like
    the costs (fixed in ``[costs]`` or swept in ``[grid]``; 0 is off) and, like
    ``fill="next_open"``, book the weights bar by bar (the bar book of
    :func:`strategies.account`).
    """

    def wrap(f: Callable[..., Any]) -> PositionStrategy:
        label = name if name is not None else getattr(f, "__name__", None)
        if not callable(f):
            raise StrategyError(f"position_strategy: expected a function, got {f!r}")
        if not isinstance(label, str) or not _NAME.fullmatch(label):
            raise StrategyError(
                "position_strategy: name must start with a letter or '_' and hold letters, "
                f"digits, '_', '.', '-', got {label!r}"
            )
        if not isinstance(version, str) or not version:
            raise StrategyError(
                f"position_strategy {label!r}: version must be a non-empty string, got {version!r}"
            )
        if inputs not in ("numpy", "pandas"):
            raise StrategyError(
                f"position_strategy {label!r}: inputs must be 'numpy' or 'pandas', got {inputs!r}"
            )
        if jit and inputs != "numpy":
            raise StrategyError(
                f"position_strategy {label!r}: jit=True needs inputs='numpy' (numba compiles "
                "array code, not pandas)"
            )
        if max_leverage is not None and not (
            isinstance(max_leverage, int | float)
            and math.isfinite(max_leverage)
            and max_leverage > 0
        ):
            raise StrategyError(
                f"position_strategy {label!r}: max_leverage must be a positive finite number "
                f"or None, got {max_leverage!r}"
            )
        _check_declarations(label, f, params)
        try:
            execution = Execution(fill=fill, ambiguous=ambiguous)
        except StrategyError as exc:
            raise StrategyError(f"position_strategy {label!r}: {exc}") from exc
        return PositionStrategy(
            f,
            name=label,
            version=version,
            params=params,
            book=Book(long_only=bool(long_only), max_leverage=max_leverage),
            inputs=inputs,
            jit=bool(jit),
            execution=execution,
        )

    if func is not None:
        return wrap(func)
    return wrap
