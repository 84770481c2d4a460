"""Read a run folder once for the report: manifest, part checks, reductions, telemetry.

The report holds nothing per config. One pass over the good parts gives every figure it
computes over all configs to reducers that keep a bounded state: the facts
(:mod:`sweep.report._sweep_facts`), what the sweep-wide tests need
(:mod:`sweep.report._tested_configs`), the best configs, the moments of the selection
metric, the counts of the integrity section, the grid axes' values and the report's samples
(:mod:`sweep.report._config_scan`). The pass runs over groups of parts where the report's
passes run (a :class:`sweep.store._part_mapper.PartMapper`: here, one part at a time, or
as Ray tasks), each group into its own reducers, which are merged here; every reducer merges
exactly, so the result does not depend on the groups. The distribution of the Sharpe ratios
and the heatmap take passes of their own the same way (:meth:`RunData.map_counted`), and
the few configs the report shows are read back from the part that holds each
(:meth:`RunData.rows_at`). Every reduction is exact or breaks ties by ``config_id`` or grid
index, so nothing depends on how the configs were batched. The v2 table hash is recomputed
from the parts' rows one part at a time in the same pass that checks each part's bytes (the
audits of ``sweep verify``, :mod:`sweep.store._part_audit`: here or as Ray tasks); a v1
folder's hash still reads every column (its recipe hashes the sorted table).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
from numpy.typing import NDArray

from stats import FoldSummary, NullSummary
from sweep.common._range_set import RangeSet
from sweep.engine._metrics import block_columns
from sweep.report._axis_values import recorded_axes
from sweep.report._config_scan import ConfigScan, ScanReducer, ScanSettings
from sweep.report._options import ReportOptions
from sweep.report._sweep_facts import REDUCED_COLUMNS, FactsReducer, SweepFacts
from sweep.report._tested_configs import (
    BY_CONFIG_ID,
    TESTED_COLUMNS,
    Order,
    RowTest,
    TestedConfigs,
    TestedReducer,
    listed_rows,
    ok_rows,
)
from sweep.store._fold_summary import merged_folds
from sweep.store._part_audit import (
    PartAudit,
    PartAuditor,
    audit_here,
    audited_environments,
    audited_hash,
    merged_null_summary,
)
from sweep.store._part_environment import EnvironmentUse
from sweep.store._part_mapper import PartMapper, map_here
from sweep.store._record import Manifest
from sweep.store._run_store import QUARANTINE, PartCheck, RunRecord, RunStore
from sweep.store._table_hash import (
    TABLE_HASH_V1,
    canonical_order,
    hash_columns,
)

T = TypeVar("T")

#: Times a phase of :func:`load_run`: ``timed(name)`` is a context manager around it.
Timer = Callable[[str], AbstractContextManager[None]]
#: The phases of :func:`load_run`, as the report names its steps.
CHECK_STEP = "read and verify the run folder"
REDUCE_STEP = "reduce the results"

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
    table_hash : str or None
        Hash of the results of the parts that verified (:func:`sweep.table_hash`),
        whatever their completeness, in the version the folder carries
        (``table_hash_version``), recomputed from the rows.
    telemetry : pandas.DataFrame or None
        One row per task, in a canonical order.
    quarantined : list of str
        Files in ``quarantine/`` (parts a resume moved aside), sorted.
    null_summary : NullSummary or None
        The good parts' null summaries merged (None without bootstrap, or when a good part
        lacks one).
    rows_in_parts : int
        Rows of the good parts together (more than the configs done if a batch was
        repeated).
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
    mapper : PartMapper
        Where passes over the good parts run (:meth:`map_counted`): here, or Ray tasks.
    environments : tuple of EnvironmentUse
        The environments that computed the good parts (from the footers the audits read).
    """

    location: str
    store: RunStore
    manifest: Manifest
    part_checks: list[PartCheck]
    table_hash: str | None
    telemetry: pd.DataFrame | None
    quarantined: list[str]
    null_summary: NullSummary | None = None
    rows_in_parts: int = 0
    fold_summary: FoldSummary | None = None
    table_hash_version: str = TABLE_HASH_V1
    columns: tuple[str, ...] = ()
    facts: SweepFacts = field(default_factory=SweepFacts)
    tested: TestedConfigs = field(default_factory=TestedConfigs)
    owned: dict[str, RangeSet] = field(default_factory=dict)
    scan: ConfigScan = field(default_factory=ConfigScan)
    mapper: PartMapper = map_here
    environments: tuple[EnvironmentUse, ...] = ()

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
        for part, hit, rows in self._rows_of(np.asarray(grid_index, dtype=np.int64), columns):
            taken = part.select(columns).take(pa.array(rows))
            pieces.append(taken.replace_schema_metadata(None))
            where.append(hit)
        if not pieces:
            return pa.table({c: pa.array([]) for c in columns})
        table = pa.concat_tables(pieces)
        return table.take(pa.array(np.argsort(np.concatenate(where), kind="stable")))

    def map_counted(
        self, body: Callable[..., T], args: tuple[Any, ...], parts: list[str] | None = None
    ) -> Iterable[T]:
        """``body(location, group, owned, *args)`` over groups of the good parts (or ``parts``).

        Where the read pass ran (:attr:`mapper`: here, or a backend's tasks); ``owned`` is
        :attr:`owned`, for :func:`counted_rows`. The results are in the order of the groups,
        to be folded as they come (a mapper may yield them one at a time).
        """
        names = list(self.owned) if parts is None else parts
        return self.mapper(body, self.store, names, (self.owned, *args))

    def _rows_of(
        self, wanted: NDArray[np.int64], columns: list[str]
    ) -> Iterator[tuple[pa.Table, NDArray[np.intp], NDArray[np.intp]]]:
        """Each part that owns some of ``wanted``: its ``columns``, which ones, their rows.

        One read of each such part (``grid_index`` with the columns), in the parts' order;
        which part owns each position is found in one search over every part's ranges.
        """
        read = list(dict.fromkeys(["grid_index", *columns]))
        names = list(self.owned)
        owner = owner_of(self.owned, wanted)
        order = np.argsort(owner, kind="stable")
        sorted_owner = owner[order]
        starts = np.searchsorted(sorted_owner, np.arange(len(names) + 1))
        for k in np.unique(sorted_owner[sorted_owner >= 0]):
            hit = order[starts[k] : starts[k + 1]]
            part = self.store.read_part_columns(names[k], read)
            index = part.column("grid_index").to_numpy()
            by_index = np.argsort(index, kind="stable")
            yield part, hit, by_index[np.searchsorted(index[by_index], wanted[hit])]

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


