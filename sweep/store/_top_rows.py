"""The best rows of a run by one metric, streamed over parts (``sweep results --top K``).

THE order of ``sweep results``: by the metric, descending, missing values last, ties in
``config_id`` order (the canonical row order, :func:`sweep.store._table_hash.canonical_order`,
then pandas' stable sort). It is a total order on rows, so the best ``K`` of a run are the
best ``K`` of the best ``K`` of each part: :func:`best_of_parts` keeps at most ``K`` rows
(``config_id``, the metric and the part that holds it) while it reads the parts one at a
time, a part's two columns at once; :func:`top_rows` merges those lists (in one process or
from Ray tasks over groups of parts) and reads the whole rows of the ``K`` chosen from the
parts that hold them. The whole table is never built.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sweep.store._run_store import RunStore
from sweep.store._table_hash import sort_by_config_id

#: The column of a candidate list naming the part that holds the row.
PART_COLUMN = "__part__"


def best_rows(table: pa.Table, sort: str, top: int) -> pa.Table:
    """The ``top`` best rows of ``table`` in THE order (one row per ``config_id``)."""
    table = sort_by_config_id(table)
    values = table.column(sort).to_pandas()
    order = values.sort_values(ascending=False, na_position="last", kind="stable").index
    return table.take(pa.array(np.asarray(order[:top], dtype=np.int64)))


def _key_columns(sort: str) -> list[str]:
    return ["config_id"] if sort == "config_id" else ["config_id", sort]


def best_of_parts(location: str, names: Sequence[str], sort: str, top: int) -> pa.Table:
    """The ``top`` best rows of these parts: ``config_id``, ``sort`` and the part's name.

    Parameters
    ----------
    location : str
        The run folder (a Ray worker opens it there).
    names : sequence of str
        Checked parts.
    sort : str
        The metric.
    top : int
        How many rows to keep.

    Returns
    -------
    pyarrow.Table
        At most ``top`` rows in THE order, with :data:`PART_COLUMN`.
    """
    store = RunStore(location)
    columns = _key_columns(sort)
    kept: pa.Table | None = None
    for name in names:
        part = store.read_part_columns(name, columns)
        part = part.append_column(PART_COLUMN, pa.array([name] * part.num_rows, pa.string()))
        both = part if kept is None else pa.concat_tables([kept, part])
        kept = best_rows(both, sort, top)
    if kept is None:
        return pa.table({c: [] for c in [*columns, PART_COLUMN]})
    return kept


def top_rows(store: RunStore, candidates: Sequence[pa.Table], sort: str, top: int) -> pa.Table:
    """The whole rows of the ``top`` best among candidate lists of :func:`best_of_parts`.

    Parameters
    ----------
    store : RunStore
        The folder.
    candidates : sequence of pyarrow.Table
        Lists from :func:`best_of_parts` (non-empty ones).
    sort : str
        The metric.
    top : int
        How many rows.

    Returns
    -------
    pyarrow.Table
        Every column of the parts, at most ``top`` rows, in THE order.
    """
    chosen = best_rows(pa.concat_tables(candidates), sort, top)
    ids = chosen.column("config_id")
    parts = chosen.column(PART_COLUMN).to_pylist()
    pieces = []
    for name in dict.fromkeys(parts):
        wanted = ids.filter(pc.equal(chosen.column(PART_COLUMN), name))
        for batch in store.part_column_batches(name, None):
            keep = pc.is_in(batch.column("config_id"), wanted)
            if pc.any(keep).as_py():
                pieces.append(pa.Table.from_batches([batch.filter(keep)]))
    rows = pa.concat_tables(pieces)
    where = {cid: k for k, cid in enumerate(rows.column("config_id").to_pylist())}
    return rows.take(pa.array([where[cid] for cid in ids.to_pylist()], type=pa.int64()))
