"""The typed record of a run: what ``manifest.json`` and the telemetry files hold.

Every stage hands the next one of these frozen records instead of a mapping; JSON is their
serialisation, by the engine's one rule (:mod:`sweep.common._serial`: fields in declaration
order, ``OMIT_NONE`` keys left out while None, NaN written as null), and the on-disk keys and
their order are those of format :data:`FORMAT`, so run folders written before the record
existed read unchanged. Three records keep a hand-written form, each saying why:
:class:`RunKey` (keeps the keys it does not know: a part's binding hashes what was recorded),
:class:`GridRecord` (the object :meth:`sweep.spec._grid.Grid.describe` wrote, kept whole) and
:class:`Manifest` (refuses another format by name, checks the objects a run folder needs,
names the folder in errors); :meth:`LockInfo.from_bytes` reads a hostile lock file field by
field. A manifest of another format is refused with a message naming it.

::

    Manifest            manifest.json (format, engine version, created, ...)
      .run_key          RunKey: what the results depend on (spec hash, data fingerprint,
                        strategy, root seed, metric options); its sha256 binds parts to the run
      .grid             GridRecord: size, axes (in grid order), zip groups, constraints
      .sessions         Session, one per driver session (status, plan, counts, hash)
        .executor_choice  ExecutorChoice: which executor ran and the prediction behind it
        .plan           Plan: the batch size and what it was chosen from (PilotTask rows)
        .executor_info  ExecutorInfo: the executor's kind, workers, nodes, address
    LockInfo            the lock file: which driver holds the folder
    TaskTelemetry       one row of telemetry/task-<sha256>.parquet (both executors)
    PartInfo            the check of one part (name, ok, reason, rows)

The spec, the data description and the environment stay JSON objects: they are the serialisations of
:class:`sweep.spec._models.SweepSpec`, :meth:`sweep.data._panels.Panel.describe` and
:func:`sweep.common._environment.environment`, which own their shape.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from sweep.common._jsonable import JSONObject
from sweep.common._serial import OMIT_NONE, SKIPPED, JSONRecord, RecordFormatError
from sweep.errors import RunFolderError
from sweep.spec._provenance import Provenance
from sweep.store._table_hash import TABLE_HASH_V1, TABLE_HASH_VERSIONS

#: The run-folder format of a folder any raysweep can reopen (``manifest.json``'s ``format``).
FORMAT = "raysweep-run-v1"
#: The format of a folder that only this engine can reopen: its data was handed over in
#: memory (the folder keeps a copy) or its strategy cannot be imported. An older engine
#: refuses it with a message naming this version, instead of misreading it.
FORMAT_V2 = "raysweep-run-v2"
#: The formats this engine reads.
READ_FORMATS = (FORMAT, FORMAT_V2)

#: How a driver session can end (``running`` while a driver holds the folder).
SESSION_STATUSES = ("completed", "incomplete", "interrupted", "failed", "killed", "running")


def _canonical_json(doc: Any) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


# --- what the results depend on ---------------------------------------------------------
@dataclass(frozen=True)
class StrategyRef(JSONRecord):
    """A strategy's name (or import path) and version, as recorded (``{"name", "version"}``)."""

    name: str
    version: str


