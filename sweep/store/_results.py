"""Reading a run folder's results: the sorted table, a DataFrame, the table hash."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from sweep.errors import RunFolderError
from sweep.store._parts_hash import PartsHash, parts_hash
from sweep.store._run_store import RunStore
from sweep.store._table_hash import TABLE_HASH_V1, canonical_order, hash_columns, hash_version


def results_table(run_dir: str | os.PathLike[str], parts: list[str] | None = None) -> pa.Table:
    """Return every result of a run folder as one table sorted by ``config_id``.

    Parameters
    ----------
    run_dir : str or path
        The run folder.
    parts : list of str, optional
        Part names already checked (default: check every part).

    Returns
    -------
    pyarrow.Table
        One row per config of the parts that pass their check
        (:meth:`sweep.store._run_store.RunStore.check_part`; a config found in two parts, possible
        only         after a crash between a part's write and the driver's bookkeeping, is kept
        once: its rows are identical).
    """
    store = RunStore(run_dir)
    store.load_manifest()  # a clear error if this is not a run folder
    table = store.read_results(parts)
    return table.take(canonical_order(table.column("config_id")))


def load_results(run_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """Return a run folder's results as a pandas DataFrame sorted by ``config_id``.

    Parameters
    ----------
    run_dir : str or path
        The run folder.

    Returns
    -------
    pandas.DataFrame
        One row per config: ``config_id``, ``grid_index``, the parameters, ``status``,
        ``error`` and the metrics; the index is a plain RangeIndex.
    """
    frame: pd.DataFrame = results_table(run_dir).to_pandas()
    return frame


#: Uncompressed column bytes :func:`results_hash` reads at once: columns are read in groups
#: under this size (one column alone may exceed it), so small sweeps take one read of every
#: part and large ones stay within this much memory plus one sorted column.
HASH_READ_BYTES = 256 * 2**20


def results_hash(
    run_dir: str | os.PathLike[str],
    parts: list[str] | None = None,
    *,
    version: str | None = None,
) -> str:
    """Return the canonical table hash of a run folder's results (invariant 3).

    Parameters
    ----------
    run_dir : str or path
        The run folder.
    parts : list of str, optional
        The part names to hash (default: every part that passes its check).
    version : str, optional
        ``raysweep-table-v1`` or ``raysweep-table-v2`` (``v1``, ``v2``); default: the
        version the folder records (v1 for a folder that records none).

    Returns
    -------
    str
        The same hash as :func:`sweep.table_hash` of :func:`results_table` in that version.
        v2 is combined from the parts' stored digests (:func:`results_digest`); v1 streams
        the columns (:func:`results_hash_v1`).
    """
    store = RunStore(run_dir)
    manifest = store.load_manifest()
    chosen = manifest.hash_version if version is None else hash_version(version)
    names = store.good_parts()[0] if parts is None else parts
    if chosen == TABLE_HASH_V1:
        return results_hash_v1(store, names)
    return parts_hash(store, names, manifest.total).digest


def results_digest(
    run_dir: str | os.PathLike[str], parts: list[str], *, recompute: bool
) -> PartsHash:
    """The v2 hash of these parts, with the parts whose stored digest did not match.

    ``recompute``: hash every part's rows again (``sweep verify``) instead of adding the
    digests the parts carry (:mod:`sweep.store._parts_hash`).
    """
    store = RunStore(run_dir)
    return parts_hash(store, parts, store.load_manifest().total, recompute=recompute)


def results_hash_v1(store: RunStore, names: list[str]) -> str:
    """The v1 table hash of these parts of a folder (``raysweep-table-v1``).

    Streams groups of columns: the ``config_id`` column fixes the canonical row order, then
    each group of columns (at most :data:`HASH_READ_BYTES` uncompressed, by the parts'
    parquet footers) is read from every part, put in that order and hashed a column at a
    time, so memory stays bounded by one sorted column, not the table (but that column and
    the sort are O(configs): v2 is O(parts)).
    """
    filesystem, _ = store.fs.arrow()
    paths = [store.fs.join("parts", name) for name in names]
    if not paths:
        raise RunFolderError(f"run folder {store.location!r} has no results yet")
    dataset = ds.dataset(paths, format="parquet", filesystem=filesystem)
    order = canonical_order(dataset.to_table(columns=["config_id"]).column(0))
    groups = column_groups(dataset, HASH_READ_BYTES)

    def columns() -> Iterator[tuple[str, pa.ChunkedArray]]:
        for group in groups:
            table = dataset.to_table(columns=group)
            for name in group:
                yield name, table.column(name).take(order)

    return hash_columns(len(order), columns())


def column_groups(dataset: ds.FileSystemDataset, budget: int) -> list[list[str]]:
    """The dataset's columns, in order, grouped so each group's uncompressed size fits ``budget``.

    Sizes come from the parquet footers of every file; a column larger than ``budget`` is a
    group of its own.
    """
    names = dataset.schema.names
    sizes = dict.fromkeys(names, 0)
    for fragment in dataset.get_fragments():
        metadata = fragment.metadata
        for r in range(metadata.num_row_groups):
            row_group = metadata.row_group(r)
            for c in range(row_group.num_columns):
                column = row_group.column(c)
                top = column.path_in_schema.split(".")[0]
                sizes[top] = sizes.get(top, 0) + column.total_uncompressed_size
    groups: list[list[str]] = []
    used = 0
    for name in names:
        if not groups or used + sizes[name] > budget:
            groups.append([])
            used = 0
        groups[-1].append(name)
        used += sizes[name]
    return groups
