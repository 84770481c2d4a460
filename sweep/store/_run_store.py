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
import errno
import functools
import hashlib
import os
import secrets
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from numpy.typing import NDArray

from strategies import available_strategies, get_strategy
from sweep._version import ENGINE_VERSION
from sweep.common._fs import (
    TEMP_PREFIX,
    LocalFilesystem,
    RunFilesystem,
    footer_schema,
    open_run_filesystem,
    parquet_bytes,
)
from sweep.common._jsonable import JSONObject
from sweep.common._range_set import RangeSet
from sweep.common._recent_objects import RecentObjects
from sweep.errors import RunFolderError, RunLockedError, SweepError
from sweep.spec._grid import Grid
from sweep.spec._models import SweepSpec, spec_from_dict
from sweep.spec._provenance import PANEL_COPY, Provenance
from sweep.spec._resolve import ResolvedSweep, full_grid
from sweep.store._file_limits import (
    LOCK_MAX_BYTES,
    MANIFEST_MAX_BYTES,
    TELEMETRY_MAX_BYTES,
    FileTooLargeError,
    NotRegularFileError,
    open_regular,
    panel_copy_limit,
    part_size_limit,
    read_limited,
    sha256_limited,
)
from sweep.store._fold_summary import FOLDS_KEY
from sweep.store._grid_check import grid_disagreement
from sweep.store._null_summary import SUMMARY_KEY
from sweep.store._panel_copy import write_panel_copy
from sweep.store._part_footer import FooterExpectations, check_footer
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
from sweep.store._repeats import overlaps, repeated_ids
from sweep.store._row_identity import GridIdentity, grid_identity
from sweep.store._row_set_hash import DIGEST_KEY, ROWS_AT_ONCE, with_part_digest
from sweep.store._table_hash import CURRENT_TABLE_HASH, row_digests

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
#: Part metadata kept in the parquet footer only, not repeated in its Arrow schema: the
#: null and fold summaries (about 140 kB a part at 200 replications; a part of 200 rows is
#: 389 kB with the summary in both places, 199 kB without the copy, and its footer reads
#: in 0.37 ms instead of 0.85 ms).
FOOTER_ONLY_KEYS = (SUMMARY_KEY, FOLDS_KEY)


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


