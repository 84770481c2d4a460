"""Every public name is listed in ``__all__`` and importable (httpx's test_exported_members)."""

import importlib

import pytest


@pytest.mark.parametrize(
    "package", ["sweep", "strategies", "stats", "sweep.executors", "sweep.report", "sweep.bench"]
)
def test_all_exports_exist_and_are_public(package):
    module = importlib.import_module(package)
    exported = set(module.__all__)
    assert len(exported) == len(module.__all__), "duplicates in __all__"
    for name in exported:
        assert hasattr(module, name), f"{package}.{name} is in __all__ but missing"
    public = {
        n
        for n in dir(module)
        if not n.startswith("_") and not isinstance(getattr(module, n), type(importlib))
    }
    assert public <= exported | {"annotations"}, (
        f"public but not exported: {sorted(public - exported)}"
    )


def test_engine_version_matches_pyproject():
    import tomllib
    from pathlib import Path

    import sweep

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert sweep.__version__ == pyproject["project"]["version"]
