"""The run folder: manifest, self-verifying parts, telemetry, lock (invariants 3 to 6).

::

    RUN_DIR/
      manifest.json               spec, hashes, fingerprint, versions, driver sessions
      lock                        JSON of the live driver (pid, host, process start time)
      parts/part-<sha256>.parquet one finished batch; the name is the sha256 of the file
      telemetry/task-<sha256>.parquet   one row per task: timings, worker, node
      quarantine/                 parts that failed their self-check, moved aside

Only JSON and parquet are ever read back. Parts are written atomically (temp file, fsync,
rename, fsync of the folder) and named by the sha256 of their bytes, so a truncated or
altered part is detected by re-hashing it; its configs are then simply not done and are
recomputed. Which configs are done is learned from the ``grid_index`` column of each part,
read a part at a time into ranges of positions (:meth:`RunStore.done_ranges`, a
:class:`sweep.common._range_set.RangeSet`): memory grows with the parts, not the configs.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.typing import NDArray

from sweep._version import ENGINE_VERSION
from sweep.common._fs import (
    TEMP_PREFIX,
    LocalFilesystem,
    RunFilesystem,
    open_run_filesystem,
    parquet_bytes,
)
from sweep.common._jsonable import JSONObject
from sweep.common._range_set import RangeSet
from sweep.errors import RunFolderError, RunLockedError
from sweep.spec._provenance import PANEL_COPY, Provenance
from sweep.spec._resolve import ResolvedSweep
from sweep.store._panel_copy import write_panel_copy
from sweep.store._record import (
    GridRecord,
    LockInfo,
    Manifest,
    PartInfo,
    RunKey,
    Session,
    StrategyRef,
    TaskTelemetry,
    format_for,
)
from sweep.store._row_set_hash import DIGEST_KEY, with_part_digest
from sweep.store._table_hash import CURRENT_TABLE_HASH

MANIFEST = "manifest.json"
LOCK = "lock"
PARTS = "parts"
TELEMETRY = "telemetry"
QUARANTINE = "quarantine"
#: A lock whose owner cannot be checked (another host) is stale after this long unrefreshed.
LOCK_STALE_SECONDS = 120.0


def utc_now() -> str:
    """The current time, ISO 8601 UTC with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _process_start(pid: int) -> str | None:
    """Kernel start time of a process (guards against pid reuse), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return "unknown"
        return "unknown"


def pid_namespace() -> str:
    """Boot id of the kernel and id of the pid namespace: where a pid means one process."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            boot = fh.read().strip()
    except OSError:
        boot = "?"
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = "?"
    return f"{boot}|{namespace}"


#: The check of one part; the record's :class:`sweep.store._record.PartInfo` (the older name).
PartCheck = PartInfo


#: Key of the part metadata that binds a part to its run (:func:`run_binding`).
BINDING_KEY = b"raysweep.run"


def run_binding(run_key: RunKey) -> str:
    """The sha256 that binds a part to its run: :meth:`sweep.store._record.RunKey.binding`.

    Every part carries it in its parquet metadata (:data:`BINDING_KEY`), so a valid part
    copied from another run folder (another spec, data, strategy version, seed or metric
    options) is recognised and quarantined instead of being counted.
    """
    return run_key.binding()


def schema_description(schema: pa.Schema) -> list[list[str]]:
    """``[name, arrow type]`` of every column: how the manifest records the parts' schema."""
    return [[f.name, str(f.type)] for f in schema]


def provenance_of(sweep: ResolvedSweep) -> Provenance:
    """Where a sweep's data and strategy came from, as its run folder records it."""
    origin = sweep.data_origin
    if origin.kind == "memory":
        origin = replace(origin, copy=PANEL_COPY)
    return Provenance(origin, sweep.strategy_source)