@functools.lru_cache(maxsize=4)
def _parsed_manifest(data: bytes, folder: str) -> Manifest:
    """``manifest.json``'s bytes parsed, once per process for the same bytes.

    Every pass over the parts opens the folder once per group of parts (a Ray task's body
    is a function of its location), and a manifest that lists a large grid's values is
    megabytes of JSON (3.2 MB, 45 ms to parse, for the 10^7-config benchmark folder): the
    same bytes give the same :class:`Manifest` (immutable), so
    :func:`sweep.store._row_identity.grid_identity` also finds its grid rebuilt.
    """
    return Manifest.from_bytes(data, folder)


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
        self._expectations: PartExpectations | None = None
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
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                hint = "free some space there, then run the command again (finished parts are kept)"
            elif not isinstance(self.fs, LocalFilesystem):
                hint = (
                    "check the URI (bucket, endpoint_override, scheme), that its endpoint is "
                    "reachable, and the credentials (AWS_* variables for S3)"
                )
            else:
                hint = "check the path and its permissions"
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
            data = self.read_file(
                MANIFEST, MANIFEST_MAX_BYTES, "the largest manifest", action="reach it"
            )
        except FileNotFoundError as exc:
            raise RunFolderError(f"{folder}: no manifest.json (not a raysweep run folder)") from exc
        manifest = _parsed_manifest(data, folder)
        self._manifest = manifest
        self._expectations = None
        return manifest

    def read_file(
        self,
        name: str,
        limit: int | None,
        bound: str,
        *,
        advice: str = "restore the file",
        action: str | None = None,
    ) -> bytes:
        """The bytes of a file of the folder (:func:`sweep.store._file_limits.read_limited`).

        Parameters
        ----------
        name : str
            Its path inside the run folder (``manifest.json``, ``data/panel.parquet``).
        limit : int or None
            The most bytes it may hold.
        bound : str
            What ``limit`` is, for the message (``"the largest manifest"``).
        advice : str
            What to do after moving a refused file aside.
        action : str, optional
            What could not be done, when the filesystem fails (default ``read <name>``).

        Raises
        ------
        RunFolderError
            For a file that is not a regular file or exceeds ``limit``, naming it and what
            to do, or one the filesystem cannot read.
        FileNotFoundError
            When it is absent.
        """
        folder = f"run folder {self.location!r}"
        try:
            with self._reachable(action or f"read {name}"):
                return read_limited(self.fs, self.fs.join(name), limit)
        except RunFolderError as exc:
            cause = exc.__cause__
            if isinstance(cause, NotRegularFileError):
                raise RunFolderError(
                    f"{folder}: {name} is {cause.kind}, not a regular file; nothing was read. "
                    f"Move it aside and {advice}"
                ) from cause
            if isinstance(cause, FileTooLargeError):
                raise RunFolderError(
                    f"{folder}: {name} holds {cause.size:,} bytes or more, over {bound} "
                    f"({cause.limit:,} bytes); it was not read. Move it aside and {advice}"
                ) from cause
            raise

    def read_manifest(self) -> dict[str, Any]:
        """``manifest.json`` as a JSON object (:meth:`load_manifest` gives the record)."""
        return self.load_manifest().to_json()

    def write_manifest(self, manifest: Manifest) -> None:
        """Atomically replace ``manifest.json`` (:class:`RunFolderError` when it cannot)."""
        with self._reachable("write manifest.json"):
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
        elif not diffs:
            wrong = grid_disagreement(manifest.grid.to_json(), sweep.grid, {}, sweep.grid)
            if wrong is not None:
                raise RunFolderError(
                    f"run folder {self.location!r}: manifest.json disagrees with its spec "
                    f"and strategy: {wrong}; it was edited or damaged; restore the original "
                    "manifest.json"
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
        with self._reachable("write manifest.json"):
            created = self.fs.create_exclusive(self.manifest_path, data)
        if not created:
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
        that holds the panel (it passed the fingerprint check) writes it. A copy that is
        not a regular file, or is larger than the panel can make
        (:func:`sweep.store._file_limits.panel_copy_limit`), is moved to ``quarantine/``
        unread and written again.
        """
        wanted = manifest.provenance is not None and manifest.provenance.data.copy is not None
        if not wanted:
            return
        path = self.fs.join(PANEL_COPY)
        if self.fs.exists(path):
            if self._copy_fits(path, manifest):
                return
            folder, _, name = PANEL_COPY.rpartition("/")
            self.quarantine(name, folder)
        with self._reachable("keep a copy of the panel"):
            write_panel_copy(self.fs, sweep.panel)

    def _copy_fits(self, path: str, manifest: Manifest) -> bool:
        """Whether the panel copy is a regular file within its bound (it is not read)."""
        try:
            handle, size = open_regular(self.fs, path)
        except NotRegularFileError:
            return False
        handle.close()
        limit = panel_copy_limit(manifest.data)
        return limit is None or size <= limit

    def ensure_folders(self) -> None:
        """Create ``parts/`` and ``telemetry/`` if missing (a driver killed after the manifest).

        Raises
        ------
        RunFolderError
            When one of them is a file, or the filesystem cannot create it.
        """
        for sub in (PARTS, TELEMETRY):
            self._refuse_a_non_folder(sub)
            with self._reachable(f"create {sub}/"):
                self.fs.makedirs(self.fs.join(sub))

    def _refuse_a_non_folder(self, sub: str) -> None:
        """RunFolderError if ``sub`` of a local run folder exists and is not a folder."""
        path = Path(self.fs.join(sub))
        if isinstance(self.fs, LocalFilesystem) and path.exists() and not path.is_dir():
            raise RunFolderError(
                f"run folder {self.location!r}: {sub} is a file, not a folder; a run folder "
                f"keeps its {sub} in {sub}/. Move the file aside"
            )

    def _listing(self, sub: str) -> list[str]:
        """Names in ``sub`` of the run folder (:class:`RunFolderError` if it is not a folder)."""
        self._refuse_a_non_folder(sub)
        with self._reachable(f"list {sub}/"):
            return self.fs.listdir(self.fs.join(sub))

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
            names = self._listing(folder[0]) if folder else self.fs.listdir(self.fs.root)
            for name in names:
                if name.startswith(TEMP_PREFIX):
                    self.fs.remove(self.fs.join(*folder, name))
                    removed += 1
        return removed

    def expectations(self) -> PartExpectations:
        """What every part of this run must satisfy, from the manifest (read once).

        The manifest must agree with itself first (:func:`recorded_spec`): a folder whose
        spec, identity and grid size disagree is refused (:class:`RunFolderError`) before
        any part is judged by it.
        """
        manifest = self._manifest if self._manifest is not None else self.load_manifest()
        if self._expectations is None:
            spec = recorded_spec(manifest, f"run folder {self.location!r}")
            schema = manifest.results_schema
            self._expectations = PartExpectations(
                binding=run_binding(manifest.run_key),
                grid_size=manifest.grid.size,
                schema=None if schema is None else [list(c) for c in schema],
                max_bytes=part_size_limit(spec, manifest.grid.size, schema, manifest.data),
                identity=grid_identity(manifest, f"run folder {self.location!r}"),
                footer=FooterExpectations.of(spec, manifest.data),
            )
        return self._expectations

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

    def held_by_live_driver(self, lock: LockInfo | None) -> bool:
        """Whether ``lock`` (from :meth:`read_lock`) is a live driver's, as a takeover judges."""
        return lock is not None and not self._lock_is_stale(lock)

    def _read_lock_bytes(self, name: str = LOCK) -> bytes | None:
        """The lock file's bytes; None when absent, ``b""`` (unreadable) when over-long.

        A lock that is not a regular file (a directory, a FIFO) is no driver's lock and
        cannot be taken over safely: :class:`RunFolderError` naming it.
        """
        try:
            return self.read_file(
                name,
                LOCK_MAX_BYTES,
                "the largest lock",
                advice="run again (a driver writes its own)",
            )
        except FileNotFoundError:
            return None
        except RunFolderError as exc:
            if isinstance(exc.__cause__, FileTooLargeError):
                return b""  # not a lock any driver wrote: unreadable, so stale
            raise

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
        with self._reachable("take the lock"):
            created = self.fs.create_exclusive(self.lock_path, data)
        if not created:
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
        grave_name = f"{LOCK}.stale-{secrets.token_hex(8)}"
        grave = self.fs.join(grave_name)
        lost = RunLockedError(f"run folder {self.location!r}: another driver took the lock first")
        try:
            self.fs.move(self.lock_path, grave)
        except FileNotFoundError:
            raise lost from None
        moved = self._read_lock_bytes(grave_name)
        if moved is None:
            raise lost
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
        return [n for n in self._listing(PARTS) if n.startswith("part-") and n.endswith(".parquet")]

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
        data = parquet_bytes(table, footer_only=FOOTER_ONLY_KEYS)
        name = f"part-{_sha256(data)}.parquet"
        self.fs.write_atomic(self.fs.join(PARTS, name), data)
        row = {k: [v] for k, v in telemetry.row(session, name).items()}
        tdata = parquet_bytes(pa.table(row))
        self.fs.write_atomic(self.fs.join(TELEMETRY, f"task-{_sha256(tdata)}.parquet"), tdata)
        return name

    def check_part(self, name: str) -> PartCheck:
        """Check one part: its bytes against the sha256 in its name, then what it holds.

        A part counts only if it is a regular file no larger than a part of this run can
        be (:func:`sweep.store._file_limits.part_size_limit`; nothing else is read), its
        bytes hash to its name, it parses as parquet, it carries this run's binding, its
        columns are the run's, its ``grid_index`` values are in the grid and not
        repeated, and its footer's summaries, environment record and row digest are what a
        writer stores for these rows in this run
        (:func:`sweep.store._part_footer.check_footer`). :meth:`verify_parts` also
        compares the parts with each other.
        """
        return self.inspect_part(name)[0]

    def inspect_part(self, name: str) -> tuple[PartCheck, RangeSet | None]:
        """:meth:`check_part`, and the grid positions of a good part (None for a bad one).

        One part's keys are in memory at a time; what is kept is its positions as ranges,
        which :meth:`judge_conflicts` compares across parts.
        """
        check, positions, _ = self.inspect_part_footer(name)
        return check, positions

    def inspect_part_footer(self, name: str) -> tuple[PartCheck, RangeSet | None, pa.Schema | None]:
        """:meth:`inspect_part`, with a good part's schema and metadata from the same read.

        The footer is parsed once for the check and the schema (a part's footer holds its
        null summary, about 140 kB at 200 replications, parsed again by every separate
        read; twice that in a part written before :data:`FOOTER_ONLY_KEYS`).
        """
        expect = self.expectations()
        try:
            handle, size = open_regular(self.fs, self.fs.join(PARTS, name))
        except NotRegularFileError as exc:
            reason = f"not a regular file: {exc.kind}; nothing read"
            return PartCheck(name, False, reason), None, None
        except OSError as exc:
            return PartCheck(name, False, f"unreadable: {exc}"), None, None
        with handle:
            if size > expect.max_bytes:
                return PartCheck(name, False, _too_large(size, expect)), None, None
            try:
                actual, length = sha256_limited(handle, name, expect.max_bytes)
            except FileTooLargeError as exc:
                return PartCheck(name, False, _too_large(exc.size, expect)), None, None
            except OSError as exc:
                return PartCheck(name, False, f"unreadable: {exc}"), None, None
            expected = name.removeprefix("part-").removesuffix(".parquet")
            handle.seek(0)
            if actual != expected:
                reason = _hash_mismatch(handle, length, actual, expected)
                return PartCheck(name, False, reason), None, None
            return _check_contents(name, handle, expect)

    def check_telemetry(self) -> list[PartCheck]:
        """Check every telemetry file: a regular file, its sha256 name, that it parses."""
        out = []
        for name in self._telemetry_names():
            path = self.fs.join(TELEMETRY, name)
            try:
                data = read_limited(self.fs, path, TELEMETRY_MAX_BYTES)
                ok = _sha256(data) == name.removeprefix("task-").removesuffix(".parquet")
                rows = pq.ParquetFile(pa.BufferReader(data)).metadata.num_rows if ok else 0
                out.append(PartCheck(name, ok, "ok" if ok else "altered or truncated", rows))
            except NotRegularFileError as exc:
                out.append(PartCheck(name, False, f"not a regular file: {exc.kind}"))
            except FileTooLargeError as exc:
                out.append(PartCheck(name, False, f"too large: {exc.strerror}"))
            except Exception as exc:  # an unreadable or non-parquet file
                out.append(PartCheck(name, False, f"unreadable: {exc}"))
        return out

    def verify_parts(self) -> list[PartCheck]:
        """Check every part (:meth:`check_part`), then the good ones against each other.

        A config held by two good parts with different bytes is a conflict: neither copy
        can be trusted over the other, so both parts fail (their configs count as not
        done; ``resume`` sets them aside and recomputes them). Identical copies are fine.
        """
        return self.judge_conflicts([self.inspect_part(n) for n in self.part_names()])

    def judge_conflicts(self, found: list[tuple[PartCheck, RangeSet | None]]) -> list[PartCheck]:
        """The checks of :meth:`inspect_part`, with the good parts in conflict failed.

        Parameters
        ----------
        found : list of (PartCheck, RangeSet or None)
            Every part's check and, for a good part, its grid positions (in the order the
            parts are listed).

        Returns
        -------
        list of PartCheck
            In the same order; see :meth:`verify_parts`. Memory is bounded by the parts'
            ranges and the repeated keys (:mod:`sweep.store._repeats`), never every key.
        """
        return _with_conflicts(self, found)

    def part_column_batches(self, name: str, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
        """A part's columns (or every column), :data:`ROWS_AT_ONCE` rows at a time at most."""
        filesystem, _ = self.fs.arrow()
        with filesystem.open_input_file(self.fs.join(PARTS, name)) as handle:
            yield from pq.ParquetFile(handle).iter_batches(
                batch_size=ROWS_AT_ONCE, columns=columns, use_threads=False
            )

    def good_parts(self) -> tuple[list[str], list[PartCheck]]:
        """Names of the parts that pass :meth:`verify_parts`, and the checks that failed."""
        checks = self.verify_parts()
        return [c.name for c in checks if c.ok], [c for c in checks if not c.ok]

    def quarantine(self, name: str, folder: str = PARTS) -> None:
        """Move a bad part (or telemetry file) aside so its configs are recomputed.

        The file is renamed, never opened: a FIFO, a device or a link is moved as it is.
        """
        self._refuse_a_non_folder(QUARANTINE)
        self.fs.makedirs(self.fs.join(QUARANTINE))
        self.fs.move(self.fs.join(folder, name), self.fs.join(QUARANTINE, name))

    def read_part_columns(self, name: str, columns: list[str]) -> pa.Table:
        """Read some columns of one part."""
        return self._read_parquet(self.fs.join(PARTS, name), columns)

    def _read_parquet(self, path: str, columns: list[str] | None = None) -> pa.Table:
        """A parquet file's columns (or all), by one reader on this thread.

        ``ParquetFile.read``, not ``pq.read_table``: the dataset scan behind the latter costs
        3.5-4.5x as much per part (4.7 and 3.6 ms against 1.0 and 1.1 ms on 300 parts of a
        5,000-part folder, whose ~360 kB footers held the null summaries twice), and a
        part is read several times by every pass. The table's metadata is the footer's
        (:func:`sweep.common._fs.footer_schema`: the footer-only keys included).
        """
        filesystem, _ = self.fs.arrow()
        with filesystem.open_input_file(path) as handle:
            parquet = pq.ParquetFile(handle)
            table = parquet.read(columns=columns, use_threads=False)
            return table.replace_schema_metadata(footer_schema(parquet).metadata)

    def read_part_schema(self, name: str) -> pa.Schema:
        """The schema (with its metadata) of one part, from its footer only."""
        filesystem, _ = self.fs.arrow()
        with filesystem.open_input_file(self.fs.join(PARTS, name)) as handle:
            return footer_schema(pq.ParquetFile(handle))

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
            n for n in self._listing(TELEMETRY) if n.startswith("task-") and n.endswith(".parquet")
        ]

    def read_telemetry(self) -> pa.Table | None:
        """Every task's telemetry row from the files that pass their check, or None."""
        names = [c.name for c in self.check_telemetry() if c.ok]
        if not names:
            return None
        tables = [self._read_parquet(self.fs.join(TELEMETRY, n)) for n in names]
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
    store.expectations()  # the manifest agrees with itself, or the folder is refused
    parts = tuple(sorted(store.verify_parts(), key=lambda c: c.name))
    return RunRecord(store, manifest, parts)


def recorded_spec(manifest: Manifest, folder: str) -> SweepSpec:
    """The manifest's spec, validated and checked against the manifest's own record.

    A run folder's record must agree with itself before anything in it is trusted: the
    spec hash is recomputed from the recorded spec (:attr:`SweepSpec.spec_hash`, the one
    definition) and compared with the identity's, as are the root seed and the metric
    options the identity records, and the grid's size is recomputed from the spec's grid
    (:class:`sweep.spec._grid.Grid`, constraints applied) and compared with ``grid.size``.
    An edited spec (say its costs) or grid size is refused here instead of being shown
    beside the old hash, or sizing a done mask.

    Parameters
    ----------
    manifest : Manifest
        ``manifest.json``, read.
    folder : str
        ``run folder '<location>'``, for the message.

    Returns
    -------
    SweepSpec
        The validated spec.

    Raises
    ------
    RunFolderError
        Naming what disagrees (one line), or why the spec is not a valid spec.
    """
    if manifest in _AGREED:
        return _AGREED[manifest]
    broken = f"{folder}: manifest.json disagrees with itself"
    advice = "it was edited or damaged; restore the original manifest.json"
    try:
        spec = spec_from_dict(dict(manifest.spec))
        spec_grid = Grid.from_definition(spec.grid)
        size = len(spec_grid)
    except SweepError as exc:
        raise RunFolderError(f"{folder}: manifest.json's spec is not a valid spec: {exc}") from exc
    key = manifest.run_key
    found = spec.spec_hash
    if found != key.spec_hash:
        raise RunFolderError(
            f"{broken}: its spec hashes to {found[:16]}..., its identity records "
            f"{key.spec_hash[:16]}...; {advice}"
        )
    if key.root_seed is not None and key.root_seed != spec.seed:
        raise RunFolderError(
            f"{broken}: its spec's seed is {spec.seed}, its identity records {key.root_seed}; "
            f"{advice}"
        )
    if key.metrics and dict(key.metrics) != spec.metrics.model_dump(mode="json"):
        raise RunFolderError(
            f"{broken}: its identity's metric options are not its spec's; {advice}"
        )
    if size != manifest.grid.size:
        raise RunFolderError(
            f"{broken}: its spec's grid has {size:,} configs, its grid.size records "
            f"{manifest.grid.size:,}; {advice}"
        )
    wrong = grid_disagreement(
        manifest.grid.to_json(), spec_grid, spec.costs, _builtin_full_grid(spec, key)
    )
    if wrong is not None:
        raise RunFolderError(f"{broken}: {wrong}; {advice}")
    _AGREED[manifest] = spec
    return spec


#: The specs of the last manifests found to agree with themselves: every group of parts a
#: worker checks opens the folder again, and the grid's comparison costs about 60 ms for a
#: grid that lists 131,072 values.
_AGREED: RecentObjects[Manifest, SweepSpec] = RecentObjects(4)


def _builtin_full_grid(spec: SweepSpec, key: RunKey) -> Grid | None:
    """The full grid of a run of a built-in strategy at its recorded version, else None.

    Only a built-in is loaded here (reading a folder never imports code it names); the
    grid of any other strategy is checked against the spec alone
    (:func:`sweep.store._grid_check.grid_disagreement`).
    """
    name = spec.strategy.name
    if (
        spec.strategy.backtesting is not None
        or name not in available_strategies()
        or key.strategy is None
    ):
        return None
    strategy = get_strategy(name)
    if key.strategy.version != strategy.version:
        return None
    try:
        return full_grid(spec, strategy)
    except SweepError:
        return None  # the recorded spec does not fit today's strategy: checked by the spec


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
    max_bytes : int
        The most bytes a part can hold (:func:`sweep.store._file_limits.part_size_limit`).
    identity : GridIdentity or None
        The config id at every grid position, when the manifest lists its grid's values:
        each row's ``config_id`` is checked against its ``grid_index``.
    footer : FooterExpectations or None
        What the footer's summaries must hold (:func:`sweep.store._part_footer.check_footer`;
        None: the footer is not checked).
    """

    binding: str
    grid_size: int
    schema: list[list[str]] | None
    max_bytes: int
    identity: GridIdentity | None = None
    footer: FooterExpectations | None = None


def _too_large(size: int, expect: PartExpectations) -> str:
    return (
        f"too large: {size:,} bytes or more, over the {expect.max_bytes:,} a part of this "
        f"run can hold (a grid of {expect.grid_size:,} configs); not read"
    )


def _hash_mismatch(handle: BinaryIO, length: int, actual: str, expected: str) -> str:
    try:
        pq.ParquetFile(handle).metadata  # noqa: B018
        kind = "altered"
    except Exception:
        kind = "truncated or not parquet"
    return (
        f"{kind}: sha256 of its {length} bytes is {actual[:12]}..., "
        f"the name says {expected[:12]}..."
    )


def _check_contents(
    name: str, source: BinaryIO, expect: PartExpectations
) -> tuple[PartCheck, RangeSet | None, pa.Schema | None]:
    """The checks of :meth:`RunStore.check_part` after the sha256 (the file just hashed).

    Returns the check, and for a good part its positions and its schema with the metadata.
    """
    try:
        parquet = pq.ParquetFile(source)
        schema = footer_schema(parquet)
    except Exception as exc:  # any reader error means the bytes are not a usable part
        return PartCheck(name, False, f"not a parquet file: {exc}"), None, None
    binding = (schema.metadata or {}).get(BINDING_KEY, b"").decode(errors="replace")
    if binding != expect.binding:
        why = "carries no run binding" if not binding else "belongs to another run"
        return (
            PartCheck(
                name,
                False,
                f"foreign: it {why} (binding {binding[:12] or 'none'}, this run's is "
                f"{expect.binding[:12]})",
            ),
            None,
            None,
        )
    if expect.schema is not None and schema_description(schema) != expect.schema:
        reason = "foreign: its columns are not this run's results columns"
        return PartCheck(name, False, reason), None, None
    try:
        keys = parquet.read(columns=["grid_index", "config_id"])
        index = keys.column("grid_index").to_numpy()
        ids = keys.column("config_id").combine_chunks()
    except Exception as exc:
        return (
            PartCheck(name, False, f"unreadable grid_index or config_id column: {exc}"),
            None,
            None,
        )
    if index.size == 0:
        return PartCheck(name, False, "holds no rows"), None, None
    if int(index.min()) < 0 or int(index.max()) >= expect.grid_size:
        return (
            PartCheck(
                name,
                False,
                f"grid_index outside the grid of {expect.grid_size:,} configs "
                f"({int(index.min())}..{int(index.max())})",
            ),
            None,
            None,
        )
    if np.unique(index).size != index.size:
        return PartCheck(name, False, "repeats a grid_index"), None, None
    if pc.count_distinct(ids).as_py() != len(ids):
        return PartCheck(name, False, "repeats a config_id"), None, None
    foreign = None if expect.identity is None else _misplaced(expect.identity, index, ids)
    if foreign is not None:
        return PartCheck(name, False, foreign), None, None
    if expect.footer is not None:
        try:
            check_footer(schema.metadata, index, lambda: _ok_rows(parquet), expect.footer)
        except RunFolderError as exc:
            return PartCheck(name, False, "footer: " + " ".join(str(exc).split())), None, None
    return (
        PartCheck(name, True, "ok", int(index.size)),
        RangeSet.from_positions(index),
        schema,
    )


def _ok_rows(parquet: pq.ParquetFile) -> NDArray[np.bool_]:
    """The mask of a part's rows whose ``status`` is ``ok`` (RunFolderError if unreadable)."""
    try:
        status = parquet.read(columns=["status"], use_threads=False).column(0)
        return np.asarray(pc.equal(status, "ok").to_numpy(zero_copy_only=False), dtype=bool)
    except Exception as exc:  # any reader error: the column is not usable
        raise RunFolderError(f"unreadable status column: {exc}") from exc


