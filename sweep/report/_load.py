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
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from stats import FoldSummary, NullSummary
from sweep.common._range_set import RangeSet
from sweep.engine._metrics import block_columns
from sweep.report._config_scan import SCAN_COLUMNS, ConfigScan, ScanReducer, ScanSettings
from sweep.report._sweep_facts import REDUCED_COLUMNS, FactsReducer, SweepFacts, sweep_facts
from sweep.report._tested_configs import (
    BY_CONFIG_ID,
    TESTED_COLUMNS,
    Order,
    RowTest,
    TestedConfigs,
    TestedReducer,
    listed_rows,
)
from sweep.store._fold_summary import merged_folds
from sweep.store._part_audit import (
    PartAudit,
    PartAuditor,
    audit_here,
    audited_hash,
    merged_null_summary,
)
from sweep.store._record import Manifest
from sweep.store._run_store import QUARANTINE, PartCheck, RunRecord, RunStore
from sweep.store._table_hash import (
    TABLE_HASH_V1,
    canonical_order,
    canonical_order_of_keys,
    config_id_keys,
    hash_columns,
)

#: Telemetry rows are ordered by these columns (those present), so the report does not
#: depend on the order the files are listed in.
TELEMETRY_ORDER = ("session", "submit_time", "start_time", "end_time", "part")

#: Result columns the report computes over every config (with the grid's parameters that vary
#: and the heatmap's metric): the key, status and the selection metric. What the sweep-wide
#: tests need (``t_stat``, ``p_value``, ``excess_mean``) is reduced as the parts are read
#: (:mod:`sweep.report._tested_configs`). ``config_id`` is not held (a third of the bytes):
#: the frame is in its order, and :meth:`RunData.config_ids` reads back the ids of the few
#: rows the report names.
WHOLE_COLUMNS = (
    "grid_index",
    "status",
    "error",
    "excess_sharpe",
    "excess_sharpe_ann",
)

#: Columns held as pandas categoricals (with the grid's parameters): a byte or so per config
#: instead of a string or a float. :func:`values_of` gives a column's plain values back.
CATEGORICAL_COLUMNS = ("status", "error")


def values_of(frame: pd.DataFrame, column: str) -> pd.Series:
    """A column of the held results with its values as the parts hold them (not categorical)."""
    series = frame[column]
    if isinstance(series.dtype, pd.CategoricalDtype):
        return series.astype(series.dtype.categories.dtype)
    return series


