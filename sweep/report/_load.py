"""Read a run folder once for the report: manifest, part checks, good results, telemetry."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from stats import NullSummary
from sweep._null_summary import merged_summary
from sweep._store import QUARANTINE, PartCheck, RunStore
from sweep._table_hash import sort_by_config_id, table_hash

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
    manifest : dict
        ``manifest.json``.
    part_checks : list of PartCheck
        Every part re-hashed, sorted by name.
    table : pyarrow.Table or None
        The results of the parts that verified, sorted by ``config_id``, one row per config
        (None when no good part exists).
    results : pandas.DataFrame
        ``table`` as a DataFrame (empty when there is none).
    table_hash : str or None
        Hash of ``table`` (:func:`sweep.table_hash`), whatever its completeness.
    telemetry : pandas.DataFrame or None
        One row per task, in a canonical order.
    quarantined : list of str
        Files in ``quarantine/`` (parts a resume moved aside), sorted.
    null_summary : NullSummary or None
        The good parts' null summaries merged (None without bootstrap, or when a good part
        lacks one).
    """

    location: str
    store: RunStore
    manifest: dict[str, Any]
    part_checks: list[PartCheck]
    table: pa.Table | None
    results: pd.DataFrame
    table_hash: str | None
    telemetry: pd.DataFrame | None
    quarantined: list[str]
    null_summary: NullSummary | None = None

    @property
    def total(self) -> int:
        """Configs in the grid."""
        return int(self.manifest["grid"]["size"])

    @property
    def param_names(self) -> list[str]:
        """Grid parameters in grid order."""
        return [str(a["name"]) for a in self.manifest["grid"]["axes"]]


def _good_table(
    store: RunStore, checks: list[PartCheck]
) -> tuple[pa.Table | None, NullSummary | None]:
    tables = [store.read_part_columns(c.name, None) for c in checks if c.ok]  # type: ignore[arg-type]
    if not tables:
        return None, None
    merged = merged_summary(t.schema for t in tables)
    table = sort_by_config_id(pa.concat_tables(tables, promote_options="none"))
    ids = table.column("config_id").to_numpy(zero_copy_only=False)
    if ids.shape[0] > 1:
        keep = np.concatenate([[True], ids[1:] != ids[:-1]])
        if not keep.all():
            table = table.filter(pa.array(keep))
            if merged is not None:  # a repeated batch: count each config once
                p = table.column("p_value").to_numpy(zero_copy_only=False)
                merged = replace(merged, n_configs=int(np.isfinite(p).sum()))
    return table.replace_schema_metadata(None), merged


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
    store = RunStore(run_dir)
    manifest = store.read_manifest()
    checks = sorted(store.verify_parts(), key=lambda c: c.name)
    table, null_summary = _good_table(store, checks)
    results = table.to_pandas() if table is not None else pd.DataFrame()
    digest = table_hash(table, presorted=True) if table is not None else None
    telemetry_table = store.read_telemetry()
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
        table=table,
        results=results,
        table_hash=digest,
        telemetry=telemetry,
        quarantined=quarantined,
        null_summary=null_summary,
    )
