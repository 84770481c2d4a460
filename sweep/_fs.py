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
from pathlib import Path
from typing import Protocol

import pyarrow as pa
import pyarrow.fs as pafs


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
        tmp = os.path.join(folder, f".tmp-{secrets.token_hex(8)}")
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _fsync_dir(folder)

    def create_exclusive(self, path: str, data: bytes) -> bool:
        """``O_CREAT | O_EXCL``: atomic on POSIX filesystems."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        _fsync_dir(os.path.dirname(path))
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


def _fsync_dir(folder: str) -> None:
    fd = os.open(folder or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_run_filesystem(location: str | Path) -> RunFilesystem:
    """Return the filesystem of a run folder given as a local path.

    Parameters
    ----------
    location : str or Path
        A local path.

    Returns
    -------
    RunFilesystem
        The run folder's filesystem.
    """
    return LocalFilesystem(location)


def parquet_bytes(table: pa.Table) -> bytes:
    """Serialise a table to parquet bytes (zstd, no dictionary for the id column)."""
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", use_dictionary=False, write_statistics=False)
    return bytes(sink.getvalue().to_pybytes())
