"""A strategy that reads a panel field the data does not have is refused before anything runs
(exit 2), naming the field, the strategy and the data, and saying which fields the data has."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import sweep
from strategies.momentum import Momentum
from sweep import evaluate_batch, resolve, spec_from_dict
from sweep.errors import StrategySpecError
from tests import position_strategies_for_tests as fixtures
from tests.helpers import run_main, write_spec

VOLUME = "tests.position_strategies_for_tests:volume_surge"


def _prices(n: int = 80) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    close = 30 * np.exp(np.cumsum(rng.normal(0, 0.01, (n, 2)), axis=0))
    frame = pd.DataFrame(close, columns=["AAA", "BBB"])
    frame.insert(0, "date", pd.bdate_range("2021-01-04", periods=n))
    return frame


def _doc(data: dict[str, Any], strategy: str = VOLUME) -> dict[str, Any]:
    return {
        "name": "fields",
        "seed": 1,
        "data": data,
        "strategy": {"name": strategy},
        "grid": {"window": [5, 10]},
        "metrics": {"bootstrap_reps": 0, "pbo_blocks": 4},
    }


def _main(monkeypatch: Any, capsys: Any, *args: str) -> tuple[int, str]:
    """Run the console entry point in this process: (exit code, stderr)."""
    code, _, err = run_main(monkeypatch, capsys, *args)
    return code, err


def test_cli_refuses_a_volume_strategy_on_a_close_only_csv(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    csv = tmp_path / "close.csv"
    _prices().to_csv(csv, index=False)
    spec = write_spec(tmp_path / "s.toml", _doc({"path": str(csv)}))
    run_dir = tmp_path / "run"
    code, err = _main(monkeypatch, capsys, "run", str(spec), "--run-dir", str(run_dir))
    message = " ".join(err.split())
    assert code == 2, err
    assert "strategy 'volume_surge' reads the field 'volume'" in message
    assert f"file {csv} has the fields ['close']" in message
    assert "'<asset>:<field>' columns" in message
    assert "Traceback" not in err
    assert not run_dir.exists()  # refused before anything ran


def test_the_synthetic_panel_names_its_option_and_gives_the_fields_with_it() -> None:
    with pytest.raises(StrategySpecError) as info:
        resolve(spec_from_dict(_doc({"source": "synthetic", "years": 2})))
    message = str(info.value)
    assert "synthetic panel (seed 20261130, 2 years) has the fields ['close']" in message
    assert "set ohlcv = true in [data]" in message
    full = resolve(spec_from_dict(_doc({"source": "synthetic", "years": 2, "ohlcv": True})))
    table = evaluate_batch(full, np.arange(2)).table.to_pandas()
    assert (table["status"] == "ok").all()


def test_python_api_refuses_a_close_only_dataframe(tmp_path: Path) -> None:
    with pytest.raises(StrategySpecError, match=r"reads the field 'volume'.*in-memory DataFrame"):
        sweep.run(fixtures.volume_surge, {"window": [5]}, _prices(), run_dir=tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_a_batch_kernel_may_declare_the_fields_it_reads() -> None:
    kernel = Momentum()
    kernel.fields = frozenset({"high", "volume"})  # type: ignore[attr-defined]
    doc = _doc({"source": "synthetic", "years": 2}, strategy="momentum")
    doc["grid"] = {"lookback": [5], "band": [0.0]}
    with pytest.raises(
        StrategySpecError,
        match=r"'momentum' reads the field 'high' \(it reads \['high', 'volume'\]\)",
    ):
        resolve(spec_from_dict(doc), strategy=kernel)
    doc["data"]["ohlcv"] = True
    assert resolve(spec_from_dict(doc), strategy=kernel).strategy is kernel


def test_exit_levels_on_data_without_bars_are_refused_before_running() -> None:
    from sweep import resolve, spec_from_dict
    from sweep.errors import StrategySpecError

    doc = {
        "name": "stops-close-only",
        "seed": 1,
        "data": {"source": "synthetic", "years": 3},
        "strategy": {"name": "xs_momentum"},
        "grid": {"lookback": [20], "stop_loss": [0.0, 0.05]},
        "metrics": {"bootstrap_reps": 0, "pbo_blocks": 4},
    }
    with pytest.raises(
        StrategySpecError,
        match=r"grid: the exit levels \['stop_loss'\] of strategy 'xs_momentum' fill inside "
        r"each bar and need its open, high, low.*set ohlcv = true",
    ):
        resolve(spec_from_dict(doc))
    doc["grid"]["stop_loss"] = [0.0]  # every level off: nothing fills inside a bar
    assert len(resolve(spec_from_dict(doc)).grid) == 1
    doc["data"]["ohlcv"] = True
    doc["grid"]["stop_loss"] = [0.0, 0.05]
    assert len(resolve(spec_from_dict(doc)).grid) == 2
