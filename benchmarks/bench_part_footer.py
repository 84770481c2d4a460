"""Parts with their summaries footer-only against parts with them twice (issue 24).

Copies a run folder (``--run-dir``; for example a 10^6-config folder of 5,000 small parts)
to ``--out`` with every part serialised again as the store now writes it
(:data:`sweep.store._run_store.FOOTER_ONLY_KEYS`: the null and fold summaries in the parquet
footer's key-value metadata alone, not also inside ``ARROW:schema``), checks that every
part's rows and schema metadata read back the same, then times the store reading a part's
schema and its ``grid_index`` column (what every pass over the parts starts with) in both
folders, alternated, best of ``--rounds``. Prints the folders' sizes and the two times;
their ratio is the figure (the machine is shared). Parts written before the change keep the
summaries twice, which is what the source folder holds when it was written earlier; run
``sweep verify`` on both folders to compare their table and null summary hashes.

    python benchmarks/bench_part_footer.py --run-dir /tmp/growth/run-1e6-b200 \\
        --out /tmp/growth/run-1e6-b200-footer
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import time
from pathlib import Path

import pyarrow.parquet as pq

from sweep.common._fs import footer_schema, parquet_bytes
from sweep.store._run_store import FOOTER_ONLY_KEYS, RunStore


def rewrite(source: Path, target: Path) -> tuple[int, int]:
    """Copy ``source`` to ``target`` with its parts footer-only; (bytes before, after)."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("parts"))
    (target / "parts").mkdir()
    before = after = 0
    for path in sorted((source / "parts").glob("part-*.parquet")):
        parquet = pq.ParquetFile(path)
        table = parquet.read(use_threads=False)
        table = table.replace_schema_metadata(footer_schema(parquet).metadata)
        data = parquet_bytes(table, footer_only=FOOTER_ONLY_KEYS)
        name = f"part-{hashlib.sha256(data).hexdigest()}.parquet"
        (target / "parts" / name).write_bytes(data)
        again = pq.ParquetFile(target / "parts" / name)
        if not (
            again.read(use_threads=False).equals(table)
            and footer_schema(again).equals(table.schema, check_metadata=True)
        ):
            raise SystemExit(f"{path.name}: rows or metadata read back differently")
        before, after = before + path.stat().st_size, after + len(data)
    return before, after


def per_part_ms(store: RunStore, names: list[str]) -> float:
    """Milliseconds per part to read its schema and its ``grid_index`` column."""
    start = time.perf_counter()
    for name in names:
        store.read_part_schema(name)
        store.read_part_columns(name, ["grid_index"])
    return (time.perf_counter() - start) / len(names) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--parts", type=int, default=500, help="parts timed per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    before, after = rewrite(args.run_dir, args.out)
    print(
        f"parts: {before / 2**20:,.1f} MiB with the summaries twice, "
        f"{after / 2**20:,.1f} MiB footer-only"
    )
    stores = [RunStore(args.run_dir), RunStore(args.out)]
    names = [store.part_names()[: args.parts] for store in stores]
    times: list[list[float]] = [[], []]
    for _ in range(args.rounds):
        for k, store in enumerate(stores):
            times[k].append(per_part_ms(store, names[k]))
    a, b = min(times[0]), min(times[1])
    print(
        f"schema + grid_index per part (best of {args.rounds}, {args.parts} parts): "
        f"{a:.2f} ms twice, {b:.2f} ms footer-only, ratio {a / b:.2f}"
    )


if __name__ == "__main__":
    main()
