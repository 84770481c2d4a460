"""The rooms of ``sweep/``: which package may import which (docs/explanation/architecture.md, "Layers").

Read from the source with ``ast`` (imports inside functions and under TYPE_CHECKING count),
so a lazy import cannot hide a wrong direction.
"""

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ROOT / "sweep"

# Bottom to top; a package may import itself, the packages listed for it and the shared
# leaves (``sweep.errors``, ``sweep._version``).
_BELOW_STORE = {"common", "data", "spec"}
ALLOWED: dict[str, set[str]] = {
    "common": set(),
    "data": {"common"},
    "spec": {"common", "data"},
    "store": _BELOW_STORE,
    "engine": _BELOW_STORE | {"store"},
    "executors": _BELOW_STORE | {"store", "engine"},
    "plan": _BELOW_STORE | {"store", "engine", "executors"},
    "bench": _BELOW_STORE | {"store", "engine", "executors", "plan", "report"},
    # The report names the engine a run used and the one its crossover assumes, from the
    # backends' registry (sweep.executors: names, titles, assumed costs); it runs nothing there.
    "report": _BELOW_STORE | {"store", "engine", "executors", "plan"},
    "runner": _BELOW_STORE | {"store", "engine", "executors", "plan"},
}
LEAVES = {"errors", "_version"}
#: The top: the CLI, the Python API, the calibration harness and the package itself.
TOP = {"cli", "_api", "_calibration", "__init__", "__main__"}


def _sweep_imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "sweep":
                names = [f"sweep.{alias.name}" for alias in node.names]
        else:
            continue
        found += [(node.lineno, name) for name in names if name.startswith("sweep.")]
    return found


def _room(module_path: Path) -> str:
    parts = module_path.relative_to(SWEEP).parts
    return parts[0] if len(parts) > 1 else module_path.stem


def test_every_package_has_a_rule():
    rooms = {p.name for p in SWEEP.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert rooms == set(ALLOWED) | {"cli"}


@pytest.mark.parametrize("room", sorted(ALLOWED))
def test_a_package_imports_only_the_packages_below_it(room):
    wrong = defaultdict(list)
    for path in sorted((SWEEP / room).rglob("*.py")):
        for line, name in _sweep_imports(path):
            target = name.split(".")[1]
            if target == room or target in LEAVES or target in ALLOWED[room]:
                continue
            wrong[f"{path.relative_to(ROOT)}:{line}"].append(name)
    assert not wrong, f"{room} may import {sorted(ALLOWED[room])}, found: {dict(wrong)}"


def test_nothing_imports_the_top():
    for path in sorted(SWEEP.rglob("*.py")):
        if _room(path) in TOP:
            continue
        for line, name in _sweep_imports(path):
            assert name.split(".")[1] not in TOP, f"{path.relative_to(ROOT)}:{line} imports {name}"


def test_about_six_modules_at_the_top_of_sweep():
    modules = sorted(p.name for p in SWEEP.glob("*.py"))
    assert modules == [
        "__init__.py",
        "__main__.py",
        "_api.py",
        "_calibration.py",
        "_version.py",
        "errors.py",
    ]


def test_no_two_modules_share_a_basename():
    seen = defaultdict(list)
    for package in ("sweep", "strategies", "stats"):
        for path in (ROOT / package).rglob("*.py"):
            if path.name != "__init__.py":
                seen[path.name].append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


def test_the_checkout_paths_the_engine_derives_point_at_the_checkout():
    # Both modules sit one package down; a move that forgot them read the wrong folder.
    from sweep.common._environment import git_commit
    from sweep.common._numba_cache import _package_dirs

    assert all(folder.is_dir() for folder in _package_dirs())
    if (ROOT / ".git").exists():
        commit = git_commit()
        assert commit is not None and len(commit) == 40


def test_no_package_shadows_a_public_name():
    # Importing sweep.<pkg> binds the attribute sweep.<pkg>: a package named like an API
    # function (``sweep.run``) would replace the function by the module.
    import sweep

    rooms = {p.name for p in SWEEP.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert rooms.isdisjoint(sweep.__all__)
