"""Section 7 from the run's own telemetry: against the amortization law on constructed
tasks, and present in every fixture report."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sweep.executors import assumed_costs, local_cluster_kind
from sweep.plan._auto import local_workers
from sweep.plan._forecast import CostModel, crossover
from sweep.report._execution import _fit
from sweep.report._run_scaling import UslSummary, run_scaling
from sweep.store._bench_results import ScalingPoint, ScalingResult, UslFit
from sweep.store._record import ExecutorInfo, Plan, Session

OVERHEAD, PER_CONFIG = 0.02, 1e-3

ASSUMED_STARTUP, ASSUMED_OVERHEAD = assumed_costs(local_cluster_kind())


def _tasks(sizes: list[int]) -> pd.DataFrame:
    n = np.array(sizes)
    service = OVERHEAD + PER_CONFIG * n
    return pd.DataFrame(
        {
            "session": 1,
            "n_configs": n,
            "service": service,
            "compute": PER_CONFIG * n,
            "warm": [False] + [True] * (len(sizes) - 1),
        }
    )


def _sessions(executor: str = "local", workers: int = 1, plan: Plan | None = None):  # type: ignore[no-untyped-def]
    info = ExecutorInfo(kind=executor, workers=workers, nodes=1)
    return (Session(id=1, executor=executor, executor_info=info, plan=plan),)


def test_tasks_on_the_law_give_the_law():
    tasks = _tasks([1, 32, 128, 512, 500, 500, 500, 500])
    warm = tasks[tasks["warm"]]
    fit = _fit(warm["n_configs"].to_numpy(), warm["service"].to_numpy())
    r = run_scaling(_sessions(), tasks, fit, None)
    assert r.overhead_seconds == pytest.approx(OVERHEAD, rel=1e-9)
    assert r.per_config_seconds == pytest.approx(PER_CONFIG, rel=1e-9)
    assert r.batch_size == 500  # the most common warm size
    law = (
        500 * (OVERHEAD + PER_CONFIG) / (OVERHEAD + PER_CONFIG * 500)
    )  # S(B) = B (O + b) / (O + b B)
    assert r.law_speedup == pytest.approx(law, rel=1e-9)
    assert r.achieved_speedup == pytest.approx(law, rel=1e-9)  # the tasks follow the law
    assert r.ceiling == pytest.approx(1 + OVERHEAD / PER_CONFIG, rel=1e-9)
    o, b = r.overhead_seconds, r.per_config_seconds  # the fit (equal to O, b to 1e-9)
    expected = crossover(
        CostModel(b, o),
        CostModel(b, max(o, ASSUMED_OVERHEAD), ASSUMED_STARTUP, local_workers(None)),
    )
    assert r.crossover_configs == expected
    assert any("assumed" in s for s in r.crossover_basis)
    assert r.usl is None


def test_slower_tasks_than_the_law_show_in_the_achieved_speedup():
    tasks = _tasks([1, 32, 128, 512, 500, 500, 500])
    warm = tasks[tasks["warm"]]
    fit = _fit(warm["n_configs"].to_numpy(), warm["service"].to_numpy())
    slow = tasks.copy()
    slow.loc[slow["n_configs"] == 500, "service"] *= 2  # the main batches took twice as long
    r = run_scaling(_sessions(), slow, fit, None)
    assert r.achieved_speedup == pytest.approx(r.law_speedup / 2, rel=1e-9)


def test_without_a_fit_the_pilot_or_the_means_are_used():
    tasks = _tasks([1, 7, 7, 7])  # one warm size: no fit
    warm = tasks[tasks["warm"]]
    no_fit = _fit(warm["n_configs"].to_numpy(), warm["service"].to_numpy())
    assert not no_fit.available
    pilot = Plan(batch_size=7, source="auto", per_config_seconds=2e-3, overhead_seconds=0.5)
    r = run_scaling(_sessions(plan=pilot), tasks, no_fit, None)
    assert (r.per_config_seconds, r.overhead_seconds) == (2e-3, 0.5)
    assert "pilot" in r.source
    r = run_scaling(_sessions(), tasks, no_fit, None)
    assert r.per_config_seconds == pytest.approx(
        PER_CONFIG
    ) and r.overhead_seconds == pytest.approx(OVERHEAD)
    assert "no fit, no pilot" in r.source


def test_ray_run_uses_its_workers_and_the_usl():
    tasks = _tasks([1, 1, 32, 128, 512, 500, 500, 500, 500])
    warm = tasks[tasks["warm"]]
    fit = _fit(warm["n_configs"].to_numpy(), warm["service"].to_numpy())
    usl = UslFit(
        sigma=0.5, kappa=0.0, gamma=100.0, peak_workers=None, peak_throughput=200.0, r_squared=1.0
    )
    bench = ScalingResult(
        cluster_cpus=4,
        max_workers=4,
        cpus_per_task=1.0,
        batch_size=500,
        tasks=16,
        configs=8000,
        rounds=1,
        warm_workers=4,
        method="made up",
        points=(ScalingPoint(1, 1, (1.0,), 100.0),),
        fit=usl,
    )
    r = run_scaling(_sessions("ray", 4), tasks, fit, bench)
    assert (r.executor, r.workers) == ("ray", 4)
    assert r.usl == UslSummary(sigma=0.5, kappa=0.0, peak_workers=None, r_squared=1.0)
    assert any("USL" in s for s in r.crossover_basis)


def test_every_fixture_report_has_a_scaling_section_from_its_run(reports):
    for name, (report, files) in reports.items():
        section = report.data.scaling.from_run
        assert section is not None and section.tasks > 0, name
        assert section.per_config_seconds > 0 and section.overhead_seconds >= 0, name
        assert report.to_json()["scaling"]["from_run"]["tasks"] == section.tasks
        text = files.markdown.read_text(encoding="utf-8")
        scaling = text[text.index("## 7. Scaling") :]
        assert "| this run |" in scaling and "| crossover |" in scaling, name
