"""A strategy module beside its spec is imported without PYTHONPATH (sweep/cli/_import_roots.py).

``sweep run SPEC``, ``check-strategy`` and ``plan`` import ``module:Name`` from the
``--app-dir`` folders, the spec's folder and the working folder; a module found nowhere is
refused (exit 2) naming them. Opening a run folder (``resume``) still imports only an allowed
module, and never from inside the run folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sweep.cli._import_roots import ImportRoot, importing_from
from tests.helpers import run_main

MODULE = "ema"

EMA = '''"""An EMA-sign position strategy, as a new user writes it."""

import numpy as np
import pandas as pd

from strategies import Param, position_strategy


@position_strategy(
    version="1",
    params=[Param("span", "int", window=True, doc="EMA span")],
    inputs="pandas",
)
def ema_sign(prices: pd.DataFrame, span: int) -> pd.DataFrame:
    """Long above the EMA, short below."""
    return np.sign(prices - prices.ewm(span=span).mean()).fillna(0.0) / prices.shape[1]
'''

SPEC = """name = "ema"
seed = 1

[data]
source = "synthetic"
years = 3

[strategy]
name = "ema:ema_sign"

[grid]
span = [10, 20]

[metrics]
bootstrap_reps = 0
pbo_blocks = 4
"""


@pytest.fixture(autouse=True)
def _clean_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No ``ema`` module before or after; ``sys.path`` and ``PYTHONPATH`` restored."""
    sys.modules.pop(MODULE, None)
    # The working folder is searched only when the command adds it (not as '' from python -m).
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".")])
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    monkeypatch.delenv("RAYSWEEP_ALLOW_IMPORT", raising=False)
    yield
    sys.modules.pop(MODULE, None)


def _folder(path: Path, *, module: bool = True, spec: bool = True) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    if module:
        (path / "ema.py").write_text(EMA)
    if spec:
        (path / "ema.toml").write_text(SPEC)
    return path


def _run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str | Path
) -> tuple[int, str, str]:
    """``sweep ARGS`` in this process; the command leaves sys.path and PYTHONPATH as it found."""
    path, env = list(sys.path), os.environ.get("PYTHONPATH")
    code, out, err = run_main(monkeypatch, capsys, *args)
    assert sys.path == path and os.environ.get("PYTHONPATH") == env
    return code, out, " ".join(err.split())


def _sweep(spec: Path, run_dir: Path, *extra: str | Path) -> list[str | Path]:
    return ["run", spec, "--executor", "local", "--run-dir", run_dir, "--quiet", *extra]


def test_run_from_the_spec_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _folder(tmp_path / "project")
    monkeypatch.chdir(project)
    code, out, err = _run(monkeypatch, capsys, *_sweep(Path("ema.toml"), tmp_path / "run"))
    assert code == 0, err
    assert "configs:    2 / 2 done" in out


def test_run_from_another_folder_imports_from_the_spec_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _folder(tmp_path / "project")
    monkeypatch.chdir(_folder(tmp_path / "elsewhere", module=False, spec=False))
    code, out, err = _run(monkeypatch, capsys, *_sweep(project / "ema.toml", tmp_path / "run"))
    assert code == 0, err
    assert "configs:    2 / 2 done" in out


def test_a_module_in_a_third_folder_needs_app_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lib = _folder(tmp_path / "lib", spec=False)
    spec = _folder(tmp_path / "specs", module=False) / "ema.toml"
    here = _folder(tmp_path / "here", module=False, spec=False)
    monkeypatch.chdir(here)
    code, _, err = _run(monkeypatch, capsys, *_sweep(spec, tmp_path / "run"))
    assert code == 2 and "Traceback" not in err
    assert (
        "strategy.name: cannot import module 'ema': No module named 'ema' (looked in the "
        f"spec's folder {spec.parent}, the working folder {here}, and the rest of sys.path); "
        "add --app-dir DIR"
    ) in err
    assert not (tmp_path / "run").exists()
    code, out, err = _run(monkeypatch, capsys, *_sweep(spec, tmp_path / "run", "--app-dir", lib))
    assert code == 0, err
    assert "configs:    2 / 2 done" in out


def test_app_dir_must_be_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _folder(tmp_path / "project") / "ema.toml"
    missing = tmp_path / "nope"
    code, _, err = _run(monkeypatch, capsys, *_sweep(spec, tmp_path / "run", "--app-dir", missing))
    assert code == 2
    assert f"--app-dir: expected a folder, got {str(missing)!r} (no such folder)" in err


def test_a_missing_dependency_of_the_module_is_not_blamed_on_the_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _folder(tmp_path / "project")
    (project / "ema.py").write_text("import no_such_dependency_xyz\n" + EMA)
    code, _, err = _run(monkeypatch, capsys, *_sweep(project / "ema.toml", tmp_path / "run"))
    assert code == 2
    assert "No module named 'no_such_dependency_xyz'" in err
    assert "looked in" not in err