@dataclass(frozen=True)
class RunKey:
    """What a run folder's results depend on (the manifest's ``identity`` object).

    Two sweeps with equal keys produce the same table; :meth:`binding` (its sha256) is
    written into every part, so a part copied from another run is recognised as foreign.

    Attributes
    ----------
    spec_hash, data_fingerprint : str
        :attr:`sweep.spec._models.SweepSpec.spec_hash` and
        :func:`sweep.data._panels.panel_fingerprint`.
    strategy : StrategyRef or None
        The strategy and its version.
    root_seed : int or None
        The spec's seed.
    metrics : dict
        The metric options (:class:`sweep.spec._models.MetricOptions` as JSON).
    extra : dict
        Keys of a recorded identity this engine does not know, kept so that the binding of
        such a folder is computed over exactly what it recorded.
    """

    spec_hash: str
    data_fingerprint: str
    strategy: StrategyRef | None = None
    root_seed: int | None = None
    metrics: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    # Hand-written: the keys it does not know are kept (``extra``), so that a part's binding
    # hashes exactly what a folder recorded; the empty metrics and a missing seed are left out.
    def to_json(self) -> JSONObject:
        """The manifest's ``identity`` object (keys in their recorded order)."""
        doc: JSONObject = {
            "spec_hash": self.spec_hash,
            "data_fingerprint": self.data_fingerprint,
        }
        if self.strategy is not None:
            doc["strategy"] = self.strategy.to_json()
        if self.root_seed is not None:
            doc["root_seed"] = self.root_seed
        if self.metrics:
            doc["metrics"] = dict(self.metrics)
        doc.update(self.extra)
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], folder: str = "run folder") -> RunKey:
        """Read an ``identity`` object; :class:`RunFolderError` naming a missing key."""
        for key in ("spec_hash", "data_fingerprint"):
            if not isinstance(doc.get(key), str):
                raise RunFolderError(f"{folder}: manifest.json's identity has no {key!r}")
        strategy = doc.get("strategy")
        known = {"spec_hash", "data_fingerprint", "strategy", "root_seed", "metrics"}
        return cls(
            spec_hash=str(doc["spec_hash"]),
            data_fingerprint=str(doc["data_fingerprint"]),
            strategy=(
                StrategyRef.from_json(strategy, "identity.strategy")
                if isinstance(strategy, Mapping)
                else None
            ),
            root_seed=doc.get("root_seed"),
            metrics=dict(doc.get("metrics") or {}),
            extra={k: v for k, v in doc.items() if k not in known},
        )

    def binding(self) -> str:
        """The sha256 of the canonical JSON of :meth:`to_json`: a part's run binding."""
        return hashlib.sha256(_canonical_json(self.to_json())).hexdigest()

    @property
    def pbo_blocks(self) -> int:
        """The metric option ``pbo_blocks`` (PBO block sums per config)."""
        return int(self.metrics["pbo_blocks"])

    def differences(self, current: RunKey) -> list[str]:
        """Human-readable list of what differs between this recorded key and ``current``."""
        recorded_doc, current_doc = self.to_json(), current.to_json()
        labels = {
            "data_fingerprint": "the data (fingerprint)",
            "strategy": "the strategy name/version",
            "root_seed": "the root seed",
            "metrics": "the metric options",
            "spec_hash": "the spec",
        }
        return [
            _difference(label, recorded_doc.get(key), current_doc.get(key))
            for key, label in labels.items()
            if recorded_doc.get(key) != current_doc.get(key)
        ]


def _difference(label: str, old: Any, new: Any) -> str:
    if isinstance(old, dict) and isinstance(new, dict):
        keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        detail = ", ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in keys)
        return f"{label} ({detail})"
    return f"{label} ({str(old)[:16]}... -> {str(new)[:16]}...)"


# --- the grid -----------------------------------------------------------------------------
@dataclass(frozen=True)
class AxisRecord:
    """One grid axis as recorded: name, dtype, size, first and last value."""

    name: str
    size: int
    doc: Mapping[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class GridRecord:
    """The manifest's ``grid`` object (:meth:`sweep.spec._grid.Grid.describe`).

    Attributes
    ----------
    size : int
        Configs in the grid (after constraints).
    axes : tuple of AxisRecord
        The axes in grid order.
    doc : dict
        The object as recorded (``product_size``, ``zip``, ``where``, ...).
    """

    size: int
    axes: tuple[AxisRecord, ...]
    doc: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def param_names(self) -> list[str]:
        """Grid parameters in grid order."""
        return [a.name for a in self.axes]

    @property
    def varying(self) -> list[str]:
        """Parameters that take more than one value, in grid order."""
        return [a.name for a in self.axes if a.size > 1]

    # Hand-written: the object is :meth:`sweep.spec._grid.Grid.describe`'s, kept whole (it
    # owns the shape); the record reads only the size and the axes from it.
    def to_json(self) -> JSONObject:
        """The object as recorded."""
        return dict(self.doc)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], folder: str = "run folder") -> GridRecord:
        """Read a ``grid`` object; :class:`RunFolderError` if it has no usable size or axes."""
        size, axes = doc.get("size"), doc.get("axes")
        if (
            not isinstance(size, int)
            or isinstance(size, bool)
            or size < 0
            or not isinstance(axes, list)
        ):
            raise RunFolderError(
                f"{folder}: manifest.json's grid needs a non-negative integer 'size' and a "
                f"list of 'axes', got size={size!r}"
            )
        for a in axes:
            axis_size = a.get("size") if isinstance(a, Mapping) else None
            if (
                not isinstance(axis_size, int)
                or isinstance(axis_size, bool)
                or axis_size < 1
                or not isinstance(a.get("name"), str)
            ):
                raise RunFolderError(
                    f"{folder}: manifest.json's grid axes each need a 'name' and a positive "
                    f"integer 'size', got {str(a)[:80]!r}"
                )
        records = tuple(AxisRecord(a["name"], a["size"], dict(a)) for a in axes)
        return cls(size=size, axes=records, doc=dict(doc))


