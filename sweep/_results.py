"""Reading a run folder's results: the sorted table, a DataFrame, the table hash."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from sweep._store import RunStore
from sweep._table_hash import canonical_order, hash_columns
from sweep.errors import RunFolderError


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
        (:meth:`sweep._store.RunStore.check_part`; a config found in two parts, possible only
        after a crash between a part's write and the driver's bookkeeping, is kept once: its
        rows are identical).
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


def results_hash(run_dir: str | os.PathLike[str], parts: list[str] | None = None) -> str:
    """Return the canonical table hash of a run folder's results (invariant 3).

    ``parts`` are the part names to hash (default: every part that passes its check).

    Streams one column at a time: the ``config_id`` column fixes the canonical row order,
    then each column is read from every part, put in that order and hashed, so memory stays
    at about one column however large the sweep (the same hash as ``table_hash`` of
    :func:`results_table`).
    """
    store = RunStore(run_dir)
    filesystem, _ = store.fs.arrow()
    names = store.good_parts()[0] if parts is None else parts
    paths = [store.fs.join("parts", name) for name in names]
    if not paths:
        raise RunFolderError(f"run folder {store.location!r} has no results yet")
    dataset = ds.dataset(paths, format="parquet", filesystem=filesystem)
    order = canonical_order(dataset.to_table(columns=["config_id"]).column(0))
    names = dataset.schema.names

    def columns() -> Iterator[tuple[str, pa.ChunkedArray]]:
        for name in names:
            yield name, dataset.to_table(columns=[name]).column(0).take(order)

    return hash_columns(len(order), columns())
