"""Vectorised strategy kernels: the Strategy protocol, built-ins and a registry."""

from strategies._protocol import Param, Strategy, StrategyOutput, group_rows
from strategies._registry import BUILTINS, available_strategies, get_strategy

__all__ = [
    "BUILTINS",
    "Param",
    "Strategy",
    "StrategyOutput",
    "available_strategies",
    "get_strategy",
    "group_rows",
]
