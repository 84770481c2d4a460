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
recomputed. Which configs are done is learned from the ``grid_index`` column of each part
(a boolean array over the grid), never by holding one object per config.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.typing import NDArray

from sweep._evaluate import results_schema
from sweep._fs import (
    TEMP_PREFIX,
    LocalFilesystem,
    RunFilesystem,
    open_run_filesystem,
    parquet_bytes,
)
from sweep._spec import ResolvedSweep
from sweep._version import ENGINE_VERSION
from sweep.errors import RunFolderError, RunLockedError

MANIFEST = "manifest.json"
LOCK = "lock"
PARTS = "parts"
TELEMETRY = "telemetry"
QUARANTINE = "quarantine"
FORMAT = "raysweep-run-v1"
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


def machine_identity() -> str:
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


@dataclass(frozen=True)
class PartCheck:
    """The result of checking one part (:meth:`RunStore.check_part`).

    Attributes
    ----------
    name : str
        File name in ``parts/``.
    ok : bool
        Whether its configs count as done.
    reason : str
        ``"ok"``, or what is wrong, in words.
    rows : int
        Configs it holds (0 when it is not usable).
    """

    name: str
    ok: bool
    reason: str
    rows: int = 0


#: Key of the part metadata that binds a part to its run (:func:`run_binding`).
BINDING_KEY = b"raysweep.run"


def run_binding(identity: dict[str, Any]) -> str:
    """The sha256 that binds a part to its run: canonical JSON of the manifest's identity.

    Every part carries it in its parquet metadata (:data:`BINDING_KEY`), so a valid part
    copied from another run folder (another spec, data, strategy version, seed or metric
    options) is recognised and quarantined instead of being counted.
    """
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return _sha256(canonical.encode())


def schema_description(schema: pa.Schema) -> list[list[str]]:
    """``[name, arrow type]`` of every column: how the manifest records the parts' schema."""
    return [[f.name, str(f.type)] for f in schema]


def identity_of(sweep: ResolvedSweep) -> dict[str, Any]:
    """What a run folder's results depend on, as recorded in (and compared with) the manifest."""
    return {
        "spec_hash": sweep.spec.spec_hash,
        "data_fingerprint": sweep.fingerprint,
        "strategy": {"name": sweep.strategy.name, "version": sweep.strategy.version},
        "root_seed": sweep.spec.seed,
        "metrics": sweep.spec.metrics.model_dump(mode="json"),
    }


