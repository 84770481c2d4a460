"""How a run folder's files are opened, and how large each may be.

A run folder is data someone else may have written (docs/explanation/trust-model.md). The store
opens a file only when it is a regular file: a symbolic link is followed, and refused when
it leads to anything else (a directory, a FIFO, a device, a socket), so a FIFO named like a
part cannot hang ``verify`` and a link to ``/dev/zero`` cannot fill memory. A file is read
only up to a bound derived from what it can honestly hold, checked against its size before
a byte is read (and again while reading, should it grow), so a 3 GB sparse file named like
a part is refused at once. Parts are hashed in chunks of :data:`CHUNK_BYTES`.

The bounds are generous: an honest file is far below them.

==================  =========================================================================
file                bound
==================  =========================================================================
manifest.json       :data:`MANIFEST_MAX_BYTES`
lock                :data:`LOCK_MAX_BYTES` (a longer one is no driver's: read as unreadable)
telemetry file      :data:`TELEMETRY_MAX_BYTES` (one row of a dozen columns)
part                :func:`part_size_limit`, from the grid size, the results schema and the
                    metric and validation options the manifest records
data/panel.parquet  :func:`panel_copy_limit`, from the data description the manifest records
==================  =========================================================================
"""

from __future__ import annotations

import errno
import hashlib
import math
import os
import stat
from collections.abc import Mapping
from typing import BinaryIO, cast

import pyarrow.fs as pafs

from sweep.common._fs import LocalFilesystem, RunFilesystem
from sweep.spec._models import SweepSpec

#: Bytes read at once when a part is hashed.
CHUNK_BYTES = 1 << 20
#: The largest ``manifest.json`` read: a manifest is a few KiB, plus about 2 KiB a session.
MANIFEST_MAX_BYTES = 64 << 20
#: The largest lock file read: a driver writes about 200 bytes.
LOCK_MAX_BYTES = 64 << 10
#: The largest telemetry file read: one task's row is about 3 KiB of parquet.
TELEMETRY_MAX_BYTES = 1 << 20
#: Bytes allowed per value of a string column of a part (``config_id`` is 32, ``status`` 2
#: or 5; a failed config's ``error`` message is the one of any length).
STRING_VALUE_BYTES = 64 << 10
#: Bytes per row allowed when a manifest predates its ``results_schema``.
UNKNOWN_ROW_BYTES = 1 << 20
#: Fixed allowance of every part and panel copy: parquet's footer, page headers, the run
#: binding, the environment record and the arrow schema.
BASE_BYTES = 1 << 20
#: Bytes per fold of a part's fold summary (a hex float and a grid index, in JSON).
FOLD_BYTES = 64

_FIXED_WIDTH = {"int64": 8, "double": 8, "float64": 8, "bool": 1}


class NotRegularFileError(OSError):
    """A path that is not a regular file: a directory, FIFO, device, socket or a link to one.

    Attributes
    ----------
    kind : str
        What it is, in words (``"a FIFO"``, ``"a symbolic link to a character device
        (/dev/zero)"``).
    """

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(errno.EINVAL, f"{kind}, not a regular file", path)
        self.kind = kind


class FileTooLargeError(OSError):
    """A file larger than any honest file of its kind (the bound is in the message)."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(errno.EFBIG, f"{size:,} bytes or more, over its bound of {limit:,}", path)
        self.size, self.limit = size, limit


def _kind_of(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a file")


def _refuse_local(path: str, mode: int) -> NotRegularFileError:
    kind = _kind_of(mode)
    if os.path.islink(path):
        kind = f"a symbolic link to {kind} ({os.readlink(path)})"
    return NotRegularFileError(path, kind)


def _open_local(path: str) -> tuple[BinaryIO, int]:
    """Open a local regular file without blocking on a FIFO; its handle and size."""
    mode = os.stat(path).st_mode  # follows links; FileNotFoundError and ELOOP propagate
    if not stat.S_ISREG(mode):
        raise _refuse_local(path, mode)  # refused before it is opened (a device may act)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # replaced between the stat and the open
            raise _refuse_local(path, info.st_mode)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), int(info.st_size)
    except BaseException:
        os.close(fd)
        raise


def open_regular(fs: RunFilesystem, path: str) -> tuple[BinaryIO, int]:
    """Open a file of the run folder for reading, only if it is a regular file.

    Parameters
    ----------
    fs : RunFilesystem
        The run folder's filesystem.
    path : str
        The file.

    Returns
    -------
    handle : binary file
        Open for reading (close it).
    size : int
        Its size in bytes when opened.

    Raises
    ------
    NotRegularFileError
        For a directory, FIFO, device or socket, or a symbolic link to one (never opened:
        nothing blocks, nothing is read).
    FileNotFoundError, OSError
        As the filesystem says.
    """
    if isinstance(fs, LocalFilesystem):
        return _open_local(path)
    filesystem, _ = fs.arrow()
    info = filesystem.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
    if info.type != pafs.FileType.File:
        raise NotRegularFileError(path, "a directory")
    return cast(BinaryIO, filesystem.open_input_file(path)), int(info.size or 0)


def read_limited(fs: RunFilesystem, path: str, limit: int | None) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (None: no bound).

    Raises
    ------
    NotRegularFileError
        See :func:`open_regular`.
    FileTooLargeError
        When the file's size, or what it yields, exceeds ``limit`` (nothing more is read).
    """
    handle, size = open_regular(fs, path)
    with handle:
        if limit is None:
            return bytes(handle.read())
        if size > limit:
            raise FileTooLargeError(path, size, limit)
        data = bytes(handle.read(limit + 1))
    if len(data) > limit:
        raise FileTooLargeError(path, len(data), limit)
    return data


