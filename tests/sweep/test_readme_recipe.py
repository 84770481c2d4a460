"""The README's table-hash recipe, run as written, gives the code's hash."""

import re
from pathlib import Path

import pyarrow.parquet as pq

from sweep import results_hash, run_sweep, spec_from_dict
from tests.helpers import small_spec_dict

README = Path(__file__).resolve().parents[2] / "README.md"


def run_recipe(run_dir: Path, capsys) -> str:
    """The README's recipe, run as written on ``run_dir``: the hash it prints."""
    text = README.read_text()
    recipe = re.search(r"<!-- table-hash-recipe -->\n```python\n(.*?)```", text, re.S).group(1)
    exec(compile(recipe, "README recipe", "exec"), {"run_dir": str(run_dir)})
    return capsys.readouterr().out.strip()


def test_documented_recipe_matches_the_code(tmp_path, capsys):
    run_dir = tmp_path / "run"
    doc = small_spec_dict(
        strategy={"name": "tests.strategies_for_tests:Raising"},
        grid={"lookback": {"start": 10, "stop": 30}, "band": [0.0, 0.01]},
    )
    run_sweep(
        spec_from_dict(doc), run_dir, batch_size=7, progress=False
    )  # errors: null and non-null strings
    assert run_recipe(run_dir, capsys) == results_hash(run_dir)


def test_documented_recipe_counts_a_config_held_twice_once(tmp_path, capsys):
    """A batch written twice (identical rows in two parts): the recipe and verify agree."""
    from sweep.common._fs import parquet_bytes
    from sweep.runner._status import verify_run
    from sweep.store._run_store import _sha256

    run_dir = tmp_path / "run"
    run_sweep(spec_from_dict(small_spec_dict()), run_dir, batch_size=20, progress=False)
    before = results_hash(run_dir)
    first = sorted((run_dir / "parts").glob("part-*.parquet"))[0]
    data = parquet_bytes(pq.read_table(first).slice(3, 9))  # the same bytes, its binding kept
    (run_dir / "parts" / f"part-{_sha256(data)}.parquet").write_bytes(data)
    verified = verify_run(run_dir)
    assert not verified.bad_parts and verified.table_hash == before
    assert run_recipe(run_dir, capsys) == before


def test_streaming_hash_equals_the_in_memory_table_hash(tmp_path):
    from sweep import results_table, table_hash

    run_dir = tmp_path / "run"
    run_sweep(spec_from_dict(small_spec_dict()), run_dir, batch_size=9, progress=False)
    assert results_hash(run_dir) == table_hash(results_table(run_dir))