# --- the batch plan -----------------------------------------------------------------------
@dataclass(frozen=True)
class PilotTask(JSONRecord):
    """One pilot (or warm-up) task the planner timed (every field a float, as recorded)."""

    configs: float
    compute_seconds: float
    round_trip_overhead_seconds: float
    write_seconds: float

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():  # 64 configs are recorded as 64.0
            object.__setattr__(self, name, float(value))


@dataclass(frozen=True)
class Plan(JSONRecord):
    """The chosen batch size and everything it was chosen from (a session's ``plan``).

    ``planning_seconds`` is the driver's wall time until the plan was made: in-process the
    warm-up, pilots (results kept) and overhead probe; on several workers the time until
    the pilots and a provisional batch were back (the workers computed throughout, see
    :mod:`sweep.plan._planning_stream`); with ``--executor auto`` moving to Ray, both plans and
    the Ray start.
    """

    batch_size: int
    source: str
    overhead_seconds: float = math.nan
    transport_seconds: float = math.nan
    probe_seconds: float = math.nan
    fixed_in_task_seconds: float = math.nan
    driver_write_seconds: float = math.nan
    per_config_seconds: float = math.nan
    target_efficiency: float = math.nan
    law_batch: float = math.nan
    clamps: tuple[str, ...] = ()
    warmup_configs: int = 0
    pilot: tuple[PilotTask, ...] = ()
    planning_seconds: float = math.nan


@dataclass(frozen=True)
class ExecutorChoice(JSONRecord):
    """What ``--executor auto`` chose, and the numbers behind it (a session's record).

    Attributes
    ----------
    requested : str
        ``auto`` (or the executor named on the command line).
    chosen : str
        ``local`` or ``ray``.
    reason : str
        One sentence.
    configs : int
        Configs the prediction was made for (those left after the in-process pilot); for a
        pass after a sweep (``verify``, ``report``), the parts left after the first ones.
    local_seconds, ray_seconds : float
        Predicted wall times (NaN where not predicted).
    ray_workers : int
        Workers the Ray prediction assumed.
    crossover_configs : int or None
        The grid size above which Ray is predicted to win (None: never, or not predicted).
    assumptions : tuple of str
        What was assumed rather than measured.
    """

    requested: str
    chosen: str
    reason: str
    configs: int = 0
    local_seconds: float = math.nan
    ray_seconds: float = math.nan
    ray_workers: int = 0
    crossover_configs: int | None = None
    assumptions: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExecutorInfo(JSONRecord):
    """What an executor says about itself (:meth:`sweep.executors.Executor.describe`).

    Attributes
    ----------
    kind : str
        The backend's name (``local``, ``ray``, ``dask``).
    workers : int
        Batches that run at once.
    nodes : int
        Nodes of the cluster (1 in-process).
    host : str or None
        The host name (in-process).
    node_addresses : tuple of str or None
        The live nodes' addresses (Ray).
    address : str or None
        The address joined, ``local`` (started here) or ``existing`` (Ray).
    ray_version : str or None
        Ray's version (the Ray backend: its key since the first run folders).
    backend_version : str or None
        The engine's version (the backends added since, e.g. Dask's).
    """

    kind: str
    workers: int
    nodes: int
    host: str | None = field(default=None, metadata=OMIT_NONE)
    node_addresses: tuple[str, ...] | None = field(default=None, metadata=OMIT_NONE)
    address: str | None = field(default=None, metadata=OMIT_NONE)
    ray_version: str | None = field(default=None, metadata=OMIT_NONE)
    backend_version: str | None = field(default=None, metadata=OMIT_NONE)