#: A pass found other configs than the read before it.
_FOLDER_CHANGED = "the run folder changed while the report read it: run sweep report again"


def owner_of(owned: dict[str, RangeSet], positions: NDArray[np.int64]) -> NDArray[np.intp]:
    """Which part counts each position: its rank in ``owned`` (-1: none).

    The parts' owned ranges are disjoint (:func:`owned_positions`), so one sorted search
    over all of them answers every position: ``O((P + R) log R)`` for ``P`` positions and
    ``R`` ranges, not a search per part.
    """
    sets = list(owned.values())
    starts = np.concatenate([np.zeros(0, dtype=np.int64), *(r.starts for r in sets)])
    stops = np.concatenate([np.zeros(0, dtype=np.int64), *(r.stops for r in sets)])
    part = np.repeat(np.arange(len(sets), dtype=np.intp), [r.n_ranges for r in sets])
    if not starts.size:
        return np.full(len(positions), -1, dtype=np.intp)
    order = np.argsort(starts, kind="stable")
    starts, stops, part = starts[order], stops[order], part[order]
    at = np.searchsorted(starts, positions, side="right") - 1
    clipped = np.maximum(at, 0)
    inside = (at >= 0) & (positions < stops[clipped])
    found: NDArray[np.intp] = np.where(inside, part[clipped], -1)
    return found


def counted_rows(
    store: RunStore, names: list[str], owned: dict[str, RangeSet], columns: list[str]
) -> Iterator[tuple[pa.Table, NDArray[np.bool_]]]:
    """Each of some good parts' ``columns``, and which rows count: ok, and owned by the part.

    A config in two parts (a batch written twice, identical rows) is counted in the first
    (``owned``, :func:`owned_positions`). One part is read at a time.
    """
    read = list(dict.fromkeys(["grid_index", "status", *columns]))
    for name in names:
        part = store.read_part_columns(name, read)
        ok = ok_rows(part)
        yield part, ok & owned[name].contains(part.column("grid_index").to_numpy())


def _v1_digest(store: RunStore, names: list[str]) -> str | None:
    """The v1 table hash of the good parts: every column read at once, in canonical order.

    Its recipe hashes the sorted table, so a v1 folder alone costs a whole table here; each
    column is hashed and dropped as it is taken.
    """
    table = pa.concat_tables([store.read_part_columns(name, None) for name in names])  # type: ignore[arg-type]
    order = canonical_order(table.column("config_id"))  # a repeated batch counts once
    unsorted = dict(zip(table.column_names, table.columns, strict=True))
    del table

    def taken() -> Iterator[tuple[str, pa.ChunkedArray]]:
        for name in list(unsorted):
            yield name, unsorted.pop(name).take(order)  # the unsorted column is freed here

    return hash_columns(len(order), taken())


