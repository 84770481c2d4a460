"""The planner's predictions against the amortization law, on constructed inputs."""

from __future__ import annotations

import math

import pytest

from sweep.plan._auto import choose_executor, decide
from sweep.plan._eta import eta, format_duration
from sweep.plan._forecast import CostModel, Scaling, crossover, predict_wall
from sweep.plan._planner import PlannerSettings
from sweep.store._record import ExecutorChoice, Plan, Session


def test_prediction_is_the_amortization_law_with_the_planners_batch():
    # b = 1 ms, O = 50 ms, S = 2 s, 4 workers, f = 0.99: B*(f) = f O / (b (1 - f)) = 4950;
    # load balance allows ceil(100000 / 16) = 6250 and the 10 s cap 10000, so B = 4950,
    # tasks = ceil(100000 / 4950) = 21, worker-seconds = 21 * 0.05 + 100 * 1 = 101.05,
    # wall = 2 + 101.05 / 4 (linear scaling).
    model = CostModel(1e-3, 0.05, 2.0, 4)
    w = predict_wall(100_000, model)
    assert (w.batch_size, w.tasks) == (4950, 21)
    assert w.worker_seconds == pytest.approx(101.05, rel=1e-12)
    assert w.seconds == pytest.approx(2.0 + 101.05 / 4, rel=1e-12)


def test_prediction_clamps_like_the_planner_and_uses_the_usl():
    # 1,000 configs on 4 workers: load balance caps B at ceil(1000 / 16) = 63 -> 16 tasks.
    usl = Scaling(0.1, 0.01, "constructed")
    w = predict_wall(1000, CostModel(1e-3, 0.05, 0.0, 4, usl))
    assert (w.batch_size, w.tasks) == (63, 16)
    capacity = 4 / (1 + 0.1 * 3 + 0.01 * 4 * 3)  # Gunther's C(p)
    assert w.capacity == pytest.approx(capacity, rel=1e-12)
    assert w.seconds == pytest.approx((16 * 0.05 + 1.0) / capacity, rel=1e-12)
    # fewer workers than the model has: p is used for the batch and C(p)
    one = predict_wall(1000, CostModel(1e-3, 0.05, 0.0, 4, usl), workers=1)
    assert one.capacity == 1.0 and one.batch_size == 250


def test_crossover_matches_the_closed_form_and_its_definition():
    local = CostModel(1e-3, 1e-4)
    ray = CostModel(1e-3, 0.01, 5.0, 2)
    n = crossover(local, ray)
    assert n is not None
    # Far above every clamp, cost per config is b/f on both (B = B*(f)); Ray pays S once and
    # divides by 2, so n* ~ S / (b/f - b/(2 f)) = 5 / (0.5e-3 / 0.99) = 9,900 configs.
    assert n == pytest.approx(5.0 / (0.5e-3 / 0.99), rel=0.05)
    assert predict_wall(n, ray).seconds < predict_wall(n, local).seconds
    assert predict_wall(n - 1, ray).seconds >= predict_wall(n - 1, local).seconds


def test_no_crossover_when_ray_cannot_win():
    local = CostModel(1e-3, 1e-4)
    assert crossover(local, CostModel(1e-3, 0.01, 5.0, 1)) is None  # one worker, start-up
    # contention so high that 2 workers do no better than one
    assert crossover(local, CostModel(1e-3, 0.01, 5.0, 2, Scaling(1.0, 0.0, "x"))) is None


def test_costs_are_checked():
    with pytest.raises(ValueError, match="per_config_seconds"):
        CostModel(0.0, 1.0)
    with pytest.raises(ValueError, match="workers"):
        predict_wall(10, CostModel(1.0, 1.0, 0.0, 2), workers=3)


def test_auto_rule():
    local = CostModel(1e-3, 1e-4)
    fast_ray = CostModel(1e-3, 0.01, 0.5, 4)
    assert decide(100_000, local, fast_ray, address=None).chosen == "ray"
    assert decide(100, local, fast_ray, address=None).chosen == "local"
    assert decide(100, local, fast_ray, address="10.0.0.1:6379").chosen == "ray"
    assert decide(100, local, None, address=None).chosen == "local"
    assert decide(10**7, local, CostModel(1e-3, 0.0, 0.0, 1), address=None).chosen == "local"


