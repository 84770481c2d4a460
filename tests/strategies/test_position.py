"""Tests of the position-function API: declarations, calls, errors, listings, invariant 1."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from strategies import (
    COST_PARAMS,
    EXIT_PARAMS,
    Panel,
    Param,
    PositionStrategy,
    Strategy,
    StrategyError,
    get_strategy,
    position_strategy,
    require_import_path,
    strategy_import_path,
)
from strategies.momentum import Momentum
from tests import position_strategies_for_tests as fixtures

N_DATES, N_ASSETS = 150, 4


def _panel(seed: int = 0, live: np.ndarray | None = None) -> Panel:
    rng = np.random.default_rng(seed)
    close = 20 * np.exp(np.cumsum(rng.normal(0, 0.02, (N_DATES, N_ASSETS)), axis=0))
    dates = pd.bdate_range("2021-01-04", periods=N_DATES).to_numpy()
    return Panel(dates, tuple(f"S{i}" for i in range(N_ASSETS)), close, {}, live)


def _listed() -> np.ndarray:
    live = np.ones((N_DATES, N_ASSETS), dtype=bool)
    live[:40, 1] = False
    live[100:, 3] = False
    return live


def _params(strategy: PositionStrategy, **columns: list) -> dict[str, np.ndarray]:  # type: ignore[type-arg]
    n = len(next(iter(columns.values())))
    out = {p.name: np.array([p.default] * n) for p in strategy.params if p.default is not None}
    out.update({k: np.array(v) for k, v in columns.items()})
    return out


# --- declarations -----------------------------------------------------------------------------


def test_decorator_makes_a_strategy_with_cost_params() -> None:
    s = fixtures.sma_position
    assert isinstance(s, Strategy) and isinstance(s, PositionStrategy)
    assert s.name == "sma_position" and s.version == "1"
    assert [p.name for p in s.params] == [
        "fast",
        "slow",
        *(p.name for p in COST_PARAMS),
        *(p.name for p in EXIT_PARAMS),
    ]
    assert all(p.optional for p in EXIT_PARAMS) and not any(p.optional for p in COST_PARAMS)
    assert s.honours_listings


def test_declared_parameter_the_function_does_not_take() -> None:
    with pytest.raises(
        StrategyError,
        match=r"'mine'.*'windw' is declared but the function does not accept it.*'window'",
    ):

        @position_strategy(params=[Param("windw", "int")])
        def mine(prices, window=3):  # type: ignore[no-untyped-def]
            return prices


def test_undeclared_argument_without_default() -> None:
    with pytest.raises(
        StrategyError, match=r"'mine'.*argument 'slow' has no default and is not declared"
    ):

        @position_strategy(params=[Param("fast", "int")])
        def mine(prices, fast, slow):  # type: ignore[no-untyped-def]
            return prices


@pytest.mark.parametrize(
    ("param", "message"),
    [
        (Param("fee_bps", "float"), "reserved"),
        (Param("n", "integer"), r"kind must be one of \['int', 'float', 'bool'\].*'int'"),
        (Param("n", "int", default=2.5), "default 2.5 is not of kind 'int'"),
        (Param("n", "int", minimum=3, default=1), "below the minimum"),
    ],
)
def test_bad_declarations(param: Param, message: str) -> None:
    with pytest.raises(StrategyError, match=message):
        position_strategy(name="t", params=[param])(lambda prices, **kw: prices)


def test_bad_options() -> None:
    def f(prices):  # type: ignore[no-untyped-def]
        return prices

    with pytest.raises(StrategyError, match="jit=True needs inputs='numpy'"):
        position_strategy(inputs="pandas", jit=True)(f)
    with pytest.raises(StrategyError, match="max_leverage must be a positive finite number"):
        position_strategy(max_leverage=0)(f)
    with pytest.raises(StrategyError, match="version must be a non-empty string"):
        position_strategy(version="")(f)
    with pytest.raises(StrategyError, match="prices as its first positional argument"):
        position_strategy(name="t")(lambda *, n=1: n)


# --- identity ---------------------------------------------------------------------------------


def test_import_path_and_registry() -> None:
    s = fixtures.sma_position
    assert s.import_path == "tests.position_strategies_for_tests:sma_position"
    assert get_strategy(s.import_path) is s
    assert get_strategy(s) is s  # the registry takes the object itself
    assert strategy_import_path(s) == s.import_path
    assert strategy_import_path(get_strategy("xs_momentum")) == "xs_momentum"
    assert strategy_import_path(Momentum()) == "momentum"
    assert fixtures.renamed.import_path == "tests.position_strategies_for_tests:renamed"
    assert get_strategy(fixtures.renamed.import_path) is fixtures.renamed

    @position_strategy
    def local(prices):  # type: ignore[no-untyped-def]
        return prices * 0

    assert local.import_path is None  # defined inside a function: nothing to import
    assert strategy_import_path(local) is None
    with pytest.raises(
        StrategyError,
        match=r"'local' has no import path: it is defined in 'tests\..*' but not under its own name.*to resume it",
    ):
        require_import_path(local, "resume it")
    assert require_import_path(s, "resume it") == s.import_path
    assert require_import_path(Momentum(), "resume it") == "momentum"
    with pytest.raises(StrategyError, match=r"got the class Momentum; pass an instance"):
        get_strategy(Momentum)  # type: ignore[arg-type]


# --- calls and bad output ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        (1, r"strategy 'faulty' \(config mode=1\) raised RuntimeError: the signal service is down"),
        (
            2,
            r"strategy 'faulty' \(config mode=2\) returned weights of shape \(149, 4\); expected \(150, 4\)",
        ),
        (
            3,
            r"strategy 'faulty' \(config mode=3\) returned a weight of nan for asset 'S0' on 2021-01-18 \(row 10\)",
        ),
        (4, r"strategy 'faulty' \(config mode=4\) returned a weight of inf for asset 'S3'"),
    ],
)
def test_bad_output_names_strategy_and_config(mode: int, message: str) -> None:
    s = fixtures.faulty
    with pytest.raises(StrategyError, match=message):
        s.evaluate(_panel(), _params(s, mode=[mode]), [])


def test_not_an_array() -> None:
    s = position_strategy(name="t")(lambda prices: [[0.0]])
    with pytest.raises(StrategyError, match="returned list; expected target weights"):
        s.evaluate(_panel(), {}, [np.random.default_rng(0)])


def test_unknown_parameter_in_a_batch() -> None:
    s = fixtures.sma_position
    params = _params(s, fast=[2], slow=[5])
    params["fats"] = np.array([3])
    with pytest.raises(StrategyError, match=r"unknown parameters \['fats'\].*'fast'"):
        s.evaluate(_panel(), params, [])


def test_prices_are_read_only() -> None:
    def scribble(prices):  # type: ignore[no-untyped-def]
        prices[0, 0] = 1.0
        return prices * 0

    with pytest.raises(StrategyError, match="read-only"):
        position_strategy(scribble).evaluate(_panel(), {}, [np.random.default_rng(0)])


# --- listings ---------------------------------------------------------------------------------


def test_prices_are_nan_where_not_listed_and_such_weights_are_ignored() -> None:
    live = _listed()
    seen = []

    @position_strategy
    def everything(prices):  # type: ignore[no-untyped-def]
        seen.append(prices.copy())
        return np.where(np.isnan(prices), np.nan, 1.0 / prices.shape[1])

    out = everything.evaluate(_panel(live=live), {}, [np.random.default_rng(0)])
    assert np.array_equal(np.isnan(seen[0]), ~live)  # no listing is visible before it happens
    # The same weights with zeros where not listed book identically.
    zeros = position_strategy(name="t")(
        lambda prices: np.nan_to_num(prices * 0) + np.where(np.isnan(prices), 0.0, 0.25)
    )
    again = zeros.evaluate(_panel(live=live), {}, [np.random.default_rng(0)])
    np.testing.assert_array_equal(out.returns, again.returns)


def test_weights_where_not_listed_are_forced_to_zero() -> None:
    live = _listed()
    # Claims a weight in every cell, listed or not: the accounting must hold none unlisted.
    always = position_strategy(name="t")(lambda prices: np.full(prices.shape, 0.25))
    listed = always.evaluate(_panel(live=live), {}, [np.random.default_rng(0)])
    masked = position_strategy(name="t")(lambda prices: np.where(np.isnan(prices), 0.0, 0.25))
    np.testing.assert_array_equal(
        listed.returns, masked.evaluate(_panel(live=live), {}, [np.random.default_rng(0)]).returns
    )
    unlisted = position_strategy(name="t")(lambda prices: np.where(np.isnan(prices), 0.25, 0.0))
    none = unlisted.evaluate(_panel(live=live), {}, [np.random.default_rng(0)])
    assert not none.returns.any() and not none.n_trades.any()


# --- invariant 1, pandas, numba, rng ----------------------------------------------------------


def test_invariant_1_alone_equals_inside_a_shuffled_batch() -> None:
    s = fixtures.sma_position
    panel = _panel(3)
    pairs = [(f, sl) for f in (2, 3, 5, 8) for sl in (10, 20, 40)]
    fee = [0.0, 5.0, 12.5]
    batch = _params(
        s,
        fast=[p[0] for p in pairs],
        slow=[p[1] for p in pairs],
        fee_bps=[fee[i % 3] for i in range(len(pairs))],
    )
    out = s.evaluate(panel, batch, [])
    order = np.random.default_rng(1).permutation(len(pairs))
    shuffled = s.evaluate(panel, {k: v[order] for k, v in batch.items()}, [])
    for j in range(len(pairs)):
        alone = s.evaluate(panel, {k: v[j : j + 1] for k, v in batch.items()}, [])
        assert alone.returns[0].tobytes() == out.returns[j].tobytes()
        assert alone.turnover[0].tobytes() == out.turnover[j].tobytes()
        assert alone.n_trades[0] == out.n_trades[j]
        k = int(np.flatnonzero(order == j)[0])
        assert shuffled.returns[k].tobytes() == out.returns[j].tobytes()


def test_pandas_inputs_see_dates_and_assets() -> None:
    panel = _panel(4)

    @position_strategy(inputs="pandas", params=[Param("window", "int", window=True)])
    def framed(prices: pd.DataFrame, window: int) -> pd.DataFrame:
        assert list(prices.columns) == list(panel.assets)
        assert prices.index[0] == pd.Timestamp("2021-01-04")
        return (prices > prices.rolling(window).mean()).astype(float) / prices.shape[1]

    @position_strategy(params=[Param("window", "int", window=True)])
    def plain(prices: np.ndarray, window: int) -> np.ndarray:
        mean = pd.DataFrame(prices).rolling(window).mean().to_numpy()
        with np.errstate(invalid="ignore"):
            return (prices > mean).astype(float) / prices.shape[1]

    a = framed.evaluate(panel, _params(framed, window=[5, 30]), [])
    b = plain.evaluate(panel, _params(plain, window=[5, 30]), [])
    np.testing.assert_array_equal(a.returns, b.returns)


def test_jit_compiles_and_agrees() -> None:
    def band(prices, width):  # type: ignore[no-untyped-def]
        out = np.zeros(prices.shape)
        for t in range(1, prices.shape[0]):
            for a in range(prices.shape[1]):
                move = prices[t, a] / prices[t - 1, a] - 1.0
                out[t, a] = 0.2 if move < -width else (-0.2 if move > width else 0.0)
        return out

    declared = [Param("width", "float", minimum=0.0)]
    compiled = position_strategy(params=declared, jit=True)(band)
    python = position_strategy(params=declared)(band)
    panel = _panel(5)
    a = compiled.evaluate(panel, _params(compiled, width=[0.01, 0.02]), [])
    b = python.evaluate(panel, _params(python, width=[0.01, 0.02]), [])
    np.testing.assert_array_equal(a.returns, b.returns)
    assert a.n_trades.min() > 0


def test_rng_is_the_configs_own() -> None:
    s = fixtures.noisy
    panel = _panel(6)
    rngs = [np.random.default_rng(11), np.random.default_rng(12)]
    out = s.evaluate(panel, _params(s, scale=[1.0, 1.0]), rngs)
    alone = s.evaluate(panel, _params(s, scale=[1.0]), [np.random.default_rng(12)])
    assert alone.returns[0].tobytes() == out.returns[1].tobytes()
    assert out.returns[0].tobytes() != out.returns[1].tobytes()


def test_leverage_cap_and_long_only_apply() -> None:
    panel = _panel(7)
    heavy = position_strategy(name="t", max_leverage=1.0)(
        lambda prices: np.full(prices.shape, -0.75)
    )
    capped = position_strategy(name="t")(lambda prices: np.full(prices.shape, -0.25))
    np.testing.assert_allclose(
        heavy.evaluate(panel, {}, [np.random.default_rng(0)]).returns,
        capped.evaluate(panel, {}, [np.random.default_rng(0)]).returns,
        rtol=1e-12,
        atol=1e-16,
    )
    short = position_strategy(name="t", long_only=True)(lambda prices: np.full(prices.shape, -0.25))
    assert not short.evaluate(panel, {}, [np.random.default_rng(0)]).returns.any()


def test_pickles_to_a_worker_with_or_without_an_import_path() -> None:
    from ray import cloudpickle

    @position_strategy(name="local_jit", jit=True, params=[Param("k", "float", default=0.5)])
    def local(prices, k):  # type: ignore[no-untyped-def]
        return np.full(prices.shape, k / prices.shape[1])

    panel = _panel(8)
    for s in (local, fixtures.sma_position, get_strategy("xs_momentum")):
        params = {p.name: np.array([p.default]) for p in s.params if p.default is not None}
        params.update({p.name: np.array([3]) for p in s.params if p.default is None})
        before = s.evaluate(panel, params, [])  # compiles a jit function first
        copy = cloudpickle.loads(cloudpickle.dumps(s))
        assert copy.name == s.name and copy.import_path == s.import_path
        after = copy.evaluate(panel, params, [])
        assert after.returns.tobytes() == before.returns.tobytes()


def test_a_strategy_defined_in_main_says_it_has_no_import_path(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "notebook_like.py"
    script.write_text(
        textwrap.dedent(
            """
            from strategies import position_strategy, require_import_path

            @position_strategy
            def mine(prices):
                return prices * 0

            assert mine.import_path is None
            try:
                require_import_path(mine, "resume this run from the command line")
            except Exception as exc:
                print(exc)
            """
        )
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (
        "strategy 'mine' has no import path: it is defined in __main__ (a script or a notebook)"
        in proc.stdout
    )


def test_pandas_weights_are_aligned_by_asset_and_checked_by_date() -> None:
    panel = _panel(9)

    @position_strategy(name="reordered", inputs="pandas")
    def reordered(prices: pd.DataFrame) -> pd.DataFrame:
        prices["extra"] = 1.0  # stays in this call: the next config sees the panel's columns
        weights = pd.DataFrame(0.0, index=prices.index, columns=list(reversed(panel.assets)))
        weights["S0"] = 0.5  # only the first asset, written in a reversed frame
        return weights

    @position_strategy(name="first_only")
    def first_only(prices: np.ndarray) -> np.ndarray:
        out = np.zeros(prices.shape)
        out[:, 0] = 0.5
        return out

    a = reordered.evaluate(panel, {}, [np.random.default_rng(0)] * 2)
    b = first_only.evaluate(panel, {}, [np.random.default_rng(0)])
    np.testing.assert_array_equal(a.returns[0], b.returns[0])
    np.testing.assert_array_equal(a.returns[1], b.returns[0])

    @position_strategy(name="shifted", inputs="pandas")
    def shifted(prices: pd.DataFrame) -> pd.DataFrame:
        return (prices * 0).shift(1, freq="D")

    with pytest.raises(StrategyError, match="returned a DataFrame whose dates are not the panel's"):
        shifted.evaluate(panel, {}, [np.random.default_rng(0)])

    @position_strategy(name="renamed", inputs="pandas")
    def renamed(prices: pd.DataFrame) -> pd.DataFrame:
        return (prices * 0).add_suffix("_w")

    with pytest.raises(StrategyError, match=r"returned a DataFrame with columns \['S0_w'"):
        renamed.evaluate(panel, {}, [np.random.default_rng(0)])


def test_jit_that_numba_cannot_compile_fails_with_a_clear_error() -> None:
    @position_strategy(name="pandas_inside", jit=True)
    def pandas_inside(prices):  # type: ignore[no-untyped-def]
        return pd.DataFrame(prices).rolling(3).mean().to_numpy()

    with pytest.raises(
        StrategyError,
        match=r"strategy 'pandas_inside' \(no declared parameters\) raised TypingError",
    ):
        pandas_inside.evaluate(_panel(), {}, [np.random.default_rng(0)])
