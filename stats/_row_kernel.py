"""One compiled pass over each return series: moments, equity path, block sums.

This is the single definition of the per-series statistics raysweep stores for every
config; :func:`stats.return_moments` and the engine's metrics both call it. Each row is
reduced on its own, in time order (plain sequential sums, no pairwise or SIMD reordering
along a row), so a row's statistics are bitwise identical whatever batch it is in.

Rows are processed eight at a time, one row per SIMD lane (:data:`LANES`): the loops run
over time, and every vector operation applies one row's scalar operation to eight rows at
once. A lane computes exactly the scalar sequence of its row (the same adds, multiplies,
divides and compares, in the same order; no FMA, since no fast-math flag is set), so its
bits are those of a one-row loop; the lanes only take the sums' add latency and the
drawdown's divide off the critical path. The lane vectors are LLVM ``<8 x double>`` values
(:func:`vadd` and friends): LLVM lowers them to whatever vector width the target CPU has
(zmm, ymm or xmm), which changes the speed and never a lane's result. Rows past the last
of a partial group repeat the last row; their lanes are computed and discarded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model
from numpy.typing import NDArray

from stats._lanes import LANES, VECTOR

FloatArray = NDArray[np.float64]

_MASK = ir.VectorType(ir.IntType(32), LANES)


class LaneVector(types.Type):
    """Numba type of eight float64 lanes, one per row (an LLVM ``<8 x double>``)."""

    def __init__(self) -> None:
        super().__init__(name="LaneVector")


lane_vector = LaneVector()


@register_model(LaneVector)
class _LaneVectorModel(models.PrimitiveModel):
    def __init__(self, dmm: Any, fe_type: Any) -> None:
        super().__init__(dmm, fe_type, VECTOR)  # type: ignore[no-untyped-call]


def _lanewise(op: str) -> Any:
    """An intrinsic applying the IEEE operation ``op`` lane by lane (no fast-math flags)."""

    def typer(typingctx: Any, a: Any, b: Any) -> Any:
        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return getattr(builder, op)(args[0], args[1])

        return lane_vector(lane_vector, lane_vector), codegen

    return intrinsic(typer)


vadd = _lanewise("fadd")
vsub = _lanewise("fsub")
vmul = _lanewise("fmul")
vdiv = _lanewise("fdiv")


def _vraise(typingctx: Any, a: Any, b: Any) -> Any:
    """``a if a > b else b`` per lane: the scalar ``if a > b: b = a`` (``b`` kept on NaN)."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.select(builder.fcmp_ordered(">", args[0], args[1]), args[0], args[1])

    return lane_vector(lane_vector, lane_vector), codegen


vraise: Any = intrinsic(_vraise)


def _vsplat(typingctx: Any, x: Any) -> Any:
    """The float ``x`` in every lane."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        undef = ir.Constant(VECTOR, ir.Undefined)
        one = builder.insert_element(undef, args[0], ir.Constant(ir.IntType(32), 0))
        return builder.shuffle_vector(one, undef, ir.Constant(_MASK, [0] * LANES))

    return lane_vector(types.float64), codegen


vsplat: Any = intrinsic(_vsplat)


def _lane_pointers(context: Any, builder: Any, arrty: Any, arr: Any, i0: Any, k: Any) -> list[Any]:
    """Pointers to ``x[min(i0 + l, n - 1), k]``, l = 0..7 (lanes past the last row repeat it)."""
    a = context.make_array(arrty)(context, builder, value=arr)
    shape = cgutils.unpack_tuple(builder, a.shape)  # type: ignore[no-untyped-call]
    strides = cgutils.unpack_tuple(builder, a.strides)  # type: ignore[no-untyped-call]
    last = builder.sub(shape[0], ir.Constant(shape[0].type, 1))
    pointers = []
    for lane in range(LANES):
        row = builder.add(i0, ir.Constant(i0.type, lane))
        row = builder.select(builder.icmp_signed(">", row, last), last, row)
        pointers.append(
            cgutils.get_item_pointer2(  # type: ignore[no-untyped-call]
                context,
                builder,
                data=a.data,
                shape=shape,
                strides=strides,
                layout=arrty.layout,
                inds=[row, k],
                wraparound=False,
            )
        )
    return pointers


def _vcolumn(typingctx: Any, x: Any, i0: Any, k: Any) -> Any:
    """Period ``k`` of rows ``i0 .. i0 + 7`` of the 2-D array ``x``, one row per lane."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        v = ir.Constant(VECTOR, ir.Undefined)
        for lane, p in enumerate(_lane_pointers(context, builder, sig.args[0], *args)):
            v = builder.insert_element(v, builder.load(p), ir.Constant(ir.IntType(32), lane))
        return v

    return lane_vector(x, types.intp, types.intp), codegen


