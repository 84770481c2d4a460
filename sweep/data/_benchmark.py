"""The benchmark a sweep's configs are tested against: one definition of its returns.

``[metrics] benchmark`` names it:

* ``"zero"``: no benchmark; the null is that a config's expected return is at most 0;
* ``"buy_and_hold"``: equal-weight buy-and-hold of the live assets (equal capital in each
  asset live at the first close, held; re-set to equal capital over the live assets at each
  close where the set of live assets changes, i.e. a listing or a delisting, and held
  again). On a panel where every asset is listed throughout it is never rebalanced: equal
  capital at the first close, held to the end. A delisted asset earns its zero return (the
  filled price) from its last close until the next close, where it leaves the portfolio; a
  date with no live asset holds cash (return 0);
* the name of an asset column: buy-and-hold of that asset.

Each config's excess return over period ``t -> t+1`` is its return minus the benchmark's.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from sweep.data._panels import Panel
from sweep.errors import SpecError, close_matches

ZERO = "zero"
BUY_AND_HOLD = "buy_and_hold"


def check_benchmark(benchmark: str, panel: Panel) -> None:
    """Refuse a benchmark that is neither a keyword nor a column of the panel."""
    if benchmark in (ZERO, BUY_AND_HOLD) or benchmark in panel.assets:
        return
    choices = [ZERO, BUY_AND_HOLD, *panel.assets]
    raise SpecError(
        f"metrics.benchmark: expected {ZERO!r}, {BUY_AND_HOLD!r} or an asset column "
        f"({', '.join(map(repr, panel.assets))}), got {benchmark!r}."
        + close_matches(benchmark, choices)
    )


def benchmark_returns(benchmark: str, panel: Panel) -> NDArray[np.float64]:
    """Per-period simple returns of the benchmark, aligned with every config's returns.

    Parameters
    ----------
    benchmark : str
        ``"zero"``, ``"buy_and_hold"`` or an asset column (see the module docstring).
    panel : Panel
        The price panel.

    Returns
    -------
    ndarray of float64, shape (n_periods - 1,)
        Return of period ``t -> t+1`` at index ``t``.
    """
    check_benchmark(benchmark, panel)
    close = panel.close
    if benchmark == ZERO:
        return np.zeros(close.shape[0] - 1)
    if benchmark == BUY_AND_HOLD:
        value = _equal_weight_value(close, panel.live if panel.has_listings else None)
    else:
        value = close[:, panel.assets.index(benchmark)]
    return np.ascontiguousarray(value[1:] / value[:-1] - 1.0)


def describe_null(benchmark: str) -> str:
    """The null hypothesis of the sweep-wide tests, in one sentence."""
    if benchmark == ZERO:
        return "Null hypothesis: no configuration has a positive expected return."
    what = (
        "equal-weight buy-and-hold of the panel"
        if benchmark == BUY_AND_HOLD
        else f"buy-and-hold of {benchmark}"
    )
    return (
        f"Null hypothesis: no configuration has a higher expected return than {what} "
        "(the benchmark)."
    )


def _equal_weight_value(
    close: NDArray[np.float64], live: NDArray[np.bool_] | None
) -> NDArray[np.float64]:
    """Value of the equal-weight buy-and-hold of the live assets (module docstring), from 1.

    Between two changes of the live set the portfolio is held, so its value is the mean of
    the held assets' price relatives since the last change, times the value then.
    """
    if live is None:
        same: NDArray[np.float64] = (close / close[0]).mean(axis=1)
        return same
    n = close.shape[0]
    changes = np.flatnonzero((live[1:] != live[:-1]).any(axis=1)) + 1
    starts = [0, *changes.tolist()]
    ends = [*changes.tolist(), n - 1]
    value = np.empty(n)
    level = 1.0
    for a, b in zip(starts, ends, strict=True):
        held = np.flatnonzero(live[a])
        if held.size:
            relative = (close[a : b + 1, held] / close[a, held]).mean(axis=1)
        else:
            relative = np.ones(b + 1 - a)
        value[a : b + 1] = level * relative
        level = float(value[b])
    return value
