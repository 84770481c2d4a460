"""Configs side by side in SIMD lanes: the one definition the compiled kernels share.

numba compiles without SLP vectorisation, so it does not pack the rows of several configs
into one vector register by itself; the kernels that reduce many rows at once
(:mod:`stats._row_kernel`, :mod:`stats._data_snooping`, :mod:`stats._bootstrap_variance`)
write those vectors as LLVM ``<LANES x double>`` values. Each lane runs the scalar sequence
of its own row (plain IEEE adds, subtracts, multiplies, divides, compares and selects, no
fast-math flags, so no FMA and no reassociation): a row's bits do not depend on its
neighbours, and LLVM may lower a vector to zmm, ymm or xmm registers without changing a
lane's result.

Developers: numba's cache checks only the source file of the function it compiled, so after
editing an intrinsic here or in another module, clear ``stats/__pycache__/*.nb[ic]`` (or
touch the files that use it); an installed package is not affected.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types

#: Rows (configs) reduced side by side, one per lane.
LANES = 8
#: The LLVM type of one value of every lane.
VECTOR = ir.VectorType(ir.DoubleType(), LANES)


def is_lane_array(a: types.Type, ndim: int = 2) -> bool:
    """A C-contiguous float64 array of ``ndim`` dimensions (typing check of the intrinsics)."""
    return (
        isinstance(a, types.Array)
        and a.dtype == types.float64
        and a.layout == "C"
        and a.ndim == ndim
    )


def lane_row(builder: ir.IRBuilder, array: ir.Value, row: ir.Value) -> ir.Value:
    """Pointer to row ``row`` of a C-contiguous ``(N, 8)`` float64 array, as ``<8 x double>*``."""
    start = builder.gep(array, [builder.mul(row, ir.Constant(row.type, LANES))])
    return builder.bitcast(start, VECTOR.as_pointer())


def shape_pair(builder: ir.IRBuilder, shape: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The two items of a 2-d array's shape."""
    return builder.extract_value(shape, 0), builder.extract_value(shape, 1)


def entry_alloca(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """A stack slot in the function's entry block (so it becomes a register), set to ``value``."""
    with builder.goto_entry_block():
        slot = builder.alloca(value.type)
    builder.store(value, slot)
    return slot


def lane_zero() -> ir.Constant:
    """``<8 x double>`` of ``+0.0``."""
    return ir.Constant(VECTOR, [ir.Constant(ir.DoubleType(), 0.0)] * LANES)
