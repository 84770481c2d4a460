"""Time-series momentum with a dead band, equal weight across assets."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

from stats import fixed_log
from strategies._accounting import asset_returns, refuse_listings
from strategies._indicators import PanelMemo
from strategies._panel import Panel
from strategies._protocol import Param, StrategyOutput, group_rows

#: Configs (bands of one lookback) evaluated side by side in one pass over time.
_LANES = 4
#: Periods per block: the lanes' scratch rows (8 x 4 KB) stay in L1 across the asset passes.
_BLOCK = 512
#: Up to this many assets, ``moved / n_assets`` is read from a table (see ``_moved_share``).
_TABLE_ASSETS = 3
#: ``_SHARES[n - 1, k] = k / n`` (the same IEEE divide): the table of ``_moved_share``. A
#: global array, so the compiler reads its values rather than rewriting the selects into a
#: divide again.
_SHARES = np.array([[k / n for k in range(2 * _TABLE_ASSETS + 1)] for n in range(1, 4)])


@numba.njit(inline="always")
def _terms(  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    s, s_before, d, d_before, r, band
):
    """One asset's gross term, ``abs(step)`` and ``step != 0`` at one period ``t >= 1``."""
    on = s > band
    step = (d if on else 0.0) - (d_before if s_before > band else 0.0)
    return (r if on else 0.0), abs(step), step != 0.0


@numba.njit(inline="always")
def _first_period(  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    strength, signed_return, direction, band
):
    """One config's gross and moved sums and trades at ``t = 0`` (nothing held before)."""
    gross, moved, trades = 0.0, 0.0, 0
    for a in range(strength.shape[0]):
        first = direction[a, 0] if strength[a, 0] > band else 0.0
        gross += signed_return[a, 0] if first != 0.0 else 0.0
        moved += abs(first)
        trades += first != 0.0
    return gross, moved, trades


@numba.njit(inline="always")
def _lanes_pass(  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    s_a, s_b, d_a, d_b, r_a, n_block, first, b0, b1, b2, b3, g0, g1, g2, g3, m0, m1, m2, m3
):
    """One asset over one block for the four lanes: adds its terms to the scratch rows.

    ``s_a``, ``d_a``, ``r_a`` start at the block's first period, ``s_b``, ``d_b`` one period
    earlier; on the first asset (``first``) the sums start from ``+0.0``. Returns each
    lane's number of trades in the block.
    """
    c0 = c1 = c2 = c3 = 0
    if first:  # the sums start from +0.0
        for i in range(n_block):
            s, sb, d, db, r = s_a[i], s_b[i], d_a[i], d_b[i], r_a[i]
            gross, step, traded = _terms(s, sb, d, db, r, b0)
            g0[i] = 0.0 + gross
            m0[i] = 0.0 + step
            c0 += traded
            gross, step, traded = _terms(s, sb, d, db, r, b1)
            g1[i] = 0.0 + gross
            m1[i] = 0.0 + step
            c1 += traded
            gross, step, traded = _terms(s, sb, d, db, r, b2)
            g2[i] = 0.0 + gross
            m2[i] = 0.0 + step
            c2 += traded
            gross, step, traded = _terms(s, sb, d, db, r, b3)
            g3[i] = 0.0 + gross
            m3[i] = 0.0 + step
            c3 += traded
    else:
        for i in range(n_block):
            s, sb, d, db, r = s_a[i], s_b[i], d_a[i], d_b[i], r_a[i]
            gross, step, traded = _terms(s, sb, d, db, r, b0)
            g0[i] += gross
            m0[i] += step
            c0 += traded
            gross, step, traded = _terms(s, sb, d, db, r, b1)
            g1[i] += gross
            m1[i] += step
            c1 += traded
            gross, step, traded = _terms(s, sb, d, db, r, b2)
            g2[i] += gross
            m2[i] += step
            c2 += traded
            gross, step, traded = _terms(s, sb, d, db, r, b3)
            g3[i] += gross
            m3[i] += step
            c3 += traded
    return c0, c1, c2, c3


