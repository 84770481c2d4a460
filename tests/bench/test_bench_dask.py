"""Each benchmark on a tiny workload under Dask, as under Ray (tests/bench/test_bench.py).

A local Dask cluster of 2 one-thread worker processes on loopback is joined by its
scheduler's address; the scaling benchmark starts its own cluster of more workers than this
machine has CPUs, as ``sweep bench scaling`` does.
"""

from __future__ import annotations

import json
import os
import statistics

import pytest
from typer.testing import CliRunner

from sweep.bench import AmortizationSettings, OverheadSettings, ScalingSettings, run_bench
from sweep.bench._backend import bench_executor
from sweep.errors import SweepError
from sweep.store._bench_results import ScalingResult, bench_from_json
from tests.helpers import loopback_dask_cluster, small_spec_dict, write_spec

pytestmark = pytest.mark.dask

#: SlowMomentum sleeps this long per config (read when the sweep is resolved).
SLEEP = 0.002
SPEC = small_spec_dict(strategy={"name": "tests.strategies_for_tests:SlowMomentum"})


@pytest.fixture(scope="module")
def dask_address():
    """A local Dask cluster of 2 one-thread worker processes on loopback; its address."""
    saved = os.environ.get("RAYSWEEP_TEST_SLEEP")
    os.environ["RAYSWEEP_TEST_SLEEP"] = str(SLEEP)
    with loopback_dask_cluster(2) as address:
        yield address
    if saved is None:
        os.environ.pop("RAYSWEEP_TEST_SLEEP", None)
    else:
        os.environ["RAYSWEEP_TEST_SLEEP"] = saved


def _written(files, kind, cpus, address):
    assert files["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = json.loads(files["json"].read_text())
    assert doc["format"] == "raysweep-bench-v1" and doc["kind"] == kind
    cluster = doc["cluster"]
    assert cluster["cpus"] == cpus and cluster["address"] == address
    # Dask names itself; the key Ray's records have is not there.
    assert cluster["backend"] == "dask" and cluster["backend_version"]
    assert "ray_version" not in cluster
    return doc


def test_overhead_on_a_joined_dask_cluster(dask_address, tmp_path):
    outcome = run_bench(
        "overhead",
        address=dask_address,  # tcp://: Dask, without --executor
        spec=SPEC,
        out=tmp_path,
        settings=OverheadSettings(payload_bytes=(0, 65_536), rounds=2),
    )
    doc = _written(outcome.files, "overhead", 2, dask_address)
    assert [p["payload_bytes"] for p in doc["points"]] == [0, 65_536]
    for p in doc["points"]:
        assert len(p["rounds"]) == 2 and min(p["rounds"]) > 0
        assert p["overhead_seconds"] == statistics.median(p["rounds"])
    assert "DaskExecutor.measure_overhead" in doc["method"]
    assert doc["workers"] == 2 and doc["result_bytes_per_config"] > 0


def test_amortization_runs_on_one_dask_worker(dask_address, tmp_path):
    settings = AmortizationSettings(batch_sizes=(1, 4, 16), reps=2, planner_configs=0)
    outcome = run_bench(
        "amortization", executor="dask", address=dask_address, spec=SPEC, out=tmp_path,
        settings=settings,
    )  # fmt: skip
    doc = _written(outcome.files, "amortization", 2, dask_address)
    assert "one task at a time on one worker (1 thread(s))" in doc["method"]
    assert [b["batch"] for b in doc["batched"]] == [1, 4, 16]
    for b in doc["batched"]:
        assert len(b["seconds"]) == 2 and min(b["seconds"]) > 0
    for s, pc, b in zip(doc["speedup"], doc["per_call"], doc["batched"], strict=True):
        assert s["speedup"] == pytest.approx(pc["seconds"] / b["median"], rel=1e-12)
    # One worker, one thread: the tasks ran one at a time, so a task of 16 configs (each
    # sleeping SLEEP) takes at least their sleep, whatever the load.
    assert doc["batched"][-1]["median"] >= 16 * SLEEP
    assert doc["fit"]["available"], doc["fit"]


@pytest.mark.slow  # 20-30 s on the loaded 2-core machine: it starts its own CPUs + 1 workers
def test_scaling_starts_more_dask_workers_than_cpus(dask_address, tmp_path):
    p = (os.cpu_count() or 1) + 1  # a local cluster beyond the CPUs: allowed for the bench
    settings = ScalingSettings(batch_size=10, tasks=p, rounds=1)
    outcome = run_bench(
        "scaling", executor="dask", workers=p, spec=SPEC, out=tmp_path, settings=settings
    )
    doc = _written(outcome.files, "scaling", p, "local")
    assert [pt["workers"] for pt in doc["points"]] == list(range(1, p + 1))
    assert doc["cpus_per_task"] == 1.0 and doc["configs"] == 10 * p
    # Every worker was warmed (each warm-up task holds its worker half a second), and p
    # tasks in flight ran on more than one worker process.
    assert doc["warm_workers"] == p and doc["points"][-1]["processes"] >= 2
    for pt in doc["points"]:
        assert pt["throughput"] == pytest.approx(10 * p / statistics.median(pt["seconds"]))
    saved = bench_from_json(doc, "scaling.json")
    assert isinstance(saved, ScalingResult) and saved.cluster is not None
    assert saved.cluster.backend == "dask"


def test_a_sweep_refuses_more_local_dask_workers_than_cpus():
    too_many = (os.cpu_count() or 1) + 1
    with pytest.raises(SweepError, match="CPUs"):
        bench_executor("dask", None, too_many).connect()
    with pytest.raises(SweepError, match="distributed backend"):
        bench_executor("local", None)


def test_cli_bench_measures_the_dask_scheduler_its_address_names(dask_address, tmp_path):
    from sweep.cli._app import app

    spec = write_spec(tmp_path / "s.toml", SPEC)
    out = tmp_path / "bench"
    result = CliRunner().invoke(
        app,
        ["bench", "overhead", "--address", dask_address, "--out", str(out), "--spec", str(spec)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "per-task overhead" in result.output
    doc = json.loads((out / "overhead.json").read_text())
    assert doc["cluster"]["backend"] == "dask"
