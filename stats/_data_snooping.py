"""Sweep-wide data-snooping tests from joint resamples, merged from per-part null summaries.

Every config's excess returns ``e_k = r_k - benchmark`` are resampled on the SAME block
bootstrap draws (joint resampling). For config ``k`` with mean ``ē_k`` over ``n`` periods and
replication ``b`` of ``B``, the null-centred resample mean is ``c_kb = ē*_kb - ē_k``. From it:

* ``ω̂_k``: the bootstrap estimate of the long-run standard deviation of ``e_k`` (Hansen 2005,
  Sec. 2.3), fixed per config: the limit of ``sqrt(n * mean_b c_kb²)`` as ``B → ∞``, computed
  in closed form from the draws' block law (:func:`stats.bootstrap_long_run_sd`), so it is
  neither noisy nor tied to the replications it scales;
* ``t_k = sqrt(n) ē_k / ω̂_k``: the studentised statistic;
* the per-config p-value ``(1 + #{c_kb >= ē_k}) / (1 + B)``;
* ``s_kb = sqrt(n) (c_kb + ē_k 1{t_k < -sqrt(2 log log n)}) / ω̂_k``: the replication of
  ``t_k`` under Hansen's consistent recentring (a config far below the benchmark keeps its
  negative mean, so it cannot inflate the null maximum).

A part of the sweep reduces these to a :class:`NullSummary` of O(B) numbers (maxima over its
configs per replication, and the top ``k`` of ``s_kb`` per replication with grid indices);
summaries merge exactly and order-free (:func:`merge_null_summaries`), so the tests below give
the same p-values for any batching, worker count or interruption.

Conventions: statistics are in excess of the benchmark; "beats the benchmark" means a
positive expected excess return. P-values are ``(1 + #{null >= observed}) / (1 + B)``, never 0.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numpy.typing import NDArray
from scipy import optimize

from stats._fixed_math import exp_scalar, log_scalar
from stats._lanes import (
    LANES,
    VECTOR,
    entry_alloca,
    is_lane_array,
    lane_row,
    lane_zero,
    shape_pair,
)
from stats._sharpe_inference import expected_max_sharpe
from stats._validation import input_error

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Rows of ``top_index`` that hold no config (fewer configs than ``k`` in a summary).
NO_CONFIG = -1


@dataclass(frozen=True)
class ResampleDraws:
    """Block-bootstrap draws shared by every config of a sweep.

    Attributes
    ----------
    n_obs : int
        Periods of every series (and of every resample).
    starts, ends : ndarray of int32, shape (n_blocks, reps)
        Start and end (exclusive, up to ``2 n_obs``) of each block of each replication, into
        the series laid twice end to end; blocks of length 0 have ``start == end``.
    fixed_length : int
        The common length of every block but the last (circular blocks), else 0.
    mean_length : float
        The mean block length of stationary blocks (geometric lengths); 0 for circular
        blocks. With ``fixed_length`` it names the law the draws come from, which
        :func:`stats.bootstrap_long_run_sd` needs.
    """

    n_obs: int
    starts: NDArray[np.int32]
    ends: NDArray[np.int32]
    fixed_length: int = 0
    mean_length: float = 0.0

    @property
    def reps(self) -> int:
        """Number of replications ``B``."""
        return int(self.starts.shape[1])

    @functools.cached_property
    def table_starts(self) -> NDArray[np.int32]:
        """Starts of the blocks read from a block-sum table, replication-major.

        Shape (reps, n_blocks - 1) for circular blocks (every block but the last has
        ``fixed_length``), (reps, 0) otherwise; computed once per draws (they are shared by
        every batch of a sweep).
        """
        n_fixed = self.starts.shape[0] - 1 if self.fixed_length > 0 else 0
        return np.ascontiguousarray(self.starts[:n_fixed].T)

    def config_rows(self, excess: FloatArray) -> FloatArray:
        """``excess`` as a contiguous float64 array of shape (configs, n_obs), else refused."""
        x = np.ascontiguousarray(excess, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.n_obs:
            raise input_error(
                f"excess: expected shape (configs, {self.n_obs}), got {np.shape(excess)}"
            )
        return x

    @classmethod
    def from_blocks(
        cls,
        n_obs: int,
        starts: NDArray[np.int64],
        lengths: NDArray[np.int64],
        mean_length: float = 0.0,
    ) -> ResampleDraws:
        """Build from the ``(reps, n_blocks)`` output of ``block_starts_and_lengths``.

        ``mean_length`` is the stationary law's mean block length (0: circular blocks).
        """
        s = np.ascontiguousarray(starts.T, dtype=np.int32)
        e = np.ascontiguousarray((starts + lengths).T, dtype=np.int32)
        head = lengths[:, :-1]
        fixed = int(head.flat[0]) if head.size and (head == head.flat[0]).all() else 0
        return cls(n_obs, s, e, 0 if mean_length > 0 else fixed, float(mean_length))


#: The zero value of a lane tuple.
ZERO8 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@numba.njit(inline="always")
def load8(a, t):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Row ``t`` of an ``(N, 8)`` array as a lane tuple."""
    return (a[t, 0], a[t, 1], a[t, 2], a[t, 3], a[t, 4], a[t, 5], a[t, 6], a[t, 7])


