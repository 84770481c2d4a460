"""``sweep reproduce``: re-compute part of a run here and compare it with the record, bit for bit.

The auditor's check of a table hash. From the run folder alone (its spec and data, found as
``sweep resume`` finds them, :func:`sweep.store._trust.resolve_recorded`), a seeded random
sample of finished configs is evaluated again in the current environment, through an
executor (in-process, or on a Ray cluster), and every column of every sampled row is
compared with the stored row by its exact bytes (:func:`sweep.store._row_match.compare_rows`:
floats by their IEEE-754 bit pattern, so NaN equals NaN only with the same bits, and 0.0
differs from -0.0). A few whole parts (the smallest, by default two) are re-evaluated on
exactly their grid positions, in their order, so that their null summary and fold summary
can be compared too. The configs and the whole parts are both drawn from one seed, fresh
from the operating system unless given (:func:`fresh_seed`) and printed, so an audit can be
repeated and a forger cannot know in advance which values it re-computes.

:func:`reproduce_with` is the one comparison: ``sweep reproduce`` calls it through
:func:`reproduce_run`, and ``resume --allow-environment-change`` calls it on the session's
executor before it continues, and every resume calls it on a few finished configs
(:mod:`sweep.runner._environment_check`).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from stats import FoldSummary, NullSummary
from sweep.common._range_set import RangeSet
from sweep.errors import RunFolderError, SweepError
from sweep.executors import LOCAL, Executor, cluster_named, make_executor
from sweep.spec._resolve import ResolvedSweep
from sweep.store._fold_summary import folds_of
from sweep.store._null_summary import summary_of
from sweep.store._part_environment import (
    EnvironmentUse,
    environment_of,
    environment_uses,
    group_environments,
)
from sweep.store._row_match import Mismatch, compare_rows, recorded_rows, value_text
from sweep.store._run_store import RunRecord, read_run, run_key_of
from sweep.store._trust import resolve_recorded

#: Configs sampled by default (``sweep reproduce --sample``).
DEFAULT_SAMPLE = 64
#: Whole parts re-evaluated by default (``sweep reproduce --parts``), drawn at random.
DEFAULT_PARTS = 2
#: Seeds are drawn below this bound (:func:`fresh_seed`).
SEED_BOUND = 1 << 63
#: How a part's summary compared: equal bytes, different, or absent from both.
SummaryOutcome = Literal["match", "differs", "none"]


@dataclass(frozen=True)
class ReproduceSettings:
    """What :func:`reproduce_with` re-computes.

    Attributes
    ----------
    sample : int
        Done configs drawn at random (all of them when fewer are done).
    seed : int or None
        Seed of the draws of configs (:func:`sample_positions`) and of whole parts
        (:func:`drawn_parts`); None: a fresh one (:func:`fresh_seed`), reported in
        :attr:`Reproduction.seed`.
    parts : int
        Whole parts re-evaluated, drawn at random; their summaries are compared too.
    """

    sample: int = DEFAULT_SAMPLE
    seed: int | None = None
    parts: int = DEFAULT_PARTS

    def __post_init__(self) -> None:
        if self.sample < 0 or self.parts < 0:
            raise SweepError(
                f"sample, parts: expected counts >= 0, got {self.sample} and {self.parts}"
            )
        if self.sample == 0 and self.parts == 0:
            raise SweepError(
                "--sample 0 --parts 0: nothing would be compared; re-compute some configs "
                "(--sample N) or whole parts (--parts N)"
            )
        if self.seed is not None and not 0 <= self.seed < SEED_BOUND:
            raise SweepError(f"seed: expected 0 <= seed < 2**63, got {self.seed}")


def fresh_seed() -> int:
    """A seed from the operating system's randomness (below :data:`SEED_BOUND`)."""
    return secrets.randbelow(SEED_BOUND)


