"""The report's recomputation check: stored rows evaluated again, every column by its bytes.

A seeded sample of done configs (:data:`ROW_CHECK_CONFIGS`, any status) and the winner are
evaluated again from the recorded sweep with :func:`sweep.engine._evaluate.evaluate_batch`
and compared with their stored rows over every column by exact bytes
(:func:`sweep.store._row_match.compare_rows`, the comparison of ``sweep reproduce``). A
config's row depends only on the config, the data and the root seed (invariant 1), so a
difference means the strategy is not deterministic (numpy's global generator, the clock,
state kept between calls) or this environment computes other bits; either way the stored
table is not what the sweep's inputs give, and :func:`recomputation_failure` says so to the
verdict, which is then withheld. The Sharpe ratios of the returns recomputed for the
dimensionality (:class:`sweep.report._sections.SharpeCheck`) count the same way.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from sweep.engine._evaluate import evaluate_batch
from sweep.report._config_scan import CHECK_STREAM, ROW_CHECK_CONFIGS, sample_text
from sweep.report._load import RunData
from sweep.report._sections import ReturnsInfo, RowCheck
from sweep.spec._resolve import ResolvedSweep
from sweep.store._row_match import Mismatch, compare_rows, recorded_rows
from sweep.store._run_store import RunRecord

#: Configs whose first mismatch the report lists (a column and both values each).
SHOWN_MISMATCHES = 10


def check_positions(run: RunData, seed: int) -> tuple[NDArray[np.int64], str]:
    """Grid positions to recompute: a seeded sample of done configs and the winner, sorted."""
    checked = run.scan.checked
    if not checked.sampled:
        return checked.grid_index, f"every done config ({checked.population:,})"
    winner = run.scan.ranked.grid_index[:1]
    positions = np.unique(np.concatenate([checked.grid_index, winner]))
    text = sample_text(ROW_CHECK_CONFIGS, checked.population, "done configs", seed, CHECK_STREAM)
    return positions, f"{text} and the winner"


def first_per_config(found: list[Mismatch], limit: int) -> tuple[str, ...]:
    """The first mismatch of each config (at most ``limit`` configs), described."""
    seen: set[str | None] = set()
    shown: list[str] = []
    for m in found:
        if m.config_id not in seen and len(shown) < limit:
            seen.add(m.config_id)
            shown.append(m.describe())
    return tuple(shown)


def check_rows(run: RunData, sweep: ResolvedSweep, seed: int) -> RowCheck:
    """Recompute the configs of :func:`check_positions` and compare their rows by bytes.

    Parameters
    ----------
    run : RunData
        The run folder, read.
    sweep : ResolvedSweep
        The recorded sweep, rebuilt (:func:`sweep.report._rebuild.rebuild_sweep`).
    seed : int
        The report's ``sample_seed``.

    Returns
    -------
    RowCheck
        How many configs matched on every column, and the first mismatches.
    """
    positions, sample = check_positions(run, seed)
    record = RunRecord(run.store, run.manifest, tuple(run.part_checks))
    stored, parts = recorded_rows(record, positions)
    again = evaluate_batch(sweep, positions).table
    found, matched = compare_rows(stored, again, parts)
    return RowCheck(
        sample=sample,
        compared=int(positions.size),
        identical=int(matched.sum()),
        columns=stored.num_columns,
        values_differing=len(found),
        mismatches=first_per_config(found, SHOWN_MISMATCHES),
    )


def recomputation_failure(returns: ReturnsInfo | None) -> str | None:
    """What did not reproduce, in a sentence; None when every recomputation matched."""
    if returns is None:
        return None
    failed = []
    rows = returns.row_check
    if rows is not None and rows.identical < rows.compared:
        first = f" (first: {rows.mismatches[0]})" if rows.mismatches else ""
        failed.append(
            f"{rows.compared - rows.identical} of {rows.compared} configs recomputed here "
            f"differ from their stored rows{first}"
        )
    sharpe = returns.sharpe_check
    if sharpe is not None and sharpe.identical < sharpe.compared:
        failed.append(
            f"the stored Sharpe ratios of {sharpe.compared - sharpe.identical} of "
            f"{sharpe.compared} configs whose returns were recomputed differ"
        )
    if not failed:
        return None
    return (
        "; ".join(failed) + ": the strategy is not deterministic (numpy's global random "
        "generator, the clock, state kept between calls) or this environment computes other "
        "bits (sweep reproduce compares more)"
    )
