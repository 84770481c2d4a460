"""Read-only views of a run folder: status, verification, ranked results."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import pyarrow.compute as pc

from sweep._null_summary import merged_summary, summary_digest
from sweep._results import results_hash, results_table
from sweep._store import RunStore
from sweep.errors import SweepError, close_matches


def failed_count(store: RunStore, parts: list[str]) -> int:
    """Configs whose status is not ``ok`` in these (checked) parts."""
    failed = 0
    for name in parts:
        status = store.read_part_columns(name, ["status"]).column(0)
        failed += int(pc.sum(pc.not_equal(status, "ok")).as_py() or 0)
    return failed


def run_status(run_dir: str | os.PathLike[str], *, with_hash: bool = True) -> dict[str, Any]:
    """Summarise a run folder, counting only parts that pass their check.

    Parameters
    ----------
    run_dir : str or path
        The run folder.
    with_hash : bool
        Compute the table hash when every config is done.

    Returns
    -------
    dict
        ``name``, ``total``, ``done``, ``failed``, ``remaining``, ``parts`` (good ones),
        ``bad_parts`` (name and reason each: their configs count as not done),
        ``sessions``, ``last_activity``, ``table_hash`` (None until complete), ``lock``.
    """
    store = RunStore(run_dir)
    manifest = store.read_manifest()
    total = int(manifest["grid"]["size"])
    parts, bad = store.good_parts()
    done = int(store.done_mask(total, parts).sum())
    failed = failed_count(store, parts)
    sessions = manifest.get("sessions", [])
    times = [s.get("end") or s.get("start") for s in sessions]
    files = [store.fs.join("parts", n) for n in parts]
    if files:
        latest = max(store.fs.mtime(f) for f in files)
        times.append(datetime.fromtimestamp(latest, UTC).isoformat(timespec="milliseconds"))
    complete = with_hash and done == total and total > 0
    return {
        "run_dir": str(run_dir),
        "name": manifest["spec"].get("name"),
        "spec_hash": manifest["identity"]["spec_hash"],
        "total": total,
        "done": done,
        "failed": failed,
        "remaining": total - done,
        "parts": len(parts),
        "bad_parts": [{"name": c.name, "reason": c.reason} for c in bad],
        "sessions": sessions,
        "last_activity": max((t for t in times if t), default=None),
        "table_hash": results_hash(run_dir, parts) if complete else None,
        "lock": store.read_lock(),
    }


def first_error(run_dir: str | os.PathLike[str]) -> str | None:
    """The error message of the first failed config found in the parts, or None.

    Parameters
    ----------
    run_dir : str or path
        The run folder.

    Returns
    -------
    str or None
        The ``error`` of one config whose status is not ``ok`` (parts read in name order).
    """
    store = RunStore(run_dir)
    for name in store.part_names():
        table = store.read_part_columns(name, ["status", "error"])
        failed = table.filter(pc.not_equal(table.column("status"), "ok"))
        if failed.num_rows:
            return str(failed.column("error")[0].as_py() or "(no message)")
    return None


def verify_run(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Check every part and telemetry file against the manifest.

    Returns
    -------
    dict
        ``good_parts`` (count), ``bad_parts`` (name and reason each), ``bad_telemetry``
        (likewise; they do not affect results), ``done``, ``total``, ``table_hash`` (of the
        good parts, when they cover the grid) and ``null_summary_hash``
        (:func:`sweep._null_summary.summary_digest` of the merged null summaries, when they
        cover the grid and the sweep has bootstrap replications).
    """
    store = RunStore(run_dir)
    manifest = store.read_manifest()
    good, bad_checks = store.good_parts()
    bad = [{"name": c.name, "reason": c.reason} for c in bad_checks]
    telemetry = [{"name": c.name, "reason": c.reason} for c in store.check_telemetry() if not c.ok]
    total = int(manifest["grid"]["size"])
    done = int(store.done_mask(total, good).sum()) if good else 0
    complete = not bad and done == total
    summary = merged_summary(store.read_part_schema(n) for n in good) if complete else None
    return {
        "good_parts": len(good),
        "bad_parts": bad,
        "bad_telemetry": telemetry,
        "done": done,
        "total": total,
        "table_hash": results_hash(run_dir, good) if complete else None,
        "null_summary_hash": summary_digest(summary) if summary is not None else None,
    }


def results_frame(
    run_dir: str | os.PathLike[str], sort: str, top: int | None
) -> tuple[pd.DataFrame, list[str]]:
    """Results sorted by a metric (descending, NaN last), optionally the top ``top`` rows.

    Returns
    -------
    frame : pandas.DataFrame
        The configs of the parts that pass their check.
    notes : list of str
        What a reader must know: parts left out, configs not done yet.
    """
    store = RunStore(run_dir)
    total = int(store.read_manifest()["grid"]["size"])
    good, bad = store.good_parts()
    frame: pd.DataFrame = results_table(run_dir, good).to_pandas()
    notes = [
        f"part {b.name} is left out ({b.reason}); `sweep resume` recomputes its configs"
        for b in bad
    ]
    if len(frame) < total:
        notes.append(
            f"the results cover {len(frame):,} of {total:,} configs "
            f"({total - len(frame):,} not done yet); continue with: sweep resume {run_dir}"
        )
    if sort not in frame.columns:
        raise SweepError(
            f"--sort: unknown column {sort!r}; choose from "
            f"{[c for c in frame.columns if not c.startswith('blk_')]}."
            + close_matches(sort, frame.columns)
        )
    frame = frame.sort_values(sort, ascending=False, na_position="last", kind="stable")
    return (frame.head(top) if top else frame), notes
