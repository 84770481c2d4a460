"""Report section 7: the cluster's measured scaling, when ``sweep bench`` results exist."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sweep.report._load import RunData
from sweep.report._sections import NoBenchmarks, ScalingSection
from sweep.store._bench_results import DEFAULT_BENCH_DIR, load_bench, local_reader


def _store_reader(run: RunData) -> Callable[[str], bytes | None]:
    fs = run.store.fs

    def read(name: str) -> bytes | None:
        path = fs.join("bench", name)
        try:
            return fs.read_bytes(path) if fs.exists(path) else None
        except OSError:
            return None

    return read


def find_bench(
    run: RunData, bench_dir: str | None
) -> tuple[str | None, dict[str, dict[str, Any]], list[str]]:
    """Find benchmark results: ``--bench DIR``, else ``RUN_DIR/bench``, else ``runs/bench``.

    Returns
    -------
    source : str or None
        The folder the results came from.
    results : dict
        Kind to result.
    searched : list of str
        The folders looked in, in order.
    """
    candidates: list[tuple[str, Callable[[str], bytes | None]]] = []
    if bench_dir is not None:
        candidates.append((str(bench_dir), local_reader(bench_dir)))
    else:
        candidates.append((run.store.fs.join("bench"), _store_reader(run)))
        candidates.append((str(DEFAULT_BENCH_DIR), local_reader(Path(DEFAULT_BENCH_DIR))))
    searched = []
    for where, reader in candidates:
        searched.append(where)
        found = load_bench(reader)
        if found:
            return where, found, searched
    return None, {}, searched


def _summary(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    keep = {
        "overhead": ("workers", "overhead_seconds", "per_byte_seconds", "points", "method"),
        "amortization": ("batch_sizes", "speedup", "fit", "planner", "comparison", "method"),
        "scaling": (
            "cluster_cpus",
            "max_workers",
            "cpus_per_task",
            "batch_size",
            "tasks",
            "points",
            "fit",
            "method",
        ),
    }[kind]
    out = {k: data.get(k) for k in keep}
    out.update(
        {
            "generated": data.get("generated"),
            "cluster": data.get("cluster"),
            "spec": data.get("spec"),
        }
    )
    return out


def scaling_section(
    run: RunData, bench_dir: str | None
) -> tuple[ScalingSection | NoBenchmarks, dict[str, dict[str, Any]]]:
    """Section 7 of the report.

    Parameters
    ----------
    run : RunData
        The run folder, read.
    bench_dir : str or None
        ``--bench DIR``.

    Returns
    -------
    section : ScalingSection or NoBenchmarks
        Where the results came from, and each benchmark's summary.
    results : dict
        The raw benchmark results (for the figures).
    """
    source, found, searched = find_bench(run, bench_dir)
    if not found:
        return NoBenchmarks(
            searched=tuple(searched),
            hint="run `sweep bench amortization` and `sweep bench scaling` (results go to "
            "runs/bench), or pass --bench DIR",
        ), {}
    summaries = {kind: _summary(kind, data) for kind, data in found.items()}
    return ScalingSection(
        source=str(source),
        searched=tuple(searched),
        overhead=summaries.get("overhead"),
        amortization=summaries.get("amortization"),
        scaling=summaries.get("scaling"),
    ), found
