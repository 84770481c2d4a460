"""The README's table-hash recipe, run as written, gives the code's hash."""

import re
from pathlib import Path

from sweep import results_hash, run_sweep, spec_from_dict
from tests.helpers import small_spec_dict

README = Path(__file__).resolve().parents[2] / "README.md"


def test_documented_recipe_matches_the_code(tmp_path, capsys):
    run_dir = tmp_path / "run"
    doc = small_spec_dict(
        strategy={"name": "tests.strategies_for_tests:Raising"},
        grid={"lookback": {"start": 10, "stop": 30}, "band": [0.0, 0.01]},
    )
    run_sweep(
        spec_from_dict(doc), run_dir, batch_size=7, progress=False
    )  # errors: null and non-null strings
    text = README.read_text()
    recipe = re.search(r"<!-- table-hash-recipe -->\n```python\n(.*?)```", text, re.S).group(1)
    exec(compile(recipe, "README recipe", "exec"), {"run_dir": str(run_dir)})
    assert capsys.readouterr().out.strip() == results_hash(run_dir)


def test_streaming_hash_equals_the_in_memory_table_hash(tmp_path):
    from sweep import results_table, table_hash

    run_dir = tmp_path / "run"
    run_sweep(spec_from_dict(small_spec_dict()), run_dir, batch_size=9, progress=False)
    assert results_hash(run_dir) == table_hash(results_table(run_dir))
