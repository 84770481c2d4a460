"""What the step-down tests need of the configs' ``t``: counts between the null's values.

StepM, k-StepM and FDP-StepM (:mod:`stats._data_snooping`, :mod:`stats._generalized_error`)
call a config real when its studentised statistic ``t`` exceeds a step's critical value, and
every critical value they compute is a value stored in the merged :class:`NullSummary`
(``top_value`` or ``spa``), 0 (the floor of k-StepM), or ``±inf``. So they never need the
configs' ``t`` themselves, only:

* how many configs have ``t`` above each of those values: the counts of ``t`` in the
  intervals between the sorted distinct values (:class:`TCounts`), O(B x top_k) integers
  whatever the number of configs;
* the ``t`` of the configs the stored top lists name (``entry_t``), which decide which
  stored entries a step leaves out.

Both are sums over configs (and a lookup), so parts of a sweep reduce to them one at a time
and merge exactly (:func:`t_counts_of` per part, :func:`merge_t_counts`): a sweep of 10^8
configs runs its step-down tests with no per-config array in memory, and gets the same
answer as from the arrays, which the array functions (:func:`stats.stepm`,
:func:`stats.fdp_stepm`) now compute through these counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from stats._data_snooping import NO_CONFIG, NullSummary
from stats._validation import input_error

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def critical_values(summary: NullSummary) -> FloatArray:
    """Every finite value a step-down critical value can take for this summary, sorted.

    The distinct finite values of ``top_value`` and ``spa``, and 0.
    """
    values = np.concatenate([summary.top_value.ravel(), summary.spa, [0.0]])
    return np.unique(values[np.isfinite(values)])


@dataclass(frozen=True)
class TCounts:
    """The configs' finite ``t`` counted between the critical values, and the listed ones' ``t``.

    Attributes
    ----------
    thresholds : ndarray of float64, shape (v,)
        :func:`critical_values` of the summary.
    counts : ndarray of int64, shape (v + 1,)
        ``counts[i]`` configs have ``thresholds[i - 1] < t <= thresholds[i]`` (the first
        and last intervals open to ``-inf`` and ``+inf``).
    listed_index, listed_t : ndarray, shape (n,)
        The grid index and ``t`` of each tested config (finite ``t``) that the summary's
        top lists name, sorted by index (a config in two parts, a repeated batch, once).
    """

    thresholds: FloatArray
    counts: IntArray
    listed_index: IntArray
    listed_t: FloatArray

    @property
    def total(self) -> int:
        """Configs with a finite ``t``."""
        return int(self.counts.sum())

    def above(self, value: float) -> int:
        """Configs with ``t > value``, for ``value`` a critical value, ``±inf`` or NaN.

        Raises
        ------
        ValueError
            When ``value`` is finite and not one of :attr:`thresholds` (the counts cannot
            tell, and no step-down computes such a value).
        """
        if math.isnan(value) or value == math.inf:
            return 0
        if value == -math.inf:
            return self.total
        at = int(np.searchsorted(self.thresholds, value))
        if at >= self.thresholds.size or self.thresholds[at] != value:
            raise ValueError(f"{value!r} is not a critical value of the null summary")
        return int(self.counts[at + 1 :].sum())

    def entry_t(self, summary: NullSummary) -> FloatArray:
        """The ``t`` of each stored top entry's config (``-inf``: padding or not tested)."""
        out = np.full(summary.top_index.shape, -np.inf)
        if not self.listed_index.size:
            return out
        pos = np.clip(np.searchsorted(self.listed_index, summary.top_index), 0, None)
        pos = np.minimum(pos, self.listed_index.size - 1)
        hit = (self.listed_index[pos] == summary.top_index) & (summary.top_index != NO_CONFIG)
        out[hit] = self.listed_t[pos[hit]]
        return out


def tested_configs(grid_index: IntArray, t_stat: FloatArray) -> tuple[IntArray, FloatArray]:
    """The grid indices and ``t`` of the configs with a finite ``t`` (the tested ones).

    Raises
    ------
    StatsInputError
        When the two are not 1-D arrays of one length.
    """
    idx = np.asarray(grid_index, dtype=np.int64)
    t = np.asarray(t_stat, dtype=np.float64)
    if idx.shape != t.shape or idx.ndim != 1:
        raise input_error(
            f"grid_index, t_stat: expected two 1-D arrays of one length, got shapes "
            f"{idx.shape} and {t.shape}"
        )
    finite = np.isfinite(t)
    return idx[finite], t[finite]


def rejected_above(grid_index: IntArray, t_stat: FloatArray, threshold: float) -> IntArray:
    """The grid indices, sorted, of the configs with ``t > threshold`` (NaN never is)."""
    idx = np.asarray(grid_index, dtype=np.int64)
    return np.sort(idx[np.asarray(t_stat, dtype=np.float64) > threshold])


def t_counts_of(summary: NullSummary, grid_index: IntArray, t_stat: FloatArray) -> TCounts:
    """:class:`TCounts` of some configs (a part, or every config at once).

    Parameters
    ----------
    summary : NullSummary
        The merged summary of the whole sweep (its values and lists are what is counted
        against, whatever set of configs is counted here).
    grid_index, t_stat : ndarray, shape (m,)
        The configs' grid positions and studentised statistics; a NaN or infinite ``t``
        (a constant series) is not counted.
    """
    idx, t = tested_configs(grid_index, t_stat)
    thresholds = critical_values(summary)
    counts = np.bincount(
        np.searchsorted(thresholds, t, side="left"), minlength=thresholds.size + 1
    ).astype(np.int64)
    listed = np.isin(idx, summary.top_index)
    order = np.argsort(idx[listed], kind="stable")
    return TCounts(thresholds, counts, idx[listed][order], t[listed][order])


def merge_t_counts(parts: Sequence[TCounts]) -> TCounts:
    """The :class:`TCounts` of the configs of several parts together (exact, order-free).

    Every part must have been counted against the same summary. A config held by two
    parts (a batch repeated after a crash, identical rows) is listed once; its count is
    the caller's to leave out (count each config in one part only).
    """
    if not parts:
        raise input_error("parts: expected at least one TCounts")
    first = parts[0].thresholds
    for part in parts[1:]:
        if not np.array_equal(part.thresholds, first):
            raise input_error("parts: counted against different null summaries")
    index = np.concatenate([p.listed_index for p in parts])
    t = np.concatenate([p.listed_t for p in parts])
    index, where = np.unique(index, return_index=True)
    return TCounts(
        first, np.sum([p.counts for p in parts], axis=0, dtype=np.int64), index, t[where]
    )
