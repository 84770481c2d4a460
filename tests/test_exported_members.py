"""Every public name is listed in ``__all__`` and importable (httpx's test_exported_members).

The names a package holds are read with ``vars()``, as httpx does, not ``dir()``: ``sweep``
defines ``__dir__`` (PEP 562) and a check through it would only ever see ``__all__``.
"""

import __future__

import importlib
import types

import pytest

PACKAGES = ["sweep", "strategies", "stats", "sweep.executors", "sweep.report", "sweep.bench"]


def _public_members(module: types.ModuleType) -> set[str]:
    """Public names bound in the module, less submodules and ``from __future__`` features."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType | __future__._Feature)
    }


@pytest.mark.parametrize("package", PACKAGES)
def test_all_exports_exist_and_are_public(package):
    module = importlib.import_module(package)
    exported = list(module.__all__)
    assert len(set(exported)) == len(exported), "duplicates in __all__"
    for name in exported:
        # getattr also loads a lazily exported name (sweep/__init__, PEP 562) into vars().
        assert getattr(module, name, None) is not None, f"{package}.{name} is in __all__ only"
    members = _public_members(module)
    public = {name for name in exported if not name.startswith("_")}  # __version__ aside
    assert members == public, (
        f"public but not exported: {sorted(members - public)}; "
        f"exported but not bound: {sorted(public - members)}"
    )


def test_the_check_sees_a_stray_public_name(monkeypatch):
    import sweep

    monkeypatch.setattr(sweep, "stray_helper", object(), raising=False)
    assert "stray_helper" in _public_members(sweep)


def test_engine_version_matches_pyproject():
    import tomllib
    from pathlib import Path

    import sweep

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert sweep.__version__ == pyproject["project"]["version"]
