"""Read a run folder once for the report: manifest, part checks, good results, telemetry."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import pyarrow as pa
from numpy.typing import NDArray

from stats import FoldSummary, NullSummary
from sweep.engine._metrics import block_columns
from sweep.store._fold_summary import merged_folds
from sweep.store._null_summary import merged_summary
from sweep.store._record import Manifest
from sweep.store._run_store import QUARANTINE, PartCheck, RunStore, read_run
from sweep.store._table_hash import TABLE_HASH_V1, canonical_order, hash_columns, table_hash

#: Telemetry rows are ordered by these columns (those present), so the report does not
#: depend on the order the files are listed in.
TELEMETRY_ORDER = ("session", "submit_time", "start_time", "end_time", "part")


@dataclass(frozen=True)
class RunData:
    """Everything the report reads from a run folder.

    Attributes
    ----------
    location : str
        The run folder (path or URI) as given.
    store : RunStore
        The store.
    manifest : Manifest
        ``manifest.json``, as the typed record.
    part_checks : list of PartCheck
        Every part re-hashed, sorted by name.
    results : pandas.DataFrame
        The results of the parts that verified, sorted by ``config_id``, one row per config
        (empty when no good part exists).
    table_hash : str or None
        Hash of those results (:func:`sweep.table_hash`), whatever their completeness, in
        the version the folder carries (``table_hash_version``), recomputed from the rows.
    telemetry : pandas.DataFrame or None
        One row per task, in a canonical order.
    quarantined : list of str
        Files in ``quarantine/`` (parts a resume moved aside), sorted.
    null_summary : NullSummary or None
        The good parts' null summaries merged (None without bootstrap, or when a good part
        lacks one).
    row_order : ndarray of int64
        Position, in the good parts concatenated in ``part_checks`` order, of each row of
        ``results``: how :meth:`block_statistics` puts re-read columns in the same order.
    rows_in_parts : int
        Rows of the good parts together (more than ``len(results)`` if a batch was repeated).
    fold_summary : FoldSummary or None
        The good parts' fold summaries merged (None without ``[validation]``).
    table_hash_version : str
        The table hash version the folder carries.
    """

    location: str
    store: RunStore
    manifest: Manifest
    part_checks: list[PartCheck]
    results: pd.DataFrame
    table_hash: str | None
    telemetry: pd.DataFrame | None
    quarantined: list[str]
    null_summary: NullSummary | None = None
    row_order: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    rows_in_parts: int = 0
    fold_summary: FoldSummary | None = None
    table_hash_version: str = TABLE_HASH_V1

    def block_statistics(
        self, rows: NDArray[np.int64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The PBO block sums and sums of squares of some rows of ``results``.

        They are left out of ``results`` (``2 S`` columns, half the table at S = 16) and
        read again from the good parts when PBO needs them, so the report holds them only
        for that step.

        Parameters
        ----------
        rows : ndarray of int64
            Positions in ``results``.

        Returns
        -------
        sums, sums_sq : ndarray of float64, shape (len(rows), S)
        """
        sums_cols, sq_cols = block_columns(self.manifest.run_key.pbo_blocks)
        s = len(sums_cols)
        # Where each row of the good parts (concatenated) goes in the output, -1 if not asked.
        dest = np.full(self.rows_in_parts, -1)
        dest[self.row_order[rows]] = np.arange(len(rows))
        out = np.empty((2, len(rows), s))
        start = 0
        for check in self.part_checks:
            if not check.ok:
                continue
            part = self.store.read_part_columns(check.name, sums_cols + sq_cols)
            to = dest[start : start + part.num_rows]
            start += part.num_rows
            keep = to >= 0
            for j, name in enumerate(sums_cols + sq_cols):
                out[j // s, to[keep], j % s] = part.column(name).to_numpy()[keep]
        pa.default_memory_pool().release_unused()
        return out[0], out[1]

    @property
    def total(self) -> int:
        """Configs in the grid."""
        return self.manifest.total

    @property
    def param_names(self) -> list[str]:
        """Grid parameters in grid order."""
        return self.manifest.grid.param_names

    @property
    def varying(self) -> list[str]:
        """Grid parameters with more than one value, in grid order."""
        return self.manifest.grid.varying

    @property
    def periods_per_year(self) -> float:
        """The spec's ``metrics.periods_per_year``."""
        return float(self.manifest.metric_options["periods_per_year"])


def _good_results(
    store: RunStore, checks: list[PartCheck], left_out: set[str], version: str
) -> tuple[
    pd.DataFrame, str | None, NullSummary | None, NDArray[np.int64], int, FoldSummary | None
]:
    """The good parts' rows sorted by ``config_id``, their table hash and null summary.

    Every column is hashed; those in ``left_out`` are not kept in the frame. The last three
    values are each row's position in the good parts concatenated, their row count, and the
    merged fold summary.

    The rows are put in canonical order one column at a time, each column hashed,
    converted and its unsorted copy dropped as it is taken, so the peak memory is about one
    copy of the results, not the parts, the sorted table and the frame together.
    """
    tables = [store.read_part_columns(c.name, None) for c in checks if c.ok]  # type: ignore[arg-type]
    if not tables:
        return pd.DataFrame(), None, None, np.zeros(0, dtype=np.int64), 0, None
    merged = merged_summary(t.schema for t in tables)
    folds = merged_folds(t.schema for t in tables)
    table = pa.concat_tables(tables, promote_options="none")
    del tables
    v2 = None if version == TABLE_HASH_V1 else table_hash(table, version=version)
    rows_in_parts = table.num_rows
    order = canonical_order(table.column("config_id"))  # a repeated batch counts once
    unsorted = dict(zip(table.column_names, table.columns, strict=True))
    del table
    columns: dict[str, pd.Series] = {}

    def taken() -> Iterator[tuple[str, pa.ChunkedArray]]:
        for name in list(unsorted):
            column = unsorted.pop(name).take(order)  # the unsorted column is freed here
            if name not in left_out:
                columns[name] = column.to_pandas()
            yield name, column

    if v2 is None:
        digest = hash_columns(len(order), taken())
    else:  # v2 was hashed from the rows above; the columns are only put in order
        for _ in taken():
            pass
        digest = v2
    results = pd.DataFrame(columns, copy=False)
    if merged is not None and len(results) < rows_in_parts:
        p = results["p_value"].to_numpy(dtype=np.float64)
        merged = replace(merged, n_configs=int(np.isfinite(p).sum()))
    return results, digest, merged, order.to_numpy(), rows_in_parts, folds


def load_run(run_dir: str | os.PathLike[str]) -> RunData:
    """Read a run folder for the report.

    Parameters
    ----------
    run_dir : str or path
        The run folder (a path or a URI such as ``s3://bucket/prefix``).

    Returns
    -------
    RunData
        Results come only from parts whose bytes match their names; a bad part's configs
        count as not done.
    """
    record = read_run(run_dir)
    store, manifest, checks = record.store, record.manifest, list(record.parts)
    sums_cols, sq_cols = block_columns(manifest.run_key.pbo_blocks)
    results, digest, null_summary, row_order, rows_in_parts, folds = _good_results(
        store, checks, set(sums_cols + sq_cols), manifest.hash_version
    )
    pa.default_memory_pool().release_unused()  # the parts' buffers, freed but kept
    telemetry_table = record.telemetry()
    telemetry = None
    if telemetry_table is not None and telemetry_table.num_rows:
        telemetry = telemetry_table.to_pandas()
        order = [c for c in TELEMETRY_ORDER if c in telemetry.columns]
        telemetry = telemetry.sort_values(order, kind="mergesort").reset_index(drop=True)
    quarantined = sorted(store.fs.listdir(store.fs.join(QUARANTINE)))
    return RunData(
        location=str(run_dir),
        store=store,
        manifest=manifest,
        part_checks=checks,
        results=results,
        table_hash=digest,
        telemetry=telemetry,
        quarantined=quarantined,
        null_summary=null_summary,
        row_order=row_order,
        rows_in_parts=rows_in_parts,
        fold_summary=folds,
        table_hash_version=manifest.hash_version,
    )