def sha256_limited(handle: BinaryIO, path: str, limit: int) -> tuple[str, int]:
    """The sha256 of what ``handle`` yields from where it stands, read in chunks.

    Returns
    -------
    digest : str
        Hex sha256.
    length : int
        Bytes hashed.

    Raises
    ------
    FileTooLargeError
        As soon as more than ``limit`` bytes came (a file that grows while read).
    """
    digest, length = hashlib.sha256(), 0
    while chunk := handle.read(CHUNK_BYTES):
        length += len(chunk)
        if length > limit:
            raise FileTooLargeError(path, length, limit)
        digest.update(chunk)
    return digest.hexdigest(), length


def _row_bytes(schema: tuple[tuple[str, str], ...] | None) -> int:
    if schema is None:
        return UNKNOWN_ROW_BYTES
    return sum(_FIXED_WIDTH.get(kind, STRING_VALUE_BYTES) for _, kind in schema)


def _fold_count(spec: SweepSpec, n_periods: int) -> int:
    """Folds a part's fold summary can hold: walk-forward windows and CPCV splits."""
    validation = spec.validation
    if validation is None:
        return 0
    folds = n_periods if validation.walk_forward is not None else 0
    if validation.cpcv is not None:
        folds += math.comb(validation.cpcv.groups, validation.cpcv.test_groups)
    return folds


def _n_periods(data: Mapping[str, object]) -> int:
    value = data.get("n_periods")
    return value if isinstance(value, int) and value >= 0 else 1 << 20


def part_size_limit(
    spec: SweepSpec,
    grid_size: int,
    schema: tuple[tuple[str, str], ...] | None,
    data: Mapping[str, object],
) -> int:
    """The most bytes a part of this run can hold (a generous bound).

    Parameters
    ----------
    spec : SweepSpec
        The run's spec (its metric and validation options), as the manifest records it.
    grid_size : int
        Configs in the grid: no part holds more rows (it repeats no grid index).
    schema : tuple of (name, arrow type), or None
        The manifest's ``results_schema`` (None: :data:`UNKNOWN_ROW_BYTES` per row).
    data : mapping
        The manifest's data description (its ``n_periods`` bounds the walk-forward folds;
        2^20 when absent).

    Returns
    -------
    int
        ``BASE_BYTES + 2 * rows * row_bytes + 3 * metadata``, where ``row_bytes`` counts 8
        bytes per int64 or float64 column, 1 per bool and :data:`STRING_VALUE_BYTES` per
        string column; ``metadata`` is the null summary (``2 * reps * (3 + 2 * top_k) * 8``:
        three floats and a top-k of values and indices per replication, base64) plus the
        fold summary (:data:`FOLD_BYTES` per walk-forward window or CPCV split) plus
        :data:`BASE_BYTES`. The factor 2 covers parquet's encoding (lengths, levels, page
        headers, compression of incompressible bytes); the factor 3 the schema metadata
        stored twice in the footer (as key-value pairs and inside the base64 arrow schema),
        as parts written before the summaries were kept footer-only store it.
    """
    metrics = spec.metrics
    null = 2 * metrics.bootstrap_reps * (3 + 2 * metrics.stepm_top_k) * 8
    folds = FOLD_BYTES * _fold_count(spec, _n_periods(data))
    return BASE_BYTES + 2 * grid_size * _row_bytes(schema) + 3 * (null + folds + BASE_BYTES)


def panel_copy_limit(data: Mapping[str, object]) -> int | None:
    """The most bytes the copy of an in-memory panel (``data/panel.parquet``) can hold.

    From the manifest's data description: ``BASE_BYTES + 2 * cells * cell_bytes + 2 *
    names``, where ``cells`` is periods times assets, a cell holds a date (8 bytes), the
    close and each optional field (8 each), the live flag (1) and the asset's name (4 + its
    length in the long format), and ``names`` the asset list kept in the metadata. None
    (no bound beyond the regular-file check) when the description lacks the shape.
    """
    periods, assets, fields = data.get("n_periods"), data.get("assets"), data.get("fields")
    if not isinstance(periods, int) or not isinstance(assets, list) or not assets:
        return None
    names = [str(a).encode() for a in assets]
    n_fields = len(fields) if isinstance(fields, list) else 8
    cell = 8 + 8 * max(n_fields, 1) + 1 + 4 + max(len(n) for n in names)
    return BASE_BYTES + 2 * periods * len(names) * cell + 2 * sum(len(n) + 4 for n in names)
