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

from sweep._fs import LocalFilesystem, RunFilesystem, open_run_filesystem, parquet_bytes
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
    """The result of re-hashing one part."""

    name: str
    ok: bool
    reason: str


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

    def has_files(self) -> bool:
        """Whether the folder exists and holds any file (a manifest or anything else)."""
        with self._reachable("reach it"):
            return self.fs.exists(self.fs.root) and bool(self.fs.listdir(self.fs.root))

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
        if doc.get("format") != FORMAT:
            raise RunFolderError(
                f"run folder {self.location!r}: manifest format {doc.get('format')!r}, "
                f"expected {FORMAT!r}"
            )
        return doc

    def write_manifest(self, doc: dict[str, Any]) -> None:
        """Atomically replace ``manifest.json``."""
        data = json.dumps(doc, indent=2).encode()  # key order matters: it orders the grid
        self.fs.write_atomic(self.manifest_path, data)

    def check_compatible(self, sweep: ResolvedSweep) -> dict[str, Any]:
        """Refuse (RunFolderError) if the folder belongs to another spec, data or strategy."""
        manifest = self.read_manifest()
        diffs = describe_differences(manifest.get("identity", {}), identity_of(sweep))
        if diffs:
            raise RunFolderError(
                f"run folder {self.location!r} belongs to another sweep; it differs in "
                + "; ".join(diffs)
                + ". Use a new --run-dir, or restore the original spec/data/strategy."
            )
        return manifest

    def create(self, sweep: ResolvedSweep) -> dict[str, Any]:
        """Create the folder and its manifest (refused if a manifest already exists)."""
        with self._reachable("create it"):
            self.fs.makedirs(self.fs.root)
            for sub in (PARTS, TELEMETRY):
                self.fs.makedirs(self.fs.join(sub))
        manifest = {
            "format": FORMAT,
            "engine_version": ENGINE_VERSION,
            "created": utc_now(),
            "identity": identity_of(sweep),
            "spec": sweep.spec.to_dict(),
            "data": sweep.panel.describe(),
            "grid": sweep.grid.describe(),
            "sessions": [],
        }
        if self.exists():
            raise RunFolderError(f"run folder {self.location!r} already has a manifest")
        self.write_manifest(manifest)
        return manifest

    # --- lock --------------------------------------------------------------------------
    @property
    def lock_path(self) -> str:
        """Path of the lock file."""
        return self.fs.join(LOCK)

    def _lock_is_stale(self, info: dict[str, Any]) -> bool:
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
        """The lock's contents, or None when unlocked."""
        try:
            info: dict[str, Any] = json.loads(self.fs.read_bytes(self.lock_path))
            return info
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, UnicodeDecodeError):
            return {"host": "?", "pid": -1}

    @contextlib.contextmanager
    def locked(self) -> Iterator[dict[str, Any]]:
        """Hold the run folder's lock; take over a stale one; refuse a live one.

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
        }
        data = json.dumps(mine).encode()
        took_over = None
        if not self.fs.create_exclusive(self.lock_path, data):
            held = self.read_lock() or {}
            if not self._lock_is_stale(held):
                raise RunLockedError(
                    f"run folder {self.location!r} is in use by another driver (pid "
                    f"{held.get('pid')} on {held.get('host')!r} since {held.get('since')}); "
                    "wait for it to finish or stop it first"
                )
            stale = self.fs.join(f"{LOCK}.stale-{os.getpid()}-{int(time.time())}")
            with contextlib.suppress(FileNotFoundError):
                self.fs.move(self.lock_path, stale)
                self.fs.remove(stale)
            if not self.fs.create_exclusive(self.lock_path, data):
                raise RunLockedError(
                    f"run folder {self.location!r}: another driver took the lock first"
                )
            took_over = held
        try:
            yield {"took_over": took_over}
        finally:
            info = self.read_lock()
            if info and info.get("pid") == pid and info.get("host") == mine["host"]:
                self.fs.remove(self.lock_path)

    def heartbeat(self) -> None:
        """Refresh the lock's modification time (a live driver on another host keeps it)."""
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
        """Write one finished batch atomically, then its telemetry row; return the part name."""
        data = parquet_bytes(table)
        name = f"part-{_sha256(data)}.parquet"
        self.fs.write_atomic(self.fs.join(PARTS, name), data)
        row = {k: [v] for k, v in {**telemetry, "part": name}.items()}
        tdata = parquet_bytes(pa.table(row))
        self.fs.write_atomic(self.fs.join(TELEMETRY, f"task-{_sha256(tdata)}.parquet"), tdata)
        return name

    def check_part(self, name: str) -> PartCheck:
        """Re-hash a part and compare with the sha256 in its name."""
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
        return PartCheck(name, True, "ok")

    def verify_parts(self) -> list[PartCheck]:
        """Re-hash every part."""
        return [self.check_part(n) for n in self.part_names()]

    def quarantine(self, name: str) -> None:
        """Move a bad part aside so its configs are recomputed."""
        self.fs.makedirs(self.fs.join(QUARANTINE))
        self.fs.move(self.fs.join(PARTS, name), self.fs.join(QUARANTINE, name))

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

    def read_results(self) -> pa.Table:
        """Every part concatenated (unsorted, one row per config)."""
        tables = [self.read_part_columns(n, None) for n in self.part_names()]  # type: ignore[arg-type]
        if not tables:
            raise RunFolderError(f"run folder {self.location!r} has no results yet")
        table = pa.concat_tables(tables, promote_options="none")
        return table

    def read_telemetry(self) -> pa.Table | None:
        """Every task's telemetry row, or None if there is none."""
        filesystem, _ = self.fs.arrow()
        names = [n for n in self.fs.listdir(self.fs.join(TELEMETRY)) if n.endswith(".parquet")]
        if not names:
            return None
        tables = [pq.read_table(self.fs.join(TELEMETRY, n), filesystem=filesystem) for n in names]
        return pa.concat_tables(tables, promote_options="default")
