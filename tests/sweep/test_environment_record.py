"""Where the bits came from: each part's environment record, and resumes across environments.

Issue 27, point 3: a part carries the environment that computed it (covered by its sha256
name); a resume under other library versions is refused (exit 2) unless allowed, and then
only goes on if a re-computed sample matches bit for bit; a folder written before the
record existed still verifies and says it has none.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from sweep import results_hash, resume, run_sweep, spec_from_dict
from sweep.cli._app import app
from sweep.errors import EnvironmentChangedError, exit_code
from sweep.runner import _reproduce
from sweep.runner._environment_check import SAMPLE_ON_CHANGE, PartGuard
from sweep.runner._reproduce import sample_positions
from sweep.runner._status import run_status, verify_run
from sweep.store import _part_environment as part_env
from sweep.store._part_environment import (
    ENVIRONMENT_KEY,
    PartEnvironment,
    decode_environment,
    encode_environment,
    environment_of,
    version_changes,
    with_environment,
)
from sweep.store._run_store import RunStore
from tests.helpers import StopAfter, read_part_table, rewrite_part, run_main, small_spec_dict

runner = CliRunner()


def _parts(run: Path) -> list[Path]:
    return sorted((run / "parts").glob("part-*.parquet"))


def other_numpy(version: str = "2.3.5"):
    """An environment function like the real one, but with another numpy version."""
    real = PartEnvironment.here()
    versions = tuple((k, version if k == "numpy" else v) for k, v in real.versions)
    fake = dataclasses.replace(real, versions=versions)
    return fake, real.version("numpy")


@pytest.fixture(scope="module")
def complete_run(tmp_path_factory) -> tuple[Path, str]:
    run = tmp_path_factory.mktemp("env") / "run"
    summary = run_sweep(spec_from_dict(small_spec_dict()), run, batch_size=15, progress=False)
    assert summary.table_hash
    return run, summary.table_hash


@pytest.fixture
def partial_run(tmp_path) -> Path:
    """A run stopped after 2 of its 4 batches (30 of 60 configs done)."""
    run = tmp_path / "partial"
    run_sweep(
        spec_from_dict(small_spec_dict()),
        run,
        batch_size=15,
        progress=False,
        executor=StopAfter(2),
    )
    return run


_main = run_main


# --- the record -------------------------------------------------------------------------------
def test_every_part_carries_the_environment_that_computed_it(complete_run):
    run, _ = complete_run
    here = PartEnvironment.here()
    for path in _parts(run):
        env = environment_of(pq.read_schema(path))
        assert env == here
        assert env.version("numpy") == np.__version__
        assert [k for k, _ in env.versions] == [
            "python",
            "numpy",
            "numba",
            "llvmlite",
            "pandas",
            "pyarrow",
            "scipy",
            "raysweep",
        ]
        assert env.machine and env.numba_cpu and env.numpy_baseline is not None
    doc = json.loads(pq.read_schema(_parts(run)[0]).metadata[ENVIRONMENT_KEY])
    # No host, process or time in it (parts of one environment stay byte-identical: below).
    assert set(doc) <= {
        "format",
        "versions",
        "machine",
        "numpy_simd",
        "numba_cpu",
        "glibc",
        "npy_disable_cpu_features",
        "numba_cpu_features",
    }


def test_the_record_reads_back_and_says_what_changed():
    env, numpy_now = other_numpy("1.0.0")
    assert decode_environment(encode_environment(env)) == env
    assert PartEnvironment.from_json(env.to_json()) == env
    assert version_changes(PartEnvironment.here().versions, env.versions) == [
        f"numpy {numpy_now} -> 1.0.0"
    ]
    # A CPU or dispatch difference alone is not a version change.
    other_cpu = dataclasses.replace(env, numba_cpu="generic", numpy_found=())
    assert version_changes(env.versions, other_cpu.versions) == []
    assert "numba cpu generic" in other_cpu.describe()


def test_the_part_name_covers_the_environment_record(complete_run, tmp_path):
    run, _ = complete_run
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    victim = _parts(copy)[0]
    table = read_part_table(victim)
    fake, _ = other_numpy()
    # The record edited in place (same name): the part no longer verifies.
    from sweep.common._fs import parquet_bytes

    victim.write_bytes(parquet_bytes(with_environment(table, fake)))
    [bad] = [c for c in RunStore(copy).verify_parts() if not c.ok]
    assert bad.name == victim.name and "altered" in bad.reason


def test_one_environment_writes_byte_identical_parts(complete_run, tmp_path):
    run, table_hash = complete_run
    again = run_sweep(
        spec_from_dict(small_spec_dict()), tmp_path / "again", batch_size=15, progress=False
    )
    assert again.table_hash == table_hash
    assert [p.name for p in _parts(tmp_path / "again")] == [p.name for p in _parts(run)]


def test_status_verify_and_report_list_the_environment(complete_run):
    run, _ = complete_run
    [use] = run_status(run).environments
    assert use.environment == PartEnvironment.here() and use.parts == 4 and use.configs == 60
    assert verify_run(run).environments == (use,)
    status = runner.invoke(app, ["status", str(run)])
    assert status.exit_code == 0, status.output
    assert "environments:  1 computed the parts" in status.output
    assert f"numpy {np.__version__}" in status.output
    info = json.loads(runner.invoke(app, ["status", str(run), "--json"]).output)
    assert info["environments"][0]["parts"] == 4
    assert info["environments"][0]["environment"]["versions"]["numpy"] == np.__version__


# --- a folder written before the record ----------------------------------------------------
@pytest.fixture
def old_folder(complete_run, tmp_path) -> Path:
    """The complete run with every part's environment record taken out (validly re-named)."""
    run, _ = complete_run
    old = tmp_path / "old"
    shutil.copytree(run, old)
    for path in _parts(old):
        table = read_part_table(path)
        meta = {k: v for k, v in table.schema.metadata.items() if k != ENVIRONMENT_KEY}
        rewrite_part(path, table.replace_schema_metadata(meta))
    return old


