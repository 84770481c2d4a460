"""Benchmark results on disk (``<kind>.json``): the typed records, where they live, reading.

The store's side of the bench -> report seam: ``sweep bench`` measures and writes these
records (:mod:`sweep.bench`), the report's scaling section and ``sweep plan`` read them here,
so neither imports the bench package. A file is the record's JSON by the engine's one rule
(:mod:`sweep.common._serial`), format :data:`FORMAT`::

    OverheadResult      overhead.json: O per no-op task at each payload size
    AmortizationResult  amortization.json: batched and per-call task times, the law's fit,
                        the planner's own plan beside it
    ScalingResult       scaling.json: throughput at p = 1..P workers, the USL fit

Each carries the :class:`ClusterInfo` it was measured on and the spec it evaluated. Numbers a
fit may leave undefined are ``float | None`` (None where the file holds null).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

from sweep.common._serial import OMIT_NONE, JSONRecord, RecordFormatError, from_json
from sweep.store._record import Plan

#: Benchmark kinds, in the order the report shows them.
BENCH_KINDS = ("overhead", "amortization", "scaling")
FORMAT = "raysweep-bench-v1"
#: Where ``sweep bench`` writes and the report and ``sweep plan`` look by default.
DEFAULT_BENCH_DIR = Path("runs/bench")


@dataclass(frozen=True, kw_only=True)
class ClusterInfo(JSONRecord):
    """The cluster a benchmark ran on.

    Attributes
    ----------
    nodes, cpus : int
        Live nodes and their CPUs (worker threads).
    node_addresses : tuple of str
        The nodes' addresses.
    ray_version : str or None
        Ray's version (Ray's records: the key since the first bench files); None otherwise.
    driver_host_cpus : int or None
        Cores of the driver's host.
    address : str
        The address joined, or ``local`` (started for the benchmark) or ``existing``.
    backend : str or None
        The backend measured (``--executor``), for the engines added after Ray; None in
        Ray's records, which keep their bytes (:func:`sweep.executors.recorded_kind`).
    backend_version : str or None
        That engine's version (e.g. Dask's).
    """

    nodes: int
    cpus: int
    node_addresses: tuple[str, ...]
    ray_version: str | None = field(default=None, metadata=OMIT_NONE)
    driver_host_cpus: int | None
    address: str
    backend: str | None = field(default=None, metadata=OMIT_NONE)
    backend_version: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, kw_only=True)
class FitFailed:
    """A fit that could not be made, and why."""

    available: Literal[False] = False
    reason: str


# --- overhead -------------------------------------------------------------------------------
@dataclass(frozen=True)
class OverheadPoint:
    """O at one payload size: the median over rounds, and every round (seconds per task)."""

    payload_bytes: int
    overhead_seconds: float
    rounds: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class OverheadResult(JSONRecord):
    """``sweep bench overhead``: the per-task overhead O of the cluster.

    Attributes
    ----------
    generated : str or None
        When it was written (None until then).
    workers, rounds : int
        Workers the no-ops ran on; rounds per payload.
    method : str
        How O was measured, in words.
    points : tuple of OverheadPoint
        One per payload size.
    overhead_seconds : float or None
        O at the first payload (None without points).
    per_byte_seconds : float or None
        The slope of O on the payload size (None with fewer than two sizes).
    result_bytes_per_config : int
        Arrow bytes of one config's result row (payloads read as batch sizes).
    cluster : ClusterInfo or None
        Where it was measured; ``spec`` what was evaluated (None until run_bench adds them).
    """

    format: str = field(default=FORMAT, init=False)
    generated: str | None = None
    kind: Literal["overhead"] = field(default="overhead", init=False)
    workers: int
    rounds: int
    method: str
    points: tuple[OverheadPoint, ...]
    overhead_seconds: float | None
    per_byte_seconds: float | None
    result_bytes_per_config: int
    cluster: ClusterInfo | None = field(default=None, metadata=OMIT_NONE)
    spec: str | None = field(default=None, metadata=OMIT_NONE)


# --- amortization ---------------------------------------------------------------------------
@dataclass(frozen=True)
class BatchTiming:
    """The service seconds of each timed task of ``batch`` configs, and their median."""

    batch: int
    seconds: tuple[float, ...]
    median: float
    stream_wall_seconds: float


@dataclass(frozen=True)
class PerCallTiming:
    """The summed seconds of ``batch`` single-config tasks."""

    batch: int
    seconds: float


@dataclass(frozen=True)
class SingleCallTimes:
    """The median of the single-config tasks, and how many ran."""

    median: float
    tasks: int


@dataclass(frozen=True)
class SpeedupPoint:
    """Measured ``S(B)``: per-call seconds over batched seconds at ``batch``."""

    batch: int
    speedup: float


@dataclass(frozen=True, kw_only=True)
class LawFit:
    """The amortization law fitted to the batched and per-call task times.

    Attributes
    ----------
    overhead_seconds, per_config_seconds, per_call_config_seconds : float or None
        ``O``, ``b`` and the per-call marginal ``a``.
    r_squared : float or None
        Of the batched fit.
    ridge_batch, batch_for_90pct, batch_for_99pct, ceiling_speedup : float or None
        ``O/b``, ``B*(0.9)``, ``B*(0.99)`` and ``1 + O/b`` of the law.
    """

    available: Literal[True] = True
    overhead_seconds: float | None
    per_config_seconds: float | None
    per_call_config_seconds: float | None
    r_squared: float | None
    ridge_batch: float | None
    batch_for_90pct: float | None
    batch_for_99pct: float | None
    ceiling_speedup: float | None


@dataclass(frozen=True)
class PlannerFailed:
    """The planner's error where it could not plan the benchmark's grid."""

    error: str


@dataclass(frozen=True)
class PlannerComparison:
    """The planner's O, b and B*(0.99) over the fitted ones."""

    overhead_planner_over_fit: float | None
    per_config_planner_over_fit: float | None
    law_batch_planner: float | None
    law_batch_fit: float | None


