"""Strategies: the Strategy protocol, batch kernels, position functions and a registry.

``strategies`` imports nothing from ``sweep``: the panel type the protocol names and the
errors strategies raise live here, and the engine re-exports them.
"""

from strategies._accounting import (
    COST_PARAMS,
    Accounts,
    Book,
    Costs,
    account,
    asset_returns,
)
from strategies._backtesting import from_backtesting
from strategies._bar_fills import EXIT_PARAMS, Execution, ExitCounts, Exits
from strategies._lookahead import LookaheadReport, check_lookahead
from strategies._panel import Panel, panel_fingerprint
from strategies._position import PositionStrategy, position_strategy
from strategies._protocol import Param, Strategy, StrategyOutput, group_rows
from strategies._registry import (
    BUILTINS,
    available_strategies,
    get_strategy,
    require_import_path,
    strategy_import_path,
)
from strategies._returns import ReturnsStrategy, returns_strategy
from strategies._strategy_errors import StrategyError, close_matches

__all__ = [
    "BUILTINS",
    "COST_PARAMS",
    "EXIT_PARAMS",
    "Accounts",
    "Book",
    "Costs",
    "Execution",
    "ExitCounts",
    "Exits",
    "LookaheadReport",
    "Panel",
    "Param",
    "PositionStrategy",
    "ReturnsStrategy",
    "Strategy",
    "StrategyError",
    "StrategyOutput",
    "account",
    "asset_returns",
    "available_strategies",
    "check_lookahead",
    "close_matches",
    "from_backtesting",
    "get_strategy",
    "group_rows",
    "panel_fingerprint",
    "position_strategy",
    "require_import_path",
    "returns_strategy",
    "strategy_import_path",
]
