"""Planning while the workers work: the stream's schedule, its O, and a real Ray run."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from sweep import PlannerSettings, resolve, results_hash, run_sweep, spec_from_dict
from sweep.common._range_set import RangeSet
from sweep.engine._evaluate import BatchResult
from sweep.executors import BatchOutcome
from sweep.executors._ray import RayExecutor
from sweep.plan._planner import PILOT_FIRST, clamp_batch
from sweep.plan._planning_stream import PlanningStream, between_tasks, plan_while_running
from sweep.store._record import TaskTelemetry
from sweep.store._run_store import RunStore
from tests.helpers import small_spec_dict

SETTINGS = PlannerSettings()


def telemetry(worker: str, start: float, end: float, configs: int, **times: float) -> TaskTelemetry:
    return TaskTelemetry(
        submit_time=times.get("submit", start),
        start_time=start,
        end_time=end,
        received_time=times.get("received", end),
        compute_seconds=end - start,
        n_configs=configs,
        worker=worker,
        node="n",
        host="h",
        attempt=0,
    )


def outcome(batch: np.ndarray, worker: str, start: float, per_config: float) -> BatchOutcome:
    end = start + per_config * batch.shape[0]
    result = BatchResult(pa.table({}), end - start, 0, None)
    return BatchOutcome(batch, result, telemetry(worker, start, end, int(batch.shape[0])))


def test_between_tasks_is_the_median_gap_on_each_worker():
    timings = [
        telemetry("a", 0.0, 1.0, 10),
        telemetry("a", 1.2, 2.0, 10),  # gap 0.2
        telemetry("a", 2.5, 3.0, 10),  # gap 0.5
        telemetry("b", 0.0, 0.5, 10),
        telemetry("b", 0.6, 1.0, 10),  # gap 0.1
    ]
    assert between_tasks(list(reversed(timings))) == pytest.approx(0.2)
    # no worker ran twice: the round trips beyond compute
    alone = [telemetry("a", 1.0, 2.0, 5, submit=0.9, received=2.3)]
    assert between_tasks(alone) == pytest.approx(0.4)


def test_the_stream_needs_several_workers():
    with pytest.raises(ValueError, match="several workers"):
        PlanningStream(RangeSet.full(1000), 1, SETTINGS, lambda plan: None)


def test_schedule_pilots_then_provisional_then_planned():
    todo = np.arange(10_000, dtype=np.int64)
    plans = []
    stream = PlanningStream(RangeSet.full(10_000), 2, SETTINGS, plans.append)
    batches = stream.batches()
    handed: list[np.ndarray] = []

    def draw() -> np.ndarray:
        handed.append(next(batches))
        return handed[-1]

    pilots = [draw(), draw()]
    assert [p.shape[0] for p in pilots] == [PILOT_FIRST, PILOT_FIRST]
    early = draw()  # nothing timed yet
    assert early.shape[0] == 4 * PILOT_FIRST
    b = 0.001
    stream.observe(outcome(pilots[0], "w1", 0.0, 2 * b), 0.01)  # cold: not a fit point
    rough = 2 * b
    expected, _ = clamp_batch(math.inf, 10_000, 2, rough, SETTINGS)
    provisional = draw()
    assert provisional.shape[0] == expected == 1250  # the load-balance clamp
    stream.observe(outcome(pilots[1], "w2", 0.0, 2 * b), 0.01)
    assert stream.plan is None  # no warm task yet
    stream.observe(outcome(early, "w1", 0.1, b), 0.01)  # warm provisional back: plan
    assert plans == [stream.plan] and stream.plan is not None
    plan = stream.plan
    assert plan.source == "auto (amortization law, planned while running)"
    assert plan.warmup_configs == 2 * PILOT_FIRST
    assert [t.configs for t in plan.pilot] == [4 * PILOT_FIRST]
    assert plan.per_config_seconds == pytest.approx(b)
    # the gap on each worker: w1 ended its pilot at 0.064 and started its next at 0.1
    assert plan.transport_seconds == pytest.approx(0.1 - 0.064)
    assert plan.batch_size == 1250  # the load-balance clamp over the session's configs
    stream.observe(outcome(provisional, "w2", 0.2, b), 0.01)  # after the plan: not taken
    assert plans == [plan] and stream.plan.pilot == plan.pilot
    rest = list(batches)
    sizes = [r.shape[0] for r in rest]
    left = 10_000 - sum(h.shape[0] for h in handed)
    full = left // 1250 - 1  # planned batches until less than one per worker is left
    assert sizes[:full] == [1250] * full
    tail = sizes[full:]  # what is left, split evenly over the two workers
    assert len(tail) == 2 and max(tail) - min(tail) <= 1 and max(tail) < 1250
    # every config handed out exactly once, in order
    np.testing.assert_array_equal(np.concatenate(handed + rest), todo)


def test_a_sweep_that_ends_before_the_plan_still_records_one():
    stream = PlanningStream(RangeSet.full(300), 2, SETTINGS, lambda plan: None)
    handed = list(stream.batches())
    assert sum(h.shape[0] for h in handed) == 300
    stream.finish()
    assert stream.plan is not None and stream.plan.source == "the pilots were the whole sweep"


def test_a_ray_run_plans_while_running_and_gives_the_in_process_table(ray_local, tmp_path):
    spec = spec_from_dict(
        small_spec_dict(
            grid={"lookback": {"start": 5, "stop": 605}, "band": [0.0, 0.01]},
            data={"source": "synthetic", "years": 4},
        )
    )
    sweep = resolve(spec)
    local = run_sweep(sweep, tmp_path / "local", executor="local", progress=False)
    on_ray = run_sweep(sweep, tmp_path / "ray", executor="ray", progress=False)
    assert on_ray.table_hash == local.table_hash == results_hash(tmp_path / "ray")
    plan = RunStore(tmp_path / "ray").load_manifest().sessions[-1].plan
    assert plan is not None and plan.source == "auto (amortization law, planned while running)"
    assert plan.pilot and plan.per_config_seconds > 0 and plan.overhead_seconds > 0
    assert math.isnan(plan.probe_seconds)  # O from the gaps between tasks, no probe
    tel = RunStore(tmp_path / "ray").read_telemetry().to_pandas()
    assert int(tel["n_configs"].sum()) == len(sweep.grid)
    pilots = tel.sort_values("submit_time").head(2)
    assert pilots["n_configs"].tolist() == [PILOT_FIRST] * 2
    # Warm-up is the first (cold) task of every worker process seen before the plan: those
    # that ran the pilots (all back before the plan), and any process Ray started later,
    # which a loaded machine can, whose first task finished before the plan.
    firsts = tel.sort_values("start_time").groupby(["node", "worker"])["n_configs"].first()
    piloted = set(zip(pilots["node"], pilots["worker"], strict=True))
    seen = sum(n for key, n in firsts.items() if key in piloted)
    later = [n for key, n in firsts.items() if key not in piloted]
    assert plan.warmup_configs - seen in subset_sums(later)


def subset_sums(values: list[int]) -> set[int]:
    """Every sum of a subset of ``values`` (the empty one included)."""
    sums = {0}
    for v in values:
        sums |= {s + v for s in sums}
    return sums


def test_a_sweep_that_ends_with_a_pilot_out_plans_from_what_came_back():
    stream = PlanningStream(RangeSet.full(300), 2, SETTINGS, lambda plan: None)
    handed = list(stream.batches())
    stream.observe(outcome(handed[0], "w1", 0.0, 0.002), 0.01)  # w1's cold pilot
    stream.observe(outcome(handed[2], "w1", 0.1, 0.001), 0.01)  # warm; w2's pilot still out
    assert stream.plan is None
    stream.finish()
    assert stream.plan is not None
    assert stream.plan.source == "auto (amortization law, planned while running)"
    assert stream.plan.per_config_seconds == pytest.approx(0.001)


def test_sweep_plan_on_ray_stops_at_the_plan(ray_local):
    sweep = resolve(
        spec_from_dict(
            small_spec_dict(
                grid={"lookback": {"start": 5, "stop": 605}, "band": [0.0, 0.01]},
                data={"source": "synthetic", "years": 4},
            )
        )
    )
    executor = RayExecutor()
    executor.start(sweep)
    written: list[int] = []

    def write(done: BatchOutcome) -> float:
        written.append(int(done.indices.shape[0]))
        return 0.0

    try:
        todo = RangeSet.full(len(sweep.grid))
        plan = plan_while_running(executor, todo, write, SETTINGS)
        small = plan_while_running(executor, RangeSet.full(100), write, SETTINGS)
    finally:
        executor.close()
    assert plan.source == "auto (amortization law, planned while running)"
    assert plan.per_config_seconds > 0 and plan.batch_size >= 1
    assert sum(written) < len(sweep.grid)  # it stopped once the plan was made
    assert small.source == "small sweep (no pilot)"
