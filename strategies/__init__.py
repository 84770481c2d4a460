"""Vectorised strategy kernels: the Strategy protocol, built-ins and a registry.

``strategies`` imports nothing from ``sweep``: the panel type the protocol names and the
errors strategies raise live here, and the engine re-exports them.
"""

from strategies._errors import StrategyError, close_matches
from strategies._panel import Panel, panel_fingerprint
from strategies._protocol import Param, Strategy, StrategyOutput, group_rows
from strategies._registry import BUILTINS, available_strategies, get_strategy

__all__ = [
    "BUILTINS",
    "Panel",
    "Param",
    "Strategy",
    "StrategyError",
    "StrategyOutput",
    "available_strategies",
    "close_matches",
    "get_strategy",
    "group_rows",
    "panel_fingerprint",
]
