"""Bench's default sweep is the README's main job file itself, found from any working folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.bench import _workload
from sweep.errors import SpecError
from sweep.spec._models import load_spec

MAIN_JOB = Path(__file__).resolve().parents[2] / "examples" / "momentum.toml"


def test_default_is_the_main_job_file_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sweep, source = _workload.bench_sweep()
    assert Path(source).resolve() == MAIN_JOB
    assert sweep.spec == load_spec(MAIN_JOB)


def test_no_main_job_file_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_workload, "__file__", str(tmp_path / "a" / "b" / "_workload.py"))
    with pytest.raises(SpecError, match="pass one"):
        _workload.bench_sweep()
