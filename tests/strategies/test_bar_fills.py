"""The bar book's rules on hand-made bars: gaps, ambiguous bars, re-entry, next-open fills."""

from __future__ import annotations

import numpy as np
import pytest

from strategies import Book, Costs, Execution, Exits, StrategyError, account

#: One asset, capital 100, prices near 100: the numbers below are read off by hand.
CAPITAL = Costs(capital=100.0)


def _book(rows, weights, exits=Exits(), execution=Execution(), costs=CAPITAL):  # noqa: B008
    """Book one asset on rows of (open, high, low, close)."""
    bars = np.array(rows, dtype=np.float64)
    fields = {name: bars[:, k : k + 1] for k, name in enumerate(("open", "high", "low"))}
    close = bars[:, 3:4]
    w = np.array(weights, dtype=np.float64)[:, None]
    return account(
        w,
        close,
        np.ones_like(close, bool),
        costs,
        Book(),
        exits=exits,
        execution=execution,
        fields=fields,
        fills=True,
    )


def _exits(book):
    """(bar, price, why) of every exit fill."""
    return [(int(b), float(p), int(y)) for b, _, _, p, y in book.fills if y]


def test_a_stop_fills_at_its_level_inside_the_bar_and_at_the_open_on_a_gap() -> None:
    rows = [(100, 100, 100, 100), (99, 99.5, 94, 97), (97, 97, 90, 92)]
    inside = _book(rows, [1, 1, 1], Exits(stop_loss=0.05))
    assert _exits(inside) == [(1, 95.0, 1)]
    gap = _book([(100, 100, 100, 100), (93, 96, 92, 95), (95, 95, 95, 95)], [1, 1, 1], Exits(0.05))
    assert _exits(gap) == [(1, 93.0, 1)]  # opened below the level: filled at the open
    assert gap.exit_counts is not None and gap.exit_counts.stop == 1


def test_an_ambiguous_bar_is_counted_and_resolved_by_the_chosen_rule() -> None:
    rows = [(100, 100, 100, 100), (100, 106, 94, 100), (100, 100, 100, 100)]
    both = Exits(stop_loss=0.05, take_profit=0.05)
    first = _book(rows, [1, 1, 1], both)
    assert _exits(first) == [(1, 95.0, 1)]
    assert first.exit_counts is not None and first.exit_counts.as_tuple() == (1, 0, 0, 1)
    taken = _book(rows, [1, 1, 1], both, Execution(ambiguous="take_profit_first"))
    assert _exits(taken) == [(1, 105.0, 2)]
    assert taken.exit_counts is not None and taken.exit_counts.as_tuple() == (0, 1, 0, 1)


def test_a_trailing_stop_follows_the_highs_of_earlier_bars() -> None:
    rows = [(100, 100, 100, 100), (101, 110, 100, 109), (109, 109, 98, 100), (100, 100, 100, 100)]
    book = _book(rows, [1, 1, 1, 1], Exits(trailing_stop=0.1))
    # bar 1 checks 100 * 0.9 (its own high moves the level only after it), bar 2 110 * 0.9
    assert _exits(book) == [(2, 99.0, 3)]
    assert book.exit_counts is not None and book.exit_counts.trailing == 1


def test_after_an_exit_the_asset_stays_flat_until_the_target_changes() -> None:
    stop_bar = (100, 100, 90, 95)  # stops a long out at 95 (5%)
    flat = (95, 95, 95, 95)
    rows = [(100, 100, 100, 100), stop_bar, flat, flat, flat, flat]
    held = _book(rows, [1, 1, 1, 1, 1, 0], Exits(0.05))
    assert [(int(b), float(s) > 0) for b, _, s, _, _ in held.fills] == [(0, True), (1, False)]
    again = _book(rows, [1, 1, 1, 0, 1, 0], Exits(0.05))  # to zero and back: re-entered
    assert [int(b) for b, *_ in again.fills] == [0, 1, 4]  # (the last row is never traded)
    flipped = _book(rows, [1, 1, 1, -1, -1, 0], Exits(0.05))  # a change of sign enters
    assert [(int(b), float(s) < 0) for b, _, s, _, _ in flipped.fills][2] == (3, True)
    at_the_stop_bar = _book(rows, [1, -1, -1, -1, 1, 0], Exits(0.05))  # formed on the exit bar
    assert [int(b) for b, *_ in at_the_stop_bar.fills] == [0, 1, 4]


