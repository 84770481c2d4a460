"""Walk-forward and CPCV inside the sweep: brute force, invariance, the CLI, bad specs."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from sweep import fold_table, resolve, run_sweep, spec_from_dict
from sweep.data._benchmark import benchmark_returns
from sweep.engine._evaluate import config_returns
from sweep.errors import SpecError
from sweep.store._fold_summary import folds_digest, merged_folds
from sweep.store._run_store import RunStore
from tests.helpers import StopAfter, small_spec_dict, write_spec

VALIDATION = {
    "walk_forward": {"train": "1y", "test": "3m", "purge": "5d"},
    "cpcv": {"groups": 6, "test_groups": 2, "purge": 3, "embargo": 2},
}


def wf_spec(**overrides):
    doc = small_spec_dict(validation=VALIDATION, **overrides)
    doc["metrics"] = {**doc["metrics"], "benchmark": "buy_and_hold"}
    return doc


def digest(run_dir) -> str:
    store = RunStore(run_dir)
    good, _ = store.good_parts()
    summary = merged_folds(store.read_part_schema(n) for n in good)
    assert summary is not None
    return folds_digest(summary)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    run = tmp_path_factory.mktemp("wf") / "run"
    summary = run_sweep(spec_from_dict(wf_spec()), run, progress=False)
    return run, summary.table_hash, digest(run)


def test_every_fold_best_and_the_stitched_returns_equal_brute_force(reference):
    run, _, _ = reference
    sweep = resolve(spec_from_dict(wf_spec()))
    # The whole return matrix, which the sweep never holds.
    returns = config_returns(sweep, np.arange(len(sweep.grid)))
    bench = benchmark_returns("buy_and_hold", sweep.panel)
    excess = pd.DataFrame((returns - bench).T)  # periods x configs
    store = RunStore(run)
    summary = merged_folds(store.read_part_schema(n) for n in store.good_parts()[0])
    stitched, chosen = [], []
    for k, fold in enumerate(sweep.fold_plan.folds):
        train = pd.concat([excess.iloc[a:b] for a, b in fold.train])
        sharpe = train.mean() / train.std()
        assert summary.index[k] == int(sharpe.idxmax()), fold.name
        assert summary.value[k] == pytest.approx(sharpe.max(), rel=1e-12)
        if fold.name.startswith("wf-"):
            ((a, b),) = fold.test
            stitched.append(excess.iloc[a:b, int(sharpe.idxmax())])
            chosen.append(int(sharpe.idxmax()))
    table = fold_table(run)
    wf = table[table["fold"].str.startswith("wf-")]
    assert wf["grid_index"].tolist() == chosen
    from sweep.report._oos_selection import out_of_sample

    result = out_of_sample(sweep, summary, None)
    np.testing.assert_allclose(
        result.walk_forward.excess, pd.concat(stitched).to_numpy(), rtol=0, atol=1e-15
    )
    oos = pd.concat(stitched)
    assert result.walk_forward.sharpe == pytest.approx(oos.mean() / oos.std(), rel=1e-12)
    assert result.cpcv_path_sharpe.shape == (5,)


@pytest.mark.parametrize("batch_size", [1, 7])
def test_fold_summaries_do_not_depend_on_the_batch_size(tmp_path, reference, batch_size):
    _, table_hash, fold_hash = reference
    summary = run_sweep(
        spec_from_dict(wf_spec()), tmp_path / "r", batch_size=batch_size, progress=False
    )
    assert (summary.table_hash, digest(tmp_path / "r")) == (table_hash, fold_hash)


def test_fold_summaries_survive_an_interrupted_session(tmp_path, reference):
    _, table_hash, fold_hash = reference
    spec = spec_from_dict(wf_spec())
    run_sweep(spec, tmp_path / "r", batch_size=13, progress=False, executor=StopAfter(2))
    summary = run_sweep(spec, tmp_path / "r", batch_size=5, progress=False)
    assert (summary.table_hash, digest(tmp_path / "r")) == (table_hash, fold_hash)


@pytest.mark.ray
def test_ray_gives_the_same_fold_summaries(ray_local, tmp_path, reference):
    _, table_hash, fold_hash = reference
    summary = run_sweep(
        spec_from_dict(wf_spec()), tmp_path / "r", executor="ray", batch_size=9, progress=False
    )
    assert (summary.table_hash, digest(tmp_path / "r")) == (table_hash, fold_hash)


def test_results_folds_prints_the_fold_table(reference):
    run, _, _ = reference
    proc = subprocess.run(
        [sys.executable, "-m", "sweep", "results", str(run), "--folds"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == [
        "fold",
        "test",
        "lookback",
        "band",
        "is_sharpe",
        "oos_sharpe",
    ]
    assert len(lines) == 1 + len(resolve(spec_from_dict(wf_spec())).fold_plan.folds)
    assert max(len(line) for line in lines) <= 80
    as_json = subprocess.run(
        [sys.executable, "-m", "sweep", "results", str(run), "--folds", "--format", "json"],
        capture_output=True,
        text=True,
    )
    assert json.loads(as_json.stdout)[0]["fold"] == "wf-00"


def test_the_report_has_an_out_of_sample_section(reference, tmp_path):
    from sweep.report import ReportOptions, build_report

    report = build_report(reference[0], ReportOptions(progress=False))
    oos = report.to_json()["out_of_sample"]
    assert oos["available"] and oos["walk_forward"]["folds"] == 12
    assert {"walk_forward_equity", "parameter_stability", "cpcv_paths"} <= set(report.figures)
    assert "PSR" in report.to_json()["verdict"]["paragraph"]


def test_a_run_without_validation_says_so(tmp_path):
    from sweep.report import ReportOptions, build_report

    run_sweep(spec_from_dict(small_spec_dict()), tmp_path / "r", progress=False)
    data = build_report(tmp_path / "r", ReportOptions(progress=False)).to_json()
    assert not data["out_of_sample"]["available"]
    assert "[validation]" in data["out_of_sample"]["reason"]
    proc = subprocess.run(
        [sys.executable, "-m", "sweep", "results", str(tmp_path / "r"), "--folds"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "no [validation] section" in proc.stderr


@pytest.mark.parametrize(
    ("validation", "message"),
    [
        ({"walk_forward": {"train": "30y", "test": "6m"}}, "do not fit"),
        ({"walk_forward": {"train": "3 years", "test": "6m"}}, "a number with a unit"),
        ({"walk_forward": {"train": "1y", "tset": "6m"}}, "Did you mean 'test'"),
        ({"cpcv": {"groups": 6, "test_groups": 6}}, "test_groups < groups"),
        ({"metric": "sortino", "walk_forward": {"train": "1y", "test": "3m"}}, "validation.metric"),
    ],
)
def test_folds_that_do_not_fit_are_refused_before_anything_runs(tmp_path, validation, message):
    spec = write_spec(tmp_path / "s.toml", small_spec_dict(validation=validation))
    proc = subprocess.run(
        [sys.executable, "-m", "sweep", "run", str(spec), "--run-dir", str(tmp_path / "r")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "r").exists()
    with pytest.raises(SpecError):
        resolve(spec_from_dict(small_spec_dict(validation=validation)))


def test_a_spec_without_validation_keeps_its_hash():
    doc = small_spec_dict()
    assert "validation" not in spec_from_dict(doc).to_dict()


def test_a_full_sample_winner_at_grid_index_0_is_held_fixed(reference):
    """Grid index 0 is a real config (it once fell through a falsy test)."""
    from sweep.report._oos_selection import out_of_sample

    run, _, _ = reference
    sweep = resolve(spec_from_dict(wf_spec()))
    store = RunStore(run)
    summary = merged_folds(store.read_part_schema(n) for n in store.good_parts()[0])
    result = out_of_sample(sweep, summary, 0)
    bench = benchmark_returns("buy_and_hold", sweep.panel)
    own = config_returns(sweep, np.array([0]))[0]
    np.testing.assert_array_equal(result.walk_forward.fixed, own[result.walk_forward.periods])
    assert np.isfinite(bench).all()
