"""Bring your own data and strategy: a real universe with listings, from Python, in one call.

The panel is real: daily adjusted closes of 20 S&P 500 stocks, 1990-2022, shipped inside
the ``skfolio`` wheel (``pip install raysweep[data]``; BSD-3-Clause; read from the installed
files, skfolio is never imported). Its series are complete, so listings and delistings are
made by masking real series: AMD listed from 2000, RRC delisted after 2015, GE both. A
missing price before an asset's first or after its last close means "not listed there";
the engine forces its weight to zero there and the buy-and-hold benchmark holds only the
listed assets.

The strategy is a position function defined in this script (``__main__``), booked by the
shared accounting with fees and slippage: it runs from Python, and the run folder says that
the command line cannot import it (``sweep report``
still writes a report and names what it could not recompute; ``sweep.report_run(...,
strategy=...)`` from Python recomputes everything).

Run: ``python examples/real_universe.py`` (writes ``runs/real-universe``).
"""

from __future__ import annotations

from importlib.metadata import distribution

import numpy as np
import pandas as pd

import sweep
from strategies import Param, position_strategy

SP500 = "skfolio/datasets/data/sp500_dataset.csv.gz"


@position_strategy(
    version="1",
    params=[
        Param("lookback", "int", window=True, doc="trend window (days)"),
        Param("band", "float", minimum=0.0, default=0.0, doc="required rise"),
    ],
    long_only=True,
)
def live_trend(prices: np.ndarray, lookback: int, band: float) -> np.ndarray:
    """Equal weight over the listed assets whose close rose by ``band`` over ``lookback`` days.

    ``prices`` is NaN where an asset is not listed, so a comparison there is False: the
    strategy never holds an asset before its listing or after its delisting.
    """
    up = np.zeros(prices.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        up[lookback:] = prices[lookback:] > prices[:-lookback] * (1.0 + band)
    return up / np.maximum(up.sum(axis=1, keepdims=True), 1)


def real_universe() -> pd.DataFrame:
    """The real sample with masked listings and delistings (NaN where not listed)."""
    path = distribution("skfolio").locate_file(SP500)
    prices = pd.read_csv(str(path), index_col="Date", parse_dates=True)
    prices.loc[:"1999-12-31", "AMD"] = np.nan
    prices.loc["2016-01-01":, "RRC"] = np.nan
    prices.loc[:"1994-12-31", "GE"] = np.nan
    prices.loc["2018-07-01":, "GE"] = np.nan
    return prices


def main() -> None:
    """Run the sweep and print what it found and where it is."""
    prices = real_universe()
    result = sweep.run(
        live_trend,
        {"lookback": range(20, 260, 20), "band": np.array([0.0, 0.02, 0.05])},
        prices,
        run_dir="runs/real-universe",
        metrics={"benchmark": "buy_and_hold", "bootstrap_reps": 200},
        costs={"fee_bps": 5.0, "slippage_bps": 2.0},
        seed=1,
    )
    print(f"data:       {result.data.description}")
    print(f"strategy:   {result.strategy.defined_in} (importable: {result.strategy.importable})")
    print(f"configs:    {result.summary.done} of {result.summary.total}")
    print(f"table hash: {result.table_hash}")
    best = result.results().nlargest(3, "excess_sharpe_ann")
    print(best[["lookback", "band", "sharpe_ann", "excess_sharpe_ann", "p_value"]].to_string())
    print(f"report:     sweep report {result.run_dir}")


if __name__ == "__main__":
    main()
