"""The run folder's copy of an in-memory panel (``data/panel.parquet``).

A sweep run on a panel handed over from Python (a DataFrame, a Panel) keeps a copy in its
run folder, so ``sweep resume`` and ``sweep report`` can reopen the folder from the command
line, on another machine, after the notebook is gone. The copy is a long-format parquet
table, one row per (date, asset) in date-major order: ``date``, ``asset``, ``close``, each
optional field, and ``live``; the asset order is in the schema metadata. It holds the
panel's exact float64 values, so decoding it gives the same arrays; it is written
atomically through the run folder's filesystem and, when read, refused unless its
fingerprint is the one the manifest recorded.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from strategies import Panel, panel_fingerprint
from sweep.common._fs import RunFilesystem, parquet_bytes
from sweep.errors import RunFolderError
from sweep.spec._provenance import PANEL_COPY
from sweep.store._file_limits import FileTooLargeError, NotRegularFileError, read_limited

_META = b"raysweep.panel"


def encode_panel(panel: Panel) -> bytes:
    """The parquet bytes of a panel's copy (see the module docstring)."""
    n, m = panel.close.shape
    columns: dict[str, pa.Array] = {
        "date": pa.array(np.repeat(panel.dates.astype("datetime64[ns]"), m)),
        "asset": pa.array(np.tile(np.array(panel.assets, dtype=object), n), pa.string()),
        "close": pa.array(panel.close.reshape(-1)),
    }
    for name in sorted(panel.fields):
        columns[name] = pa.array(panel.fields[name].reshape(-1))
    columns["live"] = pa.array(panel.live_mask.reshape(-1))
    meta = {"assets": list(panel.assets), "fingerprint": panel_fingerprint(panel)}
    table = pa.table(columns).replace_schema_metadata({_META: json.dumps(meta).encode()})
    return parquet_bytes(table)


def decode_panel(data: bytes, where: str) -> Panel:
    """A panel from its copy's bytes (:class:`RunFolderError` when it is not one).

    Notes
    -----
    The bytes are read by one parquet reader on the calling thread (``ParquetFile``, no
    threads), never through ``pq.read_table``: its dataset scan lets an Arrow pool thread
    drop the last reference to the buffer over ``data``, after this function has returned,
    and that thread must take the GIL to release it. A command that fails just after
    reading the copy (``sweep resume`` on an altered copy exits 2) then ends the
    interpreter first, and the thread, stopped inside a C++ destructor, aborts the process
    ("terminate called without an active exception", exit 134; about 1 run in 40 on a
    loaded 2-core machine).
    """
    try:
        table = pq.ParquetFile(pa.BufferReader(data)).read(use_threads=False)
        meta = json.loads((table.schema.metadata or {})[_META])
        assets = tuple(str(a) for a in meta["assets"])
        m = len(assets)
        n = table.num_rows // m
        dates = table.column("date").to_numpy()[::m].astype("datetime64[ns]")
        close = table.column("close").to_numpy().reshape(n, m).copy()
        fields = {
            name: table.column(name).to_numpy().reshape(n, m).copy()
            for name in table.column_names
            if name not in ("date", "asset", "close", "live")
        }
        live = table.column("live").to_numpy(zero_copy_only=False).reshape(n, m).copy()
    except (OSError, ValueError, KeyError, TypeError, RecursionError, pa.ArrowException) as exc:
        raise RunFolderError(f"{where}: not a readable panel copy: {exc}") from exc
    return Panel(dates, assets, close, fields, None if bool(live.all()) else live)


def write_panel_copy(fs: RunFilesystem, panel: Panel) -> str:
    """Write the copy atomically into the run folder; its path there."""
    fs.makedirs(fs.join("data"))
    fs.write_atomic(fs.join(PANEL_COPY), encode_panel(panel))
    return PANEL_COPY


def read_panel_copy(
    fs: RunFilesystem, location: str, fingerprint: str, limit: int | None = None
) -> Panel:
    """Read the kept copy and check it against the recorded fingerprint.

    Parameters
    ----------
    fs : RunFilesystem
        The run folder's filesystem.
    location : str
        The run folder (for messages).
    fingerprint : str
        The fingerprint the manifest recorded.
    limit : int, optional
        The most bytes the copy can hold (:func:`sweep.store._file_limits.panel_copy_limit`);
        a larger file is refused unread.

    Raises
    ------
    RunFolderError
        The copy is missing, not a regular file, over ``limit``, unreadable, or not the
        data the run used, with what to do.
    """
    where = f"run folder {location!r}: {PANEL_COPY}"
    advice = (
        "reopen the folder from Python with the same panel: sweep.resume(run_dir, data=...) "
        "or sweep.report_run(run_dir, data=...)"
    )
    try:
        data = read_limited(fs, fs.join(PANEL_COPY), limit)
    except FileNotFoundError as exc:
        raise RunFolderError(
            f"{where} is missing: the run was made on an in-memory panel, and its copy is "
            f"gone; {advice}"
        ) from exc
    except NotRegularFileError as exc:
        raise RunFolderError(
            f"{where} is {exc.kind}, not a regular file; nothing was read; {advice} "
            "(sweep.resume writes a new copy)"
        ) from exc
    except FileTooLargeError as exc:
        raise RunFolderError(
            f"{where} holds {exc.size:,} bytes or more, over the {exc.limit:,} a copy of this "
            f"panel can hold; it was not read; {advice} (sweep.resume writes a new copy)"
        ) from exc
    panel = decode_panel(data, where)
    found = panel_fingerprint(panel)
    if found != fingerprint:
        raise RunFolderError(
            f"{where} has fingerprint {found[:16]}..., but the run used {fingerprint[:16]}...; "
            f"the copy was altered or damaged; {advice}"
        )
    return panel
