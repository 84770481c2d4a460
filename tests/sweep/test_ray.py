"""The Ray executor on one local node: one hash everywhere, errors, the planner."""

from __future__ import annotations

import numpy as np
import pytest

from sweep import PlannerSettings, resolve, results_hash, run_sweep, spec_from_dict
from sweep.errors import ConfigFailedError
from sweep.executors._ray import RayExecutor
from sweep.runner._status import verify_run
from sweep.store._run_store import RunStore
from tests.helpers import small_spec_dict

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def local_hash(small_run) -> tuple[str, str]:
    """Table and null-summary hashes of the small sweep run in-process (the session's run)."""
    table_hash, null_hash = results_hash(small_run), verify_run(small_run).null_summary_hash
    assert table_hash and null_hash
    return table_hash, null_hash


@pytest.mark.parametrize("batch_size", [None, 1, 7, 60])
def test_ray_gives_the_local_hash_for_any_batch_size(ray_local, tmp_path, local_hash, batch_size):
    summary = run_sweep(
        spec_from_dict(small_spec_dict()),
        tmp_path / "r",
        executor="ray",
        batch_size=batch_size,
        progress=False,
    )
    # Same rows (per-config p-values included) and same sweep-wide null summaries.
    assert (summary.table_hash, verify_run(tmp_path / "r").null_summary_hash) == local_hash
    telemetry = RunStore(tmp_path / "r").read_telemetry().to_pandas()
    assert telemetry["n_configs"].sum() == 60
    assert (telemetry["start_time"] >= telemetry["submit_time"] - 1).all()
    assert (telemetry["end_time"] >= telemetry["start_time"]).all()
    assert set(telemetry["attempt"]) == {0}
    if batch_size == 1:
        assert telemetry["worker"].nunique() >= 1 and len(telemetry) == 60


def test_failing_configs_are_recorded_or_stop_the_sweep(ray_local, tmp_path):
    doc = small_spec_dict(
        strategy={"name": "tests.strategies_for_tests:Raising"},
        grid={"lookback": {"start": 5, "stop": 45}, "band": [0.0, 0.01]},
    )
    summary = run_sweep(
        spec_from_dict(doc), tmp_path / "rec", executor="ray", batch_size=8, progress=False
    )
    from sweep import load_results

    frame = load_results(tmp_path / "rec")
    bad = frame[frame["status"] == "error"]
    assert sorted(set(bad["lookback"])) == [13, 26, 39]
    assert summary.failed == len(bad) == 6
    assert bad["error"].str.contains("is unlucky").all()
    assert frame.loc[frame["status"] == "ok", "sharpe"].notna().all()
    assert np.isnan(bad["sharpe"]).all()
    with pytest.raises(ConfigFailedError, match="unlucky"):
        run_sweep(
            spec_from_dict(doc),
            tmp_path / "raise",
            executor="ray",
            batch_size=8,
            on_error="raise",
            progress=False,
        )
    manifest = RunStore(tmp_path / "raise").read_manifest()
    assert manifest["sessions"][-1]["status"] == "failed"
    done = RunStore(tmp_path / "raise").done_mask(80)
    assert not done[np.flatnonzero(np.isin(np.repeat(np.arange(5, 45), 2), [13, 26, 39]))].any()


def test_planner_batch_grows_with_injected_overhead_as_the_law_predicts(ray_local, monkeypatch):
    # A strategy with a steady 2 ms per config makes b stable, so B*(f) tracks O.
    monkeypatch.setenv("RAYSWEEP_TEST_SLEEP", "0.002")
    sweep = resolve(
        spec_from_dict(
            small_spec_dict(
                strategy={"name": "tests.strategies_for_tests:SlowMomentum"},
                grid={"lookback": {"start": 5, "stop": 1000}, "band": [0.0, 0.001, 0.002, 0.004]},
                data={"source": "synthetic", "years": 5},
            )
        )
    )
    from sweep.common._range_set import RangeSet
    from sweep.plan._planner import plan_batches

    todo = RangeSet.full(len(sweep.grid))

    plans = {}
    settings = PlannerSettings(min_tasks_per_worker=1, max_task_seconds=1e9)
    # A throwaway plan first, so no measured plan pays for worker processes Ray starts cold
    # after the previous tests (their import and JIT load would inflate the fixed cost).
    for delay in (0.0, 0.0, 0.05, 0.2):
        executor = RayExecutor(noop_delay=delay)
        executor.start(sweep)
        plan, _ = plan_batches(executor, todo, None, lambda outcome: 0.0, settings)
        executor.close()
        plans[delay] = plan
        law = 0.99 * plan.overhead_seconds / (plan.per_config_seconds * 0.01)
        assert plan.law_batch == pytest.approx(law)
    # The measured O grows by at least the injected delay (it is in worker-seconds; a loaded
    # machine adds more), and B*(f) grows with it: O/b sets the batch.
    t = {d: p.probe_seconds for d, p in plans.items()}
    assert all(p.transport_seconds >= p.probe_seconds for p in plans.values())
    assert t[0.05] - t[0.0] > 0.8 * 0.05
    assert t[0.2] - t[0.05] > 0.8 * 0.15
    detail = {d: {k: v for k, v in p.to_json().items() if k != "pilot"} for d, p in plans.items()}
    assert plans[0.2].law_batch > 2 * plans[0.05].law_batch > 4 * plans[0.0].law_batch, detail
    for p in plans.values():
        remaining = len(todo) - sum(r.configs for r in p.pilot) - p.warmup_configs
        assert p.batch_size == min(int(np.ceil(remaining / 2)), int(np.ceil(p.law_batch)))


def test_clamps_hold_on_a_small_grid(ray_local, tmp_path):
    summary = run_sweep(
        spec_from_dict(
            small_spec_dict(
                grid={"lookback": {"start": 5, "stop": 405}, "band": [0.0]},
                data={"source": "synthetic", "years": 4},
            )
        ),
        tmp_path / "r",
        executor="ray",
        progress=False,
        planner=PlannerSettings(max_task_seconds=0.05),
    )
    plan = summary.plan
    assert plan.source == "auto (amortization law, planned while running)"
    # planned while running: the load balance counts every config of the session
    assert plan.batch_size <= np.ceil(400 / (2 * 4))
    assert plan.batch_size <= max(1, 0.05 / plan.per_config_seconds)
    assert plan.clamps
    manifest = RunStore(tmp_path / "r").load_manifest()
    assert manifest.sessions[-1].plan is not None
    assert manifest.sessions[-1].plan.batch_size == plan.batch_size
