"""Find strategies by built-in name or by import path ``package.module:Name``."""

from __future__ import annotations

import importlib

from strategies._position import import_path_of
from strategies._protocol import Strategy
from strategies._strategy_errors import StrategyError, close_matches

#: Built-in strategies: name -> import path of the class.
BUILTINS: dict[str, str] = {
    "bollinger_reversion": "strategies.mean_reversion:bollinger_reversion",
    "momentum": "strategies.momentum:Momentum",
    "rsi_reversion": "strategies.mean_reversion:rsi_reversion",
    "sma_cross": "strategies.sma_cross:SmaCross",
    "trend_filter": "strategies.trend_filter:trend_filter",
    "wma_trend": "strategies.wma_trend:WmaTrend",
    "xs_momentum": "strategies.xs_momentum:xs_momentum",
}


#: What a strategy class must define (as class attributes, properties or methods).
STRATEGY_MEMBERS = ("name", "version", "params", "evaluate")


def strategy_import_path(strategy: Strategy) -> str | None:
    """Return the name under which a run folder can find ``strategy`` again, or None.

    Parameters
    ----------
    strategy : Strategy
        A strategy object.

    Returns
    -------
    str or None
        Its built-in name if it is a built-in; else ``module:qualname`` when importing that
        gives back this object (a module-level strategy object) or an equal instance of its
        class (a strategy class instantiated without arguments); None for an object defined
        in ``__main__``, a notebook or a function, which a later process cannot import.
    """
    source = getattr(strategy, "source", None)
    if isinstance(source, dict) and isinstance(source.get("backtesting"), str):
        return str(source["backtesting"])  # a backtesting.py class, named by its spec section
    own = import_path_of(strategy)
    cls_path = import_path_of(type(strategy))
    if cls_path is not None and not _fresh_instance_equals(type(strategy), strategy):
        cls_path = None  # its class needs arguments, or builds another strategy
    for builtin, path in BUILTINS.items():
        if path in (own, cls_path):
            return builtin
    return own or cls_path


def _fresh_instance_equals(cls: type, strategy: Strategy) -> bool:
    """Whether ``cls()`` gives a strategy equal to ``strategy`` (name, version, params)."""
    try:
        fresh = cls()
    except Exception:  # a class that needs arguments cannot be named by its path
        return False
    return bool(
        getattr(fresh, "name", None) == strategy.name
        and getattr(fresh, "version", None) == strategy.version
        and tuple(getattr(fresh, "params", ())) == tuple(strategy.params)
    )


def require_import_path(strategy: Strategy, purpose: str) -> str:
    """Return :func:`strategy_import_path`, or say clearly why there is none.

    Parameters
    ----------
    strategy : Strategy
        A strategy object.
    purpose : str
        What needs the name (for the message), e.g. ``"resume this run from the command line"``.

    Returns
    -------
    str
        A built-in name or ``module:qualname``.

    Raises
    ------
    StrategyError
        The object was defined in ``__main__`` (a script or a notebook) or inside a
        function: no later process can import it.
    """
    path = strategy_import_path(strategy)
    if path is not None:
        return path
    module = getattr(strategy, "__module__", None) or type(strategy).__module__
    where = (
        "in __main__ (a script or a notebook)"
        if module == "__main__"
        else f"in {module!r} but not under its own name at module level"
    )
    raise StrategyError(
        f"strategy {strategy.name!r} has no import path: it is defined {where}, so no later "
        f"process can import it to {purpose}. Move it to a module (importable as "
        "'package.module:name') or keep using the same object from Python."
    )


def available_strategies() -> list[str]:
    """Return the names of the built-in strategies."""
    return sorted(BUILTINS)


def get_strategy(name: str | Strategy) -> Strategy:
    """Return a strategy instance by built-in name, import path, or as the object itself.

    Parameters
    ----------
    name : str or Strategy
        A built-in name (see :func:`available_strategies`), an import path
        ``package.module:Name`` naming a class (instantiated without arguments) or an instance
        that satisfies :class:`strategies.Strategy`, or such an instance itself (a strategy
        object defined in a script or a notebook, which has no import path).

    Returns
    -------
    Strategy
        The strategy.
    """
    given: object = name
    if isinstance(given, type) and all(hasattr(given, a) for a in STRATEGY_MEMBERS):
        raise StrategyError(
            f"strategy: got the class {given.__qualname__}; pass an instance of it "
            f"({given.__qualname__}()) or its import path"
        )
    if not isinstance(name, str) and isinstance(name, Strategy):
        return name
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
