"""File operations a run folder needs, with the atomicity each one promises.

A run folder lives on a :class:`RunFilesystem`. :class:`LocalFilesystem` (a path on a local
or network disk) gives full atomicity: a file is written to a temporary name in the same
folder, flushed and fsynced, renamed into place (atomic on POSIX), and the folder is fsynced
so the rename survives a power cut.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa
import pyarrow.fs as pafs

from sweep.errors import RunFolderError

if TYPE_CHECKING:
    import pyarrow.parquet as pq

#: Name prefix of the temp files atomic writes go through (a killed writer leaves them).
TEMP_PREFIX = ".tmp-"


class RunFilesystem(Protocol):
    """What the store needs from the place a run folder lives."""

    root: str

    def join(self, *parts: str) -> str:
        """Path of ``parts`` inside the run folder."""
        ...

    def read_bytes(self, path: str) -> bytes:
        """Whole file contents."""
        ...

    def write_atomic(self, path: str, data: bytes) -> None:
        """Write ``data`` so that ``path`` holds either nothing/old bytes or all of ``data``."""
        ...

    def create_exclusive(self, path: str, data: bytes) -> bool:
        """Create ``path`` only if it does not exist; return whether it was created."""
        ...

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists."""
        ...

    def listdir(self, path: str) -> list[str]:
        """Names of the files in a folder (empty if the folder does not exist)."""
        ...

    def makedirs(self, path: str) -> None:
        """Create a folder and its parents."""
        ...

    def move(self, src: str, dst: str) -> None:
        """Rename a file."""
        ...

    def remove(self, path: str) -> None:
        """Delete a file if present."""
        ...

    def mtime(self, path: str) -> float:
        """Last-modified time, seconds since the epoch."""
        ...

    def touch(self, path: str) -> None:
        """Update the modification time of an existing file."""
        ...

    def arrow(self) -> tuple[pafs.FileSystem, str]:
        """A pyarrow filesystem and the run folder's path on it (for parquet reads)."""
        ...


