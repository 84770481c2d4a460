"""Find strategies by built-in name or by import path ``package.module:Name``."""

from __future__ import annotations

import importlib

from strategies._errors import StrategyError, close_matches
from strategies._protocol import Strategy

#: Built-in strategies: name -> import path of the class.
BUILTINS: dict[str, str] = {
    "momentum": "strategies.momentum:Momentum",
    "sma_cross": "strategies.sma_cross:SmaCross",
    "wma_trend": "strategies.wma_trend:WmaTrend",
}


#: What a strategy class must define (as class attributes, properties or methods).
STRATEGY_MEMBERS = ("name", "version", "params", "evaluate")


def available_strategies() -> list[str]:
    """Return the names of the built-in strategies."""
    return sorted(BUILTINS)


def get_strategy(name: str) -> Strategy:
    """Return a strategy instance by built-in name or import path.

    Parameters
    ----------
    name : str
        A built-in name (``momentum``, ``sma_cross``, ``wma_trend``) or an import path
        ``package.module:Name`` naming a class (instantiated without arguments) or an instance
        that satisfies :class:`strategies.Strategy`.

    Returns
    -------
    Strategy
        The strategy.
    """
    if not isinstance(name, str) or not name:
        raise StrategyError(f"strategy.name: expected a non-empty string, got {name!r}")
    path = BUILTINS.get(name, name)
    if ":" not in path:
        raise StrategyError(
            f"strategy.name: unknown strategy {name!r}; built-ins are "
            f"{available_strategies()}, or give an import path 'package.module:Name'."
            + close_matches(name, BUILTINS)
        )
    module_name, _, attr = path.partition(":")
    if not module_name or not attr or module_name.startswith("."):
        raise StrategyError(
            "strategy.name: expected a built-in name or an import path 'package.module:Name' "
            f"(an absolute module, a colon, a name), got {name!r}"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise StrategyError(f"strategy.name: cannot import module {module_name!r}: {exc}") from exc
    except Exception as exc:  # the module itself raised while importing
        raise StrategyError(
            f"strategy.name: importing module {module_name!r} raised {type(exc).__name__}: {exc}"
        ) from exc
    try:
        obj = getattr(module, attr)
    except AttributeError as exc:
        names = [n for n in dir(module) if not n.startswith("_")]
        raise StrategyError(
            f"strategy.name: module {module_name!r} has no attribute {attr!r}."
            + close_matches(attr, names)
        ) from exc
    if isinstance(obj, type) and not all(hasattr(obj, a) for a in STRATEGY_MEMBERS):
        # Only a class that looks like a strategy is instantiated: importing a path must not
        # become a way to construct arbitrary objects.
        raise StrategyError(
            f"strategy.name: {path!r} is a class without the Strategy members "
            f"{list(STRATEGY_MEMBERS)}; it was not instantiated"
        )
    strategy = obj() if isinstance(obj, type) else obj
    if not isinstance(strategy, Strategy):
        raise StrategyError(
            f"strategy.name: {path!r} does not satisfy the Strategy protocol "
            "(needs name, version, params and evaluate(panel, params, rngs))"
        )
    return strategy
