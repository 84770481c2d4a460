"""backtesting.py strategies swept as they are: ``Backtest(data, cls, ...).run(**params)``.

backtesting.py is AGPL-3.0: raysweep ships none of its code and imports the user's installed
copy (``pip install raysweep[backtesting]``) only when a backtesting.py strategy is swept.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from strategies._protocol import Param
from strategies._returns import ReturnsStrategy
from strategies._strategy_errors import StrategyError, close_matches

#: backtesting.py's statistics kept in each row, by column: (stats key, kind).
BT_COLUMNS: dict[str, tuple[str, str]] = {
    "bt_return_pct": ("Return [%]", "float"),
    "bt_sharpe": ("Sharpe Ratio", "float"),
    "bt_sortino": ("Sortino Ratio", "float"),
    "bt_max_drawdown_pct": ("Max. Drawdown [%]", "float"),
    "bt_trades": ("# Trades", "int"),
    "bt_win_rate": ("Win Rate [%]", "float"),
    "bt_sqn": ("SQN", "float"),
    "bt_exposure_pct": ("Exposure Time [%]", "float"),
}
#: The bar fields backtesting.py reads, by its column names.
OHLC = {"open": "Open", "high": "High", "low": "Low", "close": "Close"}


def _backtesting() -> Any:
    try:
        return importlib.import_module("backtesting")
    except ImportError as exc:
        raise StrategyError(
            "backtesting.py is not installed: pip install 'raysweep[backtesting]' (or "
            "pip install backtesting); raysweep does not ship it (AGPL-3.0)"
        ) from exc


def import_class(path: str) -> type:
    """The class at ``package.module:Class`` (a backtesting.py Strategy subclass).

    Raises
    ------
    StrategyError
        The path is malformed, its module cannot be imported, or it names no class.
    """
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise StrategyError(
            f"strategy.backtesting: expected 'package.module:StrategyClass', got {path!r}"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise StrategyError(
            f"strategy.backtesting: cannot import module {module_name!r}: {exc}"
        ) from exc
    found = getattr(module, attr, None)
    if not isinstance(found, type):
        names = [n for n, v in vars(module).items() if isinstance(v, type)]
        raise StrategyError(
            f"strategy.backtesting: module {module_name!r} has no class {attr!r}."
            + close_matches(attr, names)
        )
    return found


def strategy_params(cls: type) -> tuple[Param, ...]:
    """A backtesting.py Strategy class's parameters: its public class attributes.

    Each int, float or bool attribute the class (or a base below ``backtesting.Strategy``)
    defines is a parameter of that kind with its value as the default.
    """
    base = _backtesting().Strategy
    found: dict[str, Param] = {}
    for klass in reversed(cls.__mro__):
        if klass is base or not issubclass(klass, base):
            continue
        for attr, value in vars(klass).items():
            if attr.startswith("_") or callable(value) or isinstance(value, property):
                continue
            if isinstance(value, bool):
                found[attr] = Param(attr, "bool", default=value)
            elif isinstance(value, int | float) and not isinstance(value, bool):
                kind = "int" if isinstance(value, int) else "float"
                found[attr] = Param(attr, kind, default=value)
    return tuple(found.values())


@contextlib.contextmanager
def _quiet_backtest() -> Iterator[None]:
    """backtesting.py without its progress bar and its pandas deprecation warnings.

    Its ``Backtest.run`` draws a tqdm bar on stderr for every run; a sweep runs thousands.
    The module global it calls is swapped for a pass-through for the duration.
    """
    module: Any = importlib.import_module("backtesting.backtesting")
    bar = module._tqdm
    module._tqdm = lambda seq, **_: seq
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", FutureWarning)
            # the row's equity curve marks an open trade at the last close as bt.py does
            warnings.filterwarnings("ignore", message="Some trades remain open")
            yield
    finally:
        module._tqdm = bar


def _ohlcv(data: pd.DataFrame) -> pd.DataFrame:
    """The single asset's bars with backtesting.py's column names."""
    bars = {OHLC[f]: data[f].to_numpy()[:, 0] for f in OHLC}
    if "volume" in data.columns.get_level_values(0):
        bars["Volume"] = data["volume"].to_numpy()[:, 0]
    frame = pd.DataFrame(bars, index=data.index)
    return frame.dropna()  # bars where the asset is not listed


def from_backtesting(
    cls: type,
    *,
    name: str | None = None,
    version: str = "1",
    **backtest: Any,
) -> ReturnsStrategy:
    """A backtesting.py ``Strategy`` class as a raysweep strategy.

    Each config runs ``Backtest(data, cls, **backtest).run(**params)`` on a one-asset OHLC
    panel (a panel of several assets is refused before anything runs). The row keeps the
    period returns of backtesting.py's equity curve (every metric, test and report section
    is computed from them) and its own statistics as ``bt_*`` columns.

    Parameters
    ----------
    cls : type
        A subclass of ``backtesting.Strategy``; its public int, float and bool class
        attributes are the parameters (:func:`strategy_params`).
    name : str, optional
        The strategy's name (default: the class's name).
    version : str
        Bump it whenever the class's results change; the ``Backtest`` options are part of
        the identity too (appended to the version).
    **backtest
        Keyword arguments of ``backtesting.Backtest`` (``cash``, ``commission``,
        ``spread``, ``margin``, ``trade_on_close``, ``hedging``, ``exclusive_orders``,
        ``finalize_trades``).

    Returns
    -------
    ReturnsStrategy
        The strategy.

    Raises
    ------
    StrategyError
        backtesting.py is not installed, ``cls`` is not its Strategy, or an option is not a
        ``Backtest`` argument.
    """
    bt = _backtesting()
    if not (isinstance(cls, type) and issubclass(cls, bt.Strategy)):
        raise StrategyError(
            f"from_backtesting: expected a subclass of backtesting.Strategy, got {cls!r}"
        )
    options = _checked_options(bt, backtest)
    label = name or cls.__name__
    identity = ",".join(f"{k}={options[k]!r}" for k in sorted(options))

    def prepare(data: pd.DataFrame) -> Any:  # once per batch, as Backtest.optimize does
        with _quiet_backtest():
            return bt.Backtest(_ohlcv(data), cls, **options)

    def run_backtest(backtest: Any, **params: Any) -> tuple[pd.Series, dict[str, float]]:
        with _quiet_backtest():
            stats = backtest.run(**params)
        extra = {column: _number(stats.get(key)) for column, (key, _) in BT_COLUMNS.items()}
        extra["n_trades"] = _number(stats.get("# Trades"))
        return stats["_equity_curve"]["Equity"], extra

    run_backtest.__name__ = label
    strategy = ReturnsStrategy(
        run_backtest,
        name=label,
        version=f"{version}+backtesting({identity})" if identity else version,
        params=strategy_params(cls),
        output="equity",
        columns=[*((c, k) for c, (_, k) in BT_COLUMNS.items()), ("n_trades", "int")],
        fields=("open", "high", "low"),
        single_asset=True,
        prepare=prepare,
    )
    if cls.__module__ != "__main__" and "<locals>" not in cls.__qualname__:
        path = f"{cls.__module__}:{cls.__qualname__}"
        strategy.source = {"backtesting": path, "backtest": dict(options)}
    return strategy


def _checked_options(bt: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The Backtest keyword arguments, each one ``Backtest`` takes (data and strategy aside)."""
    signature = inspect.signature(bt.Backtest).parameters
    accepted = [p for p in signature if p not in ("data", "strategy")]
    for key in options:
        if key not in accepted:
            raise StrategyError(
                f"backtest options: backtesting.Backtest takes no {key!r} (it takes "
                f"{accepted})." + close_matches(key, accepted)
            )
    return dict(options)


def _number(value: Any) -> float:
    """A statistic as a float (NaN where backtesting.py has none, e.g. no trades)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return float(np.nan)