@dataclass(frozen=True)
class PartReproduction:
    """One whole part re-evaluated on its grid positions.

    Attributes
    ----------
    name : str
        The part's file name.
    configs, configs_matched : int
        Its rows, and those whose every column matched.
    null_summary, fold_summary : {"match", "differs", "none"}
        How its summaries compared ("none": neither the part nor the re-evaluation has one).
    """

    name: str
    configs: int
    configs_matched: int
    null_summary: SummaryOutcome
    fold_summary: SummaryOutcome

    @property
    def ok(self) -> bool:
        """Whether every row and both summaries matched."""
        return (
            self.configs_matched == self.configs
            and self.null_summary != "differs"
            and self.fold_summary != "differs"
        )


@dataclass(frozen=True)
class Reproduction:
    """What :func:`reproduce_with` found.

    Attributes
    ----------
    run_dir : str
        The run folder.
    seed : int
        The sample's seed.
    sampled, matched : int
        Configs sampled, and those whose every column matched.
    parts : tuple of PartReproduction
        The whole parts re-evaluated.
    mismatches : tuple of Mismatch
        Every value that differed (sample and parts).
    recorded : tuple of EnvironmentUse
        The environments that computed the run's good parts.
    recomputed : tuple of EnvironmentUse
        The environments the re-evaluation ran in (from the batches' own records: a Ray
        worker says where it ran), counted in batches and configs.
    executor : str
        The backend (``local``, ``ray``, ``dask``).
    bad_parts : int
        Parts that failed their check (left out: ``sweep verify`` names them).
    """

    run_dir: str
    seed: int
    sampled: int
    matched: int
    parts: tuple[PartReproduction, ...]
    mismatches: tuple[Mismatch, ...]
    recorded: tuple[EnvironmentUse, ...]
    recomputed: tuple[EnvironmentUse, ...]
    executor: str
    bad_parts: int = 0

    @property
    def full_match(self) -> bool:
        """Whether every sampled config, every part's rows and summaries matched."""
        return (
            self.matched == self.sampled and all(p.ok for p in self.parts) and not self.mismatches
        )


def sample_positions(done: RangeSet, n: int, seed: int) -> NDArray[np.int64]:
    """A seeded random sample of ``n`` done grid positions (all of them if fewer), sorted.

    The ranks are drawn among the done configs with ``numpy.random.default_rng(seed)``
    (without replacement), then mapped to grid positions through the done ranges, so no
    array of every done position is made.
    """
    count = len(done)
    k = min(max(n, 0), count)
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    ranks = np.sort(np.random.default_rng(seed).choice(count, size=k, replace=False))
    return done.at_ranks(ranks)


def _array_mismatches(
    part: str, label: str, recorded: NDArray[Any], recomputed: NDArray[Any]
) -> list[Mismatch]:
    """The first differing element of two summary arrays (by bytes), with how many differ."""
    a, b = np.ravel(recorded), np.ravel(recomputed)
    if a.shape != b.shape:
        return [Mismatch(None, None, part, f"{label} (shape)", str(a.shape), str(b.shape))]
    if a.dtype.kind == "f":
        differ = np.flatnonzero(
            np.ascontiguousarray(a, "<f8").view("<u8") != np.ascontiguousarray(b, "<f8").view("<u8")
        )
    else:
        differ = np.flatnonzero(a != b)
    if not differ.size:
        return []
    j = int(differ[0])
    more = f" ({differ.size} of {a.size} values differ)" if differ.size > 1 else ""
    return [
        Mismatch(
            None,
            None,
            part,
            f"{label}[{j}]{more}",
            value_text(a[j].item()),
            value_text(b[j].item()),
        )
    ]


def _presence(
    part: str, name: str, recorded: bool, recomputed: bool
) -> tuple[SummaryOutcome, list[Mismatch]]:
    """A summary absent on one side or both: nothing to compare, or a mismatch."""
    if not recorded and not recomputed:
        return "none", []
    shown = ("present" if recorded else "absent", "present" if recomputed else "absent")
    return "differs", [Mismatch(None, None, part, name, *shown)]


