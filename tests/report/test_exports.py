"""The public names of sweep.report and sweep.bench are listed in __all__ and importable."""

import importlib

import pytest


@pytest.mark.parametrize("package", ["sweep.report", "sweep.bench"])
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
