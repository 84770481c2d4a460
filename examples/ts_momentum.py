"""A user strategy on the position API: time-series momentum with volatility targeting.

Swept by ``examples/ts_momentum.toml`` (``sweep run examples/ts_momentum.toml`` imports
this module from the spec's folder); see the docs' tutorial, "Your first own strategy".
"""

import numpy as np
import pandas as pd

from stats import fixed_log
from strategies import Param, position_strategy


@position_strategy(
    version="1",
    params=[
        Param("lookback", "int", window=True, doc="trailing return window"),
        Param("target_vol", "float", minimum=0.0, default=0.10, doc="annualised, per asset"),
    ],
    max_leverage=1.5,
)
def ts_momentum(prices: np.ndarray, lookback: int, target_vol: float) -> np.ndarray:
    """Long assets up over ``lookback`` days, short those down, each sized to ``target_vol``."""
    log_price = pd.DataFrame(fixed_log(prices))  # np.log differs in its last bits by CPU
    trend = np.sign(log_price.diff(lookback))
    vol = log_price.diff().rolling(60).std() * np.sqrt(252)
    listed = np.isfinite(prices).sum(axis=1, keepdims=True)
    weights = trend * target_vol / vol / np.maximum(listed, 1)
    return weights.fillna(0.0).to_numpy()
