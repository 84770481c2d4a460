"""Each benchmark on a tiny workload under Ray: files written, fits sane; the CLI wiring."""

from __future__ import annotations

import json
import os
import statistics

import numpy as np
import pytest
from typer.testing import CliRunner

from stats import fit_usl
from sweep import run_sweep, spec_from_dict
from sweep.bench import (
    AmortizationSettings,
    OverheadSettings,
    ScalingSettings,
    run_bench,
)
from sweep.report import ReportOptions, build_report
from tests.conftest import assert_loopback_only, release_shared_ray
from tests.helpers import small_spec_dict, write_spec

pytestmark = pytest.mark.ray

#: SlowMomentum sleeps this long per config: a known, CPU-free per-config cost b.
SLEEP = 0.002
SPEC = small_spec_dict(strategy={"name": "tests.strategies_for_tests:SlowMomentum"})


@pytest.fixture(scope="module")
def ray_three_cpus(ray_env):
    """A local Ray with 3 CPUs (three workers for the scaling fit), workers sleeping SLEEP."""
    import ray

    saved = os.environ.get("RAYSWEEP_TEST_SLEEP")
    os.environ["RAYSWEEP_TEST_SLEEP"] = str(SLEEP)  # inherited by the workers
    release_shared_ray()  # this module needs 3 CPUs: a cluster of its own
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)
    assert_loopback_only()
    yield ray
    ray.shutdown()
    if saved is None:
        os.environ.pop("RAYSWEEP_TEST_SLEEP", None)
    else:
        os.environ["RAYSWEEP_TEST_SLEEP"] = saved


