"""Whole-sweep figures reduced as the parts are read: the best configs, exact moments, samples.

Each reducer takes the configs of one part at a time and keeps a bounded state, and the
result does not depend on how the configs were batched into parts or on the order the parts
are read in (ties are broken by ``config_id`` or by grid index, sums are exact):

* :class:`RankReducer`: the ``k`` best configs by the selection metric (the winner first);
* :class:`ExactMoments`: count, mean and variance (ddof=1) of a column's finite values, from
  exact sums (:func:`sweep.report._streamed_distribution.scaled_sum`);
* :class:`SampleReducer`: a seeded uniform sample of configs without replacement, the
  ``size`` smallest values of a keyed hash of the grid index (a bottom-k sample).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from sweep.report._axis_values import axis_reducers
from sweep.report._error_tally import ErrorTally
from sweep.report._streamed_distribution import FirstPass, PassPartial, scaled_sum

#: Mask of the low 27 bits: Dekker's split of a float into two halves whose products are exact.
_SPLITTER = float(2**27 + 1)


@dataclass(frozen=True)
class Ranked:
    """The best configs by the selection metric, best first.

    Attributes
    ----------
    grid_index : ndarray of int64
        Their grid positions.
    config_id : list of str
        Their ids.
    metric : ndarray of float64
        Their selection metric (NaN last).
    """

    grid_index: NDArray[np.int64]
    config_id: list[str]
    metric: NDArray[np.float64]

    def __len__(self) -> int:
        return int(self.grid_index.size)


def _rank_key(metric: NDArray[np.float64]) -> NDArray[np.float64]:
    """Ascending key of "largest first, NaN last"."""
    return np.where(np.isnan(metric), np.inf, -metric)


class RankReducer:
    """The ``k`` configs with the largest selection metric; ties go to the smaller ``config_id``.

    Parameters
    ----------
    k : int
        Configs kept (at least 1).
    """

    def __init__(self, k: int) -> None:
        self._k = max(int(k), 1)
        self._best = Ranked(np.zeros(0, dtype=np.int64), [], np.zeros(0))

    def add(
        self,
        grid_index: NDArray[np.int64],
        config_id: pa.Array | pa.ChunkedArray,
        metric: NDArray[np.float64],
        keep: NDArray[np.bool_],
    ) -> None:
        """Take the configs of one part (``keep``: the rows that count)."""
        rows = np.flatnonzero(keep)
        if not rows.size:
            return
        key = _rank_key(np.asarray(metric, dtype=np.float64)[rows])
        if rows.size > self._k:  # every row tied with the k-th best stays a candidate
            kth = np.partition(key, self._k - 1)[self._k - 1]
            chosen = key <= kth
            rows, key = rows[chosen], key[chosen]
        ids = np.asarray(config_id.take(pa.array(rows)).to_pylist(), dtype=str)
        self._merge(
            np.asarray(grid_index, dtype=np.int64)[rows],
            ids,
            np.asarray(metric, dtype=np.float64)[rows],
        )

    def merge(self, other: RankReducer) -> None:
        """Take the best configs ``other`` kept (the best of both, whatever the order)."""
        best = other._best
        self._merge(best.grid_index, np.asarray(best.config_id, dtype=str), best.metric)

    def _merge(
        self, grid_index: NDArray[np.int64], ids: NDArray[np.str_], metric: NDArray[np.float64]
    ) -> None:
        all_index = np.concatenate([self._best.grid_index, grid_index])
        all_ids = np.concatenate([np.asarray(self._best.config_id, dtype=str), ids])
        all_metric = np.concatenate([self._best.metric, metric])
        order = np.lexsort((all_ids, _rank_key(all_metric)))
        _, first = np.unique(all_ids[order], return_index=True)  # a repeated config once
        order = order[np.sort(first)][: self._k]
        self._best = Ranked(all_index[order], all_ids[order].tolist(), all_metric[order])

    def result(self) -> Ranked:
        """The best configs of every part added, best first."""
        return self._best


def _split(values: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Dekker's split: ``values = high + low`` with products of halves exact in float64."""
    c = _SPLITTER * values
    high = c - (c - values)
    return high, values - high


