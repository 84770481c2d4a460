"""Driver peak RSS for planning and tracking: this tree vs its base commit, side by side.

Issue 24, point 2: the driver's memory must grow with the parts, not the configs. The base
commit tracked done configs with a byte per config and the to-do list as an int64 array
(9 bytes per config); this tree keeps both as ranges (``sweep.common._range_set.RangeSet``).

For each grid size (default 10^6 and 10^7 configs) and two states of the run folder:

- ``fresh``: a new run folder, nothing done;
- ``resume``: 90% done in parts of 10,000 configs, with holes (the to-do list is several
  ranges), written directly as valid parts (the run's binding and columns, placeholder
  values: tracking reads only ``grid_index``);

one child process per version runs the real driver, ``run_sweep``, with a fixed batch size
and an executor that draws every batch of the to-do list and evaluates nothing: opening and
locking the folder, checking every part, the done set, the to-do list and all its batches,
the session records. Each child resets its peak RSS just before ``run_sweep`` (``5`` to
``/proc/self/clear_refs``: Linux), and reports the peak (``VmHWM``) above the RSS it had
then. No config is evaluated,
so it takes a few minutes on 2 shared cores (``nice`` it).

Run: ``nice python benchmarks/bench_driver_memory.py [--base COMMIT] [--sizes 1e6,1e7]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PART_ROWS = 10_000

SPEC = r"""
def spec_doc(total):
    return {
        "name": "drivermem", "seed": 1, "data": {"source": "synthetic", "years": 2},
        "strategy": {"name": "momentum"},
        "grid": {"lookback": [20], "band": {"linspace": [0.0, 0.02, total // 1000]},
                 "cost": {"linspace": [0.0, 0.001, 1000]}},
        "metrics": {"bootstrap_reps": 0, "pbo_blocks": 4},
    }

class Drain:
    '''An executor that draws every batch it is given and evaluates none.'''
    name = "local"
    workers = 1
    drawn = 0
    def start(self, sweep): pass
    def describe(self):
        from sweep.store._record import ExecutorInfo
        return ExecutorInfo(kind="local", workers=1, nodes=1)
    def measure_overhead(self, result_bytes): return 0.0
    def run(self, batches):
        for batch in batches:
            self.drawn += len(batch)
        return iter(())
    def close(self): pass
"""

CHILD = (
    SPEC
    + r"""
import json, sys, time
from sweep import resolve, run_sweep, spec_from_dict

def status_mib(key):
    with open("/proc/self/status") as fh:
        line = next(l for l in fh if l.startswith(key + ":"))
    return int(line.split()[1]) / 1024

total, run_dir = int(sys.argv[1]), sys.argv[2]
sweep = resolve(spec_from_dict(spec_doc(total)))
with open("/proc/self/clear_refs", "w") as fh:  # the peak (VmHWM) starts again from here
    fh.write("5")
before = status_mib("VmRSS")
drain = Drain()
t0 = time.perf_counter()
summary = run_sweep(sweep, run_dir, executor=drain, batch_size=10_000, progress=False)
seconds = time.perf_counter() - t0
peak = status_mib("VmHWM")
print(json.dumps({"configs": total, "done": summary.done, "drawn": drain.drawn,
                  "seconds": seconds, "rss_before_mib": before, "peak_rss_mib": peak,
                  "peak_above_baseline_mib": peak - before}))
"""
)

MAKE_PARTS = (
    SPEC
    + r"""
import hashlib, sys
import numpy as np, pyarrow as pa
from sweep import resolve, run_sweep, spec_from_dict
from sweep.common._fs import parquet_bytes
from sweep.engine._evaluate import results_schema
from sweep.store._run_store import BINDING_KEY, RunStore

total, run_dir, rows = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
sweep = resolve(spec_from_dict(spec_doc(total)))
run_sweep(sweep, run_dir, executor=Drain(), batch_size=rows, progress=False)  # the manifest
store = RunStore(run_dir)
binding = store.expectations().binding.encode()
schema = results_schema(sweep)
for lo in range(0, total, rows):
    if (lo // rows) % 10 == 3:  # every tenth part left to do: holes in the done set
        continue
    idx = np.arange(lo, min(lo + rows, total), dtype=np.int64)
    n = idx.shape[0]
    columns = []
    for field in schema:
        if field.name == "grid_index":
            columns.append(pa.array(idx))
        elif field.name == "config_id":
            columns.append(pa.array(["0" * 32] * n, type=pa.string()))
        elif field.name == "status":
            columns.append(pa.array(["ok"] * n, type=pa.string()))
        elif field.name == "error":
            columns.append(pa.nulls(n, type=pa.string()))
        else:
            columns.append(pa.array(np.zeros(n), type=field.type) if field.type != pa.string()
                           else pa.array(["x"] * n))
    table = pa.Table.from_arrays(columns, schema=schema).replace_schema_metadata(
        {BINDING_KEY: binding})
    data = parquet_bytes(table)
    with open(store.fs.join("parts", f"part-{hashlib.sha256(data).hexdigest()}.parquet"),
              "wb") as fh:
        fh.write(data)
"""
)


def export(commit: str, folder: Path) -> None:
    data = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", commit],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        files = [member for member in tar if not member.issym()]
        tar.extractall(folder, members=files, filter="data")


def child(tree: Path, code: str, *args: str) -> dict[str, float]:
    cache = Path(tempfile.gettempdir()) / "raysweep-bench-numba" / tree.resolve().name
    env = {**os.environ, "PYTHONPATH": str(tree), "NUMBA_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=tree,
        env=env,
    )
    if out.returncode != 0:
        raise SystemExit(f"child failed in {tree}:\n{out.stderr[-3000:]}")
    lines = out.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=None, help="base commit (default: merge-base main)")
    parser.add_argument("--sizes", default="1e6,1e7")
    args = parser.parse_args()
    base = (
        args.base
        or subprocess.run(
            ["git", "-C", str(REPO), "merge-base", "HEAD", "main"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    results: dict[str, object] = {"base": base[:12], "this_tree": "working tree"}
    with tempfile.TemporaryDirectory(prefix="bench-driver-memory-") as tmp:
        root = Path(tmp)
        old = root / "base"
        export(base, old)
        for total in sizes:
            seed = root / f"seed-{total}"
            child(REPO, MAKE_PARTS, str(total), str(seed), str(PART_ROWS))
            parts = len(list((seed / "parts").glob("part-*.parquet")))
            row: dict[str, object] = {"configs": total, "parts_when_resuming": parts}
            for state in ("fresh", "resume"):
                for label, tree in (("before", old), ("after", REPO)):
                    folder = root / f"{label}-{state}-{total}"
                    if state == "resume":
                        shutil.copytree(seed, folder)
                    row[f"{state}_{label}"] = child(tree, CHILD, str(total), str(folder))
                    shutil.rmtree(folder, ignore_errors=True)
            shutil.rmtree(seed, ignore_errors=True)
            results[str(total)] = row
    print(json.dumps(results, indent=2))
    for total in sizes:
        row = results[str(total)]
        assert isinstance(row, dict)
        for state in ("fresh", "resume"):
            b, a = row[f"{state}_before"], row[f"{state}_after"]
            print(
                f"{total:>12,} configs {state:>6}: peak RSS above baseline "
                f"{b['peak_above_baseline_mib']:8.1f} MiB before, "
                f"{a['peak_above_baseline_mib']:8.1f} MiB after "
                f"({b['seconds']:.1f} s vs {a['seconds']:.1f} s)"
            )


if __name__ == "__main__":
    main()