def test_next_open_fills_at_the_next_open_and_checks_the_entry_bar() -> None:
    rows = [(100, 100, 100, 100), (102, 103, 96, 97), (97, 97, 97, 97)]
    book = _book(rows, [1, 1, 0], Exits(stop_loss=0.05), Execution(fill="next_open"))
    # the order of close 0 fills at open 1 (102); the stop at 96.9 lies in bar 1's range
    assert [(int(b), float(p), int(y)) for b, _, _, p, y in book.fills] == [
        (1, 102.0, 0),
        (1, 102 * 0.95, 1),
    ]
    plain = _book([*rows, rows[-1]], [1, 1, 0, 0], execution=Execution(fill="next_open"))
    assert [(int(b), float(p)) for b, _, _, p, _ in plain.fills] == [(1, 102.0), (3, 97.0)]


def test_slippage_and_fees_apply_to_an_exit_fill() -> None:
    rows = [(100, 100, 100, 100), (99, 99, 90, 92)]
    costs = Costs(capital=100.0, fee_bps=10.0, slippage_bps=20.0)
    book = _book(rows, [1, 1], Exits(stop_loss=0.05), costs=costs)
    shares = 100.0 / 100.0  # all-in at the close, no fee yet paid from the sizing
    buy = 100.0 * (1 + 0.002)
    sell = 95.0 * (1 - 0.002)
    cash = 100.0 - shares * buy - shares * buy * 0.001 + shares * sell - shares * sell * 0.001
    assert book.equity[1] == pytest.approx(cash, rel=1e-12)


def test_levels_need_the_open_high_and_low() -> None:
    close = np.full((3, 1), 100.0)
    with pytest.raises(
        StrategyError, match="need the panel's open, high, low; it has no high, low"
    ):
        account(
            np.ones_like(close),
            close,
            np.ones_like(close, bool),
            CAPITAL,
            Book(),
            exits=Exits(stop_loss=0.1),
            fields={"open": close},
        )


def test_with_every_level_off_the_bar_book_holds_instead_of_rebalancing() -> None:
    rng = np.random.default_rng(5)
    close = 100 * np.cumprod(1 + rng.normal(0, 0.01, (50, 2)), axis=0)
    w = np.repeat(rng.choice([-0.4, 0.4], size=(5, 2)), 10, axis=0)  # changes every 10 rows
    live = np.ones_like(close, bool)
    drift = account(w, close, live, CAPITAL, Book())  # the close book rebalances each close
    held = account(w, close, live, CAPITAL, Book(), exits=Exits(), fills=True)  # close only
    assert drift.exit_counts is None and drift.n_trades > 80
    assert held.exit_counts is not None and held.exit_counts.as_tuple() == (0, 0, 0, 0)
    changes = int((np.diff(w[:-1], axis=0) != 0).sum()) + 2  # and the first orders
    assert held.n_trades == changes
    assert held.returns[0] == drift.returns[0]  # the same first orders, before any drift


def test_a_bad_rule_name_is_refused_naming_the_choices() -> None:
    with pytest.raises(StrategyError, match=r"fill: expected one of \['close', 'next_open'\]"):
        Execution(fill="open")


def test_a_configs_row_is_the_same_alone_or_in_any_batch() -> None:
    from strategies.xs_momentum import xs_momentum
    from sweep.data._panels import synthetic_panel

    panel = synthetic_panel(years=4, ohlcv=True)
    rng = np.random.default_rng(11)
    n = 24
    params = {
        "lookback": rng.choice([20, 60], n),
        "skip": np.zeros(n, dtype=np.int64),
        "top_k": np.ones(n, dtype=np.int64),
        "fee_bps": rng.choice([0.0, 5.0], n),
        "stop_loss": rng.choice([0.0, 0.02, 0.05], n),
        "take_profit": rng.choice([0.0, 0.04], n),
        "trailing_stop": rng.choice([0.0, 0.03], n),
    }
    order = np.argsort(params["lookback"], kind="stable")  # runs of equal weights, then not
    batches = [np.arange(n), order, rng.permutation(n)]
    alone = [
        xs_momentum.evaluate(panel, {k: v[j : j + 1] for k, v in params.items()}, [])
        for j in range(n)
    ]
    for batch in batches:
        out = xs_momentum.evaluate(panel, {k: v[batch] for k, v in params.items()}, [])
        assert out.exit_counts is not None
        for row, j in enumerate(batch):
            assert out.returns[row].tobytes() == alone[j].returns[0].tobytes()
            assert out.turnover[row].tobytes() == alone[j].turnover[0].tobytes()
            assert out.n_trades[row] == alone[j].n_trades[0]
            assert (out.exit_counts[row] == alone[j].exit_counts[0]).all()
    assert sum(int(a.exit_counts[0, :3].sum()) for a in alone) > 0, "some level should fire"