@dataclass(frozen=True)
class Moments:
    """Count, mean and variance (ddof=1) of a column's finite values.

    Attributes
    ----------
    count : int
        Finite values.
    mean : float or None
        Their mean, the exact sum divided and rounded once (None without values).
    variance : float or None
        Their variance with ``ddof=1``, computed exactly from the exact sums of the values
        and of their squares and rounded once (None with fewer than 2 values).
    """

    count: int
    mean: float | None
    variance: float | None


class ExactMoments:
    """:class:`Moments` of a column, a part at a time, in a few integers.

    The sum of squares is exact: each square is the sum of three float products of the
    value's Dekker halves, each exact for values between about 1e-150 and 1e150 in size
    (outside that range a product rounds, still the same way whatever the parts are).
    """

    def __init__(self) -> None:
        self.count = 0
        self._sum = 0  # exact sum times 2**1074
        self._squares = 0  # exact sum of squares times 2**1074

    def add(self, values: NDArray[np.float64]) -> None:
        """Take some values (NaN and infinities are left out)."""
        x = np.asarray(values, dtype=np.float64)
        x = x[np.isfinite(x)]
        if not x.size:
            return
        self.count += int(x.size)
        self._sum += scaled_sum(x)
        high, low = _split(x)
        for product in (high * high, 2.0 * high * low, low * low):
            self._squares += scaled_sum(product)

    def merge(self, other: ExactMoments) -> None:
        """Take the values ``other`` was given (exact: the order of merging does not matter)."""
        self.count += other.count
        self._sum += other._sum
        self._squares += other._squares

    def result(self) -> Moments:
        """The moments of every value added."""
        n = self.count
        if n == 0:
            return Moments(0, None, None)
        mean = self._sum / (n << 1074)
        if n < 2:
            return Moments(n, mean, None)
        # var = (n S2 - S1^2) / (n (n - 1)), with S1 = sum / 2**1074, S2 = squares / 2**1074.
        numerator = ((n * self._squares) << 1074) - self._sum * self._sum
        return Moments(n, mean, max(numerator, 0) / ((n * (n - 1)) << 2148))


#: Odd constants of splitmix64 (Steele, Lea and Flood 2014), the hash of the samples.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX_1
        z = (z ^ (z >> np.uint64(27))) * _MIX_2
        return z ^ (z >> np.uint64(31))


