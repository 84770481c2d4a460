"""Position-function strategies through the engine: specs, failure rows, listings, invariant 1,
and the look-ahead check (``sweep check-strategy``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from strategies import Panel
from sweep import check_strategy, evaluate_batch, load_results, resolve, run_sweep, spec_from_dict
from sweep.errors import ConfigFailedError, StrategySpecError
from tests.helpers import write_spec

FIXTURES = "tests.position_strategies_for_tests"


def _doc(strategy: str, grid: dict[str, Any], **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "positions",
        "seed": 5,
        "data": {"source": "synthetic", "years": 3},
        "strategy": {"name": strategy},
        "grid": grid,
        "metrics": {"bootstrap_reps": 20, "block_length": 10, "pbo_blocks": 8},
    }
    doc.update(extra)
    return doc


def _listed_panel(n: int = 400, assets: int = 6) -> Panel:
    rng = np.random.default_rng(3)
    close = 50 * np.exp(np.cumsum(rng.normal(0, 0.015, (n, assets)), axis=0))
    live = np.ones((n, assets), dtype=bool)
    live[:120, 0] = False
    live[300:, 4] = False
    close[:120, 0] = close[120, 0]
    close[300:, 4] = close[299, 4]
    dates = pd.bdate_range("2018-01-01", periods=n).to_numpy()
    return Panel(dates, tuple(f"X{i}" for i in range(assets)), close, {}, live)


def test_failures_are_recorded_per_config_and_the_sweep_goes_on(tmp_path: Path) -> None:
    spec = spec_from_dict(_doc(f"{FIXTURES}:faulty", {"mode": [0, 1, 2, 3, 4]}))
    summary = run_sweep(spec, tmp_path / "rec", progress=False, batch_size=5)
    frame = load_results(tmp_path / "rec").set_index("mode")
    assert summary.failed == 4
    assert frame.loc[0, "status"] == "ok" and np.isfinite(frame.loc[0, "sharpe"])
    expected = {
        1: "strategy 'faulty' (config mode=1) raised RuntimeError: the signal service is down",
        2: "strategy 'faulty' (config mode=2) returned weights of shape",
        3: "strategy 'faulty' (config mode=3) returned a weight of nan for asset",
        4: "strategy 'faulty' (config mode=4) returned a weight of inf for asset",
    }
    for mode, text in expected.items():
        assert frame.loc[mode, "status"] == "error"
        assert text in frame.loc[mode, "error"], frame.loc[mode, "error"]
    with pytest.raises(ConfigFailedError, match=r"strategy 'faulty' \(config mode=1\) raised"):
        run_sweep(spec, tmp_path / "raise", progress=False, batch_size=5, on_error="raise")


def test_a_resumed_session_counts_the_failures_its_start_found(tmp_path: Path) -> None:
    # The first session stops after two parts of one config; the resume counts the failed
    # configs of those parts from its start's survey (no part read again) plus its own, and
    # finishes the table hash from the parts' digests: as `sweep status` and a fresh count.
    from sweep.runner._status import failed_count, run_status
    from sweep.store._results import results_hash
    from sweep.store._run_store import RunStore
    from tests.helpers import StopAfter

    spec = spec_from_dict(_doc(f"{FIXTURES}:faulty", {"mode": [0, 1, 2, 3, 4]}))
    run = tmp_path / "run"
    first = run_sweep(spec, run, progress=False, batch_size=1, executor=StopAfter(2))
    assert first.status == "incomplete" and first.failed == 1  # modes 0 and 1
    resumed = run_sweep(spec, run, progress=False, batch_size=1)
    store = RunStore(run)
    good = store.good_parts()[0]
    assert resumed.computed == 3 and resumed.failed == failed_count(store, good) == 4
    assert resumed.table_hash == results_hash(run) == run_status(run).table_hash
    assert run_status(run).failed == 4


def test_costs_section_and_grid_take_the_cost_parameters() -> None:
    doc = _doc(
        f"{FIXTURES}:sma_position",
        {"fast": [5, 10], "slow": [50], "fee_bps": [0.0, 10.0]},
        costs={"slippage_bps": 2.0, "fixed_fee": 5.0},
    )
    sweep = resolve(spec_from_dict(doc))
    frame = evaluate_batch(sweep, np.arange(len(sweep.grid))).table.to_pandas()
    assert (frame["status"] == "ok").all()
    assert set(frame["slippage_bps"]) == {2.0} and set(frame["capital"]) == {1_000_000.0}
    free, costly = (frame[frame["fee_bps"] == f].set_index("fast") for f in (0.0, 10.0))
    assert (costly["total_return"] < free["total_return"]).all()


def test_invariant_1_through_evaluate_batch() -> None:
    sweep = resolve(
        spec_from_dict(
            _doc(
                "xs_momentum", {"lookback": [20, 60, 120], "top_k": [1, 2]}, costs={"fee_bps": 3.0}
            ),
        ),
        panel=_listed_panel(),
    )
    every = evaluate_batch(sweep, np.arange(6)).table.to_pandas().set_index("config_id")
    for i in (5, 0, 3):
        alone = evaluate_batch(sweep, np.array([i])).table.to_pandas().set_index("config_id")
        cid = alone.index[0]
        for column in ("sharpe", "total_return", "turnover", "blk_sum_00", "p_value"):
            assert alone.loc[cid, column].tobytes() == every.loc[cid, column].tobytes()
    assert (every["status"] == "ok").all()


def test_random_strategy_rows_come_from_the_config_seed() -> None:
    sweep = resolve(spec_from_dict(_doc(f"{FIXTURES}:noisy", {"scale": [0.5, 1.0, 2.0]})))
    every = evaluate_batch(sweep, np.array([2, 0, 1])).table.to_pandas().set_index("config_id")
    alone = evaluate_batch(sweep, np.array([1])).table.to_pandas().set_index("config_id")
    cid = alone.index[0]
    assert alone.loc[cid, "mean"].tobytes() == every.loc[cid, "mean"].tobytes()


def test_batch_kernels_refuse_a_panel_with_listings_position_strategies_take_it() -> None:
    panel = _listed_panel()
    with pytest.raises(StrategySpecError, match=r"'momentum' is a batch kernel.*xs_momentum"):
        resolve(spec_from_dict(_doc("momentum", {"lookback": [20], "band": [0.0]})), panel=panel)
    sweep = resolve(spec_from_dict(_doc("trend_filter", {"window": [20, 50]})), panel=panel)
    assert (evaluate_batch(sweep, np.arange(2)).table.to_pandas()["status"] == "ok").all()


def test_check_strategy_names_a_peeking_strategy_and_passes_a_clean_one() -> None:
    peek = check_strategy(spec_from_dict(_doc(f"{FIXTURES}:peeking", {"window": [5, 20]})))
    assert len(peek) == 2 and not any(r.clean for r in peek)
    first = peek[0]
    assert first.period is not None and first.cut is not None and first.period <= first.cut
    assert "strategy 'peeking' (config window=5) looks ahead" in first.message()
    # It reads tomorrow's close from the first row its moving average exists: row window - 1.
    assert [(r.period, r.exact) for r in peek] == [(4, True), (19, True)]
    assert f"the first offending period: 4 ({first.date})" in first.message()
    # Normalising by the whole sample peeks at every date: caught at the first cut or before.
    (full,) = check_strategy(
        spec_from_dict(_doc(f"{FIXTURES}:zscore_full_sample", {"window": [10]}))
    )
    assert not full.clean and full.period is not None and full.period <= full.cuts[0]
    clean = check_strategy(
        spec_from_dict(_doc(f"{FIXTURES}:sma_position", {"fast": [5, 10], "slow": [50, 100]})),
        n_configs=4,
    )
    assert len(clean) == 4 and all(r.clean for r in clean)
    builtins = {
        "xs_momentum": {"lookback": [60]},
        "rsi_reversion": {"window": [14]},
        "bollinger_reversion": {"window": [20]},
        "trend_filter": {"window": [50]},
    }
    for name, grid in builtins.items():
        (report,) = check_strategy(spec_from_dict(_doc(name, grid)), n_configs=1)
        assert report.clean, report.message()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sweep", *args], capture_output=True, text=True)


def test_check_strategy_command(tmp_path: Path) -> None:
    peek = write_spec(tmp_path / "peek.toml", _doc(f"{FIXTURES}:peeking", {"window": [5]}))
    proc = _cli("check-strategy", str(peek), "--cuts", "4")
    assert proc.returncode == 1, proc.stderr
    assert "FAIL  strategy 'peeking' (config window=5) looks ahead" in proc.stdout
    assert "look-ahead check failed for 1 of 1 configs" in proc.stderr
    ok = write_spec(tmp_path / "ok.toml", _doc("trend_filter", {"window": [10, 50]}))
    proc = _cli("check-strategy", str(ok))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("no look-ahead found") == 2
    kernel = write_spec(
        tmp_path / "kernel.toml", _doc("momentum", {"lookback": [5], "band": [0.0]})
    )
    proc = _cli("check-strategy", str(kernel))
    assert proc.returncode == 2
    assert "'momentum' is a batch kernel" in proc.stderr


def test_a_misspelled_cost_is_named_with_its_section() -> None:
    from sweep.errors import GridError

    doc = _doc("trend_filter", {"window": [20]}, costs={"fee_bp": 1.0})
    with pytest.raises(
        GridError,
        match=r"costs.fee_bp: strategy 'trend_filter' has no parameter 'fee_bp'.*Did you mean 'fee_bps'\?",
    ):
        resolve(spec_from_dict(doc))


def test_cli_on_error_raise_stops_naming_strategy_and_config(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "faulty.toml", _doc(f"{FIXTURES}:faulty", {"mode": [0, 3]}))
    proc = _cli(
        "run", str(spec), "--run-dir", str(tmp_path / "run"), "--quiet", "--on-error", "raise"
    )
    assert proc.returncode == 1, proc.stderr
    assert "strategy 'faulty' (config mode=3) returned a weight of nan for asset" in proc.stderr
    proc = _cli("run", str(spec), "--run-dir", str(tmp_path / "rec"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "1 failed" in proc.stdout
