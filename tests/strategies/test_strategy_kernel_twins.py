"""The fast strategy kernels against their plain twins: the same bits, ties and reuse included."""

from __future__ import annotations

import numpy as np
import pandas as pd

from strategies.momentum import Momentum
from strategies.sma_cross import SmaCross, _crossover_rows, _crossover_rows_scalar
from sweep.data._panels import make_panel


def _outputs(kernel, smas, fast_slot, slow_slot, gross, fees):  # type: ignore[no-untyped-def]
    n, n_bars = fast_slot.shape[0], smas.shape[1]
    out = (np.full((n, n_bars - 1), 7.0), np.full((n, n_bars - 1), 7.0), np.zeros(n, np.int64))
    kernel(
        smas, fast_slot, slow_slot, np.arange(n), gross, 1.0 / (1.0 + fees) - 1.0, 1.0 - fees, *out
    )
    return out


def test_crossover_rows_is_the_state_machine_with_ties_and_nans() -> None:
    rng = np.random.default_rng(3)
    n_bars = 300
    # coarse levels make exact ties frequent; leading NaNs as before an average exists
    smas = np.round(rng.normal(size=(12, n_bars)).cumsum(axis=1), 0)
    for i in range(12):
        smas[i, : rng.integers(0, 40)] = np.nan
    smas[5] = smas[6]  # a pair tied everywhere
    smas[7, :] = 1.0  # a pair that never goes below
    smas[8, :] = 2.0
    fast_slot = rng.integers(0, 12, size=64)
    slow_slot = rng.integers(0, 12, size=64)
    fast_slot[:3], slow_slot[:3] = (5, 7, 8), (6, 8, 7)
    gross = 1.0 + rng.normal(scale=0.01, size=n_bars - 1)
    fees = rng.uniform(0.0, 0.01, size=64)
    a = _outputs(_crossover_rows, smas, fast_slot, slow_slot, gross, fees)
    b = _outputs(_crossover_rows_scalar, smas, fast_slot, slow_slot, gross, fees)
    for x, y in zip(a, b, strict=True):
        assert x.tobytes() == y.tobytes()


def test_reused_signals_and_averages_give_the_bits_of_a_fresh_call() -> None:
    rng = np.random.default_rng(8)
    close = np.exp(rng.normal(scale=0.01, size=(400, 2)).cumsum(axis=0))
    dates = pd.bdate_range("2020-01-01", periods=400)
    panel = make_panel(dates, ["A", "B"], close)
    fresh = make_panel(dates, ["A", "B"], close.copy())
    lookback = np.repeat(np.array([3, 20, 7], dtype=np.int64), 5)
    band = np.tile(np.linspace(0.0, 0.02, 5), 3)
    m = {"lookback": lookback, "band": band, "cost": np.full(15, 0.001)}
    s = {
        "fast": np.array([3, 5, 9, 2, 5], dtype=np.int64),
        "slow": np.array([10, 30, 12, 40, 10], dtype=np.int64),
        "fees": np.full(5, 0.001),
        "asset": np.array([0, 1, 0, 1, 1], dtype=np.int64),
    }
    for kernel, params in ((Momentum(), m), (SmaCross(), s)):
        kernel.evaluate(panel, params, [])  # fills the memo for ``panel``
        again = kernel.evaluate(panel, params, [])
        alone = kernel.evaluate(fresh, {k: v[::-1].copy() for k, v in params.items()}, [])
        for x, y in zip(
            (again.returns, again.turnover, again.n_trades),
            (alone.returns[::-1], alone.turnover[::-1], alone.n_trades[::-1]),
            strict=True,
        ):
            assert x.tobytes() == np.ascontiguousarray(y).tobytes()