@dataclass(frozen=True, kw_only=True)
class AmortizationResult(JSONRecord):
    """``sweep bench amortization``: batched against per-call task times, and the law's fit.

    Attributes
    ----------
    generated : str or None
        When it was written.
    workers, reps : int
        One worker; timed tasks per batch size.
    batch_sizes : tuple of int
        The batch sizes B, ascending.
    method : str
        How tasks were timed, in words.
    batched, per_call, speedup : tuple
        Per B: :class:`BatchTiming`, :class:`PerCallTiming`, :class:`SpeedupPoint`.
    per_call_single : SingleCallTimes
        The single-config tasks.
    fit : LawFit or FitFailed
        The law's fit.
    planner : Plan, PlannerFailed or None
        The planner's plan for the same grid on this cluster (None when not asked).
    comparison : PlannerComparison or None
        Planner over fit, when both exist.
    cluster, spec : optional
        Where and what (added by run_bench).
    """

    format: str = field(default=FORMAT, init=False)
    generated: str | None = None
    kind: Literal["amortization"] = field(default="amortization", init=False)
    workers: int
    reps: int
    batch_sizes: tuple[int, ...]
    method: str
    batched: tuple[BatchTiming, ...]
    per_call: tuple[PerCallTiming, ...]
    per_call_single: SingleCallTimes
    speedup: tuple[SpeedupPoint, ...]
    fit: LawFit | FitFailed
    planner: Plan | PlannerFailed | None
    comparison: PlannerComparison | None
    cluster: ClusterInfo | None = field(default=None, metadata=OMIT_NONE)
    spec: str | None = field(default=None, metadata=OMIT_NONE)


# --- scaling --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScalingPoint:
    """Throughput with at most ``workers`` tasks in flight."""

    workers: int
    processes: int
    seconds: tuple[float, ...]
    throughput: float


@dataclass(frozen=True, kw_only=True)
class UslFit:
    """The Universal Scalability Law fitted to the throughputs (gamma fixed at X(1)).

    ``peak_workers`` is None where the file holds null (no finite peak: kappa 0); the other
    numbers read a null as NaN.
    """

    available: Literal[True] = True
    sigma: float
    kappa: float
    gamma: float
    peak_workers: float | None
    peak_throughput: float
    r_squared: float