class LocalFilesystem:
    """A run folder on a POSIX filesystem (local disk, NFS, a mounted volume)."""

    def __init__(self, root: str | Path) -> None:
        self.root = str(Path(root).absolute())

    def join(self, *parts: str) -> str:
        """Path of ``parts`` inside the run folder."""
        return os.path.join(self.root, *parts)

    def read_bytes(self, path: str) -> bytes:
        """Whole file contents."""
        return Path(path).read_bytes()

    def write_atomic(self, path: str, data: bytes) -> None:
        """Temp file in the same folder, fsync, rename, fsync the folder."""
        folder = os.path.dirname(path)
        tmp = _write_temp(folder, data)
        try:
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _fsync_dir(folder)

    def create_exclusive(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if absent: a complete temp file, hard-linked.

        ``link`` is atomic and fails if ``path`` exists, and the temp file is whole before
        it, so ``path`` never exists half-written (a full disk leaves no empty file behind).
        """
        folder = os.path.dirname(path)
        tmp = _write_temp(folder, data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        _fsync_dir(folder)
        return True

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists."""
        return os.path.exists(path)

    def listdir(self, path: str) -> list[str]:
        """Names of the files in a folder (empty if the folder does not exist)."""
        try:
            return sorted(os.listdir(path))
        except FileNotFoundError:
            return []

    def makedirs(self, path: str) -> None:
        """Create a folder and its parents."""
        os.makedirs(path, exist_ok=True)

    def move(self, src: str, dst: str) -> None:
        """Rename a file (atomic within one filesystem)."""
        os.replace(src, dst)
        _fsync_dir(os.path.dirname(dst))

    def remove(self, path: str) -> None:
        """Delete a file if present."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    def mtime(self, path: str) -> float:
        """Last-modified time, seconds since the epoch."""
        return os.stat(path).st_mtime

    def touch(self, path: str) -> None:
        """Update the modification time of an existing file."""
        now = time.time()
        os.utime(path, (now, now))

    def arrow(self) -> tuple[pafs.FileSystem, str]:
        """The local pyarrow filesystem and the absolute root."""
        return pafs.LocalFileSystem(), self.root


def _write_temp(folder: str, data: bytes) -> str:
    """Write ``data`` to a new temp file in ``folder``, fsynced; its path (removed on error)."""
    tmp = os.path.join(folder, f"{TEMP_PREFIX}{secrets.token_hex(8)}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def _fsync_dir(folder: str) -> None:
    fd = os.open(folder or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class ArrowFilesystem:
    """A run folder on any pyarrow filesystem: S3 (and S3-compatible stores), GCS, HDFS.

    Atomicity on object stores: an object PUT is atomic (readers see all of the new bytes or
    none), so a part is written straight to its final name; nothing is ever renamed, because
    a rename there is a copy and a delete. A truncated upload never becomes visible. The lock
    is advisory: object stores offer no create-if-absent through pyarrow, so two drivers
    started within the same second could both believe they hold it; the second one's write
    wins and the first notices at its next heartbeat. Run one driver per run folder.
    """

    def __init__(self, filesystem: pafs.FileSystem, root: str) -> None:
        self._fs = filesystem
        self.root = root.rstrip("/")

    def join(self, *parts: str) -> str:
        """Path of ``parts`` inside the run folder."""
        return "/".join([self.root, *parts])

    def read_bytes(self, path: str) -> bytes:
        """Whole object contents."""
        try:
            with self._fs.open_input_stream(path) as fh:
                return bytes(fh.read())
        except FileNotFoundError:
            raise
        except OSError as exc:
            if not self.exists(path):
                raise FileNotFoundError(path) from exc
            raise

    def write_atomic(self, path: str, data: bytes) -> None:
        """One PUT of the whole object (atomic on object stores)."""
        with self._fs.open_output_stream(path) as fh:
            fh.write(data)

    def create_exclusive(self, path: str, data: bytes) -> bool:
        """Write ``path`` if absent, then read it back to check the write was ours."""
        if self.exists(path):
            return False
        self.write_atomic(path, data)
        return self.read_bytes(path) == data

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists."""
        return bool(self._fs.get_file_info(path).type != pafs.FileType.NotFound)

    def listdir(self, path: str) -> list[str]:
        """Names of the objects under a prefix (empty if there are none)."""
        selector = pafs.FileSelector(path, allow_not_found=True, recursive=False)
        return sorted(
            info.base_name
            for info in self._fs.get_file_info(selector)
            if info.type == pafs.FileType.File
        )

    def makedirs(self, path: str) -> None:
        """Create a folder (a no-op on most object stores)."""
        self._fs.create_dir(path, recursive=True)

    def move(self, src: str, dst: str) -> None:
        """Copy then delete (not atomic on object stores; used only to set bad parts aside)."""
        self._fs.copy_file(src, dst)
        self._fs.delete_file(src)

    def remove(self, path: str) -> None:
        """Delete an object if present."""
        with contextlib.suppress(FileNotFoundError):
            self._fs.delete_file(path)

    def mtime(self, path: str) -> float:
        """Last-modified time, seconds since the epoch."""
        info = self._fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound or info.mtime is None:
            raise FileNotFoundError(path)
        return float(info.mtime.timestamp())

    def touch(self, path: str) -> None:
        """Rewrite an object with its own bytes (object stores have no utime)."""
        self.write_atomic(path, self.read_bytes(path))

    def arrow(self) -> tuple[pafs.FileSystem, str]:
        """The pyarrow filesystem and the run folder's path on it."""
        return self._fs, self.root


def is_uri(location: str | Path) -> bool:
    """Whether a run-folder location is a URI (``s3://``, ``gs://``, ...) rather than a path."""
    text = str(location)
    return "://" in text and not text.startswith("file://")


def open_run_filesystem(location: str | Path) -> RunFilesystem:
    """Return the filesystem of a run folder given as a local path or a URI.

    Parameters
    ----------
    location : str or Path
        A local path, ``file://`` URI, or any URI pyarrow understands, e.g.
        ``s3://bucket/prefix?endpoint_override=http://127.0.0.1:9000&scheme=http`` (credentials
        from the usual ``AWS_*`` environment variables) or ``gs://bucket/prefix``.

    Returns
    -------
    RunFilesystem
        :class:`LocalFilesystem` for paths, :class:`ArrowFilesystem` for URIs.
    """
    text = str(location)
    if text.startswith("file://"):
        return LocalFilesystem(text.removeprefix("file://"))
    if is_uri(text):
        try:
            filesystem, path = pafs.FileSystem.from_uri(text)
        except (ValueError, OSError) as exc:  # pyarrow.ArrowInvalid is a ValueError
            raise RunFolderError(
                f"run folder {text!r}: cannot open it: {exc}; expected a local path or a URI "
                "pyarrow understands, such as s3://bucket/prefix or gs://bucket/prefix"
            ) from exc
        return ArrowFilesystem(filesystem, path)
    return LocalFilesystem(location)


#: The footer key under which pyarrow stores the serialised Arrow schema (with its metadata).
ARROW_SCHEMA_KEY = b"ARROW:schema"


def parquet_bytes(table: pa.Table, footer_only: Collection[bytes] = ()) -> bytes:
    """Serialise a table to parquet bytes (zstd, no dictionary for the id column).

    Parameters
    ----------
    table : pyarrow.Table
        The rows, with their schema metadata.
    footer_only : collection of bytes
        Schema metadata keys written to the parquet footer's key-value metadata alone, not
        also inside the serialised Arrow schema pyarrow keeps there (:data:`ARROW_SCHEMA_KEY`,
        base64): a large value is then stored, and parsed by every read of the footer, once
        instead of twice. :func:`footer_schema` reads them back into the schema.

    Returns
    -------
    bytes
        The parquet file.
    """
    import pyarrow.parquet as pq

    meta = table.schema.metadata or {}
    aside = {k: v for k, v in meta.items() if k in footer_only}
    if aside:
        table = table.replace_schema_metadata({k: v for k, v in meta.items() if k not in aside})
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(
        sink, table.schema, compression="zstd", use_dictionary=False, write_statistics=False
    ) as writer:
        writer.write_table(table)
        if aside:
            writer.add_key_value_metadata(aside)
    return bytes(sink.getvalue().to_pybytes())


def footer_schema(parquet: pq.ParquetFile) -> pa.Schema:
    """A parquet file's Arrow schema with every key of its footer's key-value metadata.

    The keys :func:`parquet_bytes` wrote footer-only are not in ``ParquetFile.schema_arrow``
    (nor in ``pq.read_schema``); this puts them back, so a part's schema metadata reads the
    same whichever way the part was written.
    """
    schema = parquet.schema_arrow
    footer = parquet.metadata.metadata or {}
    extra = {k: v for k, v in footer.items() if k != ARROW_SCHEMA_KEY}
    return schema.with_metadata({**(schema.metadata or {}), **extra})