def data_description(sweep: ResolvedSweep, provenance: Provenance) -> JSONObject:
    """Return the manifest's ``data``: the panel's description and where it came from.

    :meth:`Panel.describe`, the origin's one line (``source``) and, for a panel with
    listings, how many of its asset-dates are listed (the report shows this object).
    """
    doc = {**sweep.panel.describe(), "source": provenance.data.description}
    if sweep.panel.has_listings:
        doc["listed_cells"] = int(sweep.panel.live_mask.sum())
        doc["cells"] = int(sweep.panel.live_mask.size)
    return doc


def run_key_of(sweep: ResolvedSweep) -> RunKey:
    """What a sweep's results depend on, as recorded in (and compared with) the manifest."""
    return RunKey(
        spec_hash=sweep.spec.spec_hash,
        data_fingerprint=sweep.fingerprint,
        strategy=StrategyRef(sweep.strategy.name, sweep.strategy.version),
        root_seed=sweep.spec.seed,
        metrics=sweep.spec.metrics.model_dump(mode="json"),
    )


class RunStore:
    """A run folder on a :class:`sweep.common._fs.RunFilesystem`.

    Parameters
    ----------
    location : str or Path
        The run folder.
    """

    def __init__(self, location: str | os.PathLike[str]) -> None:
        self.fs: RunFilesystem = open_run_filesystem(str(location))
        self.location = str(location)
        self._manifest: Manifest | None = None
        self._lock_bytes: bytes | None = None

    # --- manifest ----------------------------------------------------------------------
    @property
    def manifest_path(self) -> str:
        """Path of ``manifest.json``."""
        return self.fs.join(MANIFEST)

    def _refuse_a_file(self) -> None:
        """RunFolderError if a local run folder is a file or lies under one."""
        if not isinstance(self.fs, LocalFilesystem):
            return
        root = Path(self.fs.root)
        for path in (root, *root.parents):
            if path.exists():
                if not path.is_dir():
                    where = "is a file" if path == root else f"is under the file {str(path)!r}"
                    raise RunFolderError(
                        f"run folder {self.location!r} {where}, not a folder; expected a "
                        "run folder (with manifest.json) or the path of a new one"
                    )
                return

    @contextlib.contextmanager
    def _reachable(self, action: str) -> Iterator[None]:
        """Turn an ``OSError`` of the folder's filesystem into a :class:`RunFolderError`."""
        self._refuse_a_file()
        try:
            yield
        except FileNotFoundError:
            raise
        except OSError as exc:
            reason = exc.strerror or str(exc)
            hint = (
                "check the URI (bucket, endpoint_override, scheme), that its endpoint is "
                "reachable, and the credentials (AWS_* variables for S3)"
                if not isinstance(self.fs, LocalFilesystem)
                else "check the path and its permissions"
            )
            raise RunFolderError(
                f"run folder {self.location!r}: cannot {action}: {reason}; {hint}"
            ) from exc

    def exists(self) -> bool:
        """Whether the folder holds a manifest."""
        with self._reachable("reach it"):
            return self.fs.exists(self.manifest_path)

    def load_manifest(self) -> Manifest:
        """Read ``manifest.json`` (:class:`RunFolderError` if absent, corrupt or malformed)."""
        folder = f"run folder {self.location!r}"
        try:
            with self._reachable("reach it"):
                data = self.fs.read_bytes(self.manifest_path)
        except FileNotFoundError as exc:
            raise RunFolderError(f"{folder}: no manifest.json (not a raysweep run folder)") from exc
        manifest = Manifest.from_bytes(data, folder)
        self._manifest = manifest
        return manifest

    def read_manifest(self) -> dict[str, Any]:
        """``manifest.json`` as a JSON object (:meth:`load_manifest` gives the record)."""
        return self.load_manifest().to_json()

    def write_manifest(self, manifest: Manifest) -> None:
        """Atomically replace ``manifest.json``."""
        self.fs.write_atomic(self.manifest_path, manifest.to_bytes())
        self._manifest = manifest

    def record_session(self, session: Session) -> Manifest:
        """Write ``session`` into the manifest (replacing the one of its id); the new manifest.

        Only the driver holding the lock writes the manifest, so the one it last read or
        wrote is current.
        """
        manifest = self._manifest if self._manifest is not None else self.load_manifest()
        manifest = manifest.with_session(session)
        self.write_manifest(manifest)
        return manifest

    def check_compatible(self, sweep: ResolvedSweep) -> Manifest:
        """Refuse (RunFolderError) if the folder belongs to another spec, data or strategy."""
        manifest = self.load_manifest()
        diffs = manifest.run_key.differences(run_key_of(sweep))
        if manifest.grid.size != len(sweep.grid):
            diffs.append(
                f"the grid size (manifest {manifest.grid.size:,}, spec {len(sweep.grid):,})"
            )
        if diffs:
            raise RunFolderError(
                f"run folder {self.location!r} belongs to another sweep; it differs in "
                + "; ".join(diffs)
                + ". Use a new --run-dir, or restore the original spec/data/strategy."
            )
        self.keep_panel(sweep, manifest)
        return manifest

    def create(
        self, sweep: ResolvedSweep, schema: pa.Schema, hash_version: str = CURRENT_TABLE_HASH
    ) -> Manifest:
        """Create the folder and its manifest, then ``parts/`` and ``telemetry/``.

        ``schema`` is the results schema every part will have
        (:func:`sweep.engine._evaluate.results_schema`; the engine owns the columns);
        ``hash_version`` the table hash the folder will carry (recorded in the manifest).

        The manifest is written first and exclusively, so a driver killed at any instant
        leaves either an empty folder or a run folder that resumes; of two drivers creating
        one folder at once, exactly one writes the manifest (the other gets
        :class:`RunFolderError` saying so, and may then join as a resume).
        """
        with self._reachable("create it"):
            self.fs.makedirs(self.fs.root)
        provenance = provenance_of(sweep)
        manifest = Manifest(
            engine_version=ENGINE_VERSION,
            created=utc_now(),
            run_key=run_key_of(sweep),
            spec=sweep.spec.to_dict(),
            data=data_description(sweep, provenance),
            grid=GridRecord.from_json(sweep.grid.describe()),
            results_schema=tuple((name, kind) for name, kind in schema_description(schema)),
            format=format_for(provenance),
            provenance=provenance,
            table_hash_version=hash_version,
        )
        data = manifest.to_bytes()
        if not self.fs.create_exclusive(self.manifest_path, data):
            raise RunFolderError(
                f"run folder {self.location!r} was created by another driver at the same time"
            )
        self.ensure_folders()
        self._manifest = manifest
        self.keep_panel(sweep, manifest)
        return manifest

    def keep_panel(self, sweep: ResolvedSweep, manifest: Manifest) -> None:
        """Write the copy of an in-memory panel if the folder's record wants one and lacks it.

        A driver killed between the manifest and the copy leaves no copy; the next driver
        that holds the panel (it passed the fingerprint check) writes it.
        """
        wanted = manifest.provenance is not None and manifest.provenance.data.copy is not None
        if wanted and not self.fs.exists(self.fs.join(PANEL_COPY)):
            with self._reachable("keep a copy of the panel"):
                write_panel_copy(self.fs, sweep.panel)

    def ensure_folders(self) -> None:
        """Create ``parts/`` and ``telemetry/`` if missing (a driver killed after the manifest)."""
        for sub in (PARTS, TELEMETRY):
            self.fs.makedirs(self.fs.join(sub))

    def is_fresh(self) -> bool:
        """Whether the folder holds nothing of a run: absent, empty, or only empty subfolders.

        Empty ``parts/`` and ``telemetry/`` folders without a manifest are what an older
        raysweep left when killed while creating the folder; temp files are ignored.
        """
        with self._reachable("reach it"):
            if not self.fs.exists(self.fs.root):
                return True
            names = self.fs.listdir(self.fs.root)
        for name in names:
            if name.startswith(TEMP_PREFIX):
                continue
            if name not in (PARTS, TELEMETRY):
                return False
            inner = self.fs.listdir(self.fs.join(name))
            if any(not n.startswith(TEMP_PREFIX) for n in inner):
                return False
        return True

    def remove_temp_files(self) -> int:
        """Delete temp files a killed writer left behind (call holding the lock); how many."""
        removed = 0
        for folder in ((), (PARTS,), (TELEMETRY,)):
            for name in self.fs.listdir(self.fs.join(*folder)):
                if name.startswith(TEMP_PREFIX):
                    self.fs.remove(self.fs.join(*folder, name))
                    removed += 1
        return removed

    def expectations(self) -> PartExpectations:
        """What every part of this run must satisfy, from the manifest (read once)."""
        manifest = self._manifest if self._manifest is not None else self.load_manifest()
        schema = manifest.results_schema
        return PartExpectations(
            binding=run_binding(manifest.run_key),
            grid_size=manifest.grid.size,
            schema=None if schema is None else [list(c) for c in schema],
        )

    # --- lock --------------------------------------------------------------------------
    @property
    def lock_path(self) -> str:
        """Path of the lock file."""
        return self.fs.join(LOCK)

    def _lock_is_stale(self, info: LockInfo) -> bool:
        if not info.usable or info.pid is None:
            return True  # not a lock any driver wrote (locks are created whole)
        # The owner's pid can be checked only from the same kernel and pid namespace
        # (containers may share a hostname); anywhere else, trust the heartbeat's age.
        if info.host == socket.gethostname() and info.machine == pid_namespace():
            start = _process_start(info.pid) if info.pid > 0 else None
            return start is None or (start != "unknown" and start != info.proc_start)
        try:
            age = time.time() - self.fs.mtime(self.lock_path)
        except FileNotFoundError:
            return True
        return age > LOCK_STALE_SECONDS

    def read_lock(self) -> LockInfo | None:
        """The lock, or None when unlocked (the empty lock for an unreadable one)."""
        raw = self._read_lock_bytes()
        return None if raw is None else LockInfo.from_bytes(raw)

    def _read_lock_bytes(self) -> bytes | None:
        try:
            return self.fs.read_bytes(self.lock_path)
        except FileNotFoundError:
            return None

    @contextlib.contextmanager
    def locked(self) -> Iterator[LockInfo | None]:
        """Hold the run folder's lock; take over a stale one; refuse a live one.

        The lock is created whole or not at all (:meth:`RunFilesystem.create_exclusive`).
        A stale lock is taken over in one atomic step: it is renamed to a name of this
        driver's, and the takeover stands only if the renamed file is the very lock judged
        stale; a lock another driver took in between is put back and this driver refuses.
        :meth:`heartbeat` also checks the lock is still this driver's.

        Yields
        ------
        LockInfo or None
            The stale lock this driver took over (None when there was none).
        """
        pid = os.getpid()
        mine = LockInfo(
            pid=pid,
            host=socket.gethostname(),
            machine=pid_namespace(),
            proc_start=_process_start(pid),
            since=utc_now(),
            token=secrets.token_hex(8),
        )
        data = mine.to_bytes()
        took_over = None
        if not self.fs.create_exclusive(self.lock_path, data):
            took_over = self._take_over(data)
        self._lock_bytes = data
        try:
            yield took_over
        finally:
            self._lock_bytes = None
            if self._read_lock_bytes() == data:
                self.fs.remove(self.lock_path)

    def _take_over(self, data: bytes) -> LockInfo:
        """Replace a stale lock by ``data`` atomically; RunLockedError if it is live."""
        raw = self._read_lock_bytes()
        if raw is None:  # released meanwhile
            if self.fs.create_exclusive(self.lock_path, data):
                return LockInfo()
            raw = self._read_lock_bytes() or b""
        held = LockInfo.from_bytes(raw)
        if not self._lock_is_stale(held):
            raise RunLockedError(
                f"run folder {self.location!r} is in use by another driver (pid "
                f"{held.pid} on {held.host!r} since {held.since}); "
                "wait for it to finish or stop it first"
            )
        grave = self.fs.join(f"{LOCK}.stale-{secrets.token_hex(8)}")
        lost = RunLockedError(f"run folder {self.location!r}: another driver took the lock first")
        try:
            self.fs.move(self.lock_path, grave)
        except FileNotFoundError:
            raise lost from None
        moved = self.fs.read_bytes(grave)
        if moved != raw:  # a live lock taken after our check: give it back
            self.fs.create_exclusive(self.lock_path, moved)
            self.fs.remove(grave)
            raise lost
        self.fs.remove(grave)
        if not self.fs.create_exclusive(self.lock_path, data):
            raise lost
        return held

    def heartbeat(self) -> None:
        """Refresh the lock's modification time; RunLockedError if it is no longer ours.

        A live driver on another host keeps its lock by this; a driver whose lock was
        removed or replaced stops instead of writing beside another owner.
        """
        if self._lock_bytes is not None and self._read_lock_bytes() != self._lock_bytes:
            raise RunLockedError(
                f"run folder {self.location!r}: this driver's lock was removed or taken by "
                "another driver; stopping (finished parts are kept)"
            )
        with contextlib.suppress(FileNotFoundError):
            self.fs.touch(self.lock_path)

    # --- parts -------------------------------------------------------------------------
    def part_names(self) -> list[str]:
        """File names of every part currently in ``parts/``."""
        return [
            n
            for n in self.fs.listdir(self.fs.join(PARTS))
            if n.startswith("part-") and n.endswith(".parquet")
        ]

    def write_part(self, table: pa.Table, telemetry: TaskTelemetry, session: int) -> str:
        """Write one finished batch atomically, then its telemetry row; return the part name.

        The part's metadata gets the run binding (:func:`run_binding`) beside what the
        batch put there (its null summary, its v2 row digest: computed here for a batch
        that comes without one).
        """
        expect = self.expectations()
        binding = expect.binding.encode()
        if DIGEST_KEY not in (table.schema.metadata or {}):
            table = with_part_digest(table, expect.grid_size)
        table = table.replace_schema_metadata(
            {**(table.schema.metadata or {}), BINDING_KEY: binding}
        )
        data = parquet_bytes(table)
        name = f"part-{_sha256(data)}.parquet"
        self.fs.write_atomic(self.fs.join(PARTS, name), data)
        row = {k: [v] for k, v in telemetry.row(session, name).items()}
        tdata = parquet_bytes(pa.table(row))
        self.fs.write_atomic(self.fs.join(TELEMETRY, f"task-{_sha256(tdata)}.parquet"), tdata)
        return name

    def check_part(self, name: str) -> PartCheck:
        """Check one part: its bytes against the sha256 in its name, then what it holds.

        A part counts only if its bytes hash to its name, it parses as parquet, it carries
        this run's binding, its columns are the run's, and its ``grid_index`` values are in
        the grid and not repeated.
        """
        expected = name.removeprefix("part-").removesuffix(".parquet")
        try:
            data = self.fs.read_bytes(self.fs.join(PARTS, name))
        except OSError as exc:
            return PartCheck(name, False, f"unreadable: {exc}")
        actual = _sha256(data)
        if actual != expected:
            try:
                pq.ParquetFile(pa.BufferReader(data)).metadata  # noqa: B018
                kind = "altered"
            except Exception:
                kind = "truncated or not parquet"
            return PartCheck(
                name,
                False,
                f"{kind}: sha256 of its {len(data)} bytes is {actual[:12]}..., "
                f"the name says {expected[:12]}...",
            )
        return _check_contents(name, data, self.expectations())

    def check_telemetry(self) -> list[PartCheck]:
        """Check every telemetry file: its sha256 name and that it parses (one per task)."""
        out = []
        for name in self._telemetry_names():
            try:
                data = self.fs.read_bytes(self.fs.join(TELEMETRY, name))
                ok = _sha256(data) == name.removeprefix("task-").removesuffix(".parquet")
                rows = pq.ParquetFile(pa.BufferReader(data)).metadata.num_rows if ok else 0
                out.append(PartCheck(name, ok, "ok" if ok else "altered or truncated", rows))
            except Exception as exc:  # an unreadable or non-parquet file
                out.append(PartCheck(name, False, f"unreadable: {exc}"))
        return out

    def verify_parts(self) -> list[PartCheck]:
        """Re-hash every part."""
        return [self.check_part(n) for n in self.part_names()]

    def good_parts(self) -> tuple[list[str], list[PartCheck]]:
        """Names of the parts that pass :meth:`check_part`, and the checks that failed."""
        checks = self.verify_parts()
        return [c.name for c in checks if c.ok], [c for c in checks if not c.ok]

    def quarantine(self, name: str, folder: str = PARTS) -> None:
        """Move a bad part (or telemetry file) aside so its configs are recomputed."""
        self.fs.makedirs(self.fs.join(QUARANTINE))
        self.fs.move(self.fs.join(folder, name), self.fs.join(QUARANTINE, name))

    def read_part_columns(self, name: str, columns: list[str]) -> pa.Table:
        """Read some columns of one part."""
        filesystem, _ = self.fs.arrow()
        return pq.read_table(self.fs.join(PARTS, name), columns=columns, filesystem=filesystem)

    def read_part_schema(self, name: str) -> pa.Schema:
        """The schema (with its metadata) of one part, from its footer only."""
        filesystem, _ = self.fs.arrow()
        return pq.read_schema(self.fs.join(PARTS, name), filesystem=filesystem)

    def part_positions(self, name: str) -> RangeSet:
        """The grid positions one part holds, as ranges (its ``grid_index`` column)."""
        index = self.read_part_columns(name, ["grid_index"]).column(0).to_numpy()
        return RangeSet.from_positions(index)

    def done_ranges(self, parts: list[str] | None = None) -> RangeSet:
        """The grid positions the parts hold: the configs done, as ranges.

        One part's ``grid_index`` column is in memory at a time; the result has a few
        ranges per part (every batch is a run of the to-do list), whatever the grid size.
        """
        names = self.part_names() if parts is None else parts
        return RangeSet.union_all(self.part_positions(n) for n in names)

    def done_mask(self, n_configs: int, parts: list[str] | None = None) -> NDArray[np.bool_]:
        """Boolean array over the grid: True where a good part holds the config.

        One byte per config: for small grids and tests; the driver tracks
        :meth:`done_ranges`.
        """
        done = np.zeros(n_configs, dtype=bool)
        for start, stop in self.done_ranges(parts).ranges():
            done[start:stop] = True
        return done

    def read_results(self, parts: list[str] | None = None) -> pa.Table:
        """Parts concatenated (unsorted): ``parts``, or every part that passes its check."""
        names = self.good_parts()[0] if parts is None else parts
        tables = [self.read_part_columns(n, None) for n in names]  # type: ignore[arg-type]
        if not tables:
            raise RunFolderError(f"run folder {self.location!r} has no results yet")
        table = pa.concat_tables(tables, promote_options="none")
        return table

    def _telemetry_names(self) -> list[str]:
        return [
            n
            for n in self.fs.listdir(self.fs.join(TELEMETRY))
            if n.startswith("task-") and n.endswith(".parquet")
        ]

    def read_telemetry(self) -> pa.Table | None:
        """Every task's telemetry row from the files that pass their check, or None."""
        filesystem, _ = self.fs.arrow()
        names = [c.name for c in self.check_telemetry() if c.ok]
        if not names:
            return None
        tables = [pq.read_table(self.fs.join(TELEMETRY, n), filesystem=filesystem) for n in names]
        return pa.concat_tables(tables, promote_options="default")