@numba.njit(inline="always")
def store8(a, t, v):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Write the lane tuple ``v`` into row ``t`` of an ``(N, 8)`` array."""
    a[t, 0] = v[0]
    a[t, 1] = v[1]
    a[t, 2] = v[2]
    a[t, 3] = v[3]
    a[t, 4] = v[4]
    a[t, 5] = v[5]
    a[t, 6] = v[6]
    a[t, 7] = v[7]


@numba.njit(inline="always")
def add8(a, b):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Lane-wise ``a + b``."""
    return (
        a[0] + b[0],
        a[1] + b[1],
        a[2] + b[2],
        a[3] + b[3],
        a[4] + b[4],
        a[5] + b[5],
        a[6] + b[6],
        a[7] + b[7],
    )


@numba.njit(inline="always")
def sub8(a, b):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Lane-wise ``a - b``."""
    return (
        a[0] - b[0],
        a[1] - b[1],
        a[2] - b[2],
        a[3] - b[3],
        a[4] - b[4],
        a[5] - b[5],
        a[6] - b[6],
        a[7] - b[7],
    )


def _lane_prefix_typer(typingctx, x, lo, prefix, values, total):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Rows ``lo .. lo + 7`` of ``x`` (the last row repeated past the end) side by side.

    Their raw prefix sums ``P[0] = 0``, ``P[t + 1] = P[t] + x[rows, t]``: one ``<8 x
    double>`` chain whose lane ``c`` is the scalar sequence ``((0 + x_0) + x_1) + ...`` of
    its row (8 IEEE adds per vector add, nothing fused or reordered). Writes ``total[0] =
    P[n]``, and where not None ``prefix[t] = P[t]`` and ``values[t] = x[rows, t]``. ``x`` is
    C-contiguous float64 (m, n); ``total`` (1, 8), ``prefix`` (n + 1, 8) and ``values`` (n,
    8) C-contiguous float64.
    """
    keep_prefix = prefix != types.none
    keep_values = values != types.none
    if not (
        is_lane_array(x)
        and is_lane_array(total)
        and (is_lane_array(prefix) or not keep_prefix)
        and (is_lane_array(values) or not keep_values)
    ):
        return None
    signature = types.void(x, lo, prefix, values, total)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        rows = context.make_array(sig.args[0])(context, builder, args[0])
        m, n = shape_pair(builder, rows.shape)
        zero_row = ir.Constant(n.type, 0)
        first = context.cast(builder, args[1], sig.args[1], types.intp)
        top = builder.sub(m, ir.Constant(m.type, 1))
        heads = []
        for c in range(LANES):
            r = builder.add(first, ir.Constant(first.type, c))
            r = builder.select(builder.icmp_signed("<", r, top), r, top)
            heads.append(builder.gep(rows.data, [builder.mul(r, n)]))
        acc = entry_alloca(builder, lane_zero())
        if keep_prefix:
            sums = context.make_array(sig.args[2])(context, builder, args[2]).data
            builder.store(lane_zero(), lane_row(builder, sums, zero_row), align=8)
        with cgutils.for_range(builder, n) as loop:
            t = loop.index
            v = ir.Constant(VECTOR, ir.Undefined)
            for c in range(LANES):
                x_ct = builder.load(builder.gep(heads[c], [t]))
                v = builder.insert_element(v, x_ct, ir.Constant(ir.IntType(32), c))
            if keep_values:
                lanes_out = context.make_array(sig.args[3])(context, builder, args[3]).data
                builder.store(v, lane_row(builder, lanes_out, t), align=8)
            now = builder.fadd(builder.load(acc), v)
            builder.store(now, acc)
            if keep_prefix:
                after = builder.add(t, ir.Constant(t.type, 1))
                builder.store(now, lane_row(builder, sums, after), align=8)
        out = context.make_array(sig.args[4])(context, builder, args[4]).data
        builder.store(builder.load(acc), lane_row(builder, out, zero_row), align=8)
        return context.get_dummy_value()

    return signature, codegen


_lane_prefix: Any = intrinsic(_lane_prefix_typer)