@numba.njit(inline="always")
def _moved_share(moved, table):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``moved / n_assets`` for an exact integer ``moved`` in ``0 .. 6``: ``table[moved]``.

    ``table[k] = k / n_assets`` is the same IEEE divide, so the value has the divide's
    bits; the comparisons vectorise (a gather, or a second divide, costs more).
    """
    share = table[0]
    share = table[1] if moved == 1.0 else share
    share = table[2] if moved == 2.0 else share
    share = table[3] if moved == 3.0 else share
    share = table[4] if moved == 4.0 else share
    share = table[5] if moved == 5.0 else share
    return table[6] if moved == 6.0 else share


@numba.njit(inline="always")
def _block_out(  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    gross, moved, n_block, cost, n_assets, table, use_table, out_r, out_t
):
    """Net returns and turnover of one config over one block from its scratch rows."""
    if use_table:
        for i in range(n_block):
            share = _moved_share(moved[i], table)
            out_r[i] = gross[i] / n_assets - cost * share
            out_t[i] = share
    else:
        for i in range(n_block):
            share = moved[i] / n_assets
            out_r[i] = gross[i] / n_assets - cost * share
            out_t[i] = share


@numba.njit(inline="always")
def _exact_moves(direction):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Whether every direction is -1, 0 or 1 (then every ``moved`` is an exact integer)."""
    odd = 0
    for a in range(direction.shape[0]):
        d_a = direction[a]
        for t in range(d_a.shape[0]):
            odd += abs(d_a[t]) != 1.0 and d_a[t] != 0.0
    return odd == 0


@numba.njit(cache=True, nogil=True)
def _banded_positions(  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    strength, signed_return, direction, bands, costs, rows, out_returns, out_turnover, out_trades
):
    """For each config: positions from the dead band, net returns, turnover and trades.

    The configs of ``rows`` (one lookback, different bands and costs) go ``_LANES`` at a
    time (a short last group repeats its last config, which writes the same values twice),
    over ``_BLOCK`` periods at a time: each period's strength, direction and signed return
    are loaded once for the lanes, and each lane keeps its own scratch rows. Each loop over
    time is element-wise (the position before ``t`` is recomputed rather than carried,
    positions are floats -1, 0, 1), so the compiler vectorises it. Per config, a period's
    gross return still adds the active assets in asset order starting from ``+0.0`` (an
    asset is active exactly when its strength exceeds the band, ``band >= 0``, and adding
    ``+0.0`` for an inactive asset leaves a sum that is never ``-0.0`` unchanged), the
    moved sum likewise, then ``gross / n_assets - cost * (moved / n_assets)``: every value
    is bit for bit the sequential per-period loop's. With 1 to ``_TABLE_ASSETS`` assets
    and every direction -1, 0 or 1, ``moved`` is an exact integer ``0 .. 2 * n_assets``
    and ``moved / n_assets`` is read from ``_SHARES`` (one divide per period, not two).
    """
    n_assets, n_ret = strength.shape
    n_rows = rows.shape[0]
    if n_rows == 0 or n_ret == 0:
        return
    use_table = 1 <= n_assets <= _TABLE_ASSETS and _exact_moves(direction)
    shares = _SHARES[min(max(n_assets, 1), _TABLE_ASSETS) - 1]
    table = (shares[0], shares[1], shares[2], shares[3], shares[4], shares[5], shares[6])
    # scratch rows of this call (gross and moved per lane): the compiler sees they do not
    # alias the inputs or each other
    g0, g1, g2, g3 = np.empty(_BLOCK), np.empty(_BLOCK), np.empty(_BLOCK), np.empty(_BLOCK)
    m0, m1, m2, m3 = np.empty(_BLOCK), np.empty(_BLOCK), np.empty(_BLOCK), np.empty(_BLOCK)
    last = n_rows - 1
    for lo in range(0, n_rows, _LANES):
        j0, j1 = rows[lo], rows[min(lo + 1, last)]
        j2, j3 = rows[min(lo + 2, last)], rows[min(lo + 3, last)]
        b0, b1, b2, b3 = bands[j0], bands[j1], bands[j2], bands[j3]
        # t = 0: nothing held before it
        x0, y0, c0 = _first_period(strength, signed_return, direction, b0)
        x1, y1, c1 = _first_period(strength, signed_return, direction, b1)
        x2, y2, c2 = _first_period(strength, signed_return, direction, b2)
        x3, y3, c3 = _first_period(strength, signed_return, direction, b3)
        for j, gross, moved in ((j3, x3, y3), (j2, x2, y2), (j1, x1, y1), (j0, x0, y0)):
            share = moved / n_assets
            out_returns[j, 0] = gross / n_assets - costs[j] * share
            out_turnover[j, 0] = share
        for t0 in range(1, n_ret, _BLOCK):
            n_block = min(_BLOCK, n_ret - t0)
            for a in range(n_assets):
                k0, k1, k2, k3 = _lanes_pass(
                    strength[a, t0:],
                    strength[a, t0 - 1 :],
                    direction[a, t0:],
                    direction[a, t0 - 1 :],
                    signed_return[a, t0:],
                    n_block,
                    a == 0,
                    b0,
                    b1,
                    b2,
                    b3,
                    g0,
                    g1,
                    g2,
                    g3,
                    m0,
                    m1,
                    m2,
                    m3,
                )
                c0, c1, c2, c3 = c0 + k0, c1 + k1, c2 + k2, c3 + k3
            for j, g, m in ((j3, g3, m3), (j2, g2, m2), (j1, g1, m1), (j0, g0, m0)):
                out_r, out_t = out_returns[j, t0:], out_turnover[j, t0:]
                _block_out(g, m, n_block, costs[j], n_assets, table, use_table, out_r, out_t)
        out_trades[j3], out_trades[j2], out_trades[j1], out_trades[j0] = c3, c2, c1, c0