@dataclass(frozen=True)
class RunRecord:
    """A run folder read once: its manifest and the check of every part (the one reader).

    Status, verify, results and the report all start from :func:`read_run`; results and
    telemetry are read from it on demand (:meth:`done_ranges`, :meth:`telemetry`).

    Attributes
    ----------
    store : RunStore
        The folder.
    manifest : Manifest
        ``manifest.json``.
    parts : tuple of PartInfo
        Every part checked, sorted by name.
    """

    store: RunStore
    manifest: Manifest
    parts: tuple[PartInfo, ...]

    @property
    def good(self) -> list[str]:
        """Names of the parts whose configs count as done, sorted."""
        return [p.name for p in self.parts if p.ok]

    @property
    def bad(self) -> list[PartInfo]:
        """The checks of the parts that failed (their configs count as not done)."""
        return [p for p in self.parts if not p.ok]

    @property
    def total(self) -> int:
        """Configs in the grid."""
        return self.manifest.grid.size

    def done_ranges(self) -> RangeSet:
        """The grid positions the good parts hold, as ranges."""
        return self.store.done_ranges(self.good)

    def done(self) -> int:
        """Configs the good parts hold."""
        return len(self.done_ranges()) if self.good else 0

    def telemetry(self) -> pa.Table | None:
        """Every task's telemetry row from the files that pass their check, or None."""
        return self.store.read_telemetry()