def _block_table_typer(typingctx, prefix, mu, length, table):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``table[k]``: the demeaned sums of the 8 lanes over the ``length`` periods from ``k``.

    ``P[end] - P[k] + (P[n] if the block wraps else 0) - length * mu``, the operations of
    :func:`_block_sum8` in its order, one ``<8 x double>`` per start (IEEE, none fused).
    ``prefix`` (n + 1, 8) holds the raw prefix sums, ``mu`` (1, 8) the means.
    """
    if not (
        is_lane_array(prefix)
        and is_lane_array(mu)
        and is_lane_array(table)
        and isinstance(length, types.Integer)
    ):
        return None
    signature = types.void(prefix, mu, length, table)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        sums = context.make_array(sig.args[0])(context, builder, args[0])
        mean = context.make_array(sig.args[1])(context, builder, args[1]).data
        out = context.make_array(sig.args[3])(context, builder, args[3])
        n = shape_pair(builder, out.shape)[0]
        span = context.cast(builder, args[2], sig.args[2], types.intp)
        lanes = VECTOR
        scale = context.cast(builder, args[2], sig.args[2], types.float64)
        wide = ir.Constant(lanes, ir.Undefined)
        for c in range(LANES):
            wide = builder.insert_element(wide, scale, ir.Constant(ir.IntType(32), c))
        mu_v = builder.load(lane_row(builder, mean, ir.Constant(n.type, 0)), align=8)
        shift = builder.fmul(wide, mu_v)
        whole = builder.load(lane_row(builder, sums.data, n), align=8)
        with cgutils.for_range(builder, n) as loop:
            k = loop.index
            e = builder.add(k, span)
            wrapped = builder.icmp_signed(">", e, n)
            end = builder.select(wrapped, builder.sub(e, n), e)
            at_end = builder.load(lane_row(builder, sums.data, end), align=8)
            at_start = builder.load(lane_row(builder, sums.data, k), align=8)
            extra = builder.select(wrapped, whole, lane_zero())
            raw = builder.fadd(builder.fsub(at_end, at_start), extra)
            builder.store(builder.fsub(raw, shift), lane_row(builder, out.data, k), align=8)
        return context.get_dummy_value()

    return signature, codegen


_block_table: Any = intrinsic(_block_table_typer)


#: Replications whose table blocks one :func:`_table_sums` call adds (independent chains).
_TABLE_REPS = 4


def _table_sums_typer(typingctx, table, order, first, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``out[r] = Σ_j table[order[first + r, j]]`` for ``r < 4``, each a row of 8 lanes.

    Each replication's 8 lanes are one ``<8 x double>`` register, zero to start, then one
    vector add per block in block order: lane ``c`` is the scalar sequence ``((0 + t_0) +
    t_1) + ...`` of config ``c``, so its bits are those of one row at a time (a vector add
    is 8 IEEE adds; nothing is fused or reordered; without AVX-512 it is split into narrower
    adds of the same lanes). Four replications run together as independent chains (past the
    last replication the last is repeated; the caller ignores those rows). ``table`` and
    ``out`` are C-contiguous float64 with 8 columns, ``order`` C-contiguous integers of
    shape (reps, blocks) within ``table``'s rows.
    """
    if not (
        isinstance(table, types.Array)
        and isinstance(order, types.Array)
        and isinstance(out, types.Array)
        and table.dtype == types.float64
        and out.dtype == types.float64
        and isinstance(order.dtype, types.Integer)
        and table.layout == order.layout == out.layout == "C"
        and table.ndim == order.ndim == out.ndim == 2
    ):
        return None
    signature = types.void(table, order, first, out)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        table_type, order_type, _, out_type = sig.args
        rows = context.make_array(table_type)(context, builder, args[0])
        starts = context.make_array(order_type)(context, builder, args[1])
        sums = context.make_array(out_type)(context, builder, args[3])
        reps, blocks = shape_pair(builder, starts.shape)
        i64 = ir.IntType(64)
        lanes = VECTOR
        zero = ir.Constant(lanes, [ir.Constant(ir.DoubleType(), 0.0)] * LANES)
        top = builder.sub(reps, ir.Constant(reps.type, 1))
        heads, accs = [], []
        for r in range(_TABLE_REPS):
            b = builder.add(args[2], ir.Constant(args[2].type, r))
            b = builder.select(builder.icmp_signed("<", b, reps), b, top)
            heads.append(builder.gep(starts.data, [builder.mul(b, blocks)]))
            accs.append(entry_alloca(builder, zero))
        with cgutils.for_range(builder, blocks) as loop:
            for r in range(_TABLE_REPS):
                s = builder.load(builder.gep(heads[r], [loop.index]))
                if s.type.width < 64:
                    s = builder.sext(s, i64) if order_type.dtype.signed else builder.zext(s, i64)
                row = builder.gep(rows.data, [builder.mul(s, ir.Constant(i64, LANES))])
                v = builder.load(builder.bitcast(row, lanes.as_pointer()), align=8)
                builder.store(builder.fadd(builder.load(accs[r]), v), accs[r])
        for r in range(_TABLE_REPS):
            dest = builder.gep(sums.data, [ir.Constant(i64, LANES * r)])
            builder.store(builder.load(accs[r]), builder.bitcast(dest, lanes.as_pointer()), align=8)
        return context.get_dummy_value()

    return signature, codegen


