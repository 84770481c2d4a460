"""Shared fixtures: small sweeps that run in well under a second."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sweep import ResolvedSweep, resolve, spec_from_dict, synthetic_panel
from tests.helpers import small_spec_dict

REPO = Path(__file__).resolve().parents[1]
# Ray workers and subprocess drivers import test strategies from the repository root.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
)


@pytest.fixture(scope="session")
def small_panel():  # type: ignore[no-untyped-def]
    return synthetic_panel(years=4)


@pytest.fixture
def small_sweep(small_panel) -> ResolvedSweep:  # type: ignore[no-untyped-def]
    return resolve(spec_from_dict(small_spec_dict()), small_panel)