def as_categorical(series: pd.Series) -> pd.Series:
    """The column as a categorical with its categories sorted (no copy if it is one)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return series
    return series.astype("category")


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
        The results of the parts that verified, sorted by ``config_id``, one row per config,
        indexed by position (empty when no good part exists): the columns of
        :data:`WHOLE_COLUMNS`, the grid's parameters that vary and the heatmap's metric and
        axes. :meth:`complete_rows` gives some rows with every column, :meth:`config_ids`
        their ids.
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
    row_order : ndarray of int32 or int64
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
    facts : SweepFacts
        What the report needs of the columns it reduces as it reads them
        (:data:`sweep.report._sweep_facts.REDUCED_COLUMNS`, not held per config).
    tested : TestedConfigs
        What the sweep-wide tests need of the ok configs' ``t``, p-values and means,
        reduced as the parts are read (not held per config).
    owned : dict of str to RangeSet
        The grid positions each good part counts, by name: its own, less those of a good
        part before it (a batch written twice counts once, in the first part).
    scan : ConfigScan
        The best configs, the moments of the selection metric and the report's samples,
        reduced as the parts are read.
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
    row_order: NDArray[np.integer] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    rows_in_parts: int = 0
    fold_summary: FoldSummary | None = None
    table_hash_version: str = TABLE_HASH_V1
    columns: tuple[str, ...] = ()
    facts: SweepFacts = field(default_factory=SweepFacts)
    tested: TestedConfigs = field(default_factory=TestedConfigs)
    owned: dict[str, RangeSet] = field(default_factory=dict)
    scan: ConfigScan = field(default_factory=ConfigScan)

    def rows_at(self, grid_index: NDArray[np.integer], columns: list[str]) -> pa.Table:
        """Some columns of the configs at some grid positions, read from the parts.

        Parameters
        ----------
        grid_index : ndarray of int
            Grid positions of done configs (distinct), in any order.
        columns : list of str
            Columns of the parts.

        Returns
        -------
        pyarrow.Table
            One row per position, in the order asked; only the parts that hold one are read.
        """
        pieces: list[pa.Table] = []
        where: list[NDArray[np.intp]] = []
        for name, hit, rows in self._rows_of(np.asarray(grid_index, dtype=np.int64)):
            part = self.store.read_part_columns(name, columns)
            pieces.append(part.take(pa.array(rows)).replace_schema_metadata(None))
            where.append(hit)
        if not pieces:
            return pa.table({c: pa.array([]) for c in columns})
        table = pa.concat_tables(pieces)
        return table.take(pa.array(np.argsort(np.concatenate(where), kind="stable")))

    def block_statistics_at(
        self, grid_index: NDArray[np.integer]
    ) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
        """The PBO block counts, sums and sums of squares of the configs at some positions.

        They are not held (``2 S + 1`` columns, half the table at S = 16) and are read
        from the parts that hold the configs when PBO needs them, each part's values
        written straight into their place.

        Returns
        -------
        counts : ndarray of int64, shape (len(grid_index),)
            Periods per block (``blk_n``).
        sums, sums_sq : ndarray of float64, shape (len(grid_index), S)
        """
        wanted = np.asarray(grid_index, dtype=np.int64)
        sums_cols, sq_cols = block_columns(self.manifest.run_key.pbo_blocks)
        counts = np.empty(len(wanted), dtype=np.int64)
        sums = np.empty((len(wanted), len(sums_cols)))
        sums_sq = np.empty((len(wanted), len(sq_cols)))
        for name, hit, rows in self._rows_of(wanted):
            part = self.store.read_part_columns(name, ["blk_n", *sums_cols, *sq_cols])
            counts[hit] = part.column("blk_n").to_numpy()[rows]
            for out, group in ((sums, sums_cols), (sums_sq, sq_cols)):
                for j, column in enumerate(group):
                    out[hit, j] = part.column(column).to_numpy()[rows]
        pa.default_memory_pool().release_unused()
        return counts, sums, sums_sq

    def _rows_of(
        self, wanted: NDArray[np.int64]
    ) -> Iterator[tuple[str, NDArray[np.intp], NDArray[np.intp]]]:
        """Each part that owns some of ``wanted``: its name, which ones, and their rows."""
        for name, owned in self.owned.items():
            hit = np.flatnonzero(owned.contains(wanted))
            if not hit.size:
                continue
            index = self.store.read_part_columns(name, ["grid_index"]).column(0).to_numpy()
            by_index = np.argsort(index, kind="stable")
            yield name, hit, by_index[np.searchsorted(index[by_index], wanted[hit])]

    def complete_rows_at(self, grid_index: NDArray[np.integer]) -> pd.DataFrame:
        """Every result column but the PBO block statistics, of the configs at some positions."""
        sums_cols, sq_cols = block_columns(self.manifest.run_key.pbo_blocks)
        blocks = set(sums_cols + sq_cols)
        columns = [c for c in self.columns if c not in blocks]
        rows: pd.DataFrame = self.rows_at(grid_index, columns).to_pandas()
        return rows

    @property
    def good_parts(self) -> list[str]:
        """The parts that verified, by name."""
        return [c.name for c in self.part_checks if c.ok]

    def listed(
        self,
        parts: list[str],
        columns: list[str],
        where: RowTest,
        most: int,
        order: Order = BY_CONFIG_ID,
    ) -> pa.Table:
        """The first ``most`` ok configs of ``parts`` that pass ``where`` (:func:`listed_rows`).

        A caller that knows which parts can hold one (:class:`TestedConfigs` keeps each
        part's largest ``t`` and smallest p-value) reads only those.
        """
        return listed_rows(self.store, parts, columns, where, most, order)

    def _parts_holding(
        self, rows: NDArray[np.integer]
    ) -> Iterator[tuple[str, NDArray[np.bool_], NDArray[np.intp]]]:
        """The good parts that hold some of ``rows`` (positions in ``results``, distinct).

        Yields each one's name, which of its rows they are, and where each goes in ``rows``.
        """
        dest = np.full(self.rows_in_parts, -1, dtype=np.intp)
        dest[self.row_order[rows]] = np.arange(len(rows))
        start = 0
        for check in self.part_checks:
            if not check.ok:
                continue
            to = dest[start : start + check.rows]
            start += check.rows
            keep = to >= 0
            if keep.any():
                yield check.name, keep, to[keep]

    def reread(self, rows: NDArray[np.integer], columns: list[str]) -> pa.Table:
        """Some columns of some rows of ``results``, read again from the good parts.

        Parameters
        ----------
        rows : ndarray of int
            Positions in ``results`` (distinct).
        columns : list of str
            Columns of the parts.

        Returns
        -------
        pyarrow.Table
            One row per position, in the order of ``rows``. Only the parts that hold one of
            them are read, one at a time.
        """
        pieces: list[pa.Table] = []
        where: list[NDArray[np.intp]] = []
        for name, keep, to in self._parts_holding(rows):
            part = self.store.read_part_columns(name, columns)
            pieces.append(part.filter(pa.array(keep)).replace_schema_metadata(None))
            where.append(to)
        if not pieces:
            return pa.table({c: pa.array([]) for c in columns})
        table = pa.concat_tables(pieces)
        return table.take(pa.array(np.argsort(np.concatenate(where), kind="stable")))

    def reread_floats(
        self, rows: NDArray[np.integer], *groups: list[str]
    ) -> list[NDArray[np.float64]]:
        """Numeric columns of some rows of ``results`` as float64, one array per group.

        Like :meth:`reread`, but each part's values are written straight into their place
        (no table of the rows is built), one pass over the parts for every group: for many
        rows, such as PBO's sample.

        Parameters
        ----------
        rows : ndarray of int
            Positions in ``results`` (distinct).
        *groups : list of str
            Numeric columns of the parts.

        Returns
        -------
        list of ndarray of float64
            For each group, shape ``(len(rows), len(group))``, rows in the order asked.
        """
        outs = [np.empty((len(rows), len(g))) for g in groups]
        columns = [c for g in groups for c in g]
        for name, keep, to in self._parts_holding(rows):
            part = self.store.read_part_columns(name, columns)
            for out, group in zip(outs, groups, strict=True):
                for j, column in enumerate(group):
                    out[to, j] = part.column(column).to_numpy()[keep]
        return outs

    def config_ids(self, rows: NDArray[np.integer]) -> list[str]:
        """The ``config_id`` of some rows of ``results`` (:meth:`reread`), in their order."""
        rows = np.asarray(rows, dtype=np.int64)
        if not rows.size:
            return []
        return [str(i) for i in self.reread(rows, ["config_id"]).column(0).to_pylist()]

    def block_statistics(
        self, rows: NDArray[np.integer]
    ) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
        """The PBO block counts, sums and sums of squares of some rows of ``results``.

        They are left out of ``results`` (``2 S + 1`` columns, half the table at S = 16) and
        read again from the good parts when PBO needs them (:meth:`reread_floats`), so the
        report holds them only for that step.

        Parameters
        ----------
        rows : ndarray of int
            Positions in ``results``.

        Returns
        -------
        counts : ndarray of int64, shape (len(rows),)
            Periods per block (``blk_n``).
        sums, sums_sq : ndarray of float64, shape (len(rows), S)
        """
        sums_cols, sq_cols = block_columns(self.manifest.run_key.pbo_blocks)
        counts, sums, sums_sq = self.reread_floats(
            np.asarray(rows, dtype=np.int64), ["blk_n"], sums_cols, sq_cols
        )
        pa.default_memory_pool().release_unused()
        return counts[:, 0].astype(np.int64), sums, sums_sq

    def complete_rows(self, rows: pd.DataFrame) -> pd.DataFrame:
        """Rows of ``results`` (or a selection of them) with every result column.

        The block statistics aside, every column of the parts as the parts hold it: those
        not held, and the categoricals, read again for these rows only (:meth:`reread`);
        the index and the order of ``rows`` are kept.
        """
        sums_cols, sq_cols = block_columns(self.manifest.run_key.pbo_blocks)
        blocks = set(sums_cols + sq_cols)
        columns = [c for c in self.columns if c not in blocks]
        missing = [
            c
            for c in columns
            if c not in rows.columns or isinstance(rows[c].dtype, pd.CategoricalDtype)
        ]
        if not missing or rows.empty:
            return rows
        positions = self.results.index.get_indexer(rows.index).astype(np.int64)
        extra = self.reread(positions, missing).to_pandas()
        extra.index = rows.index
        kept = rows.drop(columns=[c for c in missing if c in rows.columns])
        complete: pd.DataFrame = pd.concat([kept, extra], axis=1)[columns]
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
    store: RunStore,
    names: list[str],
    keep: list[str],
    categorical: set[str],
    v1: bool,
    tested: TestedReducer,
    scan: ScanReducer,
) -> tuple[pd.DataFrame, SweepFacts, str | None, NDArray[np.integer], int]:
    """The good parts' rows sorted by ``config_id`` (the columns ``keep``), and a v1 hash.

    Also the :class:`SweepFacts` (:data:`REDUCED_COLUMNS` are reduced, not held), each
    row's position in the good parts concatenated, and their row count; the
    :data:`TESTED_COLUMNS` are added to ``tested`` and not held. The columns in
    ``categorical`` are held as pandas categoricals.

    A folder with a v1 hash is read whole (:func:`_whole_table_results`: its recipe hashes
    every column in canonical order). Otherwise (:func:`_streamed_results`) ``config_id``
    alone is read first, for the order, then the parts one at a time, each numeric column
    written into its place in one preallocated array: the peak is the frame plus one part.
    """
    if not names:
        return pd.DataFrame(), SweepFacts(), None, np.zeros(0, dtype=np.int64), 0
    if v1:
        read = list(dict.fromkeys([*keep, *REDUCED_COLUMNS, *TESTED_COLUMNS, *SCAN_COLUMNS]))
        whole, digest, row_order, rows_in_parts = _whole_table_results(store, names, read)
        ok = (whole["status"] == "ok").to_numpy(dtype=bool)
        tested.add(
            None, {c: whole[c].to_numpy() for c in TESTED_COLUMNS}, ok, np.arange(len(whole))
        )
        scanned: dict[str, Any] = {c: whole[c].to_numpy() for c in SCAN_COLUMNS}
        scanned["config_id"] = pa.array(whole["config_id"], type=pa.string())
        scan.add(scanned, ok, np.ones(len(whole), dtype=bool))
        held = {
            c: as_categorical(whole[c]) if c in categorical else whole[c]
            for c in whole.columns
            if c in keep
        }
        facts = sweep_facts(whole)
        return pd.DataFrame(held, copy=False), facts, digest, row_order, rows_in_parts
    results, facts, row_order, rows_in_parts = _streamed_results(
        store, names, keep, categorical, tested, scan
    )
    return results, facts, None, row_order, rows_in_parts


def _whole_table_results(
    store: RunStore, names: list[str], keep: list[str]
) -> tuple[pd.DataFrame, str | None, NDArray[np.integer], int]:
    """Every column of the parts read at once, put in order a column at a time, v1-hashed.

    Each column is hashed, converted (if kept) and its unsorted copy dropped as it is taken
    (about one copy of the results at the peak).
    """
    table = pa.concat_tables([store.read_part_columns(name, None) for name in names])  # type: ignore[arg-type]
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

    digest = hash_columns(len(order), taken())
    return pd.DataFrame(columns, copy=False), digest, order.to_numpy(), rows_in_parts


def _row_destinations(
    store: RunStore, names: list[str]
) -> tuple[NDArray[np.integer], NDArray[np.integer]]:
    """Where each row of the parts (concatenated) goes in ``config_id`` order, and back.

    Returns ``(dest, order)``: ``dest[i]`` is row ``i``'s position in the results (-1 for
    the second copy of a repeated config), ``order`` its inverse. Only ``config_id`` is
    read, each id as its 128-bit value (:func:`config_id_keys`, 16 bytes); both are int32
    when the rows allow it.
    """
    parts: list[NDArray[np.uint64]] = []
    for name in names:
        keys = config_id_keys(store.read_part_columns(name, ["config_id"]).column(0))
        if keys is None:  # an id this engine would not write: sort the strings
            return _destinations(*_string_order(store, names))
        parts.append(keys)
    both = np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.uint64)
    del parts
    return _destinations(canonical_order_of_keys(both), len(both))


def _string_order(store: RunStore, names: list[str]) -> tuple[NDArray[np.intp], int]:
    """:func:`canonical_order` of the parts' ``config_id`` strings, and the row count."""
    ids = pa.concat_arrays(
        [c for n in names for c in store.read_part_columns(n, ["config_id"]).column(0).chunks]
    )
    return canonical_order(ids).to_numpy(), len(ids)


