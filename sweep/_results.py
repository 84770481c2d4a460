"""Reading a run folder's results: the sorted table, a DataFrame, the table hash."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa

from sweep._store import RunStore
from sweep._table_hash import sort_by_config_id, table_hash


def results_table(run_dir: str | os.PathLike[str]) -> pa.Table:
    """Return every result of a run folder as one table sorted by ``config_id``.

    Parameters
    ----------
    run_dir : str or path
        The run folder.

    Returns
    -------
    pyarrow.Table
        One row per config (a config found in two parts, possible only after a crash between
        a part's write and the driver's bookkeeping, is kept once: its rows are identical).
    """
    table = sort_by_config_id(RunStore(run_dir).read_results())
    ids = table.column("config_id").to_numpy(zero_copy_only=False)
    if ids.shape[0] > 1:
        keep = np.concatenate([[True], ids[1:] != ids[:-1]])
        if not keep.all():
            table = table.filter(pa.array(keep))
    return table


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
    return results_table(run_dir).to_pandas()


def results_hash(run_dir: str | os.PathLike[str]) -> str:
    """Return the canonical table hash of a run folder's results (invariant 3)."""
    return table_hash(results_table(run_dir), presorted=True)