def _misplaced(identity: GridIdentity, index: NDArray[np.int64], ids: pa.Array) -> str | None:
    """Why a part whose rows hold ids not of the configs at their positions is foreign."""
    rows = identity.misplaced(index, ids)
    if not rows.size:
        return None
    first = int(rows[0])
    return (
        f"foreign: {rows.size:,} of its {index.size:,} rows hold a config_id that is not the "
        f"config at their grid_index (first: grid_index {int(index[first])} holds "
        f"{str(ids[first])[:12]}...)"
    )


def _with_conflicts(
    store: RunStore, found: list[tuple[PartCheck, RangeSet | None]]
) -> list[PartCheck]:
    """The part checks, with the good parts that hold a config in conflict failed.

    Good parts are compared by their keys: a ``grid_index`` (their ranges overlap) or a
    ``config_id`` found in two of them is a repeat. Where the folder has a
    :class:`~sweep.store._row_identity.GridIdentity`, every good part's ids were checked
    against their positions, so the ranges find every repeat; otherwise the ids are compared
    by fingerprints (:func:`sweep.store._repeats.repeated_ids`, passes over every part's ids).
    Only the parts holding repeats are read again, and each repeated row's
    canonical bytes (:func:`sweep.store._table_hash.row_digests`) compared: identical copies
    (a batch written twice) are fine; different ones put every part that holds the key in
    conflict.
    """
    good = [(check, positions) for check, positions in found if check.ok and positions is not None]
    checks = [check for check, _ in found]
    if len(good) < 2:
        return checks
    index = overlaps([positions for _, positions in good])
    names = [check.name for check, _ in good]

    def id_batches(name: str) -> Iterator[pa.Array]:
        for batch in store.part_column_batches(name, ["config_id"]):
            yield batch.column(0)

    if store.expectations().identity is not None:
        ids = pa.array([], type=pa.string())
    else:
        ids = repeated_ids(names, id_batches, sum(check.rows for check, _ in good))
    if not index and len(ids) == 0:
        return checks
    holders: dict[tuple[str, object], list[tuple[str, bytes]]] = {}
    for check, positions in good:
        if not positions.intersection(index) and len(ids) == 0:
            continue
        for batch in store.part_column_batches(check.name, None):
            grid_index = np.asarray(batch.column("grid_index").to_numpy(), dtype=np.int64)
            rows = index.contains(grid_index) | pc.is_in(batch.column("config_id"), ids).to_numpy(
                zero_copy_only=False
            )
            if not rows.any():
                continue
            table = pa.Table.from_batches([batch.filter(pa.array(rows))])
            digests = row_digests(table)
            for gi, cid, digest in zip(
                table.column("grid_index").to_pylist(),
                table.column("config_id").to_pylist(),
                digests,
                strict=True,
            ):
                holders.setdefault(("grid_index", gi), []).append((check.name, digest))
                holders.setdefault(("config_id", cid), []).append((check.name, digest))
    return _mark_conflicts(checks, holders)


def _mark_conflicts(
    checks: list[PartCheck], holders: dict[tuple[str, object], list[tuple[str, bytes]]]
) -> list[PartCheck]:
    """Fail every part that holds a key whose copies differ, naming the others and a key."""
    others: dict[str, set[str]] = {}
    example: dict[str, str] = {}
    keys: dict[str, dict[str, int]] = {}
    for (kind, key), held in holders.items():
        if len({digest for _, digest in held}) < 2:
            continue
        names = {name for name, _ in held}
        for name in names:
            others.setdefault(name, set()).update(names - {name})
            example.setdefault(name, f"{kind} {key}")
            counts = keys.setdefault(name, {})
            counts[kind] = counts.get(kind, 0) + 1
    out = []
    for check in checks:
        if check.name not in others:
            out.append(check)
            continue
        peers = sorted(others[check.name])
        n = max(keys[check.name].values())
        out.append(
            PartCheck(
                check.name,
                False,
                f"conflict: {n:,} of its configs are also in "
                + ", ".join(f"parts/{p}" for p in peers[:3])
                + (f" and {len(peers) - 3} more" if len(peers) > 3 else "")
                + f" with other values (first: {example[check.name]}); neither copy is used",
            )
        )
    return out