def describe_differences(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Human-readable list of what differs between a manifest's identity and a sweep's."""
    out = []
    labels = {
        "data_fingerprint": "the data (fingerprint)",
        "strategy": "the strategy name/version",
        "root_seed": "the root seed",
        "metrics": "the metric options",
        "spec_hash": "the spec",
    }
    for key, label in labels.items():
        if recorded.get(key) != current.get(key):
            if isinstance(current.get(key), dict) and isinstance(recorded.get(key), dict):
                sub = sorted(
                    k
                    for k in set(recorded[key]) | set(current[key])
                    if recorded[key].get(k) != current[key].get(k)
                )
                detail = ", ".join(
                    f"{k}: {recorded[key].get(k)!r} -> {current[key].get(k)!r}" for k in sub
                )
                out.append(f"{label} ({detail})")
            else:
                out.append(
                    f"{label} ({str(recorded.get(key))[:16]}... -> {str(current.get(key))[:16]}...)"
                )
    return out


class RunStore:
    """A run folder on a :class:`sweep._fs.RunFilesystem`.

    Parameters
    ----------
    location : str or Path
        The run folder.
    """

    def __init__(self, location: str | os.PathLike[str]) -> None:
        self.fs: RunFilesystem = open_run_filesystem(str(location))
        self.location = str(location)
        self._manifest: dict[str, Any] | None = None
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

    def read_manifest(self) -> dict[str, Any]:
        """Read ``manifest.json``."""
        try:
            with self._reachable("reach it"):
                data = self.fs.read_bytes(self.manifest_path)
            doc: dict[str, Any] = json.loads(data)
        except FileNotFoundError as exc:
            raise RunFolderError(
                f"run folder {self.location!r}: no manifest.json (not a raysweep run folder)"
            ) from exc
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RunFolderError(
                f"run folder {self.location!r}: manifest.json is corrupt: {exc}"
            ) from exc
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise RunFolderError(
                f"run folder {self.location!r}: manifest format {found!r}, expected {FORMAT!r}"
            )
        _check_manifest_shape(self.location, doc)
        self._manifest = doc
        return doc

    def write_manifest(self, doc: dict[str, Any]) -> None:
        """Atomically replace ``manifest.json``."""
        # Key order matters (it orders the grid); JSON has no NaN or infinity.
        data = json.dumps(doc, indent=2, allow_nan=False).encode()
        self.fs.write_atomic(self.manifest_path, data)
        self._manifest = doc

    def check_compatible(self, sweep: ResolvedSweep) -> dict[str, Any]:
        """Refuse (RunFolderError) if the folder belongs to another spec, data or strategy."""
        manifest = self.read_manifest()
        diffs = describe_differences(manifest.get("identity", {}), identity_of(sweep))
        if int(manifest["grid"]["size"]) != len(sweep.grid):
            diffs.append(
                f"the grid size (manifest {manifest['grid']['size']:,}, spec {len(sweep.grid):,})"
            )
        if diffs:
            raise RunFolderError(
                f"run folder {self.location!r} belongs to another sweep; it differs in "
                + "; ".join(diffs)
                + ". Use a new --run-dir, or restore the original spec/data/strategy."
            )
        return manifest

    def create(self, sweep: ResolvedSweep) -> dict[str, Any]:
        """Create the folder and its manifest, then ``parts/`` and ``telemetry/``.

        The manifest is written first and exclusively, so a driver killed at any instant
        leaves either an empty folder or a run folder that resumes; of two drivers creating
        one folder at once, exactly one writes the manifest (the other gets
        :class:`RunFolderError` saying so, and may then join as a resume).
        """
        with self._reachable("create it"):
            self.fs.makedirs(self.fs.root)
        manifest = {
            "format": FORMAT,
            "engine_version": ENGINE_VERSION,
            "created": utc_now(),
            "identity": identity_of(sweep),
            "spec": sweep.spec.to_dict(),
            "data": sweep.panel.describe(),
            "grid": sweep.grid.describe(),
            "results_schema": schema_description(results_schema(sweep)),
            "sessions": [],
        }
        data = json.dumps(manifest, indent=2, allow_nan=False).encode()
        if not self.fs.create_exclusive(self.manifest_path, data):
            raise RunFolderError(
                f"run folder {self.location!r} was created by another driver at the same time"
            )
        self.ensure_folders()
        self._manifest = manifest
        return manifest

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
        manifest = self._manifest if self._manifest is not None else self.read_manifest()
        schema = manifest.get("results_schema")
        return PartExpectations(
            binding=run_binding(manifest["identity"]),
            grid_size=int(manifest["grid"]["size"]),
            schema=[list(c) for c in schema] if isinstance(schema, list) else None,
        )

    # --- lock --------------------------------------------------------------------------
    @property
    def lock_path(self) -> str:
        """Path of the lock file."""
        return self.fs.join(LOCK)

    def _lock_is_stale(self, info: dict[str, Any]) -> bool:
        if not info.get("host") or not isinstance(info.get("pid"), int):
            return True  # not a lock any driver wrote (locks are created whole)
        # The owner's pid can be checked only from the same kernel and pid namespace
        # (containers may share a hostname); anywhere else, trust the heartbeat's age.
        if info.get("host") == socket.gethostname() and info.get("machine") == machine_identity():
            pid = int(info.get("pid", -1))
            start = _process_start(pid) if pid > 0 else None
            return start is None or (start != "unknown" and start != info.get("proc_start"))
        try:
            age = time.time() - self.fs.mtime(self.lock_path)
        except FileNotFoundError:
            return True
        return age > LOCK_STALE_SECONDS

    def read_lock(self) -> dict[str, Any] | None:
        """The lock's contents, or None when unlocked (``{}`` for an unreadable lock)."""
        raw = self._read_lock_bytes()
        return None if raw is None else _parse_lock(raw)

    def _read_lock_bytes(self) -> bytes | None:
        try:
            return self.fs.read_bytes(self.lock_path)
        except FileNotFoundError:
            return None

    @contextlib.contextmanager
    def locked(self) -> Iterator[dict[str, Any]]:
        """Hold the run folder's lock; take over a stale one; refuse a live one.

        The lock is created whole or not at all (:meth:`RunFilesystem.create_exclusive`).
        A stale lock is taken over in one atomic step: it is renamed to a name of this
        driver's, and the takeover stands only if the renamed file is the very lock judged
        stale; a lock another driver took in between is put back and this driver refuses.
        :meth:`heartbeat` also checks the lock is still this driver's.

        Yields
        ------
        dict
            ``{"took_over": previous lock or None}``.
        """
        pid = os.getpid()
        mine = {
            "pid": pid,
            "host": socket.gethostname(),
            "machine": machine_identity(),
            "proc_start": _process_start(pid),
            "since": utc_now(),
            "token": secrets.token_hex(8),
        }
        data = json.dumps(mine).encode()
        took_over = None
        if not self.fs.create_exclusive(self.lock_path, data):
            took_over = self._take_over(data)
        self._lock_bytes = data
        try:
            yield {"took_over": took_over}
        finally:
            self._lock_bytes = None
            if self._read_lock_bytes() == data:
                self.fs.remove(self.lock_path)

    def _take_over(self, data: bytes) -> dict[str, Any]:
        """Replace a stale lock by ``data`` atomically; RunLockedError if it is live."""
        raw = self._read_lock_bytes()
        if raw is None:  # released meanwhile
            if self.fs.create_exclusive(self.lock_path, data):
                return {}
            raw = self._read_lock_bytes() or b""
        held = _parse_lock(raw)
        if not self._lock_is_stale(held):
            raise RunLockedError(
                f"run folder {self.location!r} is in use by another driver (pid "
                f"{held.get('pid')} on {held.get('host')!r} since {held.get('since')}); "
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

    def write_part(self, table: pa.Table, telemetry: dict[str, Any]) -> str:
        """Write one finished batch atomically, then its telemetry row; return the part name.

        The part's metadata gets the run binding (:func:`run_binding`) beside what the
        batch put there (its null summary).
        """
        binding = self.expectations().binding.encode()
        table = table.replace_schema_metadata(
            {**(table.schema.metadata or {}), BINDING_KEY: binding}
        )
        data = parquet_bytes(table)
        name = f"part-{_sha256(data)}.parquet"
        self.fs.write_atomic(self.fs.join(PARTS, name), data)
        row = {k: [v] for k, v in {**telemetry, "part": name}.items()}
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

    def done_mask(self, n_configs: int, parts: list[str] | None = None) -> NDArray[np.bool_]:
        """Boolean array over the grid: True where a good part holds the config."""
        done = np.zeros(n_configs, dtype=bool)
        for name in self.part_names() if parts is None else parts:
            idx = self.read_part_columns(name, ["grid_index"]).column(0).to_numpy()
            done[idx] = True
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


def _check_manifest_shape(location: str, doc: dict[str, Any]) -> None:
    """Refuse a manifest that parses but lacks what a run folder needs, naming what."""
    required: dict[str, type] = {
        "identity": dict,
        "spec": dict,
        "data": dict,
        "grid": dict,
        "sessions": list,
    }
    for key, kind in required.items():
        if not isinstance(doc.get(key), kind):
            raise RunFolderError(
                f"run folder {location!r}: manifest.json has no valid {key!r} "
                f"(expected a JSON {'object' if kind is dict else 'array'}, got "
                f"{type(doc.get(key)).__name__}); the folder cannot be used"
            )
    grid = doc["grid"]
    size = grid.get("size")
    axes = grid.get("axes")
    if (
        not isinstance(size, int)
        or isinstance(size, bool)
        or size < 0
        or not isinstance(axes, list)
    ):
        raise RunFolderError(
            f"run folder {location!r}: manifest.json's grid needs a non-negative integer "
            f"'size' and a list of 'axes', got size={size!r}"
        )
    for key in ("spec_hash", "data_fingerprint"):
        if not isinstance(doc["identity"].get(key), str):
            raise RunFolderError(
                f"run folder {location!r}: manifest.json's identity has no {key!r}"
            )


def _parse_lock(raw: bytes) -> dict[str, Any]:
    """A lock's JSON, or ``{}`` when it does not parse (an unusable lock is stale)."""
    try:
        info = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return info if isinstance(info, dict) else {}