@dataclass
class PartsRead:
    """What one group of parts gives the report's reducers (:func:`read_part_group`).

    Attributes
    ----------
    rows : int
        Rows of the parts (a repeated batch's rows included).
    facts, tested, scan : FactsReducer, TestedReducer, ScanReducer
        The reducers, fed the rows each part counts; merged in the driver.
    """

    rows: int
    facts: FactsReducer
    tested: TestedReducer
    scan: ScanReducer

    def merge(self, other: PartsRead) -> None:
        """Take another group's reductions (none depends on the order of merging)."""
        self.rows += other.rows
        self.facts.merge(other.facts)
        self.tested.merge(other.tested)
        self.scan.merge(other.scan)


@dataclass(frozen=True)
class ReadPlan:
    """What every group of the read pass needs: the same for each (travels with each task).

    Attributes
    ----------
    owned : dict of str to RangeSet
        The grid positions each good part counts (:func:`owned_positions`).
    present : frozenset of str
        The columns the parts hold.
    settings : ScanSettings
        Sizes of the best configs and samples.
    total : int
        Configs in the grid.
    params : list of str
        The grid's parameters.
    null_summary : NullSummary or None
        The merged null summary the configs' ``t`` are counted against.
    axes : dict of str to ndarray
        The parameters' recorded values (the values seen are kept as bitmaps over them).
    """

    owned: dict[str, RangeSet]
    present: frozenset[str]
    settings: ScanSettings
    total: int
    params: list[str]
    null_summary: NullSummary | None
    axes: dict[str, NDArray[Any]] = field(default_factory=dict)

    def reducers(self) -> PartsRead:
        """Empty reducers of this plan."""
        return PartsRead(
            0,
            FactsReducer(),
            TestedReducer(self.null_summary),
            ScanReducer(self.settings, self.total, self.params, self.axes),
        )


def read_part_group(location: str, names: list[str], plan: ReadPlan) -> PartsRead:
    """Read some good parts, a part at a time, into fresh reducers (a Ray task's body).

    Each part's rows that it counts (``plan.owned``) are given to the reducers; nothing is
    kept per config. The tested reducer comes back without the null summary, and the
    samples' candidates cut to the samples' sizes (what travels back is bounded by them).
    """
    store = RunStore(location)
    read = plan.reducers()
    scan_columns = read.scan.columns
    columns = list(dict.fromkeys([*REDUCED_COLUMNS, *TESTED_COLUMNS, *scan_columns]))
    for name in names:
        part = store.read_part_columns(name, [c for c in columns if c in plan.present])
        read.rows += part.num_rows
        index = part.column("grid_index").to_numpy()
        mine = plan.owned[name].contains(index)
        ok = ok_rows(part)
        if set(REDUCED_COLUMNS) <= plan.present:
            read.facts.add(
                {c: part.column(c).to_numpy() for c in REDUCED_COLUMNS}, ok & mine, index
            )
        if set(TESTED_COLUMNS) <= plan.present:
            read.tested.add(
                name,
                {c: part.column(c).to_numpy() for c in TESTED_COLUMNS},
                ok & mine,
                part.column("config_id"),
            )
        read.scan.add({c: part.column(c) for c in scan_columns}, ok, mine)
        del part
    read.scan.cut()
    return replace(read, tested=read.tested.detached())


def read_parts(mapper: PartMapper, store: RunStore, plan: ReadPlan) -> PartsRead:
    """Every good part read into the reducers, where ``mapper`` runs the groups; merged here.

    Each group's answer is folded into one running state as it comes (none is kept), so
    the driver holds that state and one answer, whatever the number of parts or groups.
    """
    total = plan.reducers()
    for group in mapper(read_part_group, store, list(plan.owned), (plan,)):
        total.merge(group)
        del group
    return total


def load_run(
    run_dir: str | os.PathLike[str],
    auditor: PartAuditor | None = None,
    settings: ScanSettings | None = None,
    mapper: PartMapper | None = None,
    timed: Timer | None = None,
) -> RunData:
    """Read a run folder for the report.

    Parameters
    ----------
    run_dir : str or path
        The run folder (a path or a URI such as ``s3://bucket/prefix``).
    auditor : PartAuditor, optional
        How every part is checked and (v2) its rows hashed again: one pass over each part,
        here (the default) or as Ray tasks (``sweep.runner._pass_executor.PassExecutor``).
    settings : ScanSettings, optional
        How many best configs and sampled configs the read keeps (:class:`ConfigScan`).
    mapper : PartMapper, optional
        Where the pass that reads the good parts into the reducers runs: here (the
        default, one part at a time) or as Ray tasks over groups of parts
        (``PassExecutor.map_parts``); the reductions are merged here, the same either way.
    timed : callable, optional
        Times the two phases, ``timed(name)`` a context manager around each (the report's
        steps): :data:`CHECK_STEP` (the audits, the hash, the footers' summaries) and
        :data:`REDUCE_STEP` (the pass into the reducers).

    Returns
    -------
    RunData
        Results come only from parts whose bytes match their names; a bad part's configs
        count as not done.
    """
    timed = timed or _untimed
    with timed(CHECK_STEP):
        store = RunStore(run_dir)
        manifest = store.load_manifest()
        store.expectations()  # the manifest agrees with itself, or the folder is refused
        checked = _checked(store, manifest, auditor or audit_here)
    with timed(REDUCE_STEP):
        return _reduced(str(run_dir), store, manifest, checked, settings, mapper or map_here)