def _destinations(
    order: NDArray[np.intp], rows: int
) -> tuple[NDArray[np.integer], NDArray[np.integer]]:
    """``(dest, order)`` of :func:`_row_destinations` from the canonical order of ``rows``."""
    index_type = np.int32 if rows < 2**31 else np.int64
    order = order.astype(index_type)
    dest: NDArray[np.integer] = np.full(rows, -1, dtype=index_type)
    dest[order] = np.arange(len(order), dtype=index_type)
    return dest, order


def _is_numeric(kind: pa.DataType) -> bool:
    return bool(pa.types.is_integer(kind) or pa.types.is_floating(kind))


class _CategoryCodes:
    """A numeric column scattered as codes into its distinct values, a part at a time.

    What ``astype("category")`` makes of the whole column (categories sorted, a missing
    value coded -1), without the column's values: a part's distinct values are numbered as
    they come, and renumbered in sorted order at the end.
    """

    def __init__(self, rows: int) -> None:
        self.codes = np.empty(rows, dtype=np.int32)
        self.numbers: dict[Any, int] = {}
        self.dtype: np.dtype[Any] | None = None

    def add(self, array: NDArray[Any], to: NDArray[np.integer], mine: NDArray[np.bool_]) -> None:
        """Write the codes of one part's values ``array`` at their positions ``to[mine]``."""
        self.dtype = array.dtype if self.dtype is None else np.result_type(self.dtype, array.dtype)
        distinct, inverse = np.unique(array[mine], return_inverse=True)
        numbers = np.array(
            [
                -1 if v != v else self.numbers.setdefault(v, len(self.numbers))
                for v in distinct.tolist()
            ],
            dtype=np.int32,
        )
        self.codes[to[mine]] = numbers[inverse]

    def series(self) -> pd.Series:
        """The column as a pandas categorical."""
        values = pd.Index(list(self.numbers), dtype=self.dtype)
        by_value = np.argsort(values.to_numpy(), kind="stable")
        renumber = np.empty(len(values) + 1, dtype=np.int32)  # the last entry maps -1 to -1
        renumber[by_value] = np.arange(len(values), dtype=np.int32)
        renumber[-1] = -1
        codes = renumber[self.codes]
        return pd.Series(pd.Categorical.from_codes(codes, categories=values[by_value]), copy=False)


