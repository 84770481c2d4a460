"""Reading price files from anywhere pyarrow reads: local paths, ``s3://``, ``gs://``, ...

A source is one file (CSV, gzipped CSV or parquet) or a folder of such files (one per
asset). Its bytes are read through a pyarrow filesystem, then parsed with pandas; a CSV's
editor line numbers are recovered from the same bytes, only when an error needs them.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from sweep.common._fs import is_uri
from sweep.errors import DataError

#: File name endings the loader reads.
SUFFIXES = (".csv", ".csv.gz", ".parquet")

#: The name of a data row in messages: ``row -> "line 17"``.
RowName = Callable[[int], str]


def row_label(row: int) -> str:
    """A frame's or a parquet file's row (from 0), for messages."""
    return f"row {row}"


def suffix_of(name: str) -> str | None:
    """The loader's suffix a file name ends with (None for any other file)."""
    lower = name.lower()
    return next((s for s in SUFFIXES if lower.endswith(s)), None)


def stem_of(name: str) -> str:
    """A file name without its loader suffix (``AAPL.csv.gz`` -> ``AAPL``)."""
    suffix = suffix_of(name)
    return name[: len(name) - len(suffix)] if suffix else name


@dataclass(frozen=True)
class SourceFile:
    """One file of a source: where it is and how to name it in messages."""

    filesystem: pafs.FileSystem
    path: str
    label: str

    @property
    def name(self) -> str:
        """The file name (last path part)."""
        return self.path.rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Source:
    """A data location opened: its files (one, or a folder's) and whether it is a folder."""

    location: str
    files: tuple[SourceFile, ...]
    folder: bool


def _open(location: str) -> tuple[pafs.FileSystem, str]:
    if location.startswith("file://"):
        return pafs.LocalFileSystem(), location.removeprefix("file://")
    if is_uri(location):
        try:
            filesystem, path = pafs.FileSystem.from_uri(location)
            return filesystem, str(path)
        except (ValueError, OSError) as exc:  # pyarrow.ArrowInvalid is a ValueError
            raise DataError(
                f"data.path: cannot open {location!r}: {exc}; expected a local path or a URI "
                "pyarrow reads, such as s3://bucket/prices.parquet or gs://bucket/prices/"
            ) from exc
    return pafs.LocalFileSystem(), str(Path(location).absolute())


def _label(location: str, path: str, filesystem: pafs.FileSystem) -> str:
    """How a file is named in messages: its local path, or the URI without its query."""
    if isinstance(filesystem, pafs.LocalFileSystem):
        return path
    return location.split("?", 1)[0]


def open_source(location: str) -> Source:
    """Open a data location: one file, or a folder of per-asset files.

    Parameters
    ----------
    location : str
        A local path, ``file://`` URI, or a URI pyarrow reads (``s3://bucket/key``, with
        ``?endpoint_override=...&scheme=http`` for an S3-compatible store; credentials from
        the usual ``AWS_*`` variables), to a ``.csv``, ``.csv.gz`` or ``.parquet`` file or a
        folder of them.

    Returns
    -------
    Source

    Raises
    ------
    DataError
        Nothing there, an unreachable store, a file of another kind, or a folder without
        price files.
    """
    filesystem, path = _open(location)
    try:
        info = filesystem.get_file_info(path)
    except OSError as exc:
        raise DataError(
            f"data.path: cannot reach {location!r}: {exc}; check the path or URI (bucket, "
            "endpoint_override, scheme) and the credentials (AWS_* variables for S3)"
        ) from exc
    if info.type == pafs.FileType.NotFound:
        raise DataError(f"data.path: file {location!r} does not exist")
    if info.type == pafs.FileType.Directory:
        return _folder(location, filesystem, path)
    if suffix_of(path) is None:
        raise DataError(
            f"data.path: expected a .parquet, .csv or .csv.gz file or a folder of them, got "
            f"{location!r}"
        )
    return Source(
        location, (SourceFile(filesystem, path, _label(location, path, filesystem)),), False
    )


def _folder(location: str, filesystem: pafs.FileSystem, path: str) -> Source:
    selector = pafs.FileSelector(path, recursive=False)
    try:
        infos = filesystem.get_file_info(selector)
    except OSError as exc:
        raise DataError(f"data.path: cannot list the folder {location!r}: {exc}") from exc
    files = sorted(
        (i.path for i in infos if i.type == pafs.FileType.File and suffix_of(i.base_name)),
        key=lambda p: p.rsplit("/", 1)[-1],
    )
    if not files:
        raise DataError(
            f"data.path: {location!r} is a directory with no .csv, .csv.gz or .parquet file; "
            "expected a price file, or a folder of per-asset files (AAPL.csv, MSFT.parquet, "
            "...)"
        )
    base = location.split("?", 1)[0].rstrip("/")
    entries = tuple(
        SourceFile(
            filesystem,
            p,
            p if isinstance(filesystem, pafs.LocalFileSystem) else f"{base}/{p.rsplit('/', 1)[-1]}",
        )
        for p in files
    )
    return Source(location, entries, True)