# --- driver sessions ----------------------------------------------------------------------
@dataclass(frozen=True)
class Session(JSONRecord):
    """One driver session as recorded in the manifest's ``sessions``.

    The keys a session writes when it starts come first and are always written; those it
    adds as it goes (``executor_choice`` on) are left out while None.

    Attributes
    ----------
    id : int
        1, 2, ... in the order the sessions started.
    start, end : str or None
        ISO 8601 UTC times (``end`` None while running, or when the driver was killed).
    host, pid, engine_version, executor : optional
        Where and what ran it.
    environment : dict
        Git commit and library versions (:func:`sweep.common._environment.environment`).
    status : str
        One of :data:`SESSION_STATUSES`.
    took_over_lock : dict or None
        The stale lock this session took over.
    executor_choice : ExecutorChoice or None
        Which executor ran the batches and why (``--executor auto``'s prediction).
    plan : Plan or None
        The batch plan (None when there was nothing to run).
    executor_info : ExecutorInfo or None
        :meth:`sweep.executors.Executor.describe`.
    configs_computed, configs_failed : int or None
        Configs this session evaluated, and how many of them failed.
    quarantined : tuple of str or None
        Parts this session moved aside.
    wall_seconds : float or None
        The session's wall time.
    table_hash : str or None
        The table hash, when this session left the grid complete.
    """

    id: int
    start: str | None = None
    end: str | None = None
    host: str | None = None
    pid: int | None = None
    engine_version: str | None = None
    executor: str | None = None
    environment: Mapping[str, Any] = field(default_factory=dict)
    status: str = "running"
    took_over_lock: Mapping[str, Any] | None = None
    executor_choice: ExecutorChoice | None = field(default=None, metadata=OMIT_NONE)
    plan: Plan | None = field(default=None, metadata=OMIT_NONE)
    executor_info: ExecutorInfo | None = field(default=None, metadata=OMIT_NONE)
    configs_computed: int | None = field(default=None, metadata=OMIT_NONE)
    configs_failed: int | None = field(default=None, metadata=OMIT_NONE)
    quarantined: tuple[str, ...] | None = field(default=None, metadata=OMIT_NONE)
    wall_seconds: float | None = field(default=None, metadata=OMIT_NONE)
    table_hash: str | None = field(default=None, metadata=OMIT_NONE)

    @classmethod
    def begin(
        cls,
        session_id: int,
        *,
        start: str,
        engine_version: str,
        executor: str,
        environment: Mapping[str, Any],
        took_over_lock: Mapping[str, Any] | None,
    ) -> Session:
        """A session starting now in this process."""
        return cls(
            id=session_id,
            start=start,
            host=socket.gethostname(),
            pid=os.getpid(),
            engine_version=engine_version,
            executor=executor,
            environment=dict(environment),
            status="running",
            took_over_lock=took_over_lock,
        )


@dataclass(frozen=True)
class RecordedHash(JSONRecord):
    """The table hash the last driver session that completed the grid recorded.

    ``sweep verify``, ``sweep status`` and the report compare the hash they compute from the
    parts with it (:meth:`agrees`): a difference means the parts changed after that session
    ended.
    """

    session: int
    table_hash: str

    def agrees(self, found: str) -> bool:
        """Whether ``found`` (a table hash computed now) is the recorded one."""
        return found == self.table_hash

    def describe(self, found: str) -> str:
        """``matches the hash session N recorded`` or ``DIFFERS from ...``, for ``found``."""
        if self.agrees(found):
            return f"matches the hash session {self.session} recorded"
        return (
            f"DIFFERS from {self.table_hash}, the hash session {self.session} recorded when "
            "it completed the grid: the parts changed since"
        )


# --- the manifest -------------------------------------------------------------------------
_MANIFEST_OBJECTS: dict[str, type] = {
    "identity": dict,
    "spec": dict,
    "data": dict,
    "grid": dict,
    "sessions": list,
}


