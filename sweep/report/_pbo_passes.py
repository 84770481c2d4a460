"""PBO (CSCV) in two passes over the parts: no block statistics held beside the answers.

The report's probability of backtest overfitting ranks each of the ``C(S, S/2)`` splits'
in-sample best out of sample among the configs of PBO's sample (every ok config, or a
seeded sample of them: :class:`sweep.report._config_scan.SampleRule`). The configs' block
statistics (``blk_n`` and ``2 S`` sums, half the table at S = 16) are never gathered: two
passes over the good parts, where the report's passes run (:meth:`RunData.map_counted`:
here, or as tasks), each take every split at once for the configs of their parts, with the
compiled CSCV kernel (:mod:`stats._cscv_folds`):

1. :func:`bests_of_parts`: per split, the in-sample best key of the group's configs and the
   grid index of that config (a greater key wins, an equal key the lower grid index, as the
   in-memory kernel's argmax over the sample in grid order gives), with a
   :class:`stats._pbo.BlockSummary` for the checks. The driver merges the answers as they
   come into one running :class:`SplitBests`, reads back the few distinct bests' rows
   (:meth:`RunData.rows_at`) and computes each split's target: its best's out-of-sample
   key.
2. :func:`ranks_of_parts`: per split, the group's configs below and tied with the target,
   added up in the driver.

Every answer is O(splits) (12,870 at S = 16), whatever the configs, and the driver holds
the running state and one answer. The keys come from the same kernel and the same additions
as :func:`stats.cscv_best_and_ranks`, so the result is :func:`stats.pbo_from_block_stats`'s
on the same sample, bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from stats._cscv_folds import SplitBests, SplitRanks
from stats._cscv_kernel import CSCVSplits, cscv_targets
from stats._pbo import BlockSummary, PBOMetric, PBOResult, check_block_summary, pbo_from_bests
from sweep.common._range_set import RangeSet
from sweep.engine._metrics import block_columns
from sweep.errors import SweepError
from sweep.report._config_scan import SampleRule
from sweep.report._load import _FOLDER_CHANGED, RunData, counted_rows
from sweep.store._run_store import RunStore

#: The report ranks configs by their per-period Sharpe ratio.
METRIC: PBOMetric = "sharpe"

#: Block statistics of some configs: ``blk_n`` per block, block sums, sums of squares.
_Blocks = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]


@dataclass(frozen=True)
class PBOPass:
    """What every task of a PBO pass is given (small: it travels with each task).

    Attributes
    ----------
    rule : SampleRule
        Which counted ok configs PBO's sample holds.
    n_blocks : int
        Blocks S (the run's ``pbo_blocks``).
    """

    rule: SampleRule
    n_blocks: int

    @property
    def splits(self) -> CSCVSplits:
        """Every split of the blocks."""
        return CSCVSplits.of(self.n_blocks)


@dataclass
class BestsAnswer:
    """What pass 1 returns for a group of parts, and the driver's running merge of them.

    Attributes
    ----------
    bests : SplitBests
        Each split's in-sample best key and the grid index of its config.
    summary : BlockSummary
        What PBO checks of the configs' block statistics.
    first : int
        The lowest grid index seen (-1: none), the best of a split where no config has a
        key (the kernel's row 0).
    first_periods : int
        That config's ``blk_n`` (the report's periods per block).
    """

    bests: SplitBests
    summary: BlockSummary
    first: int = -1
    first_periods: int = 0

    def add(self, index: NDArray[np.int64], blocks: _Blocks, splits: CSCVSplits) -> None:
        """Fold in some configs (their grid indices and block statistics)."""
        if not index.size:
            return
        self.bests.add(*blocks, index, splits, METRIC == "sharpe")
        self.summary = self.summary.merged(BlockSummary.of(*blocks))
        low = int(np.argmin(index))
        self._take_first(int(index[low]), int(blocks[0][low, 0]))

    def merge(self, other: BestsAnswer) -> None:
        """Take another group's answer (the same result in any order)."""
        self.bests.merge(other.bests)
        self.summary = self.summary.merged(other.summary)
        if other.first >= 0:
            self._take_first(other.first, other.first_periods)

    def _take_first(self, index: int, periods: int) -> None:
        if self.first < 0 or index < self.first:
            self.first, self.first_periods = index, periods


@dataclass
class RanksAnswer:
    """What pass 2 returns for a group of parts, and the driver's running sum of them.

    Attributes
    ----------
    ranks : SplitRanks
        Per split, the configs below and tied with the target out-of-sample key.
    configs : int
        Configs counted.
    """

    ranks: SplitRanks
    configs: int = 0

    def merge(self, other: RanksAnswer) -> None:
        """Add another group's counts."""
        self.ranks.merge(other.ranks)
        self.configs += other.configs


def _sampled_blocks(
    location: str, names: list[str], owned: dict[str, RangeSet], plan: PBOPass
) -> Iterator[tuple[NDArray[np.int64], _Blocks]]:
    """Per part, the grid indices and block statistics of the sample's configs it counts."""
    sums_cols, sq_cols = block_columns(plan.n_blocks)
    columns = ["blk_n", *sums_cols, *sq_cols]
    for part, keep in counted_rows(RunStore(location), names, owned, columns):
        index = part.column("grid_index").to_numpy()
        rows = np.flatnonzero(keep)
        rows = rows[plan.rule.holds(index[rows])]
        periods = part.column("blk_n").to_numpy()[rows].astype(np.float64)
        yield (
            index[rows].astype(np.int64),
            (
                np.repeat(periods[:, None], plan.n_blocks, axis=1),
                _columns(part, sums_cols, rows),
                _columns(part, sq_cols, rows),
            ),
        )


def _columns(part: pa.Table, columns: list[str], rows: NDArray[np.intp]) -> NDArray[np.float64]:
    """Some rows of some float columns, shape ``(len(rows), len(columns))``."""
    out = np.empty((len(rows), len(columns)))
    for j, column in enumerate(columns):
        out[:, j] = part.column(column).to_numpy()[rows]
    return out


def bests_of_parts(
    location: str, names: list[str], owned: dict[str, RangeSet], plan: PBOPass
) -> BestsAnswer:
    """Pass 1's task body: each split's in-sample best among the sample's configs of some parts.

    One part at a time, every split at once (the compiled kernel); the answer is O(splits).
    """
    splits = plan.splits
    answer = BestsAnswer(SplitBests.none(splits.n_splits), BlockSummary(0, plan.n_blocks))
    for index, blocks in _sampled_blocks(location, names, owned, plan):
        answer.add(index, blocks, splits)
    return answer


def ranks_of_parts(
    location: str,
    names: list[str],
    owned: dict[str, RangeSet],
    plan: PBOPass,
    target: NDArray[np.float64],
) -> RanksAnswer:
    """Pass 2's task body: per split, the sample's configs of some parts below / tied with it.

    Their out-of-sample keys against ``target``, one part at a time, every split at once;
    the answer is O(splits).
    """
    splits = plan.splits
    answer = RanksAnswer(SplitRanks.none(splits.n_splits))
    for index, blocks in _sampled_blocks(location, names, owned, plan):
        answer.ranks.add(*blocks, splits, METRIC == "sharpe", target)
        answer.configs += int(index.size)
    return answer


@dataclass(frozen=True)
class PBOFound:
    """PBO computed over the parts, with what the report shows beside it.

    Attributes
    ----------
    result : PBOResult
        The CSCV result; ``best_in_sample`` holds grid indices.
    best_ids : dict of int to str
        The ``config_id`` of each distinct in-sample best, by grid index.
    periods_per_block : int
        ``blk_n`` of the sample's first config (lowest grid index).
    """

    result: PBOResult
    best_ids: dict[int, str] = field(default_factory=dict)
    periods_per_block: int = 0


def pbo_over_parts(run: RunData, rule: SampleRule, configs: int) -> PBOFound:
    """PBO over the configs of PBO's sample, in two passes over the good parts.

    Parameters
    ----------
    run : RunData
        The run folder, read (its passes run where :attr:`RunData.mapper` runs them).
    rule : SampleRule
        Which counted ok configs the sample holds.
    configs : int
        How many configs it holds (the passes must find exactly these).

    Returns
    -------
    PBOFound

    Raises
    ------
    StatsInputError
        What :func:`stats.pbo_from_block_stats` refuses (too few configs or periods,
        non-finite block statistics), found after the first pass.
    SweepError
        The parts no longer hold the sample's configs (the folder changed).
    """
    plan = PBOPass(rule, run.manifest.run_key.pbo_blocks)
    splits = plan.splits
    found = BestsAnswer(SplitBests.none(splits.n_splits), BlockSummary(0, plan.n_blocks))
    for part_bests in run.map_counted(bests_of_parts, (plan,)):
        found.merge(part_bests)
        del part_bests
    if found.summary.strategies != configs:
        raise SweepError(_FOLDER_CHANGED)
    check_block_summary(found.summary, METRIC)
    best = found.bests.best(found.first)
    rows, where = np.unique(best, return_inverse=True)
    ids, blocks = _best_rows(run, rows, plan.n_blocks)
    target = cscv_targets(*blocks, where, splits, METRIC == "sharpe")
    counted = RanksAnswer(SplitRanks.none(splits.n_splits))
    for part_ranks in run.map_counted(ranks_of_parts, (plan, target)):
        counted.merge(part_ranks)
        del part_ranks
    if counted.configs != configs:
        raise SweepError(_FOLDER_CHANGED)
    result = pbo_from_bests(
        best,
        counted.ranks.rank,
        (blocks[0][where], blocks[1][where], blocks[2][where]),
        found.summary,
        metric=METRIC,
    )
    return PBOFound(
        result=result,
        best_ids=dict(zip(rows.tolist(), ids, strict=True)),
        periods_per_block=found.first_periods,
    )


def _best_rows(
    run: RunData, grid_index: NDArray[np.int64], n_blocks: int
) -> tuple[list[str], _Blocks]:
    """The ``config_id`` and block statistics of some configs, read back from their parts."""
    sums_cols, sq_cols = block_columns(n_blocks)
    table = run.rows_at(grid_index, ["config_id", "blk_n", *sums_cols, *sq_cols])
    if table.num_rows != len(grid_index):
        raise SweepError(_FOLDER_CHANGED)
    every = np.arange(table.num_rows)
    periods = table.column("blk_n").to_numpy().astype(np.float64)
    return [str(i) for i in table.column("config_id").to_pylist()], (
        np.repeat(periods[:, None], n_blocks, axis=1),
        _columns(table, sums_cols, every),
        _columns(table, sq_cols, every),
    )
