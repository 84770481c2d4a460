"""Whole-sweep figures the report takes from result columns it does not hold per config.

Four columns (``n_obs``, ``omega``, ``excess_std``, ``sharpe``) enter the report only through
a few numbers over the configs that finished ok. They are read with the others, reduced here
once, in ``config_id`` order, and dropped: the report holds about a third less per config.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

#: Result columns reduced to :class:`SweepFacts` when the results are read, then not held.
REDUCED_COLUMNS = ("n_obs", "omega", "excess_std", "sharpe")


@dataclass(frozen=True)
class SweepFacts:
    """What the report needs of :data:`REDUCED_COLUMNS`, over the configs that finished ok.

    Attributes
    ----------
    first_n_obs : int or None
        Periods of the first ok config in ``config_id`` order (every config of a sweep has
        the same; None without ok configs).
    max_n_obs : int or None
        The most periods of any ok config.
    null_sharpe_std : float or None
        :func:`null_sharpe_std` of the ok configs.
    constant_configs : int
        Ok configs whose Sharpe ratio is not finite (a constant return series).
    """

    first_n_obs: int | None = None
    max_n_obs: int | None = None
    null_sharpe_std: float | None = None
    constant_configs: int = 0


def null_sharpe_std(
    n_obs: NDArray[np.float64], omega: NDArray[np.float64], std: NDArray[np.float64]
) -> float | None:
    """Root mean square over configs of ``ω̂ / (√n · sd)``: a null Sharpe ratio's spread.

    None when no config has a non-constant excess series.
    """
    live = (std > 0) & np.isfinite(omega) & (n_obs > 0)
    if not live.any():
        return None
    sd_null = omega[live] / (np.sqrt(n_obs[live]) * std[live])
    return float(np.sqrt(np.mean(sd_null**2)))


def sweep_facts(frame: pd.DataFrame) -> SweepFacts:
    """Reduce :data:`REDUCED_COLUMNS` of the results (``config_id`` order) to the facts."""
    if frame.empty or not set(REDUCED_COLUMNS) <= set(frame.columns):
        return SweepFacts()
    ok = (frame["status"] == "ok").to_numpy(dtype=bool)
    if not ok.any():
        return SweepFacts()

    def ok_floats(name: str) -> NDArray[np.float64]:
        return frame[name].to_numpy(dtype=np.float64)[ok]

    n_obs = frame["n_obs"][ok]
    return SweepFacts(
        first_n_obs=int(n_obs.iloc[0]),
        max_n_obs=int(n_obs.max()),
        null_sharpe_std=null_sharpe_std(
            ok_floats("n_obs"), ok_floats("omega"), ok_floats("excess_std")
        ),
        constant_configs=int((~np.isfinite(ok_floats("sharpe"))).sum()),
    )
