"""Read a run folder once for the report: manifest, part checks, good results, telemetry.

The report holds, for every config, only the columns it computes over all configs
(:data:`WHOLE_COLUMNS`, the grid's parameters and the heatmap's metric); every other result
column is read back from the parts for the few rows it shows (:meth:`RunData.complete_rows`:
the top-k and the winner), and the PBO block statistics for its sample
(:meth:`RunData.block_statistics`). The v2 table hash is recomputed from the parts' rows one
part at a time in the same pass that checks each part's bytes (the audits of ``sweep
verify``, :mod:`sweep.store._part_audit`: here or as Ray tasks), so no step needs the whole
table; a v1 folder's hash still reads every column (its recipe hashes the sorted table).
"""

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
from sweep.store._part_audit import PartAuditor, audit_here, audited_hash
from sweep.store._record import Manifest
from sweep.store._run_store import QUARANTINE, PartCheck, RunRecord, RunStore
from sweep.store._table_hash import TABLE_HASH_V1, canonical_order, hash_columns

#: Telemetry rows are ordered by these columns (those present), so the report does not
#: depend on the order the files are listed in.
TELEMETRY_ORDER = ("session", "submit_time", "start_time", "end_time", "part")

#: Result columns the report computes over every config (with the grid's parameters and the
#: heatmap's metric): keys, status, the selection metric and what the sweep-wide tests need.
WHOLE_COLUMNS = (
    "config_id",
    "grid_index",
    "status",
    "error",
    "excess_sharpe",
    "excess_sharpe_ann",
    "sharpe",
    "t_stat",
    "p_value",
    "n_obs",
    "excess_mean",
    "excess_std",
    "omega",
    "blk_n",
)


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
        (empty when no good part exists): the columns of :data:`WHOLE_COLUMNS`, the grid's
        parameters and the heatmap's metric. :meth:`complete_rows` gives some rows with
        every column.
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
    columns : tuple of str
        Every result column the parts hold, in their order.
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
    columns: tuple[str, ...] = ()

    def reread(self, rows: NDArray[np.int64], columns: list[str]) -> pa.Table:
        """Some columns of some rows of ``results``, read again from the good parts.

        Parameters
        ----------
        rows : ndarray of int64
            Positions in ``results`` (distinct).
        columns : list of str
            Columns of the parts.

        Returns
        -------
        pyarrow.Table
            One row per position, in the order of ``rows``. Only the parts that hold one of
            them are read, one at a time.
        """
        # Where each row of the good parts (concatenated) goes in the output, -1 if not asked.
        dest = np.full(self.rows_in_parts, -1)
        dest[self.row_order[rows]] = np.arange(len(rows))
        pieces: list[pa.Table] = []
        where: list[NDArray[np.int64]] = []
        start = 0
        for check in self.part_checks:
            if not check.ok:
                continue
            to = dest[start : start + check.rows]
            start += check.rows
            keep = to >= 0
            if keep.any():
                part = self.store.read_part_columns(check.name, columns)
                pieces.append(part.filter(pa.array(keep)).replace_schema_metadata(None))
                where.append(to[keep])
        if not pieces:
            return pa.table({c: pa.array([]) for c in columns})
        table = pa.concat_tables(pieces)
        return table.take(pa.array(np.argsort(np.concatenate(where), kind="stable")))

    def block_statistics(
        self, rows: NDArray[np.int64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The PBO block sums and sums of squares of some rows of ``results``.

        They are left out of ``results`` (``2 S`` columns, half the table at S = 16) and
        read again from the good parts when PBO needs them (:meth:`reread`), so the report
        holds them only for that step.

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
        out = np.empty((2, len(rows), s))
        if len(rows):
            table = self.reread(np.asarray(rows, dtype=np.int64), sums_cols + sq_cols)
            for j, name in enumerate(sums_cols + sq_cols):
                out[j // s, :, j % s] = table.column(name).to_numpy()
        pa.default_memory_pool().release_unused()
        return out[0], out[1]

    def complete_rows(self, rows: pd.DataFrame) -> pd.DataFrame:
        """Rows of ``results`` (or a selection of them) with every result column.

        The block statistics aside, every column of the parts, read again for these rows
        only (:meth:`reread`); the index and the order of ``rows`` are kept.
        """
        sums_cols, sq_cols = block_columns(self.manifest.run_key.pbo_blocks)
        blocks = set(sums_cols + sq_cols)
        columns = [c for c in self.columns if c not in blocks]
        missing = [c for c in columns if c not in rows.columns]
        if not missing or rows.empty:
            return rows
        positions = self.results.index.get_indexer(rows.index).astype(np.int64)
        extra = self.reread(positions, missing).to_pandas()
        extra.index = rows.index
        complete: pd.DataFrame = pd.concat([rows, extra], axis=1)[columns]
        return complete

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
    store: RunStore, names: list[str], keep: list[str], v1: bool
) -> tuple[pd.DataFrame, str | None, NDArray[np.int64], int]:
    """The good parts' rows sorted by ``config_id`` (the columns ``keep``), and a v1 hash.

    The last two values are each row's position in the good parts concatenated, and their
    row count.

    Only ``keep`` is read, unless the folder carries a v1 hash: its recipe hashes every
    column in canonical order, so the parts are read whole and the rows put in order one
    column at a time, each hashed, converted and its unsorted copy dropped as it is taken
    (about one copy of the results at the peak). A v2 hash comes from the parts' audits.
    """
    if not names:
        return pd.DataFrame(), None, np.zeros(0, dtype=np.int64), 0
    wanted = None if v1 else keep
    tables = [store.read_part_columns(name, wanted) for name in names]  # type: ignore[arg-type]
    table = pa.concat_tables(tables, promote_options="none")
    del tables
    rows_in_parts = table.num_rows
    order = canonical_order(table.column("config_id"))  # a repeated batch counts once
    unsorted = dict(zip(table.column_names, table.columns, strict=True))
    del table
    columns: dict[str, pd.Series] = {}

    def taken() -> Iterator[tuple[str, pa.ChunkedArray]]:
        for name in list(unsorted):
            column = unsorted.pop(name).take(order)  # the unsorted column is freed here
            if name in keep:
                columns[name] = column.to_pandas()
            yield name, column

    digest = hash_columns(len(order), taken()) if v1 else None
    for _ in taken():  # what v1 did not take
        pass
    results = pd.DataFrame(columns, copy=False)  # the parts' column order
    return results, digest, order.to_numpy(), rows_in_parts


def _summaries(
    schemas: list[pa.Schema], n_distinct: int, rows_in_parts: int, results: pd.DataFrame
) -> tuple[NullSummary | None, FoldSummary | None]:
    """The good parts' null and fold summaries merged, from their footers."""
    merged = merged_summary(schemas)
    if merged is not None and n_distinct < rows_in_parts:  # a repeated batch counts once
        finite = np.isfinite(results["p_value"].to_numpy(dtype=np.float64))
        merged = replace(merged, n_configs=int(finite.sum()))
    return merged, merged_folds(schemas)


def load_run(
    run_dir: str | os.PathLike[str],
    extra_columns: tuple[str, ...] = (),
    auditor: PartAuditor | None = None,
) -> RunData:
    """Read a run folder for the report.

    Parameters
    ----------
    run_dir : str or path
        The run folder (a path or a URI such as ``s3://bucket/prefix``).
    extra_columns : tuple of str
        Result columns to hold for every config besides :data:`WHOLE_COLUMNS` and the grid's
        parameters (the heatmap's metric); names the parts lack are ignored.
    auditor : PartAuditor, optional
        How every part is checked and (v2) its rows hashed again: one pass over each part,
        here (the default) or as Ray tasks (``sweep.runner._status.part_auditor``).

    Returns
    -------
    RunData
        Results come only from parts whose bytes match their names; a bad part's configs
        count as not done.
    """
    store = RunStore(run_dir)
    manifest = store.load_manifest()
    store.expectations()  # the manifest agrees with itself, or the folder is refused
    v1 = manifest.hash_version == TABLE_HASH_V1
    audits = (auditor or audit_here)(store, store.part_names(), not v1)
    judged = store.judge_conflicts([(a.check, a.positions) for a in audits])
    checks = sorted(judged, key=lambda c: c.name)
    passed = {c.name for c in checks if c.ok}
    good = sorted((a for a in audits if a.check.name in passed), key=lambda a: a.check.name)
    names = [a.check.name for a in good]
    all_columns = tuple(good[0].schema.names) if good and good[0].schema else ()
    wanted = {*WHOLE_COLUMNS, *manifest.grid.param_names, *extra_columns}
    keep = [c for c in all_columns if c in wanted]  # the parts' order
    results, digest, row_order, rows_in_parts = _good_results(store, names, keep, v1)
    if good and not v1:
        digest = audited_hash(store, good, manifest.total).digest
    null_summary, folds = (
        _summaries([a.schema for a in good if a.schema], len(results), rows_in_parts, results)
        if good
        else (None, None)
    )
    pa.default_memory_pool().release_unused()  # the parts' buffers, freed but kept
    telemetry_table = RunRecord(store, manifest, tuple(checks)).telemetry()
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
        columns=all_columns,
    )
