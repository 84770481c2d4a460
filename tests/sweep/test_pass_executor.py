"""Where verify and report check their parts: --executor auto|local|ray, the same output."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import replace

import pytest

from sweep import executors, run_sweep, spec_from_dict
from sweep.executors import _ray
from sweep.plan._auto import choose_pass_executor
from sweep.runner._pass_executor import PILOT_PARTS, PassExecutor
from sweep.runner._status import results_frame, verify_run
from sweep.store._null_summary import summary_digest
from sweep.store._part_audit import audit_here, merged_null_summary
from sweep.store._run_store import RunStore
from tests.helpers import small_spec_dict


@pytest.fixture(scope="module")
def run_dir(small_run_parts_of_one):
    return small_run_parts_of_one  # 60 parts of one config, shared by the session: read only


def test_the_rule_picks_a_local_cluster_only_where_it_is_predicted_to_end_first():
    # 2,039 parts at 65 ms each (the 10^7 run's check): 132 s here vs 12 s + 66 s on 2 CPUs.
    many = choose_pass_executor(2_039, 0.065, workers=2)
    assert many.chosen == "ray" and many.ray_seconds < many.local_seconds
    assert many.local_seconds == pytest.approx(2_039 * 0.065)
    assert "for 2,039 parts" in many.reason and many.ray_workers == 2
    assert many.crossover_configs is not None and many.crossover_configs <= 2_039
    few = choose_pass_executor(200, 0.065, workers=2)  # 13 s here: start-up does not pay
    assert few.chosen == "local" and few.local_seconds < few.ray_seconds
    assert few.crossover_configs == many.crossover_configs
    one_cpu = choose_pass_executor(10**6, 0.065, workers=1)
    assert one_cpu.chosen == "local"
    nothing_left = choose_pass_executor(0, math.nan, workers=2)
    assert nothing_left.chosen == "local" and math.isnan(nothing_left.local_seconds)


def test_auto_times_the_first_parts_here_and_keeps_their_audits(run_dir):
    store = RunStore(run_dir)
    store.load_manifest()
    names = store.part_names()
    passes = PassExecutor("auto")
    audits = passes.audit(store, names, True)
    here = audit_here(store, names, True)
    assert [replace(a, merged_parts=()) for a in audits] == [
        replace(a, merged_parts=()) for a in here
    ]
    # Each pilot part carries its own summary, the rest one merge: the same merge in all.
    assert sum(bool(a.merged_parts) for a in audits) == len(names) - passes.choice.configs + 1
    every = set(names)
    assert summary_digest(merged_null_summary(store, audits, every)) == summary_digest(
        merged_null_summary(store, here, every)
    )
    choice = passes.choice
    assert choice is not None and choice.chosen == "local"  # 60 parts of one config
    assert len(names) - PILOT_PARTS <= choice.configs < len(names)
    assert choice.assumptions and "same machine" in choice.assumptions[1]


@pytest.mark.ray
def test_auto_runs_the_passes_on_a_local_cluster_when_it_is_predicted_faster(
    run_dir, ray_env, tmp_path, monkeypatch
):
    import ray

    from sweep.report import build_report
    from tests.report.conftest import FAST

    # A cluster that costs nothing to start or use: the rule must then choose it (the
    # report's crossover assumes the same costs, so both reports are made under them).
    monkeypatch.setitem(executors._ASSUMED_COSTS, "ray", (0.0, 0.0))
    here = build_report(run_dir, FAST)
    assert not ray.is_initialized()
    with PassExecutor("auto", workers=2) as passes:
        there = build_report(
            run_dir,
            FAST,
            auditor=passes.audit,
            recompute=passes.recompute,
        )
        assert ray.is_initialized() and ray.cluster_resources()["CPU"] == 2
        verified = verify_run(run_dir, auditor=passes.audit)
        best, notes = results_frame(run_dir, "excess_sharpe_ann", 7, passes=passes)
    assert not ray.is_initialized()  # the cluster it started is gone with it
    best_here, notes_here = results_frame(run_dir, "excess_sharpe_ann", 7)
    assert best.equals(best_here) and notes == notes_here
    assert passes.choice is not None and passes.choice.chosen == "ray"
    assert "on a local Ray cluster of 2 workers" in passes.choice.reason
    assert there.to_json() | {"generated": None} == here.to_json() | {"generated": None}
    assert verified.to_json() == verify_run(run_dir).to_json()


def test_auto_stays_here_when_the_chosen_cluster_cannot_start(run_dir, monkeypatch):
    def refuse(address: str | None, workers: int | None, *more: object) -> None:
        raise RuntimeError("no room for a cluster")

    monkeypatch.setitem(executors._ASSUMED_COSTS, "ray", (0.0, 0.0))
    monkeypatch.setattr(_ray, "init_ray", refuse)
    with PassExecutor("auto", workers=2) as passes:
        verified = verify_run(run_dir, auditor=passes.audit)
    assert verified.to_json() == verify_run(run_dir).to_json()
    assert passes.choice is not None and passes.choice.chosen == "local"
    assert passes.choice.reason.endswith(
        "but cannot start or join Ray (address None): no room for a cluster: in-process"
    )


def test_local_with_workers_is_refused_before_anything_is_read(tmp_path):
    for command in ("verify", "report"):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "sweep",
                command,
                str(tmp_path / "none"),
                "--executor",
                "local",
                "--workers",
                "2",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert "--workers: applies only with --executor ray, dask or auto" in done.stderr


def test_a_session_reads_its_parts_where_its_sweep_may_run():
    from sweep.executors import make_executor
    from sweep.runner._driver import RunSettings, survey_executor

    assert survey_executor(RunSettings(executor="local")).kind == "local"
    assert survey_executor(RunSettings(executor=make_executor("local"))).kind == "local"
    on_cluster = survey_executor(RunSettings(executor="ray", address="127.0.0.1:6379"))
    assert on_cluster.on_cluster and on_cluster.address == "127.0.0.1:6379"
    given = survey_executor(RunSettings(executor=make_executor("ray", address="127.0.0.1:1")))
    assert given.on_cluster and given.address == "127.0.0.1:1"
    auto = survey_executor(RunSettings(workers=2))  # decided by the law, after a pilot
    assert auto.kind == "auto" and auto.choice is None and auto.workers == 2


@pytest.mark.ray
def test_the_survey_of_a_sessions_start_on_ray_finds_what_it_finds_here(
    run_dir, ray_env, tmp_path, monkeypatch
):
    # A resume's start and `sweep status` read every part; on a local cluster (chosen by the
    # law once starting it costs nothing) they find the same checks, done ranges and
    # environments as here, a truncated part included, and a resume then ends as here.
    import shutil

    import ray

    from sweep.runner import _driver
    from sweep.runner._status import run_status
    from sweep.store._survey import survey_parts

    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    cut = sorted((copy / "parts").glob("part-*.parquet"))[7]
    cut.write_bytes(cut.read_bytes()[:-10])
    store = RunStore(copy)
    store.load_manifest()
    here = survey_parts(store)
    status_here = run_status(copy).to_json()
    monkeypatch.setitem(executors._ASSUMED_COSTS, "ray", (0.0, 0.0))
    with PassExecutor("auto", workers=2) as passes:
        there = survey_parts(store, passes.map_parts)
        status_there = run_status(copy, mapper=passes.map_parts).to_json()
        assert ray.is_initialized()
    assert passes.choice is not None and passes.choice.chosen == "ray"
    assert (there.checks, there.done, there.environments, there.failed) == (
        here.checks,
        here.done,
        here.environments,
        here.failed,
    )
    assert sum(not c.ok for c in there.checks) == 1
    assert there.hashing is not None and here.hashing is not None
    assert there.hashing.digest(store) == here.hashing.digest(store)
    assert status_there == status_here
    used: list[PassExecutor] = []
    original = _driver.survey_executor

    def spied(settings):  # type: ignore[no-untyped-def]
        used.append(original(settings))
        return used[-1]

    monkeypatch.setattr(_driver, "survey_executor", spied)
    summary = run_sweep(
        spec_from_dict(small_spec_dict()), copy, executor="local", progress=False, workers=None
    )
    assert used[-1].kind == "local" and summary.computed == 1
    resumed = run_sweep(spec_from_dict(small_spec_dict()), copy, workers=2, progress=False)
    assert used[-1].choice is not None and used[-1].choice.chosen == "ray"
    assert not ray.is_initialized()
    assert resumed.computed == 0 and resumed.table_hash == summary.table_hash
