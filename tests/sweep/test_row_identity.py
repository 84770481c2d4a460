"""Each row's config_id checked against its grid_index, from the manifest alone."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow as pa
import pytest

from sweep import run_sweep, spec_from_dict
from sweep.errors import RunFolderError
from sweep.store._run_store import RunStore
from tests.helpers import small_spec_dict


@pytest.fixture(scope="module")
def constrained_run(tmp_path_factory):
    """A run over a constrained grid with a cost as a one-value axis."""
    spec = small_spec_dict(
        grid={
            "lookback": [5, 13, 21, 29, 37],
            "band": [0.0, 0.005, 0.01, 0.02, 0.03],
            "where": ["lookback < 30"],
        },
        costs={"cost": 2.5},
    )
    run = tmp_path_factory.mktemp("identity") / "run"
    run_sweep(spec_from_dict(spec), run, batch_size=2, progress=False)
    return run


def test_the_ids_from_the_manifest_are_the_ids_the_sweep_wrote(constrained_run):
    store = RunStore(constrained_run)
    identity = store.expectations().identity
    assert identity is not None
    written = pa.concat_tables(
        store.read_part_columns(n, ["grid_index", "config_id"]) for n in store.part_names()
    )
    index = written.column("grid_index").to_numpy()
    assert sorted(index.tolist()) == list(range(len(identity.grid)))
    assert identity.ids_at(index).equals(written.column("config_id").combine_chunks())
    assert identity.misplaced(index, written.column("config_id").combine_chunks()).size == 0
    shuffled = np.roll(index, 1)
    assert identity.misplaced(shuffled, written.column("config_id").combine_chunks()).size == len(
        index
    )


def test_a_manifest_whose_listed_grid_disagrees_with_its_size_is_refused(constrained_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(constrained_run, run)
    path = run / "manifest.json"
    doc = json.loads(path.read_text())
    for axis in doc["grid"]["axes"]:
        if axis["name"] == "cost":
            axis["values"] = [2.5, 3.0]
    path.write_text(json.dumps(doc))
    with pytest.raises(
        RunFolderError,
        match=r"disagrees with itself: its grid's axis 'cost': values is \[2.5, 3.0\]",
    ):
        RunStore(run).expectations()
    for axis in doc["grid"]["axes"]:
        axis["values"] = ["a"] if axis["name"] == "cost" else axis["values"]
        axis["dtype"] = "int64" if axis["name"] == "cost" else axis["dtype"]
    path.write_text(json.dumps(doc))
    with pytest.raises(RunFolderError, match=r"disagrees with itself: its grid's axis 'cost'"):
        RunStore(run).expectations()