def sample_keys(grid_index: NDArray[np.int64], seed: int, stream: int) -> NDArray[np.uint64]:
    """The keyed hash that orders configs for the seeded sample ``(seed, stream)``.

    splitmix64 of the grid index mixed with a key drawn from ``default_rng([seed, stream])``:
    the same configs for a given seed whatever the parts, and a uniform sample.
    """
    key = np.random.default_rng([seed, stream]).integers(0, 2**63, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return _splitmix64(_splitmix64(np.asarray(grid_index).astype(np.uint64) ^ key))


class SampleReducer:
    """A seeded uniform sample of ``size`` configs without replacement, by grid index.

    The configs with the ``size`` smallest :func:`sample_keys` (a bottom-k sample: uniform
    over the subsets of that size, and the same for any batching); all of them when there
    are no more than ``size``. Keys are distinct (splitmix64 is a bijection), so there are
    no ties. Candidates are cut back to ``size`` only when twice as many have gathered, and
    a key above the kept ones is dropped as it comes: linear in the configs.

    Parameters
    ----------
    size : int
        Configs in the sample.
    seed, stream : int
        The report's ``sample_seed`` and the sample's stream.
    """

    def __init__(self, size: int, seed: int, stream: int) -> None:
        self._size = max(int(size), 0)
        self._seed, self._stream = seed, stream
        self._keys: list[NDArray[np.uint64]] = [np.zeros(0, dtype=np.uint64)]
        self._index: list[NDArray[np.int64]] = [np.zeros(0, dtype=np.int64)]
        self._held = 0
        self._bound: np.uint64 | None = None  # keys above it can no longer be drawn
        self.population = 0

    def add(self, grid_index: NDArray[np.int64], keep: NDArray[np.bool_]) -> None:
        """Take the configs of one part (``keep``: the rows that may be drawn)."""
        index = np.asarray(grid_index, dtype=np.int64)[keep]
        self.population += int(index.size)
        keys = sample_keys(index, self._seed, self._stream)
        if self._bound is not None:
            below = keys < self._bound
            keys, index = keys[below], index[below]
        self._keys.append(keys)
        self._index.append(index)
        self._held += int(keys.size)
        if self._held > 2 * self._size:
            self._cut()

    def merge(self, other: SampleReducer) -> None:
        """Take the candidates ``other`` kept (the same sample as one reducer given both).

        Its candidates above this reducer's bound are dropped as they come (they can no
        longer be drawn), so what is held stays under ``2 size`` plus one answer.
        """
        self.population += other.population
        for keys, index in zip(other._keys, other._index, strict=True):
            if self._bound is not None:  # this reducer's bound is one of its own keys
                below = keys < self._bound
                keys, index = keys[below], index[below]
            self._keys.append(keys)
            self._index.append(index)
            self._held += int(keys.size)
        if other._bound is not None:
            self._bound = other._bound if self._bound is None else min(self._bound, other._bound)
        if self._held > 2 * self._size:
            self._cut()

    def cut(self) -> None:
        """Keep only the ``size`` candidates that can still be drawn (before shipping).

        A task calls it before its answer travels, so an answer carries at most ``size``
        candidates; the sample drawn is the same (the ``size`` smallest keys of a union
        are among the ``size`` smallest of each of its pieces).
        """
        if self._held > self._size or len(self._keys) > 1:
            self._cut()

    def _cut(self) -> None:
        keys, index = np.concatenate(self._keys), np.concatenate(self._index)
        if self._bound is not None:  # candidates a merge took before the bound was known
            below = keys <= self._bound
            keys, index = keys[below], index[below]
        if keys.size > self._size:
            kept = (
                np.argpartition(keys, self._size - 1)[: self._size]
                if self._size
                else np.zeros(0, dtype=np.intp)
            )
            keys, index = keys[kept], index[kept]
            self._bound = keys.max() if keys.size else np.uint64(0)
        self._keys, self._index, self._held = [keys], [index], int(keys.size)

    @property
    def sampled(self) -> bool:
        """Whether the sample leaves some config out."""
        return self.population > self._size

    def result(self) -> NDArray[np.int64]:
        """The sample's grid indices, ascending."""
        self._cut()
        return np.sort(self._index[0])

    def rule(self) -> SampleRule:
        """Which configs of the population the sample holds, as a rule a pass can apply."""
        self._cut()
        keys = self._keys[0]
        bound = int(keys.max()) if self.sampled and keys.size else None
        return SampleRule(self._seed, self._stream, bound)


def sample_text(size: int, population: int, what: str, seed: int, stream: int) -> str:
    """How a seeded sample was drawn, as the report says it."""
    return (
        f"a seeded uniform sample of {size:,} of the {population:,} {what} (the {size:,} "
        f"smallest splitmix64 hashes of the grid index keyed by numpy "
        f"default_rng([{seed}, {stream}]): the same configs for any batching)"
    )


@dataclass(frozen=True)
class SampleRule:
    """Which configs a seeded sample holds, in three numbers (a pass tests each config).

    Attributes
    ----------
    seed, stream : int
        The sample's :func:`sample_keys`.
    bound : int or None
        The largest key drawn: the sample is the population's configs with a key at most
        this (keys are distinct); None: every config of the population.
    """

    seed: int = 0
    stream: int = 0
    bound: int | None = None

    def holds(self, grid_index: NDArray[np.int64]) -> NDArray[np.bool_]:
        """For each config of the population, whether the sample holds it."""
        index = np.asarray(grid_index, dtype=np.int64)
        if self.bound is None:
            return np.ones(index.shape, dtype=bool)
        held: NDArray[np.bool_] = sample_keys(index, self.seed, self.stream) <= np.uint64(
            self.bound
        )
        return held


@dataclass(frozen=True)
class Sample:
    """A seeded sample of configs (:class:`SampleReducer`).

    Attributes
    ----------
    grid_index : ndarray of int64
        The configs drawn, ascending.
    population : int
        The configs they were drawn from.
    rule : SampleRule
        Which configs of the population it holds, for a pass that reads them back.
    """

    grid_index: NDArray[np.int64]
    population: int
    rule: SampleRule = field(default_factory=SampleRule)

    @property
    def sampled(self) -> bool:
        """Whether some config was left out."""
        return int(self.grid_index.size) < self.population


#: Done configs recomputed (besides the winner) and compared over every column.
ROW_CHECK_CONFIGS = 16


@dataclass(frozen=True)
class ScanSettings:
    """How many configs the scan keeps of each kind, and the samples' seed.

    Attributes
    ----------
    top : int
        Best configs kept (the report's ``top_k``, at least 1).
    pbo, returns, checked : int
        Sizes of the samples for PBO's block statistics, the recomputed returns and the
        rows checked column by column.
    seed : int
        The report's ``sample_seed``.
    """

    top: int = 10
    pbo: int = 1_000_000
    returns: int = 10_000
    checked: int = ROW_CHECK_CONFIGS
    seed: int = 0

    @classmethod
    def of(cls, top_k: int, max_pbo: int, max_returns: int, seed: int) -> ScanSettings:
        """The settings of a report's options."""
        return cls(top=max(top_k, 1), pbo=max_pbo, returns=max_returns, seed=seed)


#: Streams of the samples: returns 0, PBO 1, rows checked 2 (as the report has named them).
RETURNS_STREAM, PBO_STREAM, CHECK_STREAM = 0, 1, 2


@dataclass(frozen=True)
class ConfigScan:
    """What the report keeps of every config, reduced as the parts are read.

    Attributes
    ----------
    ranked : Ranked
        The best configs by the selection metric (``excess_sharpe``), best first.
    sharpe : Moments
        Of the ok configs' finite ``excess_sharpe``: the naive count of trials and the
        variance of the trials' Sharpe ratios.
    pbo, returns : Sample
        Samples of the ok configs.
    checked : Sample
        A sample of the done configs inside the grid.
    done, failed, outside_grid : int
        Configs done (each once), those whose status is not ok, and rows whose grid index
        is outside the grid.
    errors : dict of str to int
        The failed configs by error message (``"(no message)"`` for none), exactly, for
        at most :data:`sweep.report._error_tally.ERROR_MESSAGES_KEPT` messages.
    other_errors : int
        Failed configs whose message is not in ``errors`` (0 unless more messages are
        distinct than are kept: :class:`sweep.report._error_tally.ErrorTally`).
    axis_values : dict of str to list
        Each grid parameter's distinct values among the ok configs, ascending.
    sharpe_ann_first : PassPartial or None
        The first pass of the ok configs' annualised Sharpe distribution
        (:class:`sweep.report._streamed_distribution.FirstPass`), made in this read.
    """

    ranked: Ranked = field(
        default_factory=lambda: Ranked(np.zeros(0, dtype=np.int64), [], np.zeros(0))
    )
    sharpe: Moments = field(default_factory=lambda: Moments(0, None, None))
    pbo: Sample = field(default_factory=lambda: Sample(np.zeros(0, dtype=np.int64), 0))
    returns: Sample = field(default_factory=lambda: Sample(np.zeros(0, dtype=np.int64), 0))
    checked: Sample = field(default_factory=lambda: Sample(np.zeros(0, dtype=np.int64), 0))
    done: int = 0
    failed: int = 0
    outside_grid: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    other_errors: int = 0
    axis_values: dict[str, list[Any]] = field(default_factory=dict)
    sharpe_ann_first: PassPartial | None = None

    @property
    def ok(self) -> int:
        """Configs that finished ok (the population of the samples of ok configs)."""
        return self.returns.population


#: The result columns the scan reads (with the grid's parameters).
SCAN_COLUMNS = ("config_id", "grid_index", "status", "error", "excess_sharpe", "excess_sharpe_ann")


def _numpy(values: Any) -> NDArray[Any]:
    """A numeric pyarrow (chunked) array or numpy array as numpy (nulls as NaN)."""
    if isinstance(values, pa.ChunkedArray | pa.Array):
        return np.asarray(values.to_numpy())
    return np.asarray(values)


class ScanReducer:
    """:class:`ConfigScan` from the parts as they are read, a part at a time.

    Parameters
    ----------
    settings : ScanSettings
        Sizes and seed.
    total : int
        Configs in the grid (a row outside it is never drawn for a check).
    params : list of str
        The grid's parameters (their distinct values are kept).
    axes : mapping of str to ndarray, optional
        The parameters' recorded values (:func:`sweep.report._axis_values.recorded_axes`):
        the values seen are kept as a bitmap over them, not as a set.
    """

    def __init__(
        self,
        settings: ScanSettings,
        total: int,
        params: list[str],
        axes: Mapping[str, NDArray[Any]] | None = None,
    ) -> None:
        self._total = total
        self._params = params
        self._done = self._failed = self._outside = 0
        self._errors = ErrorTally()
        self._axes = axis_reducers(params, axes or {})
        self._ranked = RankReducer(settings.top)
        self._sharpe = ExactMoments()
        self._pbo = SampleReducer(settings.pbo, settings.seed, PBO_STREAM)
        self._returns = SampleReducer(settings.returns, settings.seed, RETURNS_STREAM)
        self._checked = SampleReducer(settings.checked, settings.seed, CHECK_STREAM)
        self._sharpe_ann = FirstPass()

    @property
    def columns(self) -> list[str]:
        """The result columns :meth:`add` takes."""
        return [*SCAN_COLUMNS, *self._params]

    def add(
        self,
        columns: dict[str, Any],
        ok: NDArray[np.bool_],
        mine: NDArray[np.bool_],
    ) -> None:
        """Take one part: its :data:`SCAN_COLUMNS` and parameters, status ok, the rows it counts.

        ``error`` is a pyarrow array; the others numpy arrays or pyarrow arrays.
        """
        index = _numpy(columns["grid_index"]).astype(np.int64, copy=False)
        self._done += int(mine.sum())
        failed = mine & ~ok
        self._failed += int(failed.sum())
        self._outside += int((mine & ((index < 0) | (index >= self._total))).sum())
        if failed.any():
            found = pc.value_counts(columns["error"].filter(pa.array(failed)))
            self._errors.add(
                zip(
                    found.field("values").to_pylist(),
                    found.field("counts").to_pylist(),
                    strict=True,
                )
            )
        counted_mask = pa.array(ok & mine)
        for param in self._params:
            self._axes[param].add(columns[param].filter(counted_mask))
        sharpe = _numpy(columns["excess_sharpe"]).astype(np.float64, copy=False)
        counted = ok & mine
        self._ranked.add(index, columns["config_id"], sharpe, counted)
        self._sharpe.add(sharpe[counted])
        ann = _numpy(columns["excess_sharpe_ann"]).astype(np.float64, copy=False)
        self._sharpe_ann.add(ann[counted])
        self._pbo.add(index, counted)
        self._returns.add(index, counted)
        self._checked.add(index, mine & (index >= 0) & (index < self._total))

    def merge(self, other: ScanReducer) -> None:
        """Take what ``other`` was given (every figure is independent of the order of merging)."""
        self._done += other._done
        self._failed += other._failed
        self._outside += other._outside
        self._errors.merge(other._errors)
        for param, values in other._axes.items():
            self._axes[param].merge(values)
        self._ranked.merge(other._ranked)
        self._sharpe.merge(other._sharpe)
        for mine, theirs in (
            (self._pbo, other._pbo),
            (self._returns, other._returns),
            (self._checked, other._checked),
        ):
            mine.merge(theirs)
        self._sharpe_ann.merge(other._sharpe_ann)

    def cut(self) -> None:
        """Cut the samples' candidates to their sizes: a task does before its answer ships."""
        for reducer in (self._pbo, self._returns, self._checked):
            reducer.cut()

    def result(self) -> ConfigScan:
        """What every part added gives."""

        def sample(reducer: SampleReducer) -> Sample:
            return Sample(reducer.result(), reducer.population, reducer.rule())

        errors, other_errors = self._errors.result()

        return ConfigScan(
            ranked=self._ranked.result(),
            sharpe=self._sharpe.result(),
            pbo=sample(self._pbo),
            returns=sample(self._returns),
            checked=sample(self._checked),
            done=self._done,
            failed=self._failed,
            outside_grid=self._outside,
            errors=errors,
            other_errors=other_errors,
            axis_values={p: v.result() for p, v in self._axes.items()},
            sharpe_ann_first=self._sharpe_ann.result(),
        )