def test_a_folder_without_environment_records_verifies_and_says_so(old_folder, complete_run):
    _, table_hash = complete_run
    assert all(environment_of(pq.read_schema(p)) is None for p in _parts(old_folder))
    verify = runner.invoke(app, ["verify", str(old_folder)])
    assert verify.exit_code == 0, verify.output
    assert f"table hash: {table_hash}" in verify.output
    assert "no environment record" in verify.output
    status = runner.invoke(app, ["status", str(old_folder)])
    assert "no environment record" in status.output
    from sweep.report._integrity import integrity_section
    from sweep.report._load import load_run

    integrity = integrity_section(load_run(old_folder))
    assert integrity.table_hash == table_hash
    [use] = integrity.environments
    assert use.environment is None and use.parts == 4 and use.configs == 60
    from sweep.report._document import integrity_blocks

    text = repr(integrity_blocks(integrity))
    assert "no environment record" in text


def test_a_folder_without_records_resumes_against_its_sessions_versions(
    old_folder, monkeypatch, complete_run
):
    _, table_hash = complete_run
    assert resume(old_folder).table_hash == table_hash  # the sessions' versions are these
    fake, numpy_now = other_numpy()
    monkeypatch.setattr(part_env, "current_environment", lambda: fake)
    with pytest.raises(EnvironmentChangedError, match=f"numpy {numpy_now} -> 2.3.5"):
        resume(old_folder)


# --- resuming in another environment --------------------------------------------------------
def test_a_resume_under_another_numpy_is_refused_naming_the_change(
    partial_run, monkeypatch, capsys
):
    fake, numpy_now = other_numpy()
    monkeypatch.setattr(part_env, "current_environment", lambda: fake)
    manifest_before = (partial_run / "manifest.json").read_bytes()
    code, _, err = _main(monkeypatch, capsys, "resume", str(partial_run), "--quiet")
    assert code == 2, err
    assert f"numpy {numpy_now} -> 2.3.5" in err and "--allow-environment-change" in err
    assert "Traceback" not in err
    # Refused before anything ran: no session, no part.
    assert (partial_run / "manifest.json").read_bytes() == manifest_before
    assert len(_parts(partial_run)) == 2


def test_sweep_run_on_an_existing_folder_is_refused_too(partial_run, monkeypatch):
    fake, _ = other_numpy()
    monkeypatch.setattr(part_env, "current_environment", lambda: fake)
    with pytest.raises(EnvironmentChangedError) as info:
        run_sweep(spec_from_dict(small_spec_dict()), partial_run, progress=False)
    assert exit_code(info.value) == 2 and "numpy" in str(info.value)


