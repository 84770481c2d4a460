"""Strategies with hostile outputs, importable by path (``tests.hostile_strategies:Name``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from strategies import StrategyOutput
from strategies.momentum import Momentum


class NanMomentum(Momentum):
    """Momentum whose returns are all NaN for lookbacks divisible by 10."""

    name = "nan_momentum"
    version = "1"

    def evaluate(
        self, panel: Any, params: Mapping[str, Any], rngs: Sequence[np.random.Generator]
    ) -> StrategyOutput:
        out = super().evaluate(panel, params, rngs)
        out.returns[params["lookback"] % 10 == 0] = np.nan
        return out


class NanEverywhere(Momentum):
    """Momentum whose every return is NaN (every config fails)."""

    name = "nan_everywhere"
    version = "1"

    def evaluate(
        self, panel: Any, params: Mapping[str, Any], rngs: Sequence[np.random.Generator]
    ) -> StrategyOutput:
        out = super().evaluate(panel, params, rngs)
        out.returns[:] = np.nan
        return out