def read_run(location: str | os.PathLike[str] | RunStore) -> RunRecord:
    """Read a run folder: its manifest, then every part checked against it.

    Parameters
    ----------
    location : str, path or RunStore
        The run folder (a path or a URI such as ``s3://bucket/prefix``).

    Returns
    -------
    RunRecord
        The manifest and the part checks (results and telemetry are read on demand).
    """
    store = location if isinstance(location, RunStore) else RunStore(location)
    manifest = store.load_manifest()
    parts = tuple(sorted(store.verify_parts(), key=lambda c: c.name))
    return RunRecord(store, manifest, parts)


@dataclass(frozen=True)
class PartExpectations:
    """What every part of one run must satisfy (from its manifest).

    Attributes
    ----------
    binding : str
        :func:`run_binding` of the run's identity.
    grid_size : int
        Configs in the grid: every ``grid_index`` is below it.
    schema : list of [name, type] or None
        The parts' columns (None for a manifest that predates the record).
    """

    binding: str
    grid_size: int
    schema: list[list[str]] | None


def _check_contents(name: str, data: bytes, expect: PartExpectations) -> PartCheck:
    """The checks of :meth:`RunStore.check_part` after the sha256 (bytes already read)."""
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        schema = parquet.schema_arrow
    except Exception as exc:  # any reader error means the bytes are not a usable part
        return PartCheck(name, False, f"not a parquet file: {exc}")
    binding = (schema.metadata or {}).get(BINDING_KEY, b"").decode(errors="replace")
    if binding != expect.binding:
        why = "carries no run binding" if not binding else "belongs to another run"
        return PartCheck(
            name,
            False,
            f"foreign: it {why} (binding {binding[:12] or 'none'}, this run's is "
            f"{expect.binding[:12]})",
        )
    if expect.schema is not None and schema_description(schema) != expect.schema:
        return PartCheck(name, False, "foreign: its columns are not this run's results columns")
    try:
        index = parquet.read(columns=["grid_index"]).column(0).to_numpy()
    except Exception as exc:
        return PartCheck(name, False, f"unreadable grid_index column: {exc}")
    if index.size == 0:
        return PartCheck(name, False, "holds no rows")
    if int(index.min()) < 0 or int(index.max()) >= expect.grid_size:
        return PartCheck(
            name,
            False,
            f"grid_index outside the grid of {expect.grid_size:,} configs "
            f"({int(index.min())}..{int(index.max())})",
        )
    if np.unique(index).size != index.size:
        return PartCheck(name, False, "repeats a grid_index")
    return PartCheck(name, True, "ok", int(index.size))
