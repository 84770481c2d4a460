"""The bar book (exit levels, next-open fills) against vectorbt and backtesting.py.

On the peers' own OHLCV data (backtesting.py's GOOG daily and EURUSD hourly, read from the
installed package), a signal of constant magnitude booked by :func:`strategies.account`:

- equals vectorbt 1.2's ``Portfolio.from_signals`` with the same stops bar for bar (value to
  1e-9 at every bar, the same orders at the same bars, sizes and prices);
- gives backtesting.py's trades (``Strategy.buy(sl=..., tp=...)`` with
  ``trade_on_close=True``): the same entry and exit bars and exit prices, except on the bars
  where the two rules differ (a bar that opens through the take-profit and also reaches the
  stop: backtesting.py takes the stop, raysweep the take-profit at the open; listed in the
  docs' costs-and-accounting page).

Hypothesis then checks the invariants on random bars: no fill outside the bar's range, a
stop never fills better than its level but at a gap through it at the open, and an exit is
booked in the period of its bar.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from strategies import Book, Costs, Execution, Exits, account

backtesting_test = pytest.importorskip("backtesting.test", reason="backtesting.py's data")


def _bars(df: pd.DataFrame) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    close = df["Close"].to_numpy(np.float64)[:, None]
    fields = {f: df[f.title()].to_numpy(np.float64)[:, None] for f in ("open", "high", "low")}
    return close, fields


def _sma(x: np.ndarray, n: int) -> np.ndarray:
    return pd.Series(x).rolling(n).mean().to_numpy()


def _cross_sign(close: np.ndarray, fast: int, slow: int) -> np.ndarray:
    """+1 / -1 by the sign of fast minus slow SMA; 0 until the slow one exists."""
    f, s = _sma(close[:, 0], fast), _sma(close[:, 0], slow)
    sign = np.sign(np.nan_to_num(f - s))
    sign[:slow] = 0.0
    return sign


DATA = {"GOOG": backtesting_test.GOOG, "EURUSD": backtesting_test.EURUSD}
#: Levels are scaled to the data's bar range: hourly EURUSD moves a tenth of daily GOOG.
SCALE = {"GOOG": 1.0, "EURUSD": 0.1}
#: (stop_loss, take_profit, trailing_stop): each rule alone, both fixed levels, tight levels.
LEVELS = [
    (0.04, 0.0, 0.0),
    (0.0, 0.06, 0.0),
    (0.04, 0.06, 0.0),
    (0.0, 0.0, 0.05),
    (0.02, 0.03, 0.0),
]


def _vectorbt(close, fields, weights, equity, exits: Exits, fee: float, slip: float):
    vbt = pytest.importorskip("vectorbt")
    s = weights[:, 0]
    prev = np.concatenate([[0.0], s[:-1]])
    stops: dict[str, object] = {"tp_stop": exits.take_profit or np.nan}
    if exits.trailing_stop:
        stops |= {"sl_stop": exits.trailing_stop, "sl_trail": True}
    else:
        stops["sl_stop"] = exits.stop_loss or np.nan
    return vbt.Portfolio.from_signals(
        pd.Series(close[:, 0]),
        (s > 0) & (prev <= 0),
        (s <= 0) & (prev > 0),
        (s < 0) & (prev >= 0),
        (s >= 0) & (prev < 0),
        open=fields["open"][:, 0],
        high=fields["high"][:, 0],
        low=fields["low"][:, 0],
        size=np.abs(s) * equity,  # |w| V_t: the value each entry buys, as the book sizes it
        size_type="value",
        fees=fee,
        slippage=slip,
        init_cash=10_000.0,
        stop_entry_price="close",
        stop_exit_price="stopmarket",
        upon_stop_exit="close",
        freq="1D",
        **stops,
    )


@pytest.mark.parametrize("data", sorted(DATA))
@pytest.mark.parametrize("levels", LEVELS, ids=lambda v: "sl{}-tp{}-trail{}".format(*v))
def test_vectorbt_from_signals_bar_for_bar(data: str, levels: tuple[float, float, float]) -> None:
    close, fields = _bars(DATA[data])
    weights = (0.9 * _cross_sign(close, 10, 30))[:, None]
    exits = Exits(*(level * SCALE[data] for level in levels))
    fee, slip = 0.001, 0.0005
    costs = Costs(fee_bps=fee / 1e-4, slippage_bps=slip / 1e-4, capital=10_000.0)
    book = account(
        weights,
        close,
        np.ones_like(close, bool),
        costs,
        Book(),
        exits=exits,
        fields=fields,
        fills=True,
    )
    pf = _vectorbt(close, fields, weights, book.equity, exits, fee, slip)
    np.testing.assert_allclose(book.equity_after, pf.value().to_numpy(), rtol=1e-9, atol=0)
    orders = pf.orders.records
    assert book.fills is not None and book.n_trades == len(orders) > 20
    assert book.exit_counts is not None and sum(book.exit_counts.as_tuple()[:3]) > 5
    np.testing.assert_array_equal(book.fills[:, 0].astype(int), orders["idx"])
    np.testing.assert_allclose(np.abs(book.fills[:, 2]), orders["size"], rtol=1e-9)
    slipped = np.where(book.fills[:, 2] > 0, 1 + slip, 1 - slip) * book.fills[:, 3]
    np.testing.assert_allclose(slipped, orders["price"], rtol=1e-12)


def _backtesting_trades(df: pd.DataFrame, fast: int, slow: int, sl: float, tp: float):
    from backtesting import Backtest, Strategy

    class Cross(Strategy):
        """Long while fast > slow; after a stop, flat until the signal changes (raysweep's rule)."""

        def init(self) -> None:
            self.fast = self.I(_sma, self.data.Close, fast)
            self.slow = self.I(_sma, self.data.Close, slow)
            self.held, self.blocked = False, None

        def next(self) -> None:
            up = bool(self.fast[-1] > self.slow[-1])
            if self.held and not self.position:  # a level closed it inside this bar
                self.blocked = up
            self.held = bool(self.position)
            if self.blocked is not None:
                if up == self.blocked:
                    return
                self.blocked = None
            close = self.data.Close[-1]
            if up and not self.position:
                self.buy(sl=close * (1 - sl) if sl else None, tp=close * (1 + tp) if tp else None)
                self.held = True
            elif not up and self.position:
                self.position.close()
                self.held = False

    with warnings.catch_warnings():  # the peer's own deprecation warnings under pandas 3
        warnings.simplefilter("ignore")
        stats = Backtest(df, Cross, cash=1e9, trade_on_close=True).run()
    return stats._trades[["EntryBar", "ExitBar", "ExitPrice"]].to_numpy()


def _round_trips(fills: np.ndarray) -> np.ndarray:
    """(entry bar, exit bar, exit price) of each long round trip of a one-asset fill log."""
    entries = fills[fills[:, 2] > 0]
    exits = fills[fills[:, 2] < 0]
    n = min(len(entries), len(exits))
    return np.column_stack([entries[:n, 0], exits[:n, 0], exits[:n, 3]])


def _opens_through_take_profit_and_reaches_stop(df, trips, sl, tp) -> np.ndarray:
    """Exit bars where the two rules differ: open at or beyond the take-profit, low at the stop."""
    close, fields = _bars(df)
    entry = close[trips[:, 0].astype(int), 0]
    at = trips[:, 1].astype(int)
    return (fields["open"][at, 0] >= entry * (1 + tp)) & (fields["low"][at, 0] <= entry * (1 - sl))


@pytest.mark.parametrize("data", sorted(DATA))
@pytest.mark.parametrize(
    "levels", [(0.04, 0.06), (0.02, 0.03), (0.03, 0.0), (0.0, 0.05), (0.002, 0.002)]
)
def test_backtesting_py_trades_with_sl_and_tp(data: str, levels: tuple[float, float]) -> None:
    pytest.importorskip("backtesting")
    df = DATA[data]
    close, fields = _bars(df)
    sl, tp = (level * SCALE[data] for level in levels)
    weights = (0.5 * (_cross_sign(close, 10, 30) > 0))[:, None]
    book = account(
        weights,
        close,
        np.ones_like(close, bool),
        Costs(),
        Book(long_only=True),
        exits=Exits(sl, tp),
        fields=fields,
        fills=True,
    )
    assert book.fills is not None
    ours = _round_trips(book.fills)
    theirs = _backtesting_trades(df, 10, 30, sl, tp)
    assert len(ours) == len(theirs) > 10
    same = (ours[:, :2] == theirs[:, :2]).all(axis=1) & np.isclose(
        ours[:, 2], theirs[:, 2], rtol=1e-12, atol=0
    )
    differ = ~same
    if sl and tp:
        explained = _opens_through_take_profit_and_reaches_stop(df, ours, sl, tp)
        assert (explained[differ]).all(), ours[differ & ~explained][:3]
        assert (ours[differ, 2] > theirs[differ, 2]).all()  # raysweep took the take-profit
    else:
        assert not differ.any(), (ours[differ][:3], theirs[differ][:3])


# ---- invariants on random bars ---------------------------------------------------------------
@st.composite
def random_bars(draw: st.DrawFn) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    n = draw(st.integers(20, 80))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    close = 100.0 * np.cumprod(1.0 + rng.normal(0, 0.02, n))
    opens = np.concatenate([[100.0], close[:-1]]) * (1.0 + rng.normal(0, 0.01, n))
    high = np.maximum(opens, close) * (1.0 + np.abs(rng.normal(0, 0.01, n)))
    low = np.minimum(opens, close) * (1.0 - np.abs(rng.normal(0, 0.01, n)))
    weights = rng.choice([-0.5, 0.0, 0.5], size=n)
    fields = {"open": opens[:, None], "high": high[:, None], "low": low[:, None]}
    return close[:, None], fields, weights[:, None]


LEVEL = st.sampled_from([0.0, 0.005, 0.01, 0.03])


@settings(max_examples=200, deadline=None)
@given(random_bars(), LEVEL, LEVEL, LEVEL, st.sampled_from(["close", "next_open"]))
def test_fills_lie_in_the_bar_and_stops_fill_at_their_level_or_a_gap(
    bars, sl: float, tp: float, trail: float, fill: str
) -> None:
    assume(sl or tp or trail or fill == "next_open")  # else it is the close-only book
    close, fields, weights = bars
    book = account(
        weights,
        close,
        np.ones_like(close, bool),
        Costs(slippage_bps=3.0, fee_bps=2.0),
        Book(),
        exits=Exits(sl, tp, trail),
        execution=Execution(fill=fill),
        fields=fields,
        fills=True,
    )
    assert book.fills is not None and len(book.fills) == book.n_trades
    counts = book.exit_counts
    assert counts is not None
    whys = book.fills[:, 4].astype(int)
    assert [int((whys == k).sum()) for k in (1, 2, 3)] == list(counts.as_tuple()[:3])
    o, h, lo = (fields[f][:, 0] for f in ("open", "high", "low"))
    held, entry, entry_bar = 0.0, 0.0, 0
    for bar, _, step, price, why in book.fills:
        t = int(bar)
        if why == 0 and fill == "close":
            assert price == close[t, 0]
        else:  # an open fill or an exit inside the bar: never outside the bar's range
            assert lo[t] <= price <= h[t]
        if why:
            _check_exit_level(
                int(why), held > 0, price, t, entry, entry_bar, fill, o, h, lo, (sl, tp, trail)
            )
        new = held + step  # the book sets the shares exactly; their sum may leave a residue
        new = 0.0 if abs(new) <= 1e-9 * abs(step) else new
        if np.sign(new) != np.sign(held):
            entry, entry_bar = price, t
        held = 0.0 if why else new


def _check_exit_level(why, long, price, t, entry, entry_bar, fill, o, h, lo, levels):  # noqa: PLR0913
    """An exit fills at its level, or at the open when the bar opened beyond it (a gap)."""
    sl, tp, trail = levels
    first = entry_bar if fill == "next_open" else entry_bar + 1  # bars that moved the best price
    if why == 2:
        level = entry * (1 + tp) if long else entry * (1 - tp)
        gap = o[t] >= level if long else o[t] <= level
    else:
        best = (max if long else min)([entry, *(h if long else lo)[first:t]])
        stops = []
        if sl:
            stops.append(entry * (1 - sl) if long else entry * (1 + sl))
        if trail:
            stops.append(best * (1 - trail) if long else best * (1 + trail))
        level = max(stops) if long else min(stops)
        gap = o[t] <= level if long else o[t] >= level
        # never better than the level: a long sells at or below it, a short buys at or above
        assert (price <= level) if long else (price >= level)
    assert price == (o[t] if gap else level), (why, long, price, level, o[t])
