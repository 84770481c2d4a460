"""Every input of the report's numbers is covered by a published hash (issue 42, H2 and L4).

The fold summaries (each walk-forward fold's in-sample best: the out-of-sample result's
input) ride in the parts' footers beside the null summaries. ``sweep verify`` and the report
publish a fold summary hash beside the table and null summary hashes, ``sweep reproduce``
re-runs whole parts drawn at random and compares their summaries, and ``verify`` and
``status`` compare the table hash with the one the last completed session recorded.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweep import run_sweep, spec_from_dict
from sweep.cli._app import app
from sweep.report import build_report
from sweep.runner._reproduce import ReproduceSettings, drawn_parts, reproduce_run
from sweep.runner._status import verify_run
from sweep.store._fold_summary import FOLDS_KEY, decode_folds, encode_folds
from sweep.store._run_store import read_run
from tests.helpers import read_part_table, rewrite_part, small_spec_dict

runner = CliRunner()


@pytest.fixture(scope="module")
def folds_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """60 configs in 3 parts, with walk-forward validation (1 year in, 6 months out)."""
    folder = tmp_path_factory.mktemp("folds") / "run"
    doc = small_spec_dict(validation={"walk_forward": {"train": "1y", "test": "6m"}})
    run_sweep(spec_from_dict(doc), folder, batch_size=20, progress=False)
    return folder


def doctored(folds_run: Path, tmp_path: Path) -> tuple[Path, str]:
    """A copy whose first part's fold summary is forged (H2's case); the part's new name."""
    run = tmp_path / "run"
    shutil.copytree(folds_run, run)
    part = sorted((run / "parts").glob("part-*.parquet"))[0]
    table = read_part_table(part)
    folds = decode_folds(table.schema.metadata[FOLDS_KEY])
    index = table.column("grid_index").to_numpy()
    folds.value[:] = 5.0
    folds.index[:] = index[-1]  # another grid index of that part
    meta = {**table.schema.metadata, FOLDS_KEY: encode_folds(folds)}
    rewrite_part(part, table.replace_schema_metadata(meta))
    [new] = set(p.name for p in (run / "parts").glob("part-*.parquet")) - {
        p.name for p in (folds_run / "parts").glob("part-*.parquet")
    }
    return run, new


def test_verify_and_the_report_publish_the_fold_summary_hash(folds_run: Path) -> None:
    found = verify_run(folds_run)
    assert found.fold_summary_hash is not None and len(found.fold_summary_hash) == 64
    result = runner.invoke(app, ["verify", str(folds_run)])
    assert result.exit_code == 0, result.output
    assert f"fold summary hash: {found.fold_summary_hash}" in result.output
    assert "recorded: matches the hash session 1 recorded" in result.output
    report = build_report(folds_run)
    assert report.data.integrity.fold_summary_hash == found.fold_summary_hash


def test_a_forged_fold_summary_changes_the_published_hash_and_reproduce_finds_it(
    folds_run: Path, tmp_path: Path
) -> None:
    run, forged = doctored(folds_run, tmp_path)
    before, after = verify_run(folds_run), verify_run(run)
    assert after.table_hash == before.table_hash  # the rows are untouched
    assert after.null_summary_hash == before.null_summary_hash
    assert after.fold_summary_hash != before.fold_summary_hash
    seed = next(s for s in range(100) if drawn_parts(read_run(run), 1, s) == [forged])
    found = reproduce_run(run, ReproduceSettings(sample=1, parts=1, seed=seed))
    [part] = found.parts
    assert not found.full_match and part.fold_summary == "differs"
    assert any(m.column.startswith("fold_summary.value") for m in found.mismatches)


def test_verify_and_status_say_when_the_table_hash_differs_from_the_recorded_one(
    folds_run: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(folds_run, run)
    manifest = json.loads((run / "manifest.json").read_text())
    recorded = manifest["sessions"][-1]["table_hash"]
    manifest["sessions"][-1]["table_hash"] = "0" * 64
    (run / "manifest.json").write_text(json.dumps(manifest))
    verified = runner.invoke(app, ["verify", str(run)])
    assert verified.exit_code == 1, verified.output
    assert f"table hash: {recorded}" in verified.output
    assert "DIFFERS from 0000000000000000" in " ".join(verified.output.split())
    status = runner.invoke(app, ["status", str(run)])
    assert "DIFFERS from" in " ".join(status.output.split())