def _compare_null(
    part: str, recorded: NullSummary | None, recomputed: NullSummary | None
) -> tuple[SummaryOutcome, list[Mismatch]]:
    if recorded is None or recomputed is None:
        return _presence(part, "null_summary", recorded is not None, recomputed is not None)
    found: list[Mismatch] = []
    if recorded.n_configs != recomputed.n_configs:
        found.append(
            Mismatch(
                None,
                None,
                part,
                "null_summary.n_configs",
                repr(recorded.n_configs),
                repr(recomputed.n_configs),
            )
        )
    for field in ("reality_check", "spa", "null_sharpe", "top_value", "top_index"):
        found += _array_mismatches(
            part, f"null_summary.{field}", getattr(recorded, field), getattr(recomputed, field)
        )
    return ("differs" if found else "match"), found


def _compare_folds(
    part: str, recorded: FoldSummary | None, recomputed: FoldSummary | None
) -> tuple[SummaryOutcome, list[Mismatch]]:
    if recorded is None or recomputed is None:
        return _presence(part, "fold_summary", recorded is not None, recomputed is not None)
    found = _array_mismatches(part, "fold_summary.value", recorded.value, recomputed.value)
    found += _array_mismatches(part, "fold_summary.index", recorded.index, recomputed.index)
    return ("differs" if found else "match"), found


def _evaluate(exe: Executor, batches: list[NDArray[np.int64]]) -> list[pa.Table]:
    """Each batch's table from ``exe`` (started), in the order of ``batches``."""
    tables: list[pa.Table | None] = [None] * len(batches)
    for outcome in exe.run(iter(batches)):
        j = next(
            (k for k, b in enumerate(batches) if b is outcome.indices and tables[k] is None),
            None,
        )
        if j is None:  # an executor that copied the indices: match by content
            j = next(
                k
                for k, b in enumerate(batches)
                if tables[k] is None and np.array_equal(b, outcome.indices)
            )
        tables[j] = outcome.result.table
    return [t for t in tables if t is not None]


def drawn_parts(record: RunRecord, n: int, seed: int) -> list[str]:
    """``n`` good parts drawn at random (all of them if fewer), in name order.

    Drawn with a generator of its own child of ``SeedSequence(seed)`` (the configs' draw,
    :func:`sample_positions`, uses ``seed`` itself), without replacement.
    """
    good = sorted(p.name for p in record.parts if p.ok)
    k = min(max(n, 0), len(good))
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))
    return [good[j] for j in np.sort(rng.choice(len(good), size=k, replace=False))]