def _streamed_results(
    store: RunStore,
    names: list[str],
    keep: list[str],
    categorical: set[str],
    tested: TestedReducer,
    scan: ScanReducer,
) -> tuple[pd.DataFrame, SweepFacts, NDArray[np.integer], int]:
    """The columns ``keep`` (``config_id`` left out) in ``config_id`` order, a part at a time.

    A numeric column is scattered into one array (NumPy's dtype of the column, float64
    where a part holds a null, as pandas converts it), or into categorical codes when it is
    in ``categorical`` (a grid parameter); any other column (the status, an error message, a
    string parameter) is gathered as Arrow, put in order and held as a pandas categorical
    when it is in ``categorical``, as pandas converts it otherwise. :data:`REDUCED_COLUMNS`
    are reduced to the :class:`SweepFacts`, and :data:`TESTED_COLUMNS` added to ``tested``,
    part by part and not held.
    """
    dest, order = _row_destinations(store, names)
    n = len(order)
    held = [c for c in keep if c != "config_id"]
    present = set(store.read_part_schema(names[0]).names) if names else set()
    reduced = [c for c in REDUCED_COLUMNS if c not in held]
    reducer = FactsReducer() if {"status", *REDUCED_COLUMNS} <= present | set(held) else None
    reduced = reduced if reducer is not None else []
    testing = [c for c in TESTED_COLUMNS if c not in held and c not in reduced]
    scanning = [c for c in SCAN_COLUMNS if c not in {*held, *reduced, *testing}]
    numeric: dict[str, NDArray[Any]] = {}
    codes: dict[str, _CategoryCodes] = {}
    other: dict[str, list[pa.Array]] = {}
    start = 0
    for name in names:
        part = store.read_part_columns(name, [*held, *reduced, *testing, *scanning])
        to = dest[start : start + part.num_rows]
        start += part.num_rows
        mine = to >= 0
        ok = pc.fill_null(pc.equal(part.column("status"), "ok"), False).to_numpy()
        if reducer is not None:
            reducer.add({c: part.column(c).to_numpy() for c in REDUCED_COLUMNS}, ok & mine, to)
        tested.add(name, {c: part.column(c).to_numpy() for c in TESTED_COLUMNS}, ok & mine, to)
        scan.add(
            {
                "config_id": part.column("config_id"),
                **{c: part.column(c).to_numpy() for c in SCAN_COLUMNS if c != "config_id"},
            },
            ok,
            mine,
        )
        for column in held:
            values = part.column(column)
            if column in other or not _is_numeric(values.type):
                other.setdefault(column, []).extend(values.chunks)
                continue
            array = values.to_numpy()
            if column in categorical:
                codes.setdefault(column, _CategoryCodes(n)).add(array, to, mine)
                continue
            out = numeric.get(column)
            if out is None:
                out = numeric[column] = np.empty(n, dtype=array.dtype)
            elif out.dtype != array.dtype:  # ints in one part, floats (nulls) in another
                out = numeric[column] = out.astype(np.result_type(out.dtype, array.dtype))
            out[to[mine]] = array[mine]
        del part
    columns: dict[str, pd.Series] = {}
    for column in held:
        if column in numeric:
            columns[column] = pd.Series(numeric.pop(column), copy=False)
        elif column in codes:
            columns[column] = codes.pop(column).series()
        else:
            gathered = pa.concat_arrays(other.pop(column)).take(order)
            if column in categorical:
                gathered = gathered.dictionary_encode()
            columns[column] = gathered.to_pandas()
    facts = reducer.facts() if reducer is not None else SweepFacts()
    return pd.DataFrame(columns, copy=False), facts, order, len(dest)


