"""verify, results --top and report as Ray tasks: the same output as in one process."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from dataclasses import replace

import numpy as np
import psutil
import pytest

from sweep import resolve, run_sweep, spec_from_dict
from sweep.engine._evaluate import config_returns
from sweep.executors._part_tasks import config_returns_on, map_part_groups
from sweep.executors._ray import RayExecutor
from sweep.runner._pass_executor import PassExecutor
from sweep.runner._status import results_frame, verify_run
from sweep.store._null_summary import summary_digest
from sweep.store._part_audit import audit_part, merged_null_summary
from sweep.store._run_store import RunStore
from tests.helpers import small_spec_dict
from tests.part_task_helpers import (
    audit_or_die_once,
    read_or_die_once,
    returns_or_die_once,
)

pytestmark = pytest.mark.ray
SWEEP = [sys.executable, "-m", "sweep"]
#: Ray's log lines (joining a cluster): a timestamp first, with or without a bracket.
RAY_LOG = re.compile(r"^\[?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


@pytest.fixture(scope="module")
def run_dir(small_run_parts_of_one):
    return small_run_parts_of_one  # 60 parts of one config, shared by the session: read only


@pytest.fixture(scope="module")
def address(ray_local):
    return ray_local.get_runtime_context().gcs_address


@pytest.fixture(scope="module")
def ray_backend(ray_local):
    """The Ray backend on the session's shared cluster (joined, so left running)."""
    backend = RayExecutor()
    backend.connect()
    yield backend
    backend.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The command's exit code, stdout and stderr, without Ray's own log lines on stderr."""
    done = subprocess.run([*SWEEP, *args], capture_output=True, text=True, check=False)
    kept = [line for line in done.stderr.splitlines(True) if not RAY_LOG.match(line)]
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout, "".join(kept))


def test_verify_on_ray_gives_the_same_record(run_dir, address):
    here = verify_run(run_dir)
    with PassExecutor("auto", address) as passes:
        there = verify_run(run_dir, auditor=passes.audit)
    assert there.to_json() == here.to_json()
    assert here.table_hash and here.good_parts == 60


def split_executor_line(stdout: str) -> tuple[str, str]:
    """The ``executor:`` line (with its wrapped continuation) and the rest of the output."""
    lines = stdout.splitlines(True)
    start = next(i for i, line in enumerate(lines) if line.startswith("executor: "))
    end = start + 1
    while end < len(lines) and lines[end].startswith(" " * 10) and lines[end][10] != " ":
        end += 1
    return "".join(lines[start:end]), "".join(lines[:start] + lines[end:])


def test_verify_cli_prints_the_same_bytes_on_ray(run_dir, address):
    here = _cli("verify", str(run_dir))
    there = _cli("verify", str(run_dir), "--address", address)
    assert here.returncode == there.returncode == 0, there.stderr
    (here_where, here_rest), (there_where, there_rest) = map(
        split_executor_line, (here.stdout, there.stdout)
    )
    assert (there_rest, there.stderr) == (here_rest, here.stderr)
    assert "table hash: " in here.stdout
    assert here_where.startswith("executor: in-process (predicted ")  # auto chose: 60 tiny parts
    assert there_where == f"executor: Ray (a Ray cluster address was given ({address}))\n"


def test_verify_on_ray_names_a_bad_part_as_here(run_dir, address, tmp_path):
    import shutil

    copy = tmp_path / "r"
    shutil.copytree(run_dir, copy)
    victim = copy / "parts" / RunStore(copy).part_names()[3]
    victim.write_bytes(victim.read_bytes()[:-10])
    here = _cli("verify", str(copy))
    there = _cli("verify", str(copy), "--address", address)
    assert here.returncode == there.returncode == 1
    assert split_executor_line(there.stdout)[1] == split_executor_line(here.stdout)[1]
    assert there.stderr == here.stderr
    assert "BAD PART" in here.stderr


@pytest.mark.parametrize("sort", ["excess_sharpe_ann", "n_trades"])
def test_results_top_on_ray_gives_the_same_rows(run_dir, address, sort):
    here, notes_here = results_frame(run_dir, sort, 7)
    with PassExecutor("auto", address) as passes:
        there, notes_there = results_frame(run_dir, sort, 7, passes=passes)
    assert notes_there == notes_here
    assert there.equals(here)


def test_results_cli_prints_the_same_bytes_on_ray(run_dir, address):
    for fmt in ("table", "csv"):
        here = _cli("results", str(run_dir), "--top", "5", "--format", fmt)
        there = _cli("results", str(run_dir), "--top", "5", "--format", fmt, "--address", address)
        assert here.returncode == there.returncode == 0, there.stderr
        assert there.stdout == here.stdout and here.stdout
        assert "executor: Ray (a Ray cluster address was given" in there.stderr
        assert "executor: in-process (predicted" in here.stderr


def test_a_worker_killed_mid_verify_is_retried(run_dir, ray_backend, tmp_path):
    marker = tmp_path / "killed-once"
    store = RunStore(run_dir)
    names = store.part_names()
    groups = list(
        map_part_groups(ray_backend, audit_or_die_once, store, names, (True, str(marker)))
    )
    assert marker.exists(), "no task killed its worker"
    killed = int(marker.read_text())
    assert not psutil.pid_exists(killed) or psutil.Process(killed).status() == "zombie"
    audits = [a for group in groups for a in group]
    alone = [audit_part(store, n, rehash=True) for n in names]
    assert alone_without(audits) == alone_without(alone)
    merged = {summary_digest(merged_null_summary(store, a, set(names))) for a in (audits, alone)}
    assert len(merged) == 1  # the groups' merged null summaries are the parts' own, merged


def alone_without(audits: list) -> list:
    """Audits with the null summaries they carry left out (compared apart)."""
    return [replace(a, merged_parts=()) for a in audits]


def _audit_workers() -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if any("ray::audit_parts" in part for part in proc.info["cmdline"] or ()):
            found.append(proc)
    return found


def _kill_while_auditing(*args: str) -> None:
    """Start ``sweep ARGS``, SIGKILL it once its audit tasks run, and check that it was so."""
    driver = subprocess.Popen([*SWEEP, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and driver.poll() is None and not _audit_workers():
        time.sleep(0.005)
    started = bool(_audit_workers())
    driver.send_signal(signal.SIGKILL)
    code = driver.wait()
    assert started and code == -signal.SIGKILL, "the driver was not killed while its tasks ran"


def test_a_verify_driver_killed_after_submitting_reruns_to_the_same_output(run_dir, address):
    uninterrupted = _cli("verify", str(run_dir), "--address", address)
    assert uninterrupted.returncode == 0, uninterrupted.stderr
    _kill_while_auditing("verify", str(run_dir), "--address", address)
    rerun = _cli("verify", str(run_dir), "--address", address)
    assert (rerun.returncode, rerun.stdout, rerun.stderr) == (
        uninterrupted.returncode,
        uninterrupted.stdout,
        uninterrupted.stderr,
    )


# --- sweep report: its integrity pass (each part checked and re-hashed) as Ray tasks -------


def _report_json(folder) -> dict:
    import json

    doc = json.loads((folder / "report.json").read_text())
    doc.pop("generated")  # the timestamp and the seconds each step took
    return doc


def test_report_on_ray_writes_the_same_report(run_dir, address, tmp_path):
    here = _cli("report", str(run_dir), "--out", str(tmp_path / "here"), "--quiet")
    there = _cli(
        "report", str(run_dir), "--out", str(tmp_path / "ray"), "--quiet", "--address", address
    )
    assert here.returncode == there.returncode == 0, there.stderr
    assert _report_json(tmp_path / "here") == _report_json(tmp_path / "ray")
    stamp = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+\+00:00")  # when it was generated
    here_md, ray_md = (
        stamp.sub("T", (tmp_path / f / "report.md").read_text()) for f in ("here", "ray")
    )
    assert here_md == ray_md


def test_a_worker_killed_mid_report_is_retried(run_dir, ray_backend, tmp_path):
    from sweep.report import build_report
    from tests.report.conftest import FAST

    marker = tmp_path / "killed-once"

    def dying_auditor(store, names, rehash):
        groups = list(
            map_part_groups(ray_backend, audit_or_die_once, store, names, (rehash, str(marker)))
        )
        return [audit for group in groups for audit in group]

    retried = build_report(run_dir, FAST, auditor=dying_auditor)
    assert marker.exists(), "no task killed its worker"
    here = build_report(run_dir, FAST)
    assert retried.to_json()["integrity"] == here.to_json()["integrity"]
    assert retried.data.results == here.data.results


def test_the_read_pass_on_ray_reduces_to_the_in_process_figures(run_dir, ray_backend):
    from sweep.report._load import load_run
    from tests.report.test_report_load import same_reductions

    def on_ray(body, store, names, args):
        return list(map_part_groups(ray_backend, body, store, names, args))

    assert same_reductions(load_run(run_dir, mapper=on_ray), load_run(run_dir))


def test_a_worker_killed_mid_read_pass_is_retried(run_dir, ray_backend, tmp_path):
    from sweep.report._load import load_run
    from tests.report.test_report_load import same_reductions

    marker = tmp_path / "killed-once"

    def dying(body, store, names, args):
        return list(
            map_part_groups(ray_backend, read_or_die_once, store, names, (*args, str(marker)))
        )

    retried = load_run(run_dir, mapper=dying)
    assert marker.exists(), "no task killed its worker"
    assert same_reductions(retried, load_run(run_dir))


def test_a_report_driver_killed_mid_pass_reruns_to_the_same_report(run_dir, address, tmp_path):
    out = tmp_path / "report"
    _kill_while_auditing("report", str(run_dir), "--out", str(out), "--quiet", "--address", address)
    assert not (out / "report.json").exists()  # nothing half-written in its place
    rerun = _cli("report", str(run_dir), "--out", str(out), "--quiet", "--address", address)
    assert rerun.returncode == 0, rerun.stderr
    here = _cli("report", str(run_dir), "--out", str(tmp_path / "here"), "--quiet")
    assert here.returncode == 0, here.stderr
    assert _report_json(out) == _report_json(tmp_path / "here")


# --- sweep report: PBO's splits as Ray tasks ------------------------------------------------


def test_returns_recomputed_on_ray_are_the_in_process_returns(ray_backend):
    sweep = resolve(spec_from_dict(small_spec_dict()))
    positions = np.array([17, 3, 59, 3, 0, 41, 8], dtype=np.int64)  # any order, a repeat
    here = config_returns(sweep, positions)
    blocks = list(config_returns_on(ray_backend)(sweep, positions))
    assert len(blocks) > 1  # runs of configs, one task each
    np.testing.assert_array_equal(np.concatenate(blocks), here)  # bit for bit, in order
    assert list(config_returns_on(ray_backend)(sweep, positions[:0])) == []


def test_a_worker_killed_mid_recompute_is_retried(ray_backend, tmp_path):
    marker = tmp_path / "killed-once"
    sweep = resolve(spec_from_dict(small_spec_dict()))
    positions = np.arange(0, 60, 2, dtype=np.int64)
    dying = config_returns_on(ray_backend, body=returns_or_die_once, extra=(str(marker),))
    retried = np.concatenate(list(dying(sweep, positions)))
    assert marker.exists(), "no task killed its worker"
    np.testing.assert_array_equal(retried, config_returns(sweep, positions))


def test_the_out_of_sample_configs_recomputed_on_ray_give_the_same_section(ray_backend, tmp_path):
    # Section 6 recomputes each fold's selected config and the winner: as Ray tasks, the
    # folds, the stitched walk-forward record and the CPCV paths are the in-process ones.
    from dataclasses import astuple

    from sweep.report._oos_selection import out_of_sample
    from sweep.store._fold_summary import merged_folds

    doc = small_spec_dict(
        validation={
            "walk_forward": {"train": "1y", "test": "3m", "purge": "5d"},
            "cpcv": {"groups": 6, "test_groups": 2, "purge": 3, "embargo": 2},
        }
    )
    run_sweep(spec_from_dict(doc), tmp_path / "wf", progress=False)
    store = RunStore(tmp_path / "wf")
    summary = merged_folds(store.read_part_schema(n) for n in store.good_parts()[0])
    assert summary is not None
    sweep = resolve(spec_from_dict(doc))
    here = out_of_sample(sweep, summary, 5)
    there = out_of_sample(sweep, summary, 5, config_returns_on(ray_backend))
    assert there.table(sweep.panel.dates).equals(here.table(sweep.panel.dates))
    assert here.walk_forward is not None and there.walk_forward is not None
    for a, b in zip(astuple(there.walk_forward), astuple(here.walk_forward), strict=True):
        np.testing.assert_array_equal(a, b)
    assert here.cpcv_path_sharpe is not None and there.cpcv_path_sharpe is not None
    np.testing.assert_array_equal(there.cpcv_path_sharpe, here.cpcv_path_sharpe)