@dataclass(frozen=True)
class _Checked:
    """What the audit pass gives :func:`load_run`'s reduction (the parts' footers dropped)."""

    checks: list[PartCheck]
    owned: dict[str, RangeSet]
    columns: tuple[str, ...]
    digest: str | None
    environments: tuple[EnvironmentUse, ...]
    null_summary: NullSummary | None
    folds: FoldSummary | None


def _checked(store: RunStore, manifest: Manifest, auditor: PartAuditor) -> _Checked:
    """Audit every part, judge conflicts, hash the good parts, merge their footers' summaries."""
    v1 = manifest.hash_version == TABLE_HASH_V1
    audits = auditor(store, store.part_names(), not v1)
    judged = store.judge_conflicts([(a.check, a.positions) for a in audits])
    checks = sorted(judged, key=lambda c: c.name)
    passed = {c.name for c in checks if c.ok}
    good = sorted((a for a in audits if a.check.name in passed), key=lambda a: a.check.name)
    names = [a.check.name for a in good]
    owned = owned_positions(good)
    all_columns = tuple(good[0].schema.names) if good and good[0].schema else ()
    # What the parts' footers give (their null summaries alone are ~140 kB a part) is taken
    # and dropped before the results are read, so the two never sit in memory together.
    v2_digest = audited_hash(store, good, manifest.total).digest if good and not v1 else None
    schemas = [a.schema for a in good if a.schema]
    environments = audited_environments(good)
    null_summary = merged_null_summary(store, audits, passed) if good else None
    folds = merged_folds(schemas) if good else None
    del audits, good, schemas
    digest = v2_digest if not v1 else (_v1_digest(store, names) if names else None)
    return _Checked(checks, owned, all_columns, digest, environments, null_summary, folds)


def _reduced(
    location: str,
    store: RunStore,
    manifest: Manifest,
    checked: _Checked,
    settings: ScanSettings | None,
    mapper: PartMapper,
) -> RunData:
    """The good parts read into the reducers (where ``mapper`` runs), and the telemetry."""
    null_summary = checked.null_summary
    plan = ReadPlan(
        checked.owned,
        frozenset(checked.columns),
        settings or ScanSettings(),
        manifest.total,
        manifest.grid.param_names,
        null_summary,
        recorded_axes(manifest.grid),
    )
    read = read_parts(mapper, store, plan)
    rows_in_parts = read.rows
    tested, scan = read.tested.result(), read.scan.result()
    if null_summary is not None and scan.done < rows_in_parts:  # a repeated batch counts once
        null_summary = replace(null_summary, n_configs=tested.finite_p)
    pa.default_memory_pool().release_unused()  # the parts' buffers, freed but kept
    telemetry_table = RunRecord(store, manifest, tuple(checked.checks)).telemetry()
    telemetry = None
    if telemetry_table is not None and telemetry_table.num_rows:
        telemetry = telemetry_table.to_pandas()
        order = [c for c in TELEMETRY_ORDER if c in telemetry.columns]
        telemetry = telemetry.sort_values(order, kind="mergesort").reset_index(drop=True)
    quarantined = sorted(store.fs.listdir(store.fs.join(QUARANTINE)))
    return RunData(
        location=location,
        store=store,
        manifest=manifest,
        part_checks=checked.checks,
        table_hash=checked.digest,
        telemetry=telemetry,
        quarantined=quarantined,
        null_summary=null_summary,
        rows_in_parts=rows_in_parts,
        fold_summary=checked.folds,
        table_hash_version=manifest.hash_version,
        columns=checked.columns,
        facts=read.facts.facts(),
        tested=tested,
        owned=checked.owned,
        scan=scan,
        mapper=mapper,
        environments=checked.environments,
    )


def _untimed(name: str) -> AbstractContextManager[None]:
    """A :data:`Timer` that times nothing."""
    return contextlib.nullcontext()


def scan_settings(options: ReportOptions) -> ScanSettings:
    """How many best and sampled configs the read keeps for a report with these options."""
    pbo = options.max_pbo_configs
    return ScanSettings.of(
        options.top_k,
        0 if pbo is None else pbo,  # None: PBO takes every ok config, no sample is kept
        options.max_return_configs,
        options.sample_seed,
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