def load_run(
    run_dir: str | os.PathLike[str],
    extra_columns: tuple[str, ...] = (),
    auditor: PartAuditor | None = None,
    settings: ScanSettings | None = None,
) -> RunData:
    """Read a run folder for the report.

    Parameters
    ----------
    run_dir : str or path
        The run folder (a path or a URI such as ``s3://bucket/prefix``).
    extra_columns : tuple of str
        Result columns to hold for every config besides :data:`WHOLE_COLUMNS` and the grid's
        parameters that vary (all of them if none does): the heatmap's metric and axes;
        names the parts lack are ignored.
    auditor : PartAuditor, optional
        How every part is checked and (v2) its rows hashed again: one pass over each part,
        here (the default) or as Ray tasks (``sweep.runner._pass_executor.PassExecutor``).
    settings : ScanSettings, optional
        How many best configs and sampled configs the read keeps (:class:`ConfigScan`).

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
    owned = owned_positions(good)
    all_columns = tuple(good[0].schema.names) if good and good[0].schema else ()
    params = manifest.grid.varying or manifest.grid.param_names
    wanted = {*WHOLE_COLUMNS, *params, *extra_columns}
    keep = [c for c in all_columns if c in wanted]  # the parts' order
    categorical = {*CATEGORICAL_COLUMNS, *params}
    # What the parts' footers give (their null summaries alone are ~140 kB a part) is taken
    # and dropped before the results are read, so the two never sit in memory together.
    v2_digest = audited_hash(store, good, manifest.total).digest if good and not v1 else None
    schemas = [a.schema for a in good if a.schema]
    null_summary = merged_null_summary(store, audits, passed) if good else None
    folds = merged_folds(schemas) if good else None
    del audits, good, schemas
    reducer = TestedReducer(null_summary)
    scanner = ScanReducer(settings or ScanSettings(), manifest.total)
    results, facts, digest, row_order, rows_in_parts = _good_results(
        store, names, keep, categorical, v1, reducer, scanner
    )
    tested = reducer.result()
    digest = v2_digest or digest
    if null_summary is not None and len(results) < rows_in_parts:  # a repeated batch counts once
        null_summary = replace(null_summary, n_configs=tested.finite_p)
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
        facts=facts,
        tested=tested,
        owned=owned,
        scan=scanner.result(),
    )


def owned_positions(good: list[PartAudit]) -> dict[str, RangeSet]:
    """The grid positions each good part counts: its own less those of the parts before it.

    ``good`` are the audits of the parts that verified, sorted by name. Parts that hold
    the same config hold identical rows (a conflict fails a part), so counting each config
    in the first part that holds it leaves every result as it is.
    """
    seen = RangeSet.empty()
    owned: dict[str, RangeSet] = {}
    for audit in good:
        mine = audit.positions if audit.positions is not None else RangeSet.empty()
        owned[audit.check.name] = mine.difference(seen)
        seen = seen.union(mine)
    return owned