def _split(positions: NDArray[np.int64], pieces: int) -> list[NDArray[np.int64]]:
    if not positions.size:
        return []
    size = -(-positions.size // max(1, pieces))
    return [positions[lo : lo + size] for lo in range(0, positions.size, size)]


def reproduce_with(
    record: RunRecord,
    sweep: ResolvedSweep,
    exe: Executor,
    settings: ReproduceSettings | None = None,
) -> Reproduction:
    """Re-compute a sample of a run's configs and whole parts on ``exe``; compare bit for bit.

    Parameters
    ----------
    record : RunRecord
        The run folder, read (:func:`sweep.store._run_store.read_run`); only good parts
        are used.
    sweep : ResolvedSweep
        The run's sweep (its spec, data and strategy as recorded).
    exe : Executor
        A started executor: where the configs are evaluated again.
    settings : ReproduceSettings, optional
        Sample size, seed and whole parts (default: 64 configs and 2 parts, a fresh seed).

    Returns
    -------
    Reproduction
        Counts, every mismatch, and the environments recorded and used.

    Raises
    ------
    RunFolderError
        When the run has no finished config.
    """
    if not record.good:
        raise RunFolderError(
            f"run folder {record.store.location!r} has no finished configs to reproduce"
        )
    settings = settings or ReproduceSettings()
    seed = fresh_seed() if settings.seed is None else settings.seed
    positions = sample_positions(record.done_ranges(), settings.sample, seed)
    whole = drawn_parts(record, settings.parts, seed)
    whole_tables = [record.store.read_part_columns(name, None) for name in whole]  # type: ignore[arg-type]
    sample_batches = _split(positions, exe.workers)
    part_batches = [
        np.asarray(t.column("grid_index").to_numpy(), dtype=np.int64) for t in whole_tables
    ]
    tables = _evaluate(exe, [*sample_batches, *part_batches])
    mismatches: list[Mismatch] = []
    matched = 0
    if positions.size:
        stored, names = recorded_rows(record, positions)
        again = pa.concat_tables(tables[: len(sample_batches)], promote_options="none")
        found, ok = compare_rows(stored, again, names)
        mismatches += found
        matched = int(ok.sum())
    checked: list[PartReproduction] = []
    for name, stored_part, again in zip(
        whole, whole_tables, tables[len(sample_batches) :], strict=True
    ):
        found, ok = compare_rows(stored_part, again, [name] * stored_part.num_rows)
        null, null_found = _compare_null(
            name, summary_of(stored_part.schema), summary_of(again.schema)
        )
        folds, fold_found = _compare_folds(
            name, folds_of(stored_part.schema), folds_of(again.schema)
        )
        mismatches += found + null_found + fold_found
        checked.append(PartReproduction(name, stored_part.num_rows, int(ok.sum()), null, folds))
    return Reproduction(
        run_dir=record.store.location,
        seed=seed,
        sampled=int(positions.size),
        matched=matched,
        parts=tuple(checked),
        mismatches=tuple(mismatches),
        recorded=environment_uses(record.store, record.parts),
        recomputed=group_environments((environment_of(t.schema), t.num_rows) for t in tables),
        executor=exe.name,
        bad_parts=len(record.bad),
    )


def check_sweep(record: RunRecord, sweep: ResolvedSweep) -> None:
    """Refuse (:class:`RunFolderError`) a sweep that is not the one the folder recorded."""
    diffs = record.manifest.run_key.differences(run_key_of(sweep))
    if record.manifest.grid.size != len(sweep.grid):
        diffs.append(f"the grid size ({record.manifest.grid.size:,} -> {len(sweep.grid):,})")
    if diffs:
        raise RunFolderError(
            f"run folder {record.store.location!r}: the sweep rebuilt from it differs in "
            + "; ".join(diffs)
            + ", so its configs cannot be reproduced; restore the recorded spec, data and "
            "strategy version"
        )


def reproduce_run(
    run_dir: str | os.PathLike[str],
    settings: ReproduceSettings | None = None,
    *,
    executor: str = "local",
    address: str | None = None,
    workers: int | None = None,
    allow_import: Iterable[str] = (),
    sweep: ResolvedSweep | None = None,
) -> Reproduction:
    """Re-compute part of a run in this environment and compare it bit for bit (read-only).

    Parameters
    ----------
    run_dir : str or path
        The run folder (a path or a URI).
    settings : ReproduceSettings, optional
        As :func:`reproduce_with`.
    executor : str
        Where the configs are evaluated again: ``local``, ``auto`` or a backend's name
        (:data:`sweep.executors.KINDS`); with an ``address``, the cluster it names.
    address : str, optional
        A cluster to join.
    workers : int, optional
        CPUs of a local cluster.
    allow_import : iterable of str
        Strategy modules the folder may import (:mod:`sweep.store._trust`).
    sweep : ResolvedSweep, optional
        The recorded sweep, already rebuilt (from Python, with a panel or strategy handed
        over); default: rebuilt from the folder.

    Returns
    -------
    Reproduction
    """
    location = str(run_dir)
    record = read_run(location)
    if sweep is None:
        sweep = resolve_recorded(record.manifest, location, allow_import)
    check_sweep(record, sweep)
    if not record.good:
        raise RunFolderError(f"run folder {location!r} has no finished configs to reproduce")
    named = cluster_named("auto", address) if executor in ("auto", LOCAL) else executor
    exe = make_executor(named or LOCAL, address=address, workers=workers)
    exe.start(sweep)
    try:
        return reproduce_with(record, sweep, exe, settings)
    finally:
        exe.close()


def mismatch_lines(found: Reproduction, limit: int | None = None) -> list[str]:
    """The mismatches as lines (at most ``limit``, then how many more)."""
    shown = found.mismatches if limit is None else found.mismatches[:limit]
    lines = [m.describe() for m in shown]
    left = len(found.mismatches) - len(shown)
    if left > 0:
        lines.append(f"... and {left:,} more mismatches")
    return lines
