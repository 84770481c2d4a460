"""`sweep run --executor ray --workers N` starts its own local cluster and gives the local hash."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sweep import run_sweep, spec_from_dict
from sweep.store._run_store import RunStore
from tests.helpers import small_spec_dict, write_spec

pytestmark = pytest.mark.ray


def test_cli_starts_a_local_ray_cluster(ray_env, tmp_path):
    local = run_sweep(spec_from_dict(small_spec_dict()), tmp_path / "local", progress=False)
    spec = write_spec(tmp_path / "s.toml", small_spec_dict())
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sweep",
            "run",
            str(spec),
            "--run-dir",
            str(tmp_path / "ray"),
            "--executor",
            "ray",
            "--workers",
            "2",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"table hash: {local.table_hash}" in proc.stdout
    session = RunStore(tmp_path / "ray").read_manifest()["sessions"][-1]
    assert session["executor"] == "ray" and session["executor_info"]["workers"] == 2
    assert session["executor_info"]["address"] == "local"
    assert all(a.startswith("127.") for a in session["executor_info"]["node_addresses"])
