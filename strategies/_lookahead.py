"""The look-ahead check: change prices after t; no weight formed at or before t may change.

Two perturbations of the prices after each cut row ``t``, because each misses what the
other finds:

- **noise**: every later price multiplied by its own random factor ``exp(scale * z)``. It
  moves anything computed from a later price (a strategy that reads tomorrow's close), but
  barely moves a statistic of the whole sample: the sign of the full-sample mean return,
  the ranking of the assets over the whole sample, the date of the full-sample maximum;
- **mirror**: the path after ``t`` reflected about the close at ``t`` (each later return
  negated: ``p' = p_t**2 / p`` for every price field, high and low swapped after ``t``,
  volume kept).
  The later part of the sample then trends the other way, so such a statistic changes
  whenever the part after ``t`` decides it (the earliest cuts, where most of the sample
  lies after ``t``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from strategies._panel import Panel
from strategies._position import PositionStrategy, describe_config
from strategies._protocol import Strategy
from strategies._returns import ReturnsStrategy
from strategies._strategy_errors import StrategyError

#: Default number of cut dates.
DEFAULT_CUTS = 8
#: Default standard deviation of the log-price perturbation after a cut.
DEFAULT_SCALE = 0.1
#: Rows cut one by one before a coarse find, to name the first offending period exactly.
DEFAULT_MAX_REFINE = 2000
#: What each perturbation does to the prices after a cut, as a report says it.
PERTURBATIONS = {
    "noise": "multiplied by random factors",
    "mirror": "mirrored about the close at the cut (each later return negated)",
}
#: The panel fields that are prices (mirrored); any other field (volume) is kept.
PRICE_FIELDS = ("open", "high", "low")


@dataclass(frozen=True)
class LookaheadReport:
    """The outcome of :func:`check_lookahead` for one config.

    Attributes
    ----------
    strategy : str
        The strategy's name.
    config : tuple of (str, value)
        The declared parameters checked, in declaration order.
    cuts : tuple of int
        The rows ``t`` after which prices were perturbed.
    deterministic : bool
        Two calls on the same prices gave the same weights (otherwise nothing else can be
        concluded, and ``clean`` is False).
    period : int or None
        The earliest row whose weight changed when only later prices changed (None: clean).
        Only rows up to a cut can be revealed, so it is the first offending period among
        those the cuts test (a strategy that peeks one period ahead is caught at a cut row).
    date : str or None
        That row's date.
    asset : str or None
        The first asset whose weight changed in that row (None for a backtest function,
        whose row is the book's return for the period ending on that date).
    cut : int or None
        The cut that revealed it (prices after row ``cut`` were perturbed, ``period <= cut``).
    perturbation : str or None
        Which perturbation revealed it: ``"noise"`` or ``"mirror"`` (:data:`PERTURBATIONS`).
    exact : bool
        Every row before ``period`` was cut on its own and none peeked, so ``period`` is the
        first offending period (up to perturbations a strategy ignores); False when the search
        stopped at ``max_refine`` rows.
    """

    strategy: str
    config: tuple[tuple[str, Any], ...]
    cuts: tuple[int, ...]
    deterministic: bool
    period: int | None = None
    date: str | None = None
    asset: str | None = None
    cut: int | None = None
    exact: bool = False
    perturbation: str | None = None

    @property
    def clean(self) -> bool:
        """No weight depended on a later price (and the function is deterministic)."""
        return self.deterministic and self.period is None

    def message(self) -> str:
        """One sentence a person reads."""
        label = f"strategy {self.strategy!r} (config {describe_config(dict(self.config))})"
        if not self.deterministic:
            return (
                f"{label} is not deterministic: two calls on the same prices gave different "
                "weights (seed a random strategy from its rng argument); look-ahead not checked"
            )
        if self.period is None:
            return (
                f"{label}: no look-ahead found (prices after each of {len(self.cuts)} cut "
                "dates multiplied by random factors, then mirrored; no weight or return at "
                "or before a cut changed)"
            )
        which = (
            "the first offending period"
            if self.exact
            else "the first offending period found (earlier rows not all tested)"
        )
        what = (
            f"its return for the period ending on {self.date} (row {self.period})"
            if self.asset is None
            else f"its weight for asset {self.asset!r} formed at the close of {self.date} "
            f"(period {self.period})"
        )
        return (
            f"{label} looks ahead: {what} changed when only the prices after row "
            f"{self.cut} were {PERTURBATIONS.get(self.perturbation or '', 'perturbed')}; "
            f"{which}: {self.period} ({self.date})"
        )


def _perturbed(panel: Panel, cut: int, rng: np.random.Generator, scale: float) -> Panel:
    """The noise perturbation: each price after ``cut`` times its own ``exp(scale * z)``."""
    factor = np.ones(panel.close.shape)
    later = panel.close.shape[0] - cut - 1
    factor[cut + 1 :] = np.exp(scale * rng.standard_normal((later, panel.n_assets)))
    fields = {k: v * factor for k, v in panel.fields.items()}
    return Panel(panel.dates, panel.assets, panel.close * factor, fields, panel.live)


def _mirrored(panel: Panel, cut: int) -> Panel:
    """The mirror perturbation: every price after ``cut`` becomes ``close[cut]**2 / price``.

    Each later return is negated (in log terms) and the path stays positive; after the cut,
    high and low swap (the reflection reverses their order; rows up to the cut are left as
    they are); a field that is not a price is kept.
    """
    pivot = panel.close[cut] * panel.close[cut]
    later = slice(cut + 1, None)

    def mirror(values: NDArray[np.float64]) -> NDArray[np.float64]:
        out = values.copy()
        out[later] = pivot / values[later]
        return out

    fields = {k: mirror(v) if k in PRICE_FIELDS else v.copy() for k, v in panel.fields.items()}
    if "high" in fields and "low" in fields:
        high, low = fields["high"], fields["low"]
        high[later], low[later] = low[later].copy(), high[later].copy()
    return Panel(panel.dates, panel.assets, mirror(panel.close), fields, panel.live)


def _same(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.bool_]:
    out: NDArray[np.bool_] = (a == b) | (np.isnan(a) & np.isnan(b))
    return out


def _cut_rows(n_dates: int, n_cuts: int) -> tuple[int, ...]:
    if n_dates < 3:
        raise StrategyError(f"check_lookahead: the panel needs at least 3 dates, got {n_dates}")
    if not 1 <= n_cuts <= n_dates - 2:
        raise StrategyError(
            f"check_lookahead: n_cuts must be between 1 and {n_dates - 2} (a cut at every "
            f"date but the last two of these {n_dates}), got {n_cuts}"
        )
    rows = np.linspace(0, n_dates - 2, n_cuts + 2)[1:-1].round().astype(int)
    return tuple(sorted({int(r) for r in rows}))


def check_lookahead(
    strategy: Strategy,
    panel: Panel,
    config: Mapping[str, Any] | None = None,
    *,
    n_cuts: int = DEFAULT_CUTS,
    seed: int = 0,
    scale: float = DEFAULT_SCALE,
    max_refine: int = DEFAULT_MAX_REFINE,
) -> LookaheadReport:
    """Check that a position-function strategy's weights use no price after their date.

    For each cut row ``t`` (``n_cuts`` of them, evenly spaced), the prices after ``t`` are
    changed in two ways (prices up to ``t`` and the listing mask are left as they are): each
    multiplied by ``exp(scale * z)`` with ``z`` standard normal, and the path mirrored about
    the close at ``t`` (each later return negated, see the module docstring). The weights
    are computed again after each, and every weight formed at or before ``t`` (where the
    asset is listed) must be bit-for-bit what it was.

    Parameters
    ----------
    strategy : Strategy
        A :class:`strategies.PositionStrategy` (a batch kernel exposes no weights).
    panel : Panel
        The prices.
    config : mapping of str to scalar, optional
        Values of the declared parameters (defaults where absent).
    n_cuts : int
        Number of cut rows.
    seed : int
        Seed of the perturbations (and of the ``rng`` a random strategy receives, the same
        generator state on every call).
    scale : float
        Standard deviation of the log-price perturbation.
    max_refine : int
        Once a cut reveals look-ahead at row ``p``, the rows before ``p`` are cut one at a
        time, in order, up to this many, so the report names the first offending period
        (``exact``) rather than the first among the coarse cuts.

    Returns
    -------
    LookaheadReport
        Clean, or the first offending period, its date, asset, the cut and the
        perturbation that showed it.

    Raises
    ------
    StrategyError
        The strategy is not a position-function strategy, or it fails on these prices.

    Notes
    -----
    A change at or before ``t`` proves look-ahead; no change is evidence, not proof: a
    strategy that peeks only at dates between cuts, or only under some prices, may pass.
    More cuts test more dates. The noise alone misses a weight that depends on a statistic
    of the whole sample (the sign of the full-sample mean, a full-sample rank, the date of
    the full-sample maximum): random factors after ``t`` hardly move it; the mirror reverses
    the trend after ``t`` and so moves it whenever the later part of the sample decides it.
    """
    rows: Callable[[Panel, Mapping[str, Any], np.random.Generator], NDArray[np.float64]]
    if isinstance(strategy, PositionStrategy):
        declared_params, rows = strategy.declared, strategy.weights
    elif isinstance(strategy, ReturnsStrategy):
        declared_params, rows = strategy.params, strategy.lookahead_rows
    else:
        raise StrategyError(
            f"check_lookahead: strategy {strategy.name!r} is a batch kernel, which exposes "
            "neither weights nor a backtest of one config; the check needs a position "
            "function (strategies.position_strategy) or a backtest function "
            "(strategies.returns_strategy, strategies.from_backtesting)"
        )
    values = dict(config or {})
    if seed < 0:
        raise StrategyError(f"check_lookahead: seed must be a non-negative integer, got {seed}")
    cuts = _cut_rows(panel.n_periods, n_cuts)
    declared = tuple((p.name, values.get(p.name, p.default)) for p in declared_params)

    def weights(prices: Panel) -> NDArray[np.float64]:
        return rows(prices, values, np.random.default_rng(seed))

    base = weights(panel)
    if not _same(base, weights(panel)).all():
        return LookaheadReport(strategy.name, declared, cuts, deterministic=False)
    book = base.shape != panel.live_mask.shape  # one return per date: the whole book
    live = np.ones(base.shape, dtype=bool) if book else panel.live_mask
    rng = np.random.default_rng(seed)

    def moved(cut: int, prices: Panel) -> tuple[int, int] | None:
        """The earliest (row, asset) at or before ``cut`` whose weight changed on ``prices``."""
        changed = ~_same(base[: cut + 1], weights(prices)[: cut + 1]) & live[: cut + 1]
        if not changed.any():
            return None
        row, asset = (int(i) for i in np.argwhere(changed)[0])
        return row, asset

    def revealed(cut: int) -> tuple[int, int, int, str] | None:
        """The earliest (row, asset, cut, perturbation) at or before ``cut`` that moved."""
        # The noise first, drawn for every cut in order whatever the mirror finds.
        hits = [("noise", moved(cut, _perturbed(panel, cut, rng, scale)))]
        hits.append(("mirror", moved(cut, _mirrored(panel, cut))))
        found = [(*hit, cut, kind) for kind, hit in hits if hit is not None]
        return min(found, key=lambda f: f[:2]) if found else None  # ties: the noise

    found = [hit for hit in map(revealed, cuts) if hit is not None]
    if not found:
        return LookaheadReport(strategy.name, declared, cuts, deterministic=True)
    row, asset, cut, kind = min(found, key=lambda f: f[:3])
    # Refine: a row r peeks iff perturbing the prices after r moves a weight at or before r.
    # Cutting at every row before the coarse find, in order, stops at the true first offender.
    for earlier in range(min(row, max_refine)):
        if (hit := revealed(earlier)) is not None:
            row, asset, cut, kind = hit
            break
    exact = row <= max_refine
    return LookaheadReport(
        strategy.name,
        declared,
        cuts,
        deterministic=True,
        period=row,
        date=str(np.datetime_as_string(panel.dates[row], unit="D")),
        asset=None if book else panel.assets[asset],
        cut=cut,
        exact=exact,
        perturbation=kind,
    )