def test_allowed_change_goes_on_when_the_sample_matches(partial_run, monkeypatch):
    fake, _ = other_numpy()
    monkeypatch.setattr(part_env, "current_environment", lambda: fake)
    result = runner.invoke(
        app, ["resume", str(partial_run), "--quiet", "--allow-environment-change"]
    )
    assert result.exit_code == 0, result.output
    assert "30 computed now" in result.output
    # The session records the check; the run is not mixed silently: both environments listed.
    manifest = RunStore(partial_run).load_manifest()
    checked = manifest.sessions_in_order()[-1].environment["environment_change"]
    assert checked["sample"] == checked["matched"] == SAMPLE_ON_CHANGE
    assert any("numpy" in c for c in checked["changes"])
    uses = run_status(partial_run).environments
    assert sorted(u.environment.version("numpy") for u in uses) == sorted(
        ["2.3.5", PartEnvironment.here().version("numpy")]
    )
    assert [u.configs for u in uses] == [30, 30]
    status = runner.invoke(app, ["status", str(partial_run)])
    assert "2 computed the parts (a mixed run" in status.output
    assert (
        results_hash(partial_run)
        == run_sweep(
            spec_from_dict(small_spec_dict()), partial_run.parent / "fresh", progress=False
        ).table_hash
    )


def test_allowed_change_is_refused_when_a_sampled_row_differs(partial_run, monkeypatch):
    store = RunStore(partial_run)
    monkeypatch.setattr(_reproduce, "fresh_seed", lambda: 5)  # so the test knows the draw
    target = int(sample_positions(store.done_ranges(), SAMPLE_ON_CHANGE, 5)[0])
    for path in _parts(partial_run):
        table = read_part_table(path)
        rows = table.column("grid_index").to_numpy()
        if target in rows:
            j = int(np.flatnonzero(rows == target)[0])
            sharpe = table.column("sharpe").to_numpy().copy()
            sharpe[j] = np.nextafter(sharpe[j], np.inf)
            col = table.schema.get_field_index("sharpe")
            table = table.set_column(col, table.schema.field(col), pa.array(sharpe))
            rewrite_part(path, table)
            break
    else:  # pragma: no cover
        pytest.fail("the sampled config is in no part")
    assert all(c.ok for c in store.verify_parts())
    fake, _ = other_numpy()
    monkeypatch.setattr(part_env, "current_environment", lambda: fake)
    parts_before = sorted(p.name for p in _parts(partial_run))
    with pytest.raises(EnvironmentChangedError) as info:
        resume(partial_run, allow_environment_change=True)
    message = str(info.value)
    assert "1 of 16 finished configs re-computed here (seed 5)" in message
    assert "column sharpe" in message
    assert repr(float(sharpe[j])) in message
    assert sorted(p.name for p in _parts(partial_run)) == parts_before  # nothing written
    assert RunStore(partial_run).load_manifest().sessions_in_order()[-1].status == "failed"


def test_a_batch_computed_with_other_versions_is_not_written(tmp_path, monkeypatch):
    """A worker of other versions than the run's (a mixed Ray cluster) stops the sweep."""
    real = PartEnvironment.here()
    fake, _ = other_numpy()
    calls = {"n": 0}

    def alternating() -> PartEnvironment:
        calls["n"] += 1
        return real if calls["n"] == 1 else fake

    monkeypatch.setattr(part_env, "current_environment", alternating)
    with pytest.raises(EnvironmentChangedError, match="numpy"):
        run_sweep(spec_from_dict(small_spec_dict()), tmp_path / "r", batch_size=15, progress=False)
    assert len(_parts(tmp_path / "r")) == 1


def test_the_guard_accepts_the_first_batch_of_a_fresh_run_and_everything_when_allowed():
    table = pa.table({"x": [1]})
    fake, _ = other_numpy()
    guard = PartGuard((), allow=False)
    guard.check(with_environment(table, fake))
    guard.check(with_environment(table, fake))
    with pytest.raises(EnvironmentChangedError):
        guard.check(with_environment(table, PartEnvironment.here()))
    PartGuard((), allow=True).check(with_environment(table, fake))
    guard.check(table)  # a batch without a record (an older worker) is not judged