_table_sums: Any = intrinsic(_table_sums_typer)


@numba.njit(inline="always")
def _scaled8(length, mu):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Lane-wise ``length * mu``."""
    return (
        length * mu[0],
        length * mu[1],
        length * mu[2],
        length * mu[3],
        length * mu[4],
        length * mu[5],
        length * mu[6],
        length * mu[7],
    )


@numba.njit(inline="always")
def _block_sum8(prefix, mu, s, length):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Sums of the demeaned lanes over ``length`` periods from ``s``, wrapping once."""
    n = prefix.shape[0] - 1
    e = s + length
    wrapped = e > n
    end = e - n if wrapped else e
    raw = add8(sub8(load8(prefix, end), load8(prefix, s)), load8(prefix, n) if wrapped else ZERO8)
    return sub8(raw, _scaled8(length, mu))


@numba.njit(cache=True, nogil=True)
def _centred_means(x, starts, ends, fixed_length, order, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``out[i, b]``: mean of replication ``b`` of row ``i`` minus the row's mean.

    Rows go in groups of 8 side by side, in the lanes of vector registers (the last row
    repeated past the end, its lanes ignored): the raw prefix sums ``P`` of the group
    (:func:`_lane_prefix`, one chain per row) and its mean ``P[n] / n``; a block's demeaned
    sum is ``P[end] - P[s] + (P[n] if it wraps else 0) - length * mean``. Fixed-length
    blocks are read from a table of those sums (:func:`_block_table`, one row of 8 per
    start), replication-major: :func:`_table_sums` keeps each replication's 8 accumulators
    in one register over its blocks, in block order from 0; the last block is added as a
    lane tuple. A row's output is the scalar sequence of that row alone and does not
    depend on the other rows of its group.
    """
    m, n = x.shape
    n_blocks, reps = starts.shape
    prefix = np.empty((n + 1, LANES))
    table = np.empty((n, LANES))
    mu_row = np.empty((1, LANES))
    sums = np.empty((_TABLE_REPS, LANES))
    # Blocks summed from ``table`` (every block of fixed length but the last): ``order``,
    # their starts replication-major (``ResampleDraws.table_starts``).
    n_fixed = order.shape[1]
    for lo in range(0, m, LANES):
        _lane_prefix(x, lo, prefix, None, mu_row)
        for c in range(LANES):
            mu_row[0, c] = mu_row[0, c] / n
        mu = load8(mu_row, 0)
        if n_fixed > 0:
            _block_table(prefix, mu_row, fixed_length, table)
        for first in range(0, reps, _TABLE_REPS):
            _table_sums(table, order, first, sums)
            for b in range(first, min(first + _TABLE_REPS, reps)):
                acc = load8(sums, b - first)
                for j in range(n_fixed, n_blocks):
                    s = starts[j, b]
                    acc = add8(acc, _block_sum8(prefix, mu, s, ends[j, b] - s))
                store8(sums, b - first, acc)
                for c in range(min(LANES, m - lo)):
                    out[lo + c, b] = sums[b - first, c] / n


def centred_resample_means(excess: FloatArray, draws: ResampleDraws) -> FloatArray:
    """Null-centred resample means ``c_kb = ē*_kb - ē_k`` of many series on shared draws.

    Parameters
    ----------
    excess : ndarray of float64, shape (m, n_obs)
        Excess returns, one config per row.
    draws : ResampleDraws
        The sweep's shared block draws.

    Returns
    -------
    ndarray of float64, shape (m, reps)
        Each row depends only on that row and the draws (sequential sums within the row, in
        block order), so it is bitwise identical in any batch.

    Notes
    -----
    Each block's sum comes from prefix sums of the row (wrapping once around its end),
    minus its length times the row's mean; fixed-length (circular) blocks are read from a
    table of the row's block sums, one gather per block. Eight rows share each pass over the
    draws, side by side.
    """
    x = draws.config_rows(excess)
    out = np.empty((x.shape[0], draws.reps))
    _centred_means(x, draws.starts, draws.ends, draws.fixed_length, draws.table_starts, out)
    return out


@dataclass(frozen=True)
class ConfigNullStats:
    """Per-config statistics from the joint resamples (see the module docstring).

    Attributes
    ----------
    omega : ndarray of float64, shape (m,)
        Bootstrap long-run standard deviation ``ω̂_k`` (per period).
    t_stat : ndarray of float64, shape (m,)
        Studentised mean excess return ``sqrt(n) ē_k / ω̂_k`` (NaN when ``ω̂_k = 0``).
    p_value : ndarray of float64, shape (m,)
        ``(1 + #{c_kb >= ē_k}) / (1 + B)`` (NaN when ``ω̂_k = 0``).
    """

    omega: FloatArray
    t_stat: FloatArray
    p_value: FloatArray


def consistent_threshold(n_obs: int) -> float:
    """Hansen's (2005) recentring threshold ``-sqrt(2 log log n)`` on the studentised scale."""
    return -math.sqrt(2.0 * log_scalar(log_scalar(n_obs))) if n_obs > 2 else -math.inf


def _studentised(
    mean: FloatArray, omega: FloatArray, n_obs: int
) -> tuple[NDArray[np.bool_], FloatArray]:
    """Which configs have a usable ``ω̂``, and ``t = sqrt(n) ē / ω̂`` (NaN where not)."""
    valid = (omega > 0) & np.isfinite(mean) & np.isfinite(omega)
    safe = np.where(valid, omega, 1.0)
    return valid, np.where(valid, math.sqrt(n_obs) * mean / safe, np.nan)


def config_null_stats(
    mean: FloatArray, omega: FloatArray, centred: FloatArray, n_obs: int
) -> ConfigNullStats:
    """Per-config ``t`` and bootstrap p-value from ``ω̂`` and the centred resample means.

    Parameters
    ----------
    mean : ndarray of float64, shape (m,)
        Mean excess return of each config.
    omega : ndarray of float64, shape (m,)
        Long-run standard deviations, from :func:`stats.bootstrap_long_run_sd`.
    centred : ndarray of float64, shape (m, reps)
        From :func:`centred_resample_means`.
    n_obs : int
        Periods per series.

    Returns
    -------
    ConfigNullStats

    Notes
    -----
    ``ω̂_k²`` is the bootstrap variance of ``√n ē*_k`` (Hansen 2005, Sec. 2.3), taken at its
    exact value rather than from the test's own replications: an estimate from the same
    ``B`` replications makes every studentised null row's root mean square exactly 1 and
    over-rejects the sweep-wide maximum (see :mod:`stats._bootstrap_variance`). Studentising
    divides a config's observed and resampled statistics by the same fixed ``ω̂_k``, so its
    own p-value equals that of the plain mean; studentisation matters for the sweep-wide
    maximum, where it keeps a noisy config from dominating the null (Hansen 2005; Romano and
    Wolf 2005, Sec. 4). The +1 in numerator and denominator makes the p-value valid in finite
    samples and never 0 (Davison and Hinkley 1997, Sec. 4.2).

    References
    ----------
    .. [1] Hansen, P. R. (2005). "A test for superior predictive ability". Journal of
       Business & Economic Statistics 23(4), 365-380.
    .. [2] Romano, J. P. and Wolf, M. (2005). "Stepwise multiple testing as formalized data
       snooping". Econometrica 73(4), 1237-1282.
    .. [3] Davison, A. C. and Hinkley, D. V. (1997). Bootstrap Methods and their Application.
       Cambridge University Press.
    """
    n_reps = centred.shape[1]
    valid, t_stat = _studentised(mean, omega, n_obs)
    exceed = (centred >= mean[:, None]).sum(axis=1)
    return ConfigNullStats(
        omega=np.asarray(omega, dtype=np.float64),
        t_stat=t_stat,
        p_value=np.where(valid, (1.0 + exceed) / (1.0 + n_reps), np.nan),
    )


@dataclass(frozen=True)
class NullSummary:
    """What one part of a sweep contributes to the sweep-wide tests: O(reps x k) numbers.

    Attributes
    ----------
    n_configs : int
        Configs with a finite, non-constant excess series that entered the summary.
    reality_check : ndarray of float64, shape (reps,)
        ``max_k sqrt(n) c_kb`` (White's Reality Check, not studentised).
    spa : ndarray of float64, shape (reps,)
        ``max_k s_kb`` (Hansen's SPA, studentised, consistent recentring).
    null_sharpe : ndarray of float64, shape (reps,)
        ``max_k c_kb / sd_k``: the best null Sharpe ratio (per period) of the replication,
        with each config's observed standard deviation held fixed.
    top_value : ndarray of float64, shape (reps, k)
        The ``k`` largest ``s_kb`` of each replication, descending (``-inf`` pads).
    top_index : ndarray of int64, shape (reps, k)
        Their grid indices (:data:`NO_CONFIG` pads); ties broken by the smaller index.
    """

    n_configs: int
    reality_check: FloatArray
    spa: FloatArray
    null_sharpe: FloatArray
    top_value: FloatArray
    top_index: IntArray

    @property
    def reps(self) -> int:
        """Number of replications."""
        return int(self.spa.shape[0])

    @property
    def top_k(self) -> int:
        """Entries kept per replication for StepM."""
        return int(self.top_value.shape[1])


def _top_k(values: FloatArray, index: IntArray, k: int) -> tuple[FloatArray, IntArray]:
    """Per row, the ``k`` largest values (ties: smaller index first), padded."""
    reps, m = values.shape
    if m < k:
        pad = k - m
        values = np.concatenate([values, np.full((reps, pad), -np.inf)], axis=1)
        index = np.concatenate([index, np.full((reps, pad), NO_CONFIG, dtype=np.int64)], axis=1)
    # Sort by (-value, index): lexsort's last key is primary. Pads (index -1, value -inf)
    # sort last because -(-inf) is the largest key.
    order = np.lexsort((index, -values), axis=1)
    values, index = np.take_along_axis(values, order, 1), np.take_along_axis(index, order, 1)
    # A config listed twice (identical rows of a batch repeated after a crash) sits in
    # adjacent slots once sorted; keep its first entry only.
    repeat = np.zeros(values.shape, dtype=bool)
    repeat[:, 1:] = (index[:, 1:] == index[:, :-1]) & (index[:, 1:] != NO_CONFIG)
    if repeat.any():
        values = np.where(repeat, -np.inf, values)
        index = np.where(repeat, NO_CONFIG, index)
        order = np.lexsort((index, -values), axis=1)
        values, index = np.take_along_axis(values, order, 1), np.take_along_axis(index, order, 1)
    return values[:, :k], index[:, :k]


def _order_rows_typer(typingctx, value, key, hi, lo):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Compare-exchange rows ``hi`` and ``lo`` in every column, so that ``hi`` comes first.

    The order is :func:`_top_k`'s: descending value, then ascending key (the index, as
    float64 so both keys share a vector type). ``value`` and ``key`` are C-contiguous
    float64 of one shape, their width a multiple of 8 (one ``<8 x double>`` per 8 columns:
    ordered compares and selects, no arithmetic).
    """
    if not (is_lane_array(value) and value == key):
        return None
    signature = types.void(value, key, hi, lo)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        values = context.make_array(sig.args[0])(context, builder, args[0])
        keys = context.make_array(sig.args[1])(context, builder, args[1])
        width = shape_pair(builder, values.shape)[1]
        first = context.cast(builder, args[2], sig.args[2], types.intp)
        second = context.cast(builder, args[3], sig.args[3], types.intp)
        lanes = VECTOR
        rows = [
            builder.gep(array.data, [builder.mul(row, width)])
            for array in (values, keys)
            for row in (first, second)
        ]
        eight = ir.Constant(width.type, LANES)
        with cgutils.for_range(builder, builder.sdiv(width, eight)) as loop:
            at = builder.mul(loop.index, eight)
            slots = [builder.bitcast(builder.gep(row, [at]), lanes.as_pointer()) for row in rows]
            v_hi, v_lo, g_hi, g_lo = (builder.load(slot, align=8) for slot in slots)
            swap = builder.or_(
                builder.fcmp_ordered(">", v_lo, v_hi),
                builder.and_(
                    builder.fcmp_ordered("==", v_lo, v_hi), builder.fcmp_ordered("<", g_lo, g_hi)
                ),
            )
            builder.store(builder.select(swap, v_lo, v_hi), slots[0], align=8)
            builder.store(builder.select(swap, v_hi, v_lo), slots[1], align=8)
            builder.store(builder.select(swap, g_lo, g_hi), slots[2], align=8)
            builder.store(builder.select(swap, g_hi, g_lo), slots[3], align=8)
        return context.get_dummy_value()

    return signature, codegen


_order_rows: Any = intrinsic(_order_rows_typer)


@numba.njit(cache=True, nogil=True)
def _bitonic_sort(value, key):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Sort the rows of every column (power-of-2 rows), first in :func:`_order_rows`'s order."""
    size = value.shape[0]
    run = 2
    while run <= size:
        stride = run // 2
        while stride > 0:
            for i in range(size):
                partner = i ^ stride
                if partner > i:
                    if i & run == 0:
                        _order_rows(value, key, i, partner)
                    else:
                        _order_rows(value, key, partner, i)
            stride //= 2
        run *= 2


#: Indices below this are exact in float64 (the sort network's index key).
_EXACT_INDEX = 2**53


@numba.njit(cache=True, nogil=True)
def _sorted_top_k(values, index, top_value, top_index):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Per column ``b`` of ``values`` (configs x reps), its ``k`` first entries, sorted.

    :func:`_top_k`'s order is ``np.lexsort((index, -value))``: descending value (``0.0`` and
    ``-0.0`` equal), then ascending index. With unique indices and no NaN it is a strict
    total order, so any correct sort gives :func:`_top_k`'s lists bit for bit; this one is
    a bitonic network over the configs (padded to a power of 2 with ``-inf`` of an index
    above every config's, which sort after every config) with the replications in the SIMD
    lanes: the same compare-exchanges for every column, no branches. Returns False, leaving
    the outputs unfinished, where that does not hold (a repeated index, a NaN, an index not
    exact in float64, or fewer configs than ``k``, where :func:`_top_k` pads): the caller
    then uses :func:`_top_k`.
    """
    m, reps = values.shape
    k = top_value.shape[1]
    if m < k or np.isnan(values).any():
        return False
    ordered = np.sort(index)
    if (ordered[1:] == ordered[:-1]).any() or ordered[0] <= -_EXACT_INDEX:
        return False
    if ordered[m - 1] >= _EXACT_INDEX:
        return False
    size = 1
    while size < m:
        size *= 2
    width = (reps + LANES - 1) // LANES * LANES  # columns past reps: sorted, then ignored
    value = np.full((size, width), -np.inf)
    key = np.full((size, width), float(_EXACT_INDEX))
    for i in range(m):
        for b in range(reps):
            value[i, b] = values[i, b]
            key[i, b] = index[i]
    _bitonic_sort(value, key)
    for b in range(reps):
        for r in range(k):
            top_value[b, r] = value[r, b]
            top_index[b, r] = np.int64(key[r, b])
    return True


def summarize_null(
    grid_index: IntArray,
    mean: FloatArray,
    std: FloatArray,
    omega: FloatArray,
    centred: FloatArray,
    n_obs: int,
    top_k: int,
) -> NullSummary:
    """Reduce a batch of configs to its :class:`NullSummary`.

    Parameters
    ----------
    grid_index : ndarray of int64, shape (m,)
        The configs' grid positions (unique).
    mean, std : ndarray of float64, shape (m,)
        Mean and standard deviation (ddof=1) of each config's excess returns.
    omega : ndarray of float64, shape (m,)
        Long-run standard deviations (:func:`stats.bootstrap_long_run_sd`).
    centred : ndarray of float64, shape (m, reps)
        From :func:`centred_resample_means`.
    n_obs : int
        Periods per series.
    top_k : int
        Entries kept per replication for StepM.

    Returns
    -------
    NullSummary
        Configs whose excess series is constant or non-finite are left out.
    """
    _, t_stat = _studentised(mean, omega, n_obs)
    keep = np.isfinite(t_stat) & np.isfinite(centred).all(axis=1) & (std > 0)
    c = centred[keep]
    reps = centred.shape[1]
    if not keep.any():
        empty = np.full(reps, -np.inf)
        return NullSummary(
            0,
            empty,
            empty.copy(),
            empty.copy(),
            np.full((reps, top_k), -np.inf),
            np.full((reps, top_k), NO_CONFIG, dtype=np.int64),
        )
    root_n = math.sqrt(n_obs)
    t = t_stat[keep]
    shift = np.where(t < consistent_threshold(n_obs), mean[keep], 0.0)
    sim = root_n * (c + shift[:, None]) / np.asarray(omega, dtype=np.float64)[keep][:, None]
    kept = np.ascontiguousarray(grid_index[keep], dtype=np.int64)
    top_value = np.empty((reps, top_k))
    top_index = np.empty((reps, top_k), dtype=np.int64)
    if not _sorted_top_k(sim, kept, top_value, top_index):
        idx = np.broadcast_to(kept, (reps, kept.shape[0]))
        top_value, top_index = _top_k(np.ascontiguousarray(sim.T), np.ascontiguousarray(idx), top_k)
    return NullSummary(
        n_configs=int(keep.sum()),
        reality_check=root_n * c.max(axis=0),
        spa=sim.max(axis=0),
        null_sharpe=(c / std[keep][:, None]).max(axis=0),
        top_value=top_value,
        top_index=top_index,
    )


def merge_null_summaries(summaries: Sequence[NullSummary]) -> NullSummary:
    """Merge the summaries of sets of configs: exact, and independent of their order.

    Parameters
    ----------
    summaries : sequence of NullSummary
        At least one; all with the same ``reps`` and ``top_k``.

    Returns
    -------
    NullSummary
        Maxima of maxima; the top ``k`` of the union of the top lists (ties by index). A
        config found in two summaries (a batch repeated after a crash: identical values)
        enters the top lists once; ``n_configs`` is the plain sum, so the caller corrects
        it when the sets overlap.
    """
    if not summaries:
        raise input_error("summaries: expected at least one null summary, got none")
    first = summaries[0]
    for s in summaries[1:]:
        if s.reps != first.reps or s.top_k != first.top_k:
            raise input_error(
                f"summaries: expected reps={first.reps}, top_k={first.top_k} throughout, got "
                f"reps={s.reps}, top_k={s.top_k}"
            )
    if len(summaries) == 1:
        return first
    top_value, top_index = _top_k(
        np.concatenate([s.top_value for s in summaries], axis=1),
        np.concatenate([s.top_index for s in summaries], axis=1),
        first.top_k,
    )
    return NullSummary(
        n_configs=sum(s.n_configs for s in summaries),
        reality_check=np.max([s.reality_check for s in summaries], axis=0),
        spa=np.max([s.spa for s in summaries], axis=0),
        null_sharpe=np.max([s.null_sharpe for s in summaries], axis=0),
        top_value=top_value,
        top_index=top_index,
    )


def exceedances(null: FloatArray, observed: FloatArray) -> IntArray:
    """``#{null >= x}`` for each ``x`` of ``observed``; a NaN in ``null`` never counts.

    The counts of the comparison matrix ``null[None, :] >= observed[:, None]`` without
    building it: ``null`` sorted once and each ``x`` found by binary search, so a sweep of
    10^7 configs against 200 replications needs 10^7 integers, not 2 GB of booleans.
    """
    ordered = np.sort(null[~np.isnan(null)])
    found: IntArray = ordered.size - np.searchsorted(ordered, observed, side="left")
    return found


def bootstrap_pvalue_of(null: FloatArray, observed: float) -> float:
    """``(1 + #{null >= observed}) / (1 + B)``."""
    return float((1.0 + np.count_nonzero(null >= observed)) / (1.0 + null.shape[0]))


def sweep_wide_pvalue(summary: NullSummary, t_stat: float) -> float:
    """P-value of one config's ``t`` against the bootstrap maximum over the whole sweep.

    ``(1 + #{max(0, T*_b) >= max(0, t)}) / (1 + B)`` with ``T*_b`` the SPA null maximum of
    replication ``b``: the single-step adjusted p-value of Romano and Wolf (2005), which is
    Hansen's SPA p-value when the config is the one with the largest ``t``. It controls the
    family-wise error over every config of the sweep.
    """
    if not math.isfinite(t_stat):
        return math.nan
    return bootstrap_pvalue_of(np.maximum(summary.spa, 0.0), max(t_stat, 0.0))


def implied_number_of_trials(mean_null_max: float, null_sharpe_std: float) -> float:
    """The N whose E[max of N independent null Sharpe ratios] equals an observed null maximum.

    Parameters
    ----------
    mean_null_max : float
        Mean over bootstrap replications of the best null Sharpe ratio of the sweep (per
        period), ``mean_b NullSummary.null_sharpe``.
    null_sharpe_std : float
        Standard deviation of one config's null Sharpe ratio (per period).

    Returns
    -------
    float
        ``N >= 1`` solving ``null_sharpe_std * E[max of N standard normals] = mean_null_max``
        with the exact expected maximum (adaptive quadrature; the Gumbel form of Bailey and
        López de Prado (2014) overstates it by 2% at N = 10); 1 when the maximum is at most
        0. Capped at 1e15.

    Notes
    -----
    Unlike a count derived from correlations (the participation ratio), this N grows with how
    hard the grid searched: it is the number of independent trials that would be as lucky as
    the sweep's own configs were on data with no edge.
    """
    if not (math.isfinite(mean_null_max) and null_sharpe_std > 0):
        raise input_error(
            f"mean_null_max, null_sharpe_std: expected finite values with std > 0, got "
            f"{mean_null_max!r}, {null_sharpe_std!r}"
        )
    target = mean_null_max / null_sharpe_std
    if target <= 0.0:
        return 1.0

    def e_max(log_n: float) -> float:
        return expected_max_sharpe(exp_scalar(log_n), method="exact")

    top = log_scalar(1e15)
    if e_max(top) <= target:
        return 1e15
    return float(exp_scalar(optimize.brentq(lambda x: e_max(x) - target, 0.0, top, xtol=1e-10)))