vcolumn: Any = intrinsic(_vcolumn)


def _shuffle(builder: Any, a: Any, b: Any, want: list[tuple[int, int]]) -> Any:
    """Elements ``want`` (labels) of two labelled vectors, as one labelled vector."""
    (va, la), (vb, lb) = a, b
    mask = [la.index(w) if w in la else LANES + lb.index(w) for w in want]
    return builder.shuffle_vector(va, vb, ir.Constant(_MASK, mask)), want


def _vcolumns(typingctx: Any, x: Any, i0: Any, k: Any) -> Any:
    """Periods ``k .. k + 7`` of rows ``i0 .. i0 + 7`` of the C-contiguous ``x``, by period.

    Eight vector loads along the rows, transposed in registers (three rounds of
    two-source shuffles), so that element ``l`` of the j-th vector is ``x[i0 + l, k + j]``.
    """
    if not (isinstance(x, types.Array) and x.ndim == 2 and x.layout == "C"):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        vecs = []
        for lane, p in enumerate(_lane_pointers(context, builder, sig.args[0], *args)):
            loaded = builder.load(builder.bitcast(p, VECTOR.as_pointer()), align=8)
            vecs.append((loaded, [(lane, j) for j in range(LANES)]))  # labels (row, period)
        step = 1
        while step < LANES:  # round r gathers rows 2**r apart, keeping periods by bit r
            merged = []
            for g in range(0, LANES, 2 * step):
                for h in range(step):
                    a, b = vecs[g + h], vecs[g + h + step]
                    both = sorted(a[1] + b[1], key=lambda rc: (rc[1], rc[0]))
                    for parity in (0, 1):
                        want = [rc for rc in both if (rc[1] // step) % 2 == parity]
                        merged.append(_shuffle(builder, a, b, want))
            vecs = merged
            step *= 2
        by_period = [v for v, _ in sorted(vecs, key=lambda vl: vl[1][0][1])]
        for period, (_, labels) in enumerate(sorted(vecs, key=lambda vl: vl[1][0][1])):
            assert labels == [(lane, period) for lane in range(LANES)]
        return context.make_tuple(builder, sig.return_type, by_period)

    return types.UniTuple(lane_vector, LANES)(x, types.intp, types.intp), codegen  # type: ignore[no-untyped-call]


vcolumns: Any = intrinsic(_vcolumns)


def _vstore(typingctx: Any, out: Any, v: Any) -> Any:
    """Write the lanes of ``v`` to ``out[0:8]`` (a 1-D float64 array of at least 8)."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        arrty = sig.args[0]
        a = context.make_array(arrty)(context, builder, value=args[0])
        shape = cgutils.unpack_tuple(builder, a.shape)  # type: ignore[no-untyped-call]
        strides = cgutils.unpack_tuple(builder, a.strides)  # type: ignore[no-untyped-call]
        if arrty.layout == "C":  # one vector store
            builder.store(args[1], builder.bitcast(a.data, VECTOR.as_pointer()), align=8)
            return context.get_dummy_value()
        for lane in range(LANES):
            p = cgutils.get_item_pointer2(  # type: ignore[no-untyped-call]
                context,
                builder,
                data=a.data,
                shape=shape,
                strides=strides,
                layout=arrty.layout,
                inds=[ir.Constant(shape[0].type, lane)],
                wraparound=False,
            )
            builder.store(builder.extract_element(args[1], ir.Constant(ir.IntType(32), lane)), p)
        return context.get_dummy_value()

    return types.none(out, lane_vector), codegen


vstore: Any = intrinsic(_vstore)


def _vload(typingctx: Any, src: Any) -> Any:
    """``src[0:8]`` of a C-contiguous 1-D float64 array, as a lane vector (one vector load)."""
    if not (isinstance(src, types.Array) and src.ndim == 1 and src.layout == "C"):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        a = context.make_array(sig.args[0])(context, builder, value=args[0])
        return builder.load(builder.bitcast(a.data, VECTOR.as_pointer()), align=8)

    return lane_vector(src), codegen


vload: Any = intrinsic(_vload)


@numba.njit(inline="always")
def _step(v, mu, acc, blocks, equity_path):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """One period ``v`` of eight rows added to their running sums (one row per lane).

    ``acc`` is (m2, m3, m4, block sum, block sum of squares, equity, peak, worst), each a
    lane vector; ``blocks`` and ``equity_path`` are constants at every call site, so the
    unused chains are compiled out.
    """
    a2, a3, a4, bs, bq, equity, peak, worst = acc
    d = vsub(v, mu)
    d2 = vmul(d, d)
    a2 = vadd(a2, d2)
    a3 = vadd(a3, vmul(d2, d))
    a4 = vadd(a4, vmul(d2, d2))
    if blocks:
        bs = vadd(bs, v)
        bq = vadd(bq, vmul(v, v))
    if equity_path:
        one = vsplat(1.0)
        equity = vmul(equity, vadd(one, v))
        peak = vraise(equity, peak)
        worst = vraise(vsub(one, vdiv(equity, peak)), worst)
    return a2, a3, a4, bs, bq, equity, peak, worst


@numba.njit(inline="always")
def _span(tile, lo, hi, mu, acc, blocks, equity_path):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Periods ``lo..hi`` of eight rows (``tile[k]``: period k) added to their sums, in order."""
    for k in range(lo, hi):
        acc = _step(vload(tile[k]), mu, acc, blocks, equity_path)
    return acc


@numba.njit(inline="always")
def _load_group(x, bench, i0, tile, relative):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Rows ``i0..i0+7`` of ``x`` into ``tile`` (``tile[k]``: period k), and their sums.

    Each lane of the first sum is the row's scalar ``s += v`` from 0.0, in time order; of the
    second, when ``relative`` (a constant at every call site), ``s_e += v - bench[k]``.
    """
    t = x.shape[1]
    s = vsplat(0.0)
    s_e = vsplat(0.0)
    k = 0
    while k + LANES <= t:
        c = vcolumns(x, i0, k)
        for j in range(LANES):
            vstore(tile[k + j], c[j])
        s, s_e = _group_add(c[0], bench, k, s, s_e, relative)
        s, s_e = _group_add(c[1], bench, k + 1, s, s_e, relative)
        s, s_e = _group_add(c[2], bench, k + 2, s, s_e, relative)
        s, s_e = _group_add(c[3], bench, k + 3, s, s_e, relative)
        s, s_e = _group_add(c[4], bench, k + 4, s, s_e, relative)
        s, s_e = _group_add(c[5], bench, k + 5, s, s_e, relative)
        s, s_e = _group_add(c[6], bench, k + 6, s, s_e, relative)
        s, s_e = _group_add(c[7], bench, k + 7, s, s_e, relative)
        k += LANES
    while k < t:
        v = vcolumn(x, i0, k)
        vstore(tile[k], v)
        s, s_e = _group_add(v, bench, k, s, s_e, relative)
        k += 1
    return s, s_e


@numba.njit(inline="always")
def _group_add(v, bench, k, s, s_e, relative):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``s += v`` and, when ``relative``, ``s_e += v - bench[k]``, lane by lane."""
    s = vadd(s, v)
    if relative:
        s_e = vadd(s_e, vsub(v, vsplat(bench[k])))
    return s, s_e


@numba.njit(inline="always")
def _add(v, bk, a, b, squares, relative):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``a += e`` and, when ``squares``, ``b += e * e``, lane by lane.

    ``e`` is ``v - bk`` when ``relative``, else ``v`` (``bk`` unused).
    """
    e = vsub(v, vsplat(bk)) if relative else v
    a = vadd(a, e)
    if squares:
        b = vadd(b, vmul(e, e))
    return a, b


@numba.njit(inline="always")
def lane_sums(x, bench, i0, lo, hi, squares, relative):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Sums of periods ``lo..hi`` of rows ``i0..i0+7`` (and of their squares), in time order.

    Each lane is the scalar ``a += v`` (and ``b += v * v``) from 0.0, where ``v`` is the
    row's return or, when ``relative``, its excess ``x[i, k] - bench[k]`` (the subtraction
    of ``x - bench``; ``bench`` is not read otherwise). ``squares`` and ``relative`` are
    constants at every call site (``squares`` False: the second sum stays 0.0).
    """
    a = vsplat(0.0)
    b = vsplat(0.0)
    k = lo
    while k + LANES <= hi:
        c = vcolumns(x, i0, k)
        a, b = _add(c[0], bench[k] if relative else 0.0, a, b, squares, relative)
        a, b = _add(c[1], bench[k + 1] if relative else 0.0, a, b, squares, relative)
        a, b = _add(c[2], bench[k + 2] if relative else 0.0, a, b, squares, relative)
        a, b = _add(c[3], bench[k + 3] if relative else 0.0, a, b, squares, relative)
        a, b = _add(c[4], bench[k + 4] if relative else 0.0, a, b, squares, relative)
        a, b = _add(c[5], bench[k + 5] if relative else 0.0, a, b, squares, relative)
        a, b = _add(c[6], bench[k + 6] if relative else 0.0, a, b, squares, relative)
        a, b = _add(c[7], bench[k + 7] if relative else 0.0, a, b, squares, relative)
        k += LANES
    while k < hi:
        v = vcolumn(x, i0, k)
        a, b = _add(v, bench[k] if relative else 0.0, a, b, squares, relative)
        k += 1
    return a, b


@numba.njit(cache=True, nogil=True)
def _row_pass(x, n_blocks, equity_path, mean, m2, m3, m4, total, drawdown, block_sum, block_sq):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Per group of eight rows: their sums (the means), then moments, equity path and blocks.

    The group is read from ``x`` once, transposed into a (T, 8) tile (``tile[k]``: period k
    of the eight rows, a lane each) while its sums are taken; the second pass reads the tile.
    """
    n, t = x.shape
    length = t // n_blocks if n_blocks > 0 else 0
    dropped = t - length * n_blocks
    lanes = np.empty((8, LANES))
    tile = np.empty((t, LANES))  # the group's rows, period by period (loaded once)
    zero = vsplat(0.0)
    for i0 in range(0, n, LANES):
        width = min(LANES, n - i0)
        s, _ = _load_group(x, x[0], i0, tile, False)
        mu = vdiv(s, vsplat(float(t)))
        acc = (zero, zero, zero, zero, zero, vsplat(1.0), vsplat(1.0), zero)
        # The periods before the first block (all of them without blocks), then block by block.
        if equity_path:
            acc = _span(tile, 0, dropped, mu, acc, False, True)
        else:
            acc = _span(tile, 0, dropped, mu, acc, False, False)
        for b in range(n_blocks):
            lo = dropped + b * length
            acc = (acc[0], acc[1], acc[2], zero, zero, acc[5], acc[6], acc[7])
            if equity_path:
                acc = _span(tile, lo, lo + length, mu, acc, True, True)
            else:
                acc = _span(tile, lo, lo + length, mu, acc, True, False)
            vstore(lanes[0], acc[3])
            vstore(lanes[1], acc[4])
            for lane in range(width):
                block_sum[i0 + lane, b] = lanes[0, lane]
                block_sq[i0 + lane, b] = lanes[1, lane]
        vstore(lanes[2], mu)
        vstore(lanes[3], acc[0])
        vstore(lanes[4], acc[1])
        vstore(lanes[5], acc[2])
        vstore(lanes[6], acc[5])
        vstore(lanes[7], acc[7])
        for lane in range(width):
            i = i0 + lane
            mean[i] = lanes[2, lane]
            m2[i] = lanes[3, lane] / t
            m3[i] = lanes[4, lane] / t
            m4[i] = lanes[5, lane] / t
            total[i] = lanes[6, lane] - 1.0 if equity_path else np.nan
            drawdown[i] = lanes[7, lane] if equity_path else np.nan


@numba.njit(inline="always")
def _pair_step(v, bk, mu, mu_e, acc, acc_e, blocks):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """One period of eight rows: the returns' sums with the equity path, the excess's with blocks.

    The excess is ``v - bk`` (the same subtraction as ``returns - benchmark``).
    """
    acc = _step(v, mu, acc, False, True)
    acc_e = _step(vsub(v, vsplat(bk)), mu_e, acc_e, blocks, False)
    return acc, acc_e


@numba.njit(inline="always")
def _pair_span(tile, bench, lo, hi, mu, mu_e, acc, acc_e, blocks):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """:func:`_span` of the returns (``tile[k]``: their period k) and of their excess."""
    for k in range(lo, hi):
        acc, acc_e = _pair_step(vload(tile[k]), bench[k], mu, mu_e, acc, acc_e, blocks)
    return acc, acc_e


@numba.njit(cache=True, nogil=True)
def _pair_pass(x, bench, n_blocks, out, out_e, block_sum, block_sq):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """:func:`_row_pass` of ``x`` (no blocks) and of ``x - bench`` (no equity path) at once.

    ``out`` gets the returns' mean, m2, m3, m4, total return and drawdown (rows 0..5),
    ``out_e`` the excess's mean, m2, m3, m4; every lane does the scalar sequence of
    :func:`_row_pass` on its row, so the bits are those of two separate calls.
    """
    n, t = x.shape
    length = t // n_blocks if n_blocks > 0 else 0
    dropped = t - length * n_blocks
    lanes = np.empty((12, LANES))
    tile = np.empty((t, LANES))  # the group's rows, period by period (loaded once)
    zero = vsplat(0.0)
    one = vsplat(1.0)
    for i0 in range(0, n, LANES):
        width = min(LANES, n - i0)
        s, s_e = _load_group(x, bench, i0, tile, True)
        periods = vsplat(float(t))
        mu = vdiv(s, periods)
        mu_e = vdiv(s_e, periods)
        acc = (zero, zero, zero, zero, zero, one, one, zero)
        acc_e = (zero, zero, zero, zero, zero, one, one, zero)
        acc, acc_e = _pair_span(tile, bench, 0, dropped, mu, mu_e, acc, acc_e, False)
        for b in range(n_blocks):
            lo = dropped + b * length
            acc_e = (acc_e[0], acc_e[1], acc_e[2], zero, zero, acc_e[5], acc_e[6], acc_e[7])
            acc, acc_e = _pair_span(tile, bench, lo, lo + length, mu, mu_e, acc, acc_e, True)
            vstore(lanes[0], acc_e[3])
            vstore(lanes[1], acc_e[4])
            for lane in range(width):
                block_sum[i0 + lane, b] = lanes[0, lane]
                block_sq[i0 + lane, b] = lanes[1, lane]
        for j, v in enumerate((mu, acc[0], acc[1], acc[2], acc[5], acc[7])):
            vstore(lanes[2 + j], v)
        for j, v in enumerate((mu_e, acc_e[0], acc_e[1], acc_e[2])):
            vstore(lanes[8 + j], v)
        for lane in range(width):
            i = i0 + lane
            out[0, i] = lanes[2, lane]
            out_e[0, i] = lanes[8, lane]
            for m in range(1, 4):
                out[m, i] = lanes[2 + m, lane] / t
                out_e[m, i] = lanes[8 + m, lane] / t
            out[4, i] = lanes[6, lane] - 1.0
            out[5, i] = lanes[7, lane]


@dataclass(frozen=True)
class PathStatistics:
    """Per-row statistics from one pass (see :func:`path_statistics`).

    Attributes
    ----------
    mean, m2, m3, m4 : ndarray of float64, shape (n,)
        Mean and the biased central moments ``sum((x - mean)**k) / T``.
    total_return : ndarray of float64, shape (n,)
        ``prod(1 + x) - 1`` of compounding equity starting at 1.
    max_drawdown : ndarray of float64, shape (n,)
        Largest fall from a running peak (the start, 1, counts as a peak), as a fraction.
    block_count : int
        Periods per block, ``T // n_blocks`` (0 when ``n_blocks == 0``).
    block_sum, block_sumsq : ndarray of float64, shape (n, n_blocks)
        Sum and sum of squares of each block; the first ``T mod n_blocks`` periods are
        dropped so blocks are equal.
    """

    mean: FloatArray
    m2: FloatArray
    m3: FloatArray
    m4: FloatArray
    total_return: FloatArray
    max_drawdown: FloatArray
    block_count: int
    block_sum: FloatArray
    block_sumsq: FloatArray


def path_statistics(
    returns: NDArray[np.float64], n_blocks: int = 0, equity_path: bool = True
) -> PathStatistics:
    """Moments, total return, maximum drawdown and block sums of each row, in one pass.

    Parameters
    ----------
    returns : ndarray of float64, shape (n_series, n_periods)
        Per-period simple returns, one series per row.
    n_blocks : int, default 0
        Number of equal time blocks for the per-block sums (0: none).
    equity_path : bool, default True
        Compound the equity path for the total return and the maximum drawdown; False
        leaves both NaN and skips the compounding, the slowest part of the pass (the
        moments and block sums are the same bits either way).

    Returns
    -------
    PathStatistics
        The statistics of every row.

    Notes
    -----
    Sums run sequentially in time order within a row (not numpy's pairwise order), which
    keeps each row independent of the batch; for daily-length series the difference from a
    pairwise sum is at the 1e-13 relative level.
    """
    x = np.ascontiguousarray(returns, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 1:
        raise ValueError(f"returns: expected a non-empty 2-D array, got shape {x.shape}")
    n, t = x.shape
    mean, m2, m3, m4, total, drawdown = (np.empty(n) for _ in range(6))
    block_sum = np.empty((n, n_blocks))
    block_sq = np.empty((n, n_blocks))
    _row_pass(x, n_blocks, equity_path, mean, m2, m3, m4, total, drawdown, block_sum, block_sq)
    return PathStatistics(
        mean=mean,
        m2=m2,
        m3=m3,
        m4=m4,
        total_return=total,
        max_drawdown=drawdown,
        block_count=t // n_blocks if n_blocks else 0,
        block_sum=block_sum,
        block_sumsq=block_sq,
    )


def paired_path_statistics(
    returns: NDArray[np.float64], benchmark: NDArray[np.float64], n_blocks: int
) -> tuple[PathStatistics, PathStatistics]:
    """:func:`path_statistics` of the returns and of their excess over a benchmark, in one pass.

    Parameters
    ----------
    returns : ndarray of float64, shape (n_series, n_periods)
        Per-period simple returns, one series per row.
    benchmark : ndarray of float64, shape (n_periods,)
        The benchmark's returns.
    n_blocks : int
        Number of equal time blocks of the excess returns' block sums.

    Returns
    -------
    tuple of PathStatistics
        Bit for bit ``path_statistics(returns, 0)`` and
        ``path_statistics(returns - benchmark, n_blocks, equity_path=False)``, without the
        excess returns being materialised.
    """
    x = np.ascontiguousarray(returns, dtype=np.float64)
    bench = np.ascontiguousarray(benchmark, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 1 or bench.shape != (x.shape[1],):
        raise ValueError(
            f"returns, benchmark: expected shapes (n, T) and (T,), got {x.shape}, {bench.shape}"
        )
    n, t = x.shape
    out = np.empty((6, n))
    out_e = np.empty((4, n))
    block_sum = np.empty((n, n_blocks))
    block_sq = np.empty((n, n_blocks))
    _pair_pass(x, bench, n_blocks, out, out_e, block_sum, block_sq)
    empty = np.empty((n, 0))
    missing = np.full(n, np.nan)
    own = PathStatistics(
        mean=out[0],
        m2=out[1],
        m3=out[2],
        m4=out[3],
        total_return=out[4],
        max_drawdown=out[5],
        block_count=0,
        block_sum=empty,
        block_sumsq=empty.copy(),
    )
    excess = PathStatistics(
        mean=out_e[0],
        m2=out_e[1],
        m3=out_e[2],
        m4=out_e[3],
        total_return=missing,
        max_drawdown=missing.copy(),
        block_count=t // n_blocks if n_blocks else 0,
        block_sum=block_sum,
        block_sumsq=block_sq,
    )
    return own, excess