@dataclass(frozen=True, kw_only=True)
class ScalingResult(JSONRecord):
    """``sweep bench scaling``: throughput at 1..P workers and the USL.

    Attributes
    ----------
    generated : str or None
        When it was written.
    cluster_cpus, max_workers : int
        The cluster's CPUs and P.
    cpus_per_task : float
        CPUs each task asked for (below 1 when P exceeds the CPUs).
    batch_size, tasks, configs, rounds, warm_workers : int
        The workload, rounds per p, worker processes warmed up.
    method : str
        How throughput was measured, in words.
    points : tuple of ScalingPoint
        One per p.
    fit : UslFit or FitFailed
        The USL.
    cluster, spec : optional
        Where and what (added by run_bench).
    """

    format: str = field(default=FORMAT, init=False)
    generated: str | None = None
    kind: Literal["scaling"] = field(default="scaling", init=False)
    cluster_cpus: int
    max_workers: int
    cpus_per_task: float
    batch_size: int
    tasks: int
    configs: int
    rounds: int
    warm_workers: int
    method: str
    points: tuple[ScalingPoint, ...]
    fit: UslFit | FitFailed
    cluster: ClusterInfo | None = field(default=None, metadata=OMIT_NONE)
    spec: str | None = field(default=None, metadata=OMIT_NONE)


#: One benchmark's result.
BenchResult = OverheadResult | AmortizationResult | ScalingResult
_RECORDS: dict[str, type[OverheadResult] | type[AmortizationResult] | type[ScalingResult]] = {
    "overhead": OverheadResult,
    "amortization": AmortizationResult,
    "scaling": ScalingResult,
}


@dataclass(frozen=True)
class BenchResults:
    """The benchmark results found in one folder (None for a kind not found)."""

    overhead: OverheadResult | None = None
    amortization: AmortizationResult | None = None
    scaling: ScalingResult | None = None

    def found(self) -> tuple[BenchResult, ...]:
        """The results found, in :data:`BENCH_KINDS` order."""
        found = (self.overhead, self.amortization, self.scaling)
        return tuple(r for r in found if r is not None)


def bench_from_json(doc: object, where: str = "bench result") -> BenchResult:
    """Read one benchmark file's JSON (its ``kind`` says which record).

    Raises
    ------
    RecordFormatError
        For another format or kind, or a key missing or of the wrong type (naming where).
    """
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise RecordFormatError(f"{where}: format {found!r}, expected {FORMAT!r}")
    kind = doc.get("kind")
    if kind not in _RECORDS:
        raise RecordFormatError(f"{where}: kind {kind!r}, expected one of {list(BENCH_KINDS)}")
    return from_json(_RECORDS[str(kind)], doc, where)


def load_bench(read: Callable[[str], bytes | None]) -> BenchResults:
    """Read the benchmark results found by ``read``.

    Parameters
    ----------
    read : callable
        ``read(file_name)`` returns the file's bytes, or None when it is absent.

    Returns
    -------
    BenchResults
        The kinds found (unreadable, foreign or malformed files are skipped).
    """
    return BenchResults(
        _load_one(read, "overhead", OverheadResult),
        _load_one(read, "amortization", AmortizationResult),
        _load_one(read, "scaling", ScalingResult),
    )


_R = TypeVar("_R", OverheadResult, AmortizationResult, ScalingResult)


def _load_one(read: Callable[[str], bytes | None], kind: str, cls: type[_R]) -> _R | None:
    data = read(f"{kind}.json")
    if data is None:
        return None
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("kind") != kind:
        return None
    try:
        return from_json(cls, doc, f"{kind}.json")
    except RecordFormatError:
        return None


def local_reader(folder: str | Path) -> Callable[[str], bytes | None]:
    """A reader for :func:`load_bench` over a local folder."""
    base = Path(folder)

    def read(name: str) -> bytes | None:
        path = base / name
        return path.read_bytes() if path.is_file() else None

    return read
