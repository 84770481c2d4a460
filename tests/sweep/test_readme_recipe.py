"""The docs' table-hash recipes, run as written, give the code's hashes (v1 and v2)."""

import re
from pathlib import Path

import pytest

from sweep import results_hash, run_sweep, spec_from_dict
from tests.helpers import batch_again, small_spec_dict

RECIPES = Path(__file__).resolve().parents[2] / "docs" / "reference" / "table-hash.md"


def _recipe(marker: str) -> str:
    text = RECIPES.read_text()
    return re.search(rf"<!-- {marker} -->\n```python\n(.*?)```", text, re.S).group(1)


@pytest.fixture(scope="module")
def errors_run(tmp_path_factory):
    """A run with failed configs (null and non-null strings), 40 configs in batches of 7."""
    run_dir = tmp_path_factory.mktemp("recipe") / "run"
    doc = small_spec_dict(
        strategy={"name": "tests.strategies_for_tests:Raising"},
        grid={"lookback": {"start": 10, "stop": 30}, "band": [0.0, 0.01]},
    )
    run_sweep(spec_from_dict(doc), run_dir, batch_size=7, progress=False)
    return run_dir


@pytest.mark.parametrize(
    ("marker", "version"), [("table-hash-recipe", "v1"), ("table-hash-recipe-v2", "v2")]
)
def test_documented_recipe_matches_the_code(errors_run, capsys, marker, version):
    exec(compile(_recipe(marker), f"README recipe {version}", "exec"), {"run_dir": str(errors_run)})
    assert capsys.readouterr().out.strip() == results_hash(errors_run, version=version)


def test_the_v2_recipe_matches_on_a_grid_of_several_blocks(tmp_path, capsys):
    run_dir = tmp_path / "run"  # 240 configs: four blocks, split over parts of 50
    doc = small_spec_dict(
        grid={"lookback": {"start": 5, "stop": 125, "step": 2}, "band": [0.0, 0.005, 0.01, 0.02]}
    )
    summary = run_sweep(spec_from_dict(doc), run_dir, batch_size=50, progress=False)
    exec(
        compile(_recipe("table-hash-recipe-v2"), "README recipe v2", "exec"),
        {"run_dir": str(run_dir)},
    )
    assert capsys.readouterr().out.strip() == summary.table_hash == results_hash(run_dir)


def test_documented_recipe_counts_a_config_held_twice_once(tmp_path, capsys):
    """A batch written twice (identical rows in two parts): the recipe and verify agree."""
    from sweep.common._fs import parquet_bytes
    from sweep.runner._status import verify_run
    from sweep.store._row_set_hash import with_part_digest
    from sweep.store._run_store import BINDING_KEY, RunStore, _sha256

    run_dir = tmp_path / "run"
    run_sweep(spec_from_dict(small_spec_dict()), run_dir, batch_size=20, progress=False)
    before = results_hash(run_dir)
    first = sorted((run_dir / "parts").glob("part-*.parquet"))[0]
    size = RunStore(run_dir).load_manifest().grid.size
    binding = {BINDING_KEY: RunStore(run_dir).load_manifest().run_key.binding().encode()}
    repeat = with_part_digest(batch_again(run_dir, first, 3, 9), size)
    data = parquet_bytes(repeat.replace_schema_metadata({**repeat.schema.metadata, **binding}))
    (run_dir / "parts" / f"part-{_sha256(data)}.parquet").write_bytes(data)
    verified = verify_run(run_dir)
    assert not verified.bad_parts and verified.table_hash == before
    for marker, version in (("table-hash-recipe", "v1"), ("table-hash-recipe-v2", "v2")):
        exec(
            compile(_recipe(marker), f"README recipe {version}", "exec"), {"run_dir": str(run_dir)}
        )
        assert capsys.readouterr().out.strip() == results_hash(run_dir, version=version)


def test_streaming_hash_equals_the_in_memory_table_hash(tmp_path):
    from sweep import results_table, table_hash

    run_dir = tmp_path / "run"
    run_sweep(spec_from_dict(small_spec_dict()), run_dir, batch_size=9, progress=False)
    assert results_hash(run_dir) == table_hash(results_table(run_dir))
    assert results_hash(run_dir, version="v1") == table_hash(results_table(run_dir), version="v1")