def read_bytes(file: SourceFile) -> bytes:
    """A file's whole contents (:class:`DataError` naming it when unreadable)."""
    try:
        with file.filesystem.open_input_stream(file.path, compression=None) as fh:
            return bytes(fh.read())
    except OSError as exc:
        raise DataError(f"data.path: could not read {file.label!r}: {exc}") from exc


class CsvLines:
    """The editor line and text of each data row of a CSV file, read on demand.

    Only an error message needs them, so the text is scanned again with the :mod:`csv`
    module (which follows quoted line breaks) only then. The header is line 1; blank lines
    count as lines but hold no row, as pandas skips them.
    """

    def __init__(self, text: str, n_rows: int) -> None:
        self._text = text
        self._n_rows = n_rows

    @cached_property
    def _records(self) -> list[tuple[int, list[str]]] | None:
        records: list[tuple[int, list[str]]] = []
        reader = csv.reader(io.StringIO(self._text, newline=""))
        previous = 0
        for record in reader:
            if record and not (len(record) == 1 and not record[0].strip()):
                records.append((previous + 1, record))
            previous = reader.line_num
        rows = records[1:]  # the first record is the header
        return rows if len(rows) == self._n_rows else None

    def __call__(self, row: int) -> str:
        records = self._records
        return f"line {records[row][0]}" if records is not None else f"data row {row + 1}"

    def text(self, row: int, column: int) -> str | None:
        """The text of a cell as written in the file (None when unknown)."""
        records = self._records
        if records is None:
            return None
        cells = records[row][1]
        return cells[column] if column < len(cells) else ""


def check_column_names(source: str, header: Sequence[str]) -> None:
    """Refuse a header with an empty column name, or that names a column twice.

    The first column may be unnamed when no column is called ``date``: it is then the
    dates (pandas writes an unnamed index so), as the layouts read it.

    Parameters
    ----------
    source : str
        The file, for the message.
    header : sequence of str
        The column names in file order.

    Raises
    ------
    DataError
        Naming the column by its position from 1 (both positions for a repeat).
    """
    seen: dict[str, int] = {}
    for pos, name in enumerate(header, start=1):
        if not name.strip() and (pos > 1 or "date" in header):
            raise DataError(
                f"{source}: the header has an empty column name at column {pos} of "
                f"{len(header)} (got {name!r}); expected a name for every column (a trailing "
                "comma in the header makes an empty last column)"
            )
        if name in seen:
            raise DataError(
                f"{source}: column {name!r} appears more than once in the header (columns "
                f"{seen[name]} and {pos}); expected unique column names"
            )
        seen[name] = pos


def _csv_text(file: SourceFile, data: bytes) -> str:
    try:
        raw = gzip.decompress(data) if file.path.lower().endswith(".gz") else data
        return raw.decode("utf-8-sig")
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DataError(f"data.path: could not read {file.label!r}: {exc}") from exc


def _csv_header(file: SourceFile, text: str) -> list[str]:
    try:
        for record in csv.reader(io.StringIO(text, newline="")):
            if record:
                return record
    except csv.Error as exc:
        raise DataError(f"data.path: could not read {file.label!r}: {exc}") from exc
    raise DataError(f"{file.label}: the file is empty; expected a header line")


def read_table(file: SourceFile) -> tuple[pd.DataFrame, RowName]:
    """Read one file as a frame (every cell of a CSV as text but numbers), with row names.

    A CSV is read without turning any text into NaN: an empty cell stays ``""`` (a missing
    price), and text such as ``NA`` stays text (refused later, naming it). A parquet file's
    nulls are missing values.
    """
    data = read_bytes(file)
    try:
        if suffix_of(file.path) == ".parquet":
            parquet = pq.ParquetFile(pa.BufferReader(data))
            check_column_names(file.label, parquet.schema_arrow.names)
            df = parquet.read().to_pandas()
            return (df.reset_index() if isinstance(df.index, pd.DatetimeIndex) else df), row_label
        text = _csv_text(file, data)
        header = _csv_header(file, text)
        check_column_names(file.label, header)
        date_col = "date" if "date" in header else header[0]
        df = pd.read_csv(io.StringIO(text), dtype={date_col: str, "asset": str}, na_filter=False)
    except DataError:
        raise
    except Exception as exc:
        raise DataError(f"data.path: could not read {file.label!r}: {exc}") from exc
    return df, CsvLines(text, len(df))