def test_choose_executor_from_a_plan():
    measured = Plan(batch_size=100, source="auto", per_config_seconds=1e-3, overhead_seconds=1e-3)
    big = choose_executor(measured, 10**6, address=None, workers=2)
    assert big.chosen == "ray" and big.ray_workers == 2 and big.assumptions
    assert big.crossover_configs is not None and big.crossover_configs < 10**6
    small = choose_executor(measured, 1000, address=None, workers=2)
    assert small.chosen == "local" and small.local_seconds < small.ray_seconds
    unmeasured = choose_executor(Plan(64, "fixed (--batch-size)"), 10**6, address=None, workers=8)
    assert unmeasured.chosen == "local" and "fixed" in unmeasured.reason
    assert choose_executor(Plan(64, "x"), 10, address="h:1", workers=None).chosen == "ray"


def test_choice_round_trips_through_the_session_record():
    choice = ExecutorChoice("auto", "local", "why", 10, 1.5, math.nan, 2, None, ("linear scaling",))
    session = Session(id=1, executor_choice=choice, plan=Plan(4, "auto"))
    doc = session.to_json()
    assert doc["executor_choice"]["ray_seconds"] is None
    back = Session.from_json(doc)
    assert back.executor_choice is not None
    assert back.executor_choice.to_json() == choice.to_json()


def test_eta_and_durations():
    e = eta(500, 2.0, 1000)
    assert e.configs_per_second == 250 and e.seconds_left == 4.0
    assert e.rate_text() == "250 configs/s" and e.left_text() == "4s"
    assert not eta(0, 2.0, 10).known and eta(0, 2.0, 10).left_text() == "-"
    assert [format_duration(s) for s in (0.4, 59, 61, 3600 * 2 + 65, 86_400 * 3 + 7200)] == [
        "0s",
        "59s",
        "1m01s",
        "2h01m",
        "3d02h",
    ]


def test_planner_settings_change_the_prediction():
    coarse = predict_wall(100_000, CostModel(1e-3, 0.05, 0.0, 4), settings=PlannerSettings(0.5))
    assert coarse.batch_size == 50  # B*(0.5) = O / b


def test_plan_reads_the_usl_of_the_last_bench_scaling(tmp_path):
    import json
    from dataclasses import replace

    from sweep.common._jsonable import dumps
    from sweep.plan._preflight import bench_scaling
    from sweep.store._bench_results import FitFailed, ScalingPoint, ScalingResult, UslFit

    assert bench_scaling(str(tmp_path)).linear  # nothing there: linear, and it says so
    assert "linear scaling" in bench_scaling(str(tmp_path)).source
    result = ScalingResult(
        generated="2026-12-02T00:00:00+00:00",
        cluster_cpus=8,
        max_workers=8,
        cpus_per_task=1.0,
        batch_size=64,
        tasks=32,
        configs=2048,
        rounds=1,
        warm_workers=8,
        method="made up",
        points=(ScalingPoint(1, 1, (1.0,), 2048.0),),
        fit=UslFit(
            sigma=0.05,
            kappa=0.002,
            gamma=2048.0,
            peak_workers=21.8,
            peak_throughput=9000.0,
            r_squared=1.0,
        ),
    )
    (tmp_path / "scaling.json").write_text(dumps(result.to_json()))
    usl = bench_scaling(str(tmp_path))
    assert (usl.sigma, usl.kappa) == (0.05, 0.002) and "USL" in usl.source
    assert "2026-12-02T00:00:00+00:00, 8 CPUs" in usl.source
    assert usl.capacity(8) == pytest.approx(8 / (1 + 0.05 * 7 + 0.002 * 8 * 7))
    failed_fit = replace(result, fit=FitFailed(reason="too few points"))
    (tmp_path / "scaling.json").write_text(dumps(failed_fit.to_json()))
    failed = bench_scaling(str(tmp_path))
    assert failed.linear and "too few points" in failed.source
    doc = json.loads((tmp_path / "scaling.json").read_text())
    del doc["points"]  # a file that is not a scaling result is not read
    (tmp_path / "scaling.json").write_text(json.dumps(doc))
    assert "no sweep bench scaling" in bench_scaling(str(tmp_path)).source