def test_check_strategy_imports_from_the_spec_folder_and_app_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _folder(tmp_path / "project")
    here = _folder(tmp_path / "here", module=False, spec=False)
    monkeypatch.chdir(here)
    code, out, err = _run(
        monkeypatch, capsys, "check-strategy", project / "ema.toml", "--configs", "1"
    )
    assert code == 0, err
    assert "ok    strategy 'ema_sign'" in out
    sys.modules.pop(MODULE, None)
    spec = _folder(tmp_path / "specs", module=False) / "ema.toml"
    code, _, err = _run(monkeypatch, capsys, "check-strategy", spec, "--configs", "1")
    assert code == 2
    assert f"(looked in the spec's folder {spec.parent}, the working folder {here}," in err
    code, out, err = _run(
        monkeypatch, capsys, "check-strategy", spec, "--configs", "1", "--app-dir", project
    )
    assert code == 0, err
    assert "ok    strategy 'ema_sign'" in out


def test_plan_names_the_folders_it_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _folder(tmp_path / "specs", module=False) / "ema.toml"
    monkeypatch.chdir(spec.parent)
    code, _, err = _run(monkeypatch, capsys, "plan", spec, "--executor", "local")
    assert code == 2
    assert f"(looked in the spec's folder and the working folder {spec.parent}, and the" in err


def test_resume_still_needs_allow_import_and_never_reads_the_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _folder(tmp_path / "project")
    run_dir = tmp_path / "run"
    monkeypatch.chdir(project)
    code, _, err = _run(monkeypatch, capsys, *_sweep(Path("ema.toml"), run_dir))
    assert code == 0, err
    sys.modules.pop(MODULE, None)
    resume = ["resume", run_dir, "--executor", "local", "--quiet"]

    # From the module's own folder, --app-dir included: refused without --allow-import.
    code, _, err = _run(monkeypatch, capsys, *resume, "--app-dir", project)
    assert code == 2
    assert "pass --allow-import ema" in err
    assert MODULE not in sys.modules

    # Allowed, but the working folder is not searched: the module is not found.
    code, _, err = _run(monkeypatch, capsys, *resume, "--allow-import", MODULE)
    assert code == 2
    assert "cannot import module 'ema'" in err

    # A module copied into the run folder is never imported from there.
    _folder(run_dir, spec=False)
    code, _, err = _run(
        monkeypatch, capsys, *resume, "--allow-import", MODULE, "--app-dir", run_dir
    )
    assert code == 2
    assert "--app-dir: expected a folder outside the run folder" in err
    assert MODULE not in sys.modules

    # Allowed and importable (--app-dir, or on sys.path as PYTHONPATH puts it): it resumes.
    code, out, err = _run(
        monkeypatch, capsys, *resume, "--allow-import", MODULE, "--app-dir", project
    )
    assert code == 0, err
    assert "configs:    2 / 2 done" in out
    sys.modules.pop(MODULE, None)
    monkeypatch.syspath_prepend(str(project))
    code, out, err = _run(monkeypatch, capsys, *resume, "--allow-import", MODULE)
    assert code == 0, err


def test_importing_from_puts_the_folders_first_on_sys_path_and_pythonpath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/x", str(b)]))
    before = list(sys.path)
    with importing_from([ImportRoot(a, "--app-dir"), ImportRoot(b, "the spec's folder")]):
        assert sys.path[:2] == [str(a), str(b)]
        assert os.environ["PYTHONPATH"] == os.pathsep.join([str(a), str(b), "/x"])
    assert sys.path == before
    assert os.environ["PYTHONPATH"] == os.pathsep.join(["/x", str(b)])


@pytest.mark.ray
def test_ray_workers_import_the_module_from_the_spec_folder(
    ray_env: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = _folder(tmp_path / "project")
    here = _folder(tmp_path / "here", module=False, spec=False)
    monkeypatch.chdir(here)
    code, out, err = _run(monkeypatch, capsys, *_sweep(project / "ema.toml", tmp_path / "local"))
    assert code == 0, err
    local = next(line for line in out.splitlines() if line.startswith("table hash:"))
    # A fresh driver: its local Ray cluster's workers see the folders through PYTHONPATH
    # (Ray adds only the driver's working folder, here an empty one, to their sys.path).
    args = ["run", str(project / "ema.toml"), "--run-dir", str(tmp_path / "ray"), "--quiet"]
    proc = subprocess.run(
        [sys.executable, "-m", "sweep", *args, "--executor", "ray", "--workers", "1"],
        capture_output=True,
        text=True,
        cwd=here,
        env=dict(os.environ),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert local in proc.stdout
    assert "2 computed now, 0 failed" in proc.stdout