def _written(files, kind):
    assert files["json"].name == f"{kind}.json" and files["png"].name == f"{kind}.png"
    assert files["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = json.loads(files["json"].read_text())
    assert doc["format"] == "raysweep-bench-v1" and doc["kind"] == kind
    assert doc["cluster"]["cpus"] == 3 and doc["cluster"]["address"] == "existing"
    # Ray's records keep their keys: its version, and no backend key (its bytes unchanged).
    assert doc["cluster"]["ray_version"] and "backend" not in doc["cluster"]
    return doc


def test_overhead(ray_three_cpus, tmp_path):
    outcome = run_bench(
        "overhead",
        spec=SPEC,
        out=tmp_path,
        settings=OverheadSettings(payload_bytes=(0, 65_536), rounds=2),
    )
    doc = _written(outcome.files, "overhead")
    points = doc["points"]
    assert [p["payload_bytes"] for p in points] == [0, 65_536]
    assert all(len(p["rounds"]) == 2 and min(p["rounds"]) > 0 for p in points)
    # What is reported is made from the rounds recorded beside it (how long a round takes
    # depends on the machine's load, so no bound on the seconds themselves).
    assert all(p["overhead_seconds"] == statistics.median(p["rounds"]) for p in points)
    assert doc["overhead_seconds"] == points[0]["overhead_seconds"]
    slope = np.polyfit([0.0, 65_536.0], [p["overhead_seconds"] for p in points], 1)[0]
    assert doc["per_byte_seconds"] == pytest.approx(slope, rel=1e-12, abs=1e-18)
    assert doc["workers"] == 3 and doc["result_bytes_per_config"] > 0


def test_amortization_recovers_the_per_config_cost(ray_three_cpus, tmp_path):
    settings = AmortizationSettings(batch_sizes=(1, 4, 16, 48), reps=2, planner_configs=0)
    outcome = run_bench("amortization", spec=SPEC, out=tmp_path, settings=settings)
    doc = _written(outcome.files, "amortization")
    # The measurements: reps timed tasks per batch size, each a positive duration. Their
    # values depend on the machine's load, so nothing here bounds them; that the fit recovers
    # O and b is checked without a clock (test_the_amortization_fit_recovers_o_and_b_...).
    assert [b["batch"] for b in doc["batched"]] == [1, 4, 16, 48]
    for b in doc["batched"]:
        assert len(b["seconds"]) == 2 and min(b["seconds"]) > 0
        assert b["median"] == statistics.median(b["seconds"])
    # Speedups are the recorded per-call over batched times.
    for s, pc, b in zip(doc["speedup"], doc["per_call"], doc["batched"], strict=True):
        assert s["speedup"] == pytest.approx(pc["seconds"] / b["median"], rel=1e-12)
    fit = doc["fit"]
    assert fit["available"], fit
    # The law's derived numbers follow from the fitted O and b (DESIGN, the amortization law).
    o, b = fit["overhead_seconds"], fit["per_config_seconds"]
    assert b > 0 and 0.0 <= fit["r_squared"] <= 1.0
    if o > 0:
        assert fit["ridge_batch"] == pytest.approx(o / b, rel=1e-9)
        assert fit["batch_for_99pct"] == pytest.approx(0.99 * o / (b * 0.01), rel=1e-9)
        a = max(fit["per_call_config_seconds"], 0.0)  # one config per call costs O + a
        assert fit["ceiling_speedup"] == pytest.approx((o + a) / b, rel=1e-9)
    assert doc["planner"] is None and doc["comparison"] is None


def test_the_amortization_fit_recovers_o_and_b_from_the_recorded_timings() -> None:
    """The bench's fit on task times made exactly by the law, T = O + bB: no clock involved."""
    from sweep.bench._measure_amortization import _fit
    from sweep.store._bench_results import BatchTiming, LawFit

    o, b, a = 0.004, SLEEP, 0.0025
    batched = [
        BatchTiming(batch=n, seconds=(o + b * n,) * 3, median=o + b * n, stream_wall_seconds=1.0)
        for n in (1, 4, 16, 48)
    ]
    fit = _fit(batched, [o + a] * 5)
    assert isinstance(fit, LawFit)
    assert fit.overhead_seconds == pytest.approx(o, rel=1e-9)
    assert fit.per_config_seconds == pytest.approx(b, rel=1e-9)
    assert fit.per_call_config_seconds == pytest.approx(a, rel=1e-9)
    assert fit.r_squared == pytest.approx(1.0, abs=1e-12)
    assert fit.ridge_batch == pytest.approx(o / b, rel=1e-9)


def test_scaling_fits_the_usl(ray_three_cpus, tmp_path):
    settings = ScalingSettings(max_workers=3, batch_size=10, tasks=6, rounds=1)
    outcome = run_bench("scaling", spec=SPEC, out=tmp_path, settings=settings)
    doc = _written(outcome.files, "scaling")
    assert [p["workers"] for p in doc["points"]] == [1, 2, 3]
    assert doc["cpus_per_task"] == 1.0 and doc["configs"] == 60
    for p in doc["points"]:
        assert len(p["seconds"]) == 1 and min(p["seconds"]) > 0
        assert p["throughput"] == pytest.approx(60 / statistics.median(p["seconds"]), rel=1e-12)
    x = [p["throughput"] for p in doc["points"]]
    # Whether 3 workers beat 1 depends on what else the machine runs: not asserted. The fit
    # is the USL fitted to the throughputs recorded beside it.
    fit = doc["fit"]
    assert fit["available"], fit
    assert 0.0 <= fit["sigma"] <= 1.0 and fit["kappa"] >= 0.0
    assert fit["gamma"] == pytest.approx(x[0])
    again = fit_usl(np.array([1.0, 2.0, 3.0]), np.array(x), gamma="fixed")
    assert (fit["sigma"], fit["kappa"]) == pytest.approx((again.sigma, again.kappa), abs=1e-12)
    assert fit["r_squared"] == pytest.approx(again.r_squared, abs=1e-12)


def test_cli_bench_writes_files_and_report_picks_them_up(ray_three_cpus, tmp_path):
    from sweep.cli._app import app

    spec = write_spec(tmp_path / "s.toml", SPEC)
    out = tmp_path / "bench"
    result = CliRunner().invoke(
        app, ["bench", "overhead", "--out", str(out), "--spec", str(spec)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert "per-task overhead" in result.output and (out / "overhead.png").is_file()
    run_dir = tmp_path / "run"
    run_sweep(spec_from_dict(small_spec_dict()), run_dir, progress=False)
    report = build_report(run_dir, ReportOptions(progress=False, bench_dir=str(out)))
    assert report.to_json()["scaling"]["available"] is True
    assert report.to_json()["scaling"]["overhead"]["overhead_seconds"] > 0
    assert "bench_overhead" in report.figures
