"""``sweep reproduce`` through the Ray executor: the workers re-compute, the driver compares."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from sweep import run_sweep, spec_from_dict
from sweep.cli._app import app
from sweep.runner._reproduce import ReproduceSettings, reproduce_run
from sweep.store._part_environment import PartEnvironment
from tests.helpers import read_part_table, rewrite_part, small_spec_dict

pytestmark = pytest.mark.ray

runner = CliRunner()


def test_reproduce_on_a_ray_cluster(ray_local, tmp_path):
    run = tmp_path / "run"
    run_sweep(spec_from_dict(small_spec_dict()), run, batch_size=20, progress=False)
    found = reproduce_run(run, ReproduceSettings(sample=30, seed=2, parts=2), executor="ray")
    assert found.full_match and found.executor == "ray"
    assert (found.sampled, found.matched) == (30, 30)
    assert [p.null_summary for p in found.parts] == ["match", "match"]
    # The environment record came back from the Ray workers' own processes.
    [used] = found.recomputed
    assert used.environment == PartEnvironment.here() and used.configs == 30 + 40
    assert ray_local.is_initialized()  # a cluster it joined is left running

    tampered = tmp_path / "tampered"
    shutil.copytree(run, tampered)
    victim = sorted((tampered / "parts").glob("part-*.parquet"))[0]
    table = read_part_table(victim)
    turnover = table.column("turnover").to_numpy().copy()
    turnover[0] = np.nextafter(turnover[0], -np.inf)
    col = table.schema.get_field_index("turnover")
    rewrite_part(victim, table.set_column(col, table.schema.field(col), pa.array(turnover)))
    result = runner.invoke(app, ["reproduce", str(tampered), "--sample", "60", "--executor", "ray"])
    assert result.exit_code == 1, result.output
    assert "recomputed:   ray executor" in result.output
    assert f"config {table.column('config_id')[0].as_py()}" in result.output
    assert "column turnover" in result.output and "59 of 60 configs match" in result.output