@dataclass(frozen=True)
class Manifest:
    """``manifest.json``: what a run folder holds the results of, and its driver sessions.

    Attributes
    ----------
    engine_version, created : str or None
        The engine that created the folder, and when.
    run_key : RunKey
        The manifest's ``identity``: what the results depend on.
    spec : dict
        The spec (:meth:`sweep.spec._models.SweepSpec.to_dict`; its key order orders the grid).
    data : dict
        The data description (:meth:`sweep.data._panels.Panel.describe`).
    grid : GridRecord
        The grid.
    results_schema : tuple of (name, type) or None
        The parts' columns (None for a folder that predates it).
    sessions : tuple of Session
        The driver sessions, in order.
    format : str
        :data:`FORMAT`, or :data:`FORMAT_V2` (see :func:`format_for`).
    provenance : Provenance or None
        Where the data and the strategy came from (None for a folder that predates it: then
        the spec's data and strategy name say it).
    table_hash_version : str or None
        The table hash the folder carries (``raysweep-table-v2`` for new runs, see
        :mod:`sweep.store._table_hash`); None for a folder written before the key existed,
        whose hash is ``raysweep-table-v1`` (:attr:`hash_version`).
    """

    engine_version: str | None
    created: str | None
    run_key: RunKey
    spec: Mapping[str, Any]
    data: Mapping[str, Any]
    grid: GridRecord
    results_schema: tuple[tuple[str, str], ...] | None
    sessions: tuple[Session, ...] = ()
    format: str = FORMAT
    provenance: Provenance | None = None
    table_hash_version: str | None = None

    # Hand-written: both ways, for format v1's key order (``identity``, ``provenance`` between
    # ``data`` and ``grid``, ``table_hash_version`` only where recorded); reading refuses another
    # format by name, checks the objects a run folder needs and names the folder in every error.
    def to_json(self) -> JSONObject:
        """The JSON document, keys in the order format :data:`FORMAT` writes them."""
        doc: JSONObject = {
            "format": self.format,
            "engine_version": self.engine_version,
            "created": self.created,
            "identity": self.run_key.to_json(),
            "spec": dict(self.spec),
            "data": dict(self.data),
        }
        if self.provenance is not None:
            doc["provenance"] = self.provenance.to_json()
        doc["grid"] = self.grid.to_json()
        if self.results_schema is not None:
            doc["results_schema"] = [list(c) for c in self.results_schema]
        if self.table_hash_version is not None:
            doc["table_hash_version"] = self.table_hash_version
        doc["sessions"] = [s.to_json() for s in self.sessions]
        return doc

    def to_bytes(self) -> bytes:
        """What ``manifest.json`` holds (indented JSON; no NaN or infinity)."""
        return json.dumps(self.to_json(), indent=2, allow_nan=False).encode()

    @classmethod
    def from_json(cls, doc: Any, folder: str = "run folder") -> Manifest:
        """Read a parsed ``manifest.json``.

        Raises
        ------
        RunFolderError
            For another format (naming it and the one expected), or a manifest that lacks
            what a run folder needs (naming what).
        """
        if not isinstance(doc, dict) or doc.get("format") not in READ_FORMATS:
            found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise RunFolderError(
                f"{folder}: manifest format {found!r}, expected "
                + " or ".join(map(repr, READ_FORMATS))
                + " (a folder written by another raysweep version: open it with that version)"
            )
        for key, kind in _MANIFEST_OBJECTS.items():
            if not isinstance(doc.get(key), kind):
                raise RunFolderError(
                    f"{folder}: manifest.json has no valid {key!r} (expected a JSON "
                    f"{'object' if kind is dict else 'array'}, got "
                    f"{type(doc.get(key)).__name__}); the folder cannot be used"
                )
        schema = _results_schema(doc.get("results_schema"), folder)
        provenance = doc.get("provenance")
        version = doc.get("table_hash_version")
        if version is not None and version not in TABLE_HASH_VERSIONS:
            raise RunFolderError(
                f"{folder}: manifest.json's table_hash_version is {version!r}, expected one of "
                + ", ".join(map(repr, TABLE_HASH_VERSIONS))
                + " (a folder written by a newer raysweep: open it with that version)"
            )
        try:
            return cls(
                engine_version=doc.get("engine_version"),
                created=doc.get("created"),
                run_key=RunKey.from_json(doc["identity"], folder),
                spec=doc["spec"],
                data=doc["data"],
                grid=GridRecord.from_json(doc["grid"], folder),
                results_schema=schema,
                sessions=tuple(
                    Session.from_json(s, f"sessions[{k}]")
                    for k, s in enumerate(doc["sessions"])
                    if isinstance(s, dict)
                ),
                format=str(doc["format"]),
                provenance=(
                    Provenance.from_json(provenance, "provenance")
                    if isinstance(provenance, dict)
                    else None
                ),
                table_hash_version=version,
            )
        except RecordFormatError as exc:
            raise RunFolderError(
                f"{folder}: manifest.json's {exc}; the folder cannot be used"
            ) from exc

    @classmethod
    def from_bytes(cls, data: bytes, folder: str = "run folder") -> Manifest:
        """Parse ``manifest.json``'s bytes (:class:`RunFolderError` when corrupt)."""
        try:
            doc = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RunFolderError(f"{folder}: manifest.json is corrupt: {exc}") from exc
        except RecursionError as exc:
            raise RunFolderError(
                f"{folder}: manifest.json is corrupt: nested too deeply to read (no raysweep "
                "manifest nests more than a few levels)"
            ) from exc
        return cls.from_json(doc, folder)

    @property
    def total(self) -> int:
        """Configs in the grid."""
        return self.grid.size

    @property
    def hash_version(self) -> str:
        """The table hash version the folder carries (v1 where none is recorded)."""
        return self.table_hash_version or TABLE_HASH_V1

    @property
    def metric_options(self) -> Mapping[str, Any]:
        """The spec's ``[metrics]`` as recorded (its defaults filled in)."""
        metrics = self.spec.get("metrics")
        return metrics if isinstance(metrics, Mapping) else {}

    def session(self, session_id: int) -> Session:
        """The session with this id."""
        return next(s for s in self.sessions if s.id == session_id)

    def with_session(self, session: Session) -> Manifest:
        """The manifest with ``session`` replacing the one of its id (or appended)."""
        if any(s.id == session.id for s in self.sessions):
            sessions = tuple(session if s.id == session.id else s for s in self.sessions)
        else:
            sessions = (*self.sessions, session)
        return replace(self, sessions=sessions)

    @property
    def recorded_hash(self) -> RecordedHash | None:
        """The table hash of the last session that completed the grid (None: none did)."""
        done = [s for s in self.sessions_in_order() if s.table_hash]
        return RecordedHash(done[-1].id, str(done[-1].table_hash)) if done else None

    def sessions_in_order(self) -> list[Session]:
        """The sessions sorted by id."""
        return sorted(self.sessions, key=lambda s: s.id)


