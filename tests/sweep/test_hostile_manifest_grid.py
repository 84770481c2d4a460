"""A manifest's grid description is derived again from its spec and must agree (issue 42, H1).

The ``grid`` object of ``manifest.json`` names the config at every position; no hash covers
it, so an edit (two values swapped, a NaN, a renamed axis, an unbounded dtype, a huge
integer or list) must be refused as "manifest.json disagrees with itself" before any part
is judged by it, and nothing moved or written.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sweep import run_sweep, spec_from_dict
from sweep.errors import RunFolderError
from sweep.spec._grid import Grid
from sweep.store._grid_check import grid_disagreement
from sweep.store._run_store import RunStore
from tests.helpers import small_spec_dict, write_spec

Doctor = Callable[[list[dict[str, Any]]], None]


def _swap(axes: list[dict[str, Any]]) -> None:
    values = axes[0]["values"]
    values[0], values[1] = values[1], values[0]


def _set(axis: int, key: str, value: Any) -> Doctor:
    def doctor(axes: list[dict[str, Any]]) -> None:
        axes[axis][key] = value

    return doctor


def _value(axis: int, value: Any) -> Doctor:
    def doctor(axes: list[dict[str, Any]]) -> None:
        axes[axis]["values"][1] = value

    return doctor


def _many(axes: list[dict[str, Any]]) -> None:
    axes[0]["values"] = list(range(200_000))


#: name -> edit of the recorded axes (lookback, band, cost), and what the refusal names.
DOCTORED: dict[str, tuple[Doctor, str]] = {
    "two values swapped": (_swap, "'lookback'"),
    "a value of 1e400": (_value(1, float("inf")), "'band'"),
    "a NaN value": (_value(1, float("nan")), "'band'"),
    "an integer of 10**30": (_value(0, 10**30), "'lookback'"),
    "a renamed axis": (_set(0, "name", "lookbak"), "'lookbak'"),
    "a 1 MB axis name": (_set(0, "name", "x" * 1_000_000), "xxx..."),
    "an unbounded dtype": (_set(2, "dtype", "S2000000000"), "'cost'"),
    "an object dtype": (_set(2, "dtype", "object"), "'cost'"),
    "a cost changed": (_set(2, "values", [0.5]), "'cost'"),
    "200,000 values": (_many, "200,"),
    "an axis size of text": (_set(0, "size", "x"), "positive integer 'size'"),
    "no axis size": (_set(0, "size", None), "positive integer 'size'"),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("grid") / "run"
    run_sweep(spec_from_dict(small_spec_dict()), folder, batch_size=20, progress=False)
    return folder


def doctored_copy(run: Path, dst: Path, doctor: Doctor) -> Path:
    shutil.copytree(run, dst)
    manifest = json.loads((dst / "manifest.json").read_text())
    doctor(manifest["grid"]["axes"])
    (dst / "manifest.json").write_text(json.dumps(manifest))
    return dst


def folder_files(folder: Path) -> list[tuple[str, bytes]]:
    return sorted(
        (str(p.relative_to(folder)), p.read_bytes()) for p in folder.rglob("*") if p.is_file()
    )


@pytest.mark.parametrize("case", list(DOCTORED))
def test_an_edited_grid_description_is_refused_before_any_part_is_judged(
    tmp_path: Path, run: Path, case: str
) -> None:
    doctor, named = DOCTORED[case]
    folder = doctored_copy(run, tmp_path / "run", doctor)
    with pytest.raises(RunFolderError, match=r"manifest\.json('s grid| disagrees)") as info:
        RunStore(folder).expectations()
    message = str(info.value)
    assert named in message and len(message) < 400 and "\n" not in message


def test_every_command_refuses_it_in_one_line_and_nothing_moves(tmp_path: Path, run: Path) -> None:
    folder = doctored_copy(run, tmp_path / "run", _swap)
    spec = write_spec(tmp_path / "spec.toml", small_spec_dict())
    before = folder_files(folder)
    for args in (
        ["verify", str(folder)],
        ["status", str(folder)],
        ["report", str(folder)],
        ["results", str(folder)],
        ["run", str(spec), "--run-dir", str(folder), "--executor", "local"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "sweep", *args], capture_output=True, text=True
        )
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "disagrees with" in done.stderr and "Traceback" not in done.stderr, args
    assert folder_files(folder) == before


def test_the_spec_alone_checks_a_strategy_outside_the_registry() -> None:
    """Without the strategy: the spec's axes exactly (an int axis may be float64), costs."""
    spec_grid = Grid.from_definition({"member": [0, 1, 2], "edge": [0.5]})
    recorded = spec_grid.describe()
    assert grid_disagreement(recorded, spec_grid, {}, None) is None
    as_floats = json.loads(json.dumps(recorded))
    as_floats["axes"][0].update(dtype="float64", first=0.0, last=2.0, values=[0.0, 1.0, 2.0])
    assert grid_disagreement(as_floats, spec_grid, {}, None) is None
    with_default = json.loads(json.dumps(recorded))
    fixed = {"name": "cost", "dtype": "float64", "size": 1, "first": 0.1, "last": 0.1}
    with_default["axes"].append({**fixed, "values": [0.1]})
    assert grid_disagreement(with_default, spec_grid, {}, None) is None
    assert "cost 'cost'" in str(grid_disagreement(with_default, spec_grid, {"cost": 0.2}, None))
    with_default["axes"][-1]["values"] = [float("nan")]
    assert "holds nan" in str(grid_disagreement(with_default, spec_grid, {}, None))
    with_default["axes"][-1].update(values=[0.1, 0.2], size=2)
    assert "exactly one value" in str(grid_disagreement(with_default, spec_grid, {}, None))
    twice = json.loads(json.dumps(recorded))
    twice["axes"].append({**recorded["axes"][1]})
    assert "twice" in str(grid_disagreement(twice, spec_grid, {}, None))
    negative = json.loads(json.dumps(recorded))
    negative["axes"][1].update(values=[-0.0], first=-0.0, last=-0.0)
    assert "'edge'" in str(
        grid_disagreement(
            negative, Grid.from_definition({"member": [0, 1, 2], "edge": [0.0]}), {}, None
        )
    )


def test_a_forged_default_of_an_imported_strategy_is_refused_on_resume(tmp_path: Path) -> None:
    """The driver resuming the run has the strategy: its full grid must be the recorded one."""
    doc = small_spec_dict(
        strategy={"name": "tests.strategies_for_tests:PlantedEdge"},
        grid={"member": [0, 1, 2]},
        metrics={"bootstrap_reps": 0, "pbo_blocks": 4},
    )
    folder = tmp_path / "run"
    run_sweep(spec_from_dict(doc), folder, progress=False)
    manifest = json.loads((folder / "manifest.json").read_text())
    (edge,) = [a for a in manifest["grid"]["axes"] if a["name"] == "edge"]
    edge.update(values=[0.25], first=0.25, last=0.25)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    RunStore(folder).expectations()  # the form is right: the spec alone cannot tell
    before = folder_files(folder)
    with pytest.raises(RunFolderError, match=r"disagrees with its spec and strategy: .*'edge'"):
        run_sweep(spec_from_dict(doc), folder, progress=False)
    assert folder_files(folder) == before
