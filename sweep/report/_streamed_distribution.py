"""The report's distribution summary of a float column, exact, streamed over chunks.

:func:`streamed_summary` gives what ``_summary`` and ``np.histogram`` in ``_ranking`` give
for a column held in memory (count, mean, std, min, max, quantiles, histogram), reading the
column as chunks (one array per part of a run folder) in a few passes and holding a bounded
amount of memory. Every pass is one :class:`PassPlan`, a :func:`reduce_chunk` per chunk and
one :func:`merge` of the partials: plain, picklable records, so that a pass can run as
tasks over the parts and be merged by the driver. Non-finite values are dropped first.

Passes (``n`` finite values):

1. count, min, max, the exact sum, and counts of the top 16 bits of the keys (below).
2. the exact sum of squared deviations from the mean, the histogram counts, and for each
   needed order statistic either the counts of the next 16 key bits among the values that
   share its bits found so far or, once those values number at most ``max_candidates``
   (2^21, 16 MiB of keys, all needed ranks together), the values themselves.
3. ... the same selection step, until every needed order statistic is known.

Always 2 passes up to 2^21 values, and 2 while the values sharing the needed ranks' top 16
key bits number at most that (the annualised Sharpe ratios of the 10^6-config momentum run:
2; with 65536 candidates, 3); at most 4 (four 16-bit digits make the whole 64-bit key).

Why it is exact, and so independent of how the column is chunked and in what order:

- The key of a float is its bit pattern made order-preserving as an unsigned integer (flip
  all bits of negatives, the sign bit of the rest). The order statistics are found by
  integer counts of key digits, then a sort of the few remaining candidates: the k-th
  smallest value itself, as ``np.partition`` finds it. The quantiles then repeat numpy 2.x's
  virtual index, ``floor`` and ``_lerp`` arithmetic of method ``"linear"`` on those values.
- Sums are exact integers: each float is ``M * 2**(e - 1074)`` with integers ``|M| <
  2**53`` and ``e`` (from its bits); the 27- and 26-bit halves of ``M`` are summed per ``e``
  with ``np.bincount`` (float sums of integers below ``2**53``, so exact) and combined into a
  Python integer, the sum times ``2**1074``. The mean is that integer over ``n * 2**1074``,
  rounded once (Python's integer true division is correctly rounded).
- The histogram edges come from the global min and max as ``np.histogram`` builds them;
  the counts are ``np.histogram(chunk, bins, range=(min, max))`` summed, which is the same
  element-wise bin assignment (numpy's uniform-bin fast path) as on the whole column.

The sign of a zero may differ from numpy's (``-0.0 == 0.0``): the key orders ``-0.0``
before ``0.0``, numpy's partition does not tell them apart.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from sweep.errors import SweepError

#: One pass over the column: each call yields its chunks again, the same each time.
Chunks = Callable[[], Iterable[NDArray[np.float64]]]
#: One pass of a plan over every chunk, wherever its caller runs it (here, or as tasks over
#: the chunks merged with :func:`merge`).
PassRunner = Callable[["PassPlan"], "PassPartial"]
#: A set of values sharing the top ``depth`` bits of their keys: ``(depth, prefix)``.
Group = tuple[int, int]

QUANTILE_LEVELS = (0.05, 0.25, 0.5, 0.75, 0.95)
HISTOGRAM_BINS = 40
#: Most values collected and sorted in one pass to settle the needed order statistics (16 MiB
#: of keys: a pass fewer than 65536 on a million values, measured on the main job's Sharpe).
MAX_CANDIDATES = 1 << 21
DIGIT_BITS = 16
DIGITS = 1 << DIGIT_BITS
_SIGN = np.uint64(1 << 63)
_FRACTION = np.uint64((1 << 52) - 1)
_BLOCK = 1 << 26  # values per bincount, so that its float sums stay below 2**53
_ROOT: Group = (0, 0)
#: Partials of a pass merged together at once (a bound on what a pass holds).
MERGE_BATCH = 64
_CHANGED = "streamed summary: the chunks changed between passes (count or values differ)"


@dataclass(frozen=True)
class PassPlan:
    """What one pass computes, from what the passes before it found.

    Attributes
    ----------
    bins : int
        Histogram bins.
    moments : bool
        Count, min, max and the exact sum (the first pass).
    mean : float or None
        Set: the exact sum of ``(x - mean) ** 2``.
    value_range : tuple of float or None
        Set: the histogram counts over ``(min, max)``.
    digit_groups, collect_groups : tuple of Group
        Groups whose next key digit is counted, and groups whose keys are collected.
    """

    bins: int
    moments: bool = False
    mean: float | None = None
    value_range: tuple[float, float] | None = None
    digit_groups: tuple[Group, ...] = ()
    collect_groups: tuple[Group, ...] = ()


@dataclass(frozen=True)
class PassPartial:
    """One pass's result over some chunks; :func:`merge` combines them.

    Attributes
    ----------
    count : int
        Finite values (when the plan asks for moments).
    low, high : int or None
        Smallest and largest key (None: no values or not asked).
    scaled_sum, scaled_squares : int
        Exact sums times ``2**1074`` of the values and of the squared deviations.
    squares_overflow : bool
        Some squared deviation overflowed to infinity.
    histogram : ndarray of int64 or None
        Counts per bin.
    digit_codes, digit_counts : ndarray of int64
        Sparse digit counts, sorted by code ``group index * DIGITS + digit``.
    collected : tuple of ndarray of uint64
        The keys of each collected group.
    """

    count: int
    low: int | None
    high: int | None
    scaled_sum: int
    scaled_squares: int
    squares_overflow: bool
    histogram: NDArray[np.int64] | None
    digit_codes: NDArray[np.int64]
    digit_counts: NDArray[np.int64]
    collected: tuple[NDArray[np.uint64], ...]


@dataclass(frozen=True)
class StreamedSummary:
    """Distribution of a column's finite values.

    Attributes
    ----------
    count : int
        Finite values.
    mean, std, min, max : float or None
        None without values; ``std`` (``ddof=1``) also None with one value.
    quantiles : tuple of float
        At the requested levels (numpy's ``"linear"`` method); empty without values.
    histogram_counts : ndarray of int64
    histogram_edges : ndarray of float64
        As ``np.histogram(values, bins)``; both empty without values.
    """

    count: int
    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    quantiles: tuple[float, ...]
    histogram_counts: NDArray[np.int64]
    histogram_edges: NDArray[np.float64]


@dataclass(frozen=True)
class _Target:
    """A needed order statistic: ``rank`` within the group; settled at depth 64."""

    rank: int
    depth: int
    prefix: int
    size: int


def keys_of(values: NDArray[np.float64]) -> NDArray[np.uint64]:
    """Order-preserving ``uint64`` keys of float64 values (``-0.0`` before ``0.0``)."""
    bits = values.view(np.uint64)
    negative = (bits.view(np.int64) >> 63).view(np.uint64)
    return bits ^ (negative | _SIGN)


def value_of(key: int) -> float:
    """The float64 whose key is ``key`` (inverse of :func:`keys_of`)."""
    bits = key ^ (1 << 63) if key >> 63 else ~key & ((1 << 64) - 1)
    return float(np.array(bits, dtype=np.uint64).view(np.float64))


def scaled_sum(values: NDArray[np.float64]) -> int:
    """Exact sum of finite values, times ``2**1074``, as a Python integer."""
    total = 0
    for start in range(0, values.size, _BLOCK):
        block = values[start : start + _BLOCK]
        bits = block.view(np.uint64)
        field = (bits >> 52).astype(np.intp) & 0x7FF  # biased exponent E
        whole = (bits & _FRACTION).view(np.int64) | (field != 0).astype(np.int64) << 52
        sign = block.view(np.int64) >> 63  # 0 or -1
        whole = (whole ^ sign) - sign  # value = whole * 2**(max(E, 1) - 1075)
        high = np.bincount(field, (whole >> 26).astype(np.float64), 2047)
        low = np.bincount(field, (whole & ((1 << 26) - 1)).astype(np.float64), 2047)
        for e in np.flatnonzero((high != 0) | (low != 0)).tolist():
            total += ((int(high[e]) << 26) + int(low[e])) << max(e - 1, 0)
    return total


def exact_mean(scaled: int, count: int) -> float:
    """The mean of ``count`` values whose :func:`scaled_sum` is ``scaled``, rounded once."""
    return _ratio(scaled, count << 1074)


def _members(keys: NDArray[np.uint64], groups: tuple[Group, ...]) -> list[NDArray[np.uint64]]:
    """For each group, the keys whose top ``depth`` bits are ``prefix``."""
    tops: dict[int, NDArray[np.uint64]] = {}
    found = []
    for depth, prefix in groups:
        if depth == 0:
            found.append(keys)
            continue
        if depth not in tops:
            tops[depth] = keys >> np.uint64(64 - depth)
        found.append(keys[tops[depth] == prefix])
    return found


def _digits(keys: NDArray[np.uint64], groups: tuple[Group, ...]) -> tuple[NDArray, NDArray]:
    """Sparse counts of each group's next digit, as in :attr:`PassPartial.digit_codes`."""
    codes = np.empty(0, np.int64)
    if groups:
        parts = [
            ((inside >> (64 - DIGIT_BITS - depth)) & (DIGITS - 1)).astype(np.int64) + g * DIGITS
            for g, ((depth, _), inside) in enumerate(
                zip(groups, _members(keys, groups), strict=True)
            )
        ]
        codes = np.concatenate(parts)
    if codes.size >= DIGITS * len(groups):  # dense counts beat a sort
        dense = np.bincount(codes, minlength=DIGITS * len(groups))
        found = np.flatnonzero(dense)
        return found.astype(np.int64), dense[found].astype(np.int64)
    found, counts = np.unique(codes, return_counts=True)
    return found.astype(np.int64), counts.astype(np.int64)


def reduce_chunk(chunk: NDArray[np.float64], plan: PassPlan) -> PassPartial:
    """One chunk's part of a pass.

    Parameters
    ----------
    chunk : ndarray of float64
        Any size; non-finite values are dropped.
    plan : PassPlan
        What the pass computes.

    Returns
    -------
    PassPartial
        To :func:`merge` with the other chunks' (in any order and grouping).
    """
    values = np.asarray(chunk, dtype=np.float64).reshape(-1)
    finite = np.isfinite(values)
    if not finite.all():
        values = values[finite]
    keys = keys_of(values)
    moments = plan.moments and values.size > 0
    squares, overflow = 0, False
    if plan.mean is not None:
        with np.errstate(over="ignore"):
            deviation = values - plan.mean
            square = deviation * deviation
        overflow = not np.isfinite(square).all()
        squares = scaled_sum(square[np.isfinite(square)] if overflow else square)
    histogram = None
    if plan.value_range is not None:
        histogram = np.histogram(values, plan.bins, plan.value_range)[0].astype(np.int64)
    codes, counts = _digits(keys, plan.digit_groups)
    return PassPartial(
        count=int(values.size) if plan.moments else 0,
        low=int(keys.min()) if moments else None,
        high=int(keys.max()) if moments else None,
        scaled_sum=scaled_sum(values) if plan.moments else 0,
        scaled_squares=squares,
        squares_overflow=overflow,
        histogram=histogram,
        digit_codes=codes,
        digit_counts=counts,
        collected=tuple(_members(keys, plan.collect_groups)),
    )


def merge(partials: Sequence[PassPartial]) -> PassPartial:
    """Combine the partials of one pass (exact; independent of their order).

    Parameters
    ----------
    partials : sequence of PassPartial
        At least one, all from the same plan.

    Returns
    -------
    PassPartial
    """
    lows = [p.low for p in partials if p.low is not None]
    highs = [p.high for p in partials if p.high is not None]
    histograms = [p.histogram for p in partials if p.histogram is not None]
    codes = np.concatenate([p.digit_codes for p in partials])
    counts = np.concatenate([p.digit_counts for p in partials])
    order = np.argsort(codes, kind="stable")
    codes, counts = codes[order], counts[order]
    starts = np.flatnonzero(np.diff(codes, prepend=-1) != 0)
    return PassPartial(
        count=sum(p.count for p in partials),
        low=min(lows) if lows else None,
        high=max(highs) if highs else None,
        scaled_sum=sum(p.scaled_sum for p in partials),
        scaled_squares=sum(p.scaled_squares for p in partials),
        squares_overflow=any(p.squares_overflow for p in partials),
        histogram=np.sum(histograms, axis=0, dtype=np.int64) if histograms else None,
        digit_codes=codes[starts],
        digit_counts=np.add.reduceat(counts, starts) if codes.size else counts,
        collected=tuple(
            np.concatenate(k) for k in zip(*(p.collected for p in partials), strict=True)
        ),
    )


def first_pass_plan(bins: int = HISTOGRAM_BINS) -> PassPlan:
    """The plan of a summary's first pass, for a caller that runs it in a pass of its own."""
    return PassPlan(bins, moments=True, digit_groups=(_ROOT,))


class FirstPass:
    """A summary's first pass, fed a chunk at a time by a caller's own pass over the data.

    Parameters
    ----------
    bins : int
        Histogram bins (as :func:`streamed_summary` will be given).
    batch : int
        Partials merged together.
    """

    def __init__(self, bins: int = HISTOGRAM_BINS, batch: int = MERGE_BATCH) -> None:
        self._plan = first_pass_plan(bins)
        self._total = reduce_chunk(np.empty(0), self._plan)
        self._pending: list[PassPartial] = []
        self._batch = batch

    def add(self, chunk: NDArray[np.float64]) -> None:
        """Take some values."""
        self._take(reduce_chunk(chunk, self._plan))

    def merge(self, other: FirstPass) -> None:
        """Take the values ``other`` was given (exact: the order of merging does not matter)."""
        self._take(other.result())

    def _take(self, partial: PassPartial) -> None:
        self._pending.append(partial)
        if len(self._pending) >= self._batch:
            self._total, self._pending = merge([self._total, *self._pending]), []

    def result(self) -> PassPartial:
        """The first pass over every value added."""
        self._total, self._pending = merge([self._total, *self._pending]), []
        return self._total


def run_pass(chunks: Chunks, plan: PassPlan, batch: int = MERGE_BATCH) -> PassPartial:
    """One pass in this process: reduce every chunk, merging every ``batch`` partials."""
    total = reduce_chunk(np.empty(0), plan)
    pending: list[PassPartial] = []
    for chunk in chunks():
        pending.append(reduce_chunk(chunk, plan))
        if len(pending) == batch:
            total, pending = merge([total, *pending]), []
    return merge([total, *pending])


def _advance(targets: dict[int, _Target], plan: PassPlan, found: PassPartial) -> None:
    """Narrow each target by the digits counted or the keys collected in ``found``."""
    for rank, t in targets.items():
        if (t.depth, t.prefix) in plan.digit_groups:
            g = plan.digit_groups.index((t.depth, t.prefix))
            inside = (found.digit_codes >= g * DIGITS) & (found.digit_codes < (g + 1) * DIGITS)
            digits, counts = found.digit_codes[inside] - g * DIGITS, found.digit_counts[inside]
            total = np.cumsum(counts)
            if total.size == 0 or int(total[-1]) != t.size:
                raise SweepError(_CHANGED)
            i = int(np.searchsorted(total, t.rank, side="right"))
            below = int(total[i] - counts[i])
            prefix = (t.prefix << DIGIT_BITS) | int(digits[i])
            targets[rank] = _Target(t.rank - below, t.depth + DIGIT_BITS, prefix, int(counts[i]))
        elif (t.depth, t.prefix) in plan.collect_groups:
            keys = np.sort(found.collected[plan.collect_groups.index((t.depth, t.prefix))])
            if keys.size != t.size:
                raise SweepError(_CHANGED)
            targets[rank] = _Target(0, 64, int(keys[t.rank]), 1)


def _selection_plan(targets: dict[int, _Target], plan: PassPlan, most: int) -> PassPlan:
    """Collect the smallest open groups while they fit in ``most``; count digits of the rest."""
    sizes = {(t.depth, t.prefix): t.size for t in targets.values() if t.depth < 64}
    collect: list[Group] = []
    for group, size in sorted(sizes.items(), key=lambda item: (item[1], item[0])):
        if size <= most - sum(sizes[c] for c in collect):
            collect.append(group)
    digit = tuple(sorted(set(sizes) - set(collect)))
    return replace(plan, digit_groups=digit, collect_groups=tuple(sorted(collect)))


def _quantile_ranks(n: int, q: NDArray[np.float64]) -> tuple[NDArray, NDArray, NDArray]:
    """As numpy 2.x ``_quantile`` (``"linear"``): previous and next index, and gamma."""
    virtual = (n - 1) * q
    previous = np.floor(virtual)
    following = previous + 1
    above = virtual >= n - 1
    previous[above], following[above] = -1, -1
    below = virtual < 0
    previous[below], following[below] = 0, 0
    previous, following = previous.astype(np.intp), following.astype(np.intp)
    return previous, following, np.asarray(virtual - previous, dtype=virtual.dtype)


def _lerp(a: NDArray, b: NDArray, t: NDArray) -> NDArray[np.float64]:
    """As numpy 2.x ``_lerp``, operation for operation."""
    with np.errstate(over="ignore", invalid="ignore"):
        diff = b - a
        result: NDArray[np.float64] = np.add(a, diff * t)
        np.subtract(b, diff * (1 - t), out=result, where=t >= 0.5, casting="unsafe")
    return result


def _ratio(numerator: int, denominator: int) -> float:
    """``numerator / denominator`` correctly rounded; infinity past the largest float."""
    try:
        return numerator / denominator
    except OverflowError:
        return math.inf


def streamed_summary(
    chunks: Chunks | None,
    bins: int = HISTOGRAM_BINS,
    levels: Sequence[float] = QUANTILE_LEVELS,
    max_candidates: int = MAX_CANDIDATES,
    first: PassPartial | None = None,
    runner: PassRunner | None = None,
) -> StreamedSummary:
    """Summarise the finite values of a column read as chunks, exactly, in a few passes.

    Parameters
    ----------
    chunks : Chunks or None
        Called once per pass; yields the same float64 arrays each time (any sizes, order).
        None when ``runner`` is given.
    bins : int
        Histogram bins.
    levels : sequence of float
        Quantile levels in [0, 1].
    max_candidates : int
        Most values collected in one pass to settle the quantiles (memory bound).
    first : PassPartial, optional
        The first pass, already made over the same values (:class:`FirstPass`); the
        passes here start from the second.
    runner : PassRunner, optional
        Runs each pass over the values (its partials merged by :func:`merge`), for a caller
        that spreads a pass over tasks; default: :func:`run_pass` over ``chunks`` here.

    Returns
    -------
    StreamedSummary
        Equal to ``np.quantile``, ``np.histogram``, ``min`` and ``max`` of the concatenated
        finite values, and the correctly rounded mean and std.

    Raises
    ------
    SweepError
        ``bins`` below 1, a level outside [0, 1], or chunks that change between passes.
    ValueError
        From ``np.histogram``: a range too narrow for ``bins`` distinct edges.

    Notes
    -----
    ``std`` uses ``ddof=1``: each deviation ``d = x - mean`` and its square ``d * d`` are
    rounded per value in float64 (as numpy does); their sum is exact; the sum over
    ``n - 1`` is rounded once, then ``math.sqrt``. numpy's pairwise float sums differ from
    these in the last bits. Without values the quantiles and histogram arrays are empty.

    References
    ----------
    .. [1] R. J. Hyndman and Y. Fan, "Sample quantiles in statistical packages," The
       American Statistician, 50(4), pp. 361-365, 1996 (method 7, numpy's "linear").
    """
    q = np.asarray(levels, dtype=np.float64).reshape(-1)
    if bins < 1 or not ((q >= 0) & (q <= 1)).all():
        raise SweepError(
            f"streamed summary: bins must be >= 1 and levels in [0, 1]; got "
            f"bins={bins}, levels={list(levels)}"
        )
    if runner is None:
        if chunks is None:
            raise SweepError("streamed summary: give chunks or a pass runner")
        runner = functools.partial(run_pass, chunks)
    plan = first_pass_plan(bins)
    first = runner(plan) if first is None else first
    n = first.count
    if n == 0 or first.low is None or first.high is None:
        empty = np.empty(0)
        return StreamedSummary(0, None, None, None, None, (), empty.astype(np.int64), empty)
    low, high = value_of(first.low), value_of(first.high)
    edges = np.histogram_bin_edges(np.empty(0), bins, (low, high))
    mean = exact_mean(first.scaled_sum, n)
    previous, following, gamma = _quantile_ranks(n, q)
    ranks = sorted({int(r) % n for r in np.concatenate([previous, following])})
    targets = {r: _Target(r, 0, 0, n) for r in ranks}
    _advance(targets, plan, first)
    plan = PassPlan(bins, mean=mean if n > 1 else None, value_range=(low, high))
    second = None
    while second is None or any(t.depth < 64 for t in targets.values()):
        plan = _selection_plan(targets, plan, max_candidates)
        found = runner(plan)
        _advance(targets, plan, found)
        second = found if second is None else second
        plan = PassPlan(bins)
    std = None
    if n > 1:
        variance = (
            math.inf if second.squares_overflow else _ratio(second.scaled_squares, (n - 1) << 1074)
        )
        std = math.sqrt(variance)
    value = {r: value_of(t.prefix) for r, t in targets.items()}
    a = np.array([value[int(r) % n] for r in previous], dtype=np.float64)
    b = np.array([value[int(r) % n] for r in following], dtype=np.float64)
    counts = second.histogram if second.histogram is not None else np.zeros(bins, np.int64)
    if int(counts.sum()) != n:
        raise SweepError(_CHANGED)
    return StreamedSummary(
        count=n,
        mean=mean,
        std=std,
        min=low,
        max=high,
        quantiles=tuple(_lerp(a, b, gamma).tolist()),
        histogram_counts=counts,
        histogram_edges=edges,
    )