def _results_schema(value: object, folder: str) -> tuple[tuple[str, str], ...] | None:
    """The manifest's ``results_schema``: absent (None), or a list of [name, type] strings."""
    if value is None:
        return None
    pairs = value if isinstance(value, list) else None
    if pairs is None or not all(
        isinstance(c, list) and len(c) == 2 and all(isinstance(x, str) for x in c) for c in pairs
    ):
        raise RunFolderError(
            f"{folder}: manifest.json has no valid 'results_schema' (expected a list of "
            f"[column name, arrow type] pairs of strings, got {str(value)[:80]}); the folder "
            "cannot be used"
        )
    return tuple((c[0], c[1]) for c in pairs)


# --- the lock -----------------------------------------------------------------------------
@dataclass(frozen=True)
class LockInfo(JSONRecord):
    """The ``lock`` file of a run folder: which driver holds it.

    Attributes
    ----------
    pid, host : optional
        The driver's process id and host name (a lock without them is unusable: stale).
    machine : str or None
        Its kernel and pid namespace (:func:`sweep.store._run_store.pid_namespace`): where ``pid``
        can be checked.
    proc_start : str or None
        When that process started (tells a reused pid apart).
    since : str or None
        When the lock was taken (ISO UTC).
    token : str or None
        Random, so that two locks of one process differ.
    """

    pid: int | None = field(default=None, metadata=OMIT_NONE)
    host: str | None = field(default=None, metadata=OMIT_NONE)
    machine: str | None = field(default=None, metadata=OMIT_NONE)
    proc_start: str | None = field(default=None, metadata=OMIT_NONE)
    since: str | None = field(default=None, metadata=OMIT_NONE)
    token: str | None = field(default=None, metadata=OMIT_NONE)

    @property
    def usable(self) -> bool:
        """Whether a driver wrote it (it names a host and a pid)."""
        return bool(self.host) and self.pid is not None

    def to_bytes(self) -> bytes:
        """What the lock file holds (the keys it has; ``{}`` for an unreadable lock)."""
        return json.dumps(self.to_json()).encode()

    # Hand-written: a lock file is read field by field and never raises (an unreadable or
    # hostile one is the empty lock: unusable, so stale); its JSON elsewhere reads by the rule.
    @classmethod
    def from_bytes(cls, raw: bytes) -> LockInfo:
        """Parse a lock file; an unreadable one is the empty (unusable, so stale) lock."""
        try:
            doc = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            return cls()
        if not isinstance(doc, dict):
            return cls()
        pid = doc.get("pid")
        text = {k: doc.get(k) for k in ("host", "machine", "proc_start", "since", "token")}
        return cls(
            pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
            **{k: v if isinstance(v, str) else None for k, v in text.items()},
        )


