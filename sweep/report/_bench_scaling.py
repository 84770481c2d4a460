"""Report section 7: the cluster's measured scaling, when ``sweep bench`` results exist."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sweep.report._load import RunData
from sweep.report._sections import (
    AmortizationSummary,
    NoBenchmarks,
    OverheadSummary,
    ScalingSection,
    ScalingSummary,
)
from sweep.store._bench_results import (
    DEFAULT_BENCH_DIR,
    BenchResults,
    load_bench,
    local_reader,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

#: A report summary record of one bench result.
S = TypeVar("S", bound="DataclassInstance")


def _store_reader(run: RunData) -> Callable[[str], bytes | None]:
    fs = run.store.fs

    def read(name: str) -> bytes | None:
        path = fs.join("bench", name)
        try:
            return fs.read_bytes(path) if fs.exists(path) else None
        except OSError:
            return None

    return read


def find_bench(run: RunData, bench_dir: str | None) -> tuple[str | None, BenchResults, list[str]]:
    """Find benchmark results: ``--bench DIR``, else ``RUN_DIR/bench``, else ``runs/bench``.

    Returns
    -------
    source : str or None
        The folder the results came from.
    results : BenchResults
        The results found there.
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
        if found.found():
            return where, found, searched
    return None, BenchResults(), searched


def _summary(result: object, summary: type[S]) -> S:
    """The report's summary of a bench result: the fields they share, as measured."""
    return summary(**{f.name: getattr(result, f.name) for f in dataclasses.fields(summary)})


def scaling_section(
    run: RunData, bench_dir: str | None
) -> tuple[ScalingSection | NoBenchmarks, BenchResults]:
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
    results : BenchResults
        The benchmark results (for the figures and the run's own scaling).
    """
    source, found, searched = find_bench(run, bench_dir)
    if not found.found():
        return NoBenchmarks(
            searched=tuple(searched),
            hint="run `sweep bench amortization` and `sweep bench scaling` (results go to "
            "runs/bench), or pass --bench DIR",
        ), found
    return ScalingSection(
        source=str(source),
        searched=tuple(searched),
        overhead=None if found.overhead is None else _summary(found.overhead, OverheadSummary),
        amortization=(
            None
            if found.amortization is None
            else _summary(found.amortization, AmortizationSummary)
        ),
        scaling=None if found.scaling is None else _summary(found.scaling, ScalingSummary),
    ), found