#: What to use on a panel with listings (this kernel cannot force weights to zero).
INSTEAD = (
    "the position-function built-in 'xs_momentum', or time-series momentum written with "
    "strategies.position_strategy"
)


class Momentum:
    """Time-series momentum with a dead band.

    Per asset: long if the trailing ``lookback``-period log return exceeds ``band``, short if
    it is below ``-band``, else flat; equal weight ``1/A`` across the ``A`` assets.
    The position formed at the close of period ``t`` earns the simple return from ``t`` to
    ``t + 1`` (no look-ahead); until ``lookback`` periods of history exist the book is flat.
    ``cost`` is charged per unit of one-way turnover (sum of absolute weight changes) in the
    period the new weights are held. The log prices of a panel, and the trailing return of a
    lookback, are computed once for every band that uses them, in this call and in the next
    calls on the same panel object (the few most recent lookbacks are kept). A panel with
    listings is refused (see ``INSTEAD``).
    """

    name = "momentum"
    version = "1"
    params = (
        Param("lookback", "int", window=True, doc="trailing window in periods"),
        Param("band", "float", minimum=0.0, doc="dead band on the trailing log return"),
        Param("cost", "float", minimum=0.0, default=0.0, doc="cost per unit of turnover"),
    )

    def evaluate(
        self,
        panel: Panel,
        params: Mapping[str, NDArray[Any]],
        rngs: Sequence[np.random.Generator],
    ) -> StrategyOutput:
        """Evaluate a batch of configs (see :class:`strategies.Strategy`)."""
        refuse_listings(panel, self.name, INSTEAD)
        n, n_ret = params["lookback"].shape[0], panel.close.shape[0] - 1
        returns = np.empty((n, n_ret))
        turnover = np.empty((n, n_ret))
        n_trades = np.empty(n, dtype=np.int64)
        band = params["band"].astype(np.float64)
        cost = params["cost"].astype(np.float64)
        for lookback, rows in group_rows(params["lookback"]):
            lb = int(lookback)
            strength, signed_return, direction = _MEMO.get(
                panel, ("signal", lb), functools.partial(_signal, panel, lb)
            )
            _banded_positions(
                strength, signed_return, direction, band, cost, rows, returns, turnover, n_trades
            )
        return StrategyOutput(returns, turnover, n_trades)


#: The log prices and asset returns of the last few panels, and the signals of their last
#: few lookbacks (the engine's sub-batches of a grid in order share lookbacks).
_MEMO = PanelMemo(panels=2, entries=6)


def _prices(panel: Panel) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The panel's log prices ``(T, A)`` and asset returns ``(T - 1, A)``."""
    close = panel.close
    log_price = fixed_log(close)  # same bits on every CPU (np.log is dispatched)
    return log_price, asset_returns(close)


def _signal(
    panel: Panel, lb: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Strength, signed return and direction ``(A, T - 1)`` of one lookback (read-only).

    The signal at the close of ``t`` (``t = lb .. T-2``) is the trailing ``lb``-period log
    return; before ``lb`` periods exist the book is flat: strength NaN (never above a band),
    direction and signed return 0 (never read).
    """
    log_price, returns_of_assets = _MEMO.get(panel, "prices", functools.partial(_prices, panel))
    n_ret, n_assets = returns_of_assets.shape
    signal = (log_price[lb:-1] - log_price[: -1 - lb]).T  # (A, T - lb)
    side = np.sign(signal)  # -1.0, 0.0 or 1.0
    strength = np.full((n_assets, n_ret), np.nan)
    direction = np.zeros((n_assets, n_ret))
    signed_return = np.zeros((n_assets, n_ret))
    np.abs(signal, out=strength[:, lb:])
    direction[:, lb:] = side
    np.multiply(side, returns_of_assets[lb:].T, out=signed_return[:, lb:])
    for a in (strength, signed_return, direction):
        a.flags.writeable = False
    return strength, signed_return, direction