def format_for(provenance: Provenance) -> str:
    """Return the format a new run folder is written in.

    :data:`FORMAT_V2` when only this engine can reopen it (in-memory data, a strategy that
    cannot be imported), else :data:`FORMAT`.
    """
    if provenance.data.kind == "memory" or provenance.needs_python:
        return FORMAT_V2
    return FORMAT


# --- tasks and parts ----------------------------------------------------------------------
@dataclass(frozen=True)
class WorkerTiming:
    """What the worker that ran a task measured: when, where, which attempt."""

    start_time: float
    end_time: float
    worker: str
    node: str
    host: str
    attempt: int

    @classmethod
    def here(
        cls, start_time: float, end_time: float, *, node: str | None = None, attempt: int = 0
    ) -> WorkerTiming:
        """A task run in this process (``node`` defaults to the host name)."""
        host = socket.gethostname()
        return cls(start_time, end_time, str(os.getpid()), node or host, host, attempt)


@dataclass(frozen=True)
class TaskTelemetry:
    """One task's telemetry, the same fields from every executor (one parquet row).

    Attributes
    ----------
    submit_time, start_time, end_time, received_time : float
        Epoch seconds: submitted by the driver, started and ended on the worker, result in
        the driver's hands.
    compute_seconds : float
        The batch's own compute time (:attr:`sweep.engine._evaluate.BatchResult.compute_seconds`).
    n_configs : int
        Configs in the batch.
    worker : str
        The worker's pid.
    node : str
        The node (Ray node id, or the host name in-process).
    host : str
        The worker's host name.
    attempt : int
        Which execution of the task this was (0 = first; -1 where unknown).
    """

    submit_time: float
    start_time: float
    end_time: float
    received_time: float
    compute_seconds: float
    n_configs: int
    worker: str
    node: str
    host: str
    attempt: int

    @classmethod
    def of_task(
        cls,
        timing: WorkerTiming,
        *,
        submit_time: float,
        received_time: float,
        n_configs: int,
        compute_seconds: float,
    ) -> TaskTelemetry:
        """The one constructor both executors use: the driver's times and the worker's."""
        return cls(
            submit_time=submit_time,
            start_time=timing.start_time,
            end_time=timing.end_time,
            received_time=received_time,
            compute_seconds=compute_seconds,
            n_configs=n_configs,
            worker=timing.worker,
            node=timing.node,
            host=timing.host,
            attempt=timing.attempt,
        )

    @property
    def round_trip_overhead(self) -> float:
        """Seconds from submission to result in hand beyond the batch's compute."""
        return self.received_time - self.submit_time - self.compute_seconds

    def row(self, session: int, part: str) -> dict[str, float | int | str]:
        """The telemetry file's row: these fields, then the session and the part written."""
        return {**asdict(self), "session": session, "part": part}


@dataclass(frozen=True)
class PartInfo(JSONRecord):
    """The check of one part (:meth:`sweep.store._run_store.RunStore.check_part`).

    Its JSON, ``{"name", "reason"}``, is how status and verify list a bad file.

    Attributes
    ----------
    name : str
        File name in ``parts/`` (or ``telemetry/``).
    ok : bool
        Whether its configs count as done.
    reason : str
        ``"ok"``, or what is wrong, in words.
    rows : int
        Configs it holds (0 when it is not usable).
    """

    name: str
    ok: bool = field(metadata=SKIPPED)
    reason: str
    rows: int = field(default=0, metadata=SKIPPED)
