"""The sha256 of many byte strings laid end to end, in one compiled loop.

The table hash needs one sha256 per results row (:mod:`sweep.store._row_set_hash`). From
Python each costs a ``hashlib`` call (about 0.8 us for a 560-byte row, most of it the call);
the same digests from a compiled loop over OpenSSL's ``SHA256_Init`` / ``SHA256_Update`` /
``SHA256_Final`` (the library ``hashlib`` itself uses) cost about 0.35 us. The symbols are
bound by name (the loop's cached machine code holds no address), so the library is loaded
into the process before the loop is first called. Where no ``libcrypto`` can be loaded the
digests come from ``hashlib`` one row at a time: SHA-256 is one function, so the bytes are
the same either way.
"""

from __future__ import annotations

import ctypes.util
import functools
import hashlib
import itertools
from typing import Any

import numba
import numpy as np
from llvmlite import binding, ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numpy.typing import NDArray

#: Bytes reserved for OpenSSL's ``SHA256_CTX`` (112 bytes in OpenSSL 1.1 and 3).
_CONTEXT_BYTES = 256


@functools.cache
def libcrypto_loaded() -> bool:
    """Load OpenSSL's libcrypto for the compiled loop; False if it cannot be loaded.

    Done once, on first use rather than at import: finding and loading the library costs
    about 70 ms, which every process importing the engine (the CLI, each Ray worker) would
    otherwise pay.
    """
    name = ctypes.util.find_library("crypto")
    if name is None:
        return False
    try:
        binding.load_library_permanently(name)
        library = ctypes.CDLL(name)
        return all(hasattr(library, f"SHA256_{step}") for step in ("Init", "Update", "Final"))
    except OSError:
        return False


def _openssl(name: str, arity: int) -> Any:
    """An intrinsic calling ``int name(uint64, ...)`` (pointers passed as 64-bit integers)."""

    def typer(typingctx: Any, *args: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, llargs: Any) -> Any:
            fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(64)] * arity)
            fn = cgutils.get_or_insert_function(builder.module, fnty, name)  # type: ignore[no-untyped-call]
            return builder.call(fn, llargs)

        return types.int32(*[types.uint64] * arity), codegen

    return typer


def _init(typingctx: Any, context: Any) -> Any:
    return _openssl("SHA256_Init", 1)(typingctx, context)


def _update(typingctx: Any, context: Any, data: Any, size: Any) -> Any:
    return _openssl("SHA256_Update", 3)(typingctx, context, data, size)


def _final(typingctx: Any, digest: Any, context: Any) -> Any:
    return _openssl("SHA256_Final", 2)(typingctx, digest, context)


sha256_init: Any = intrinsic(_init)
sha256_update: Any = intrinsic(_update)
sha256_final: Any = intrinsic(_final)


@numba.njit(cache=True, nogil=True)
def _digests(buffer, offsets, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``out[i] = sha256(buffer[offsets[i]:offsets[i + 1]])`` for every row ``i``."""
    context = np.empty(_CONTEXT_BYTES, dtype=np.uint8)
    ctx = np.uint64(context.ctypes.data)
    base = np.uint64(buffer.ctypes.data)
    dst = np.uint64(out.ctypes.data)
    for i in range(offsets.shape[0] - 1):
        sha256_init(ctx)
        sha256_update(ctx, base + np.uint64(offsets[i]), np.uint64(offsets[i + 1] - offsets[i]))
        sha256_final(dst + np.uint64(32 * i), ctx)


def sha256_rows(
    buffer: NDArray[np.uint8], offsets: NDArray[np.int64], compiled: bool | None = None
) -> NDArray[np.uint8]:
    """The sha256 of each row ``buffer[offsets[i]:offsets[i + 1]]``.

    Parameters
    ----------
    buffer : ndarray of uint8
        The rows' bytes, end to end (C-contiguous).
    offsets : ndarray of int64, shape (n + 1,)
        Where each row starts, and where the last one ends (non-decreasing, within ``buffer``).
    compiled : bool, optional
        False: ``hashlib``; otherwise the compiled loop wherever :func:`libcrypto_loaded`
        (the symbols must be loaded before the loop runs), else ``hashlib``.

    Returns
    -------
    ndarray of uint8, shape (n, 32)
        One digest per row.
    """
    n = offsets.shape[0] - 1
    out = np.empty((n, 32), dtype=np.uint8)
    if n <= 0:
        return out
    if not (offsets[0] >= 0 and np.all(np.diff(offsets) >= 0) and offsets[-1] <= buffer.size):
        raise ValueError("offsets: expected non-decreasing positions within the buffer")
    if compiled is not False and libcrypto_loaded():
        _digests(np.ascontiguousarray(buffer), np.ascontiguousarray(offsets, np.int64), out)
        return out
    view = memoryview(np.ascontiguousarray(buffer).data)
    joined = b"".join(
        hashlib.sha256(view[a:b]).digest() for a, b in itertools.pairwise(offsets.tolist())
    )
    out[:] = np.frombuffer(joined, dtype=np.uint8).reshape(n, 32)
    return out


@numba.njit(cache=True, nogil=True)
def _gather_pieces(pieces, starts, lengths, offsets, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Write row ``i``: ``pieces[starts[k, i]:][: lengths[k, i]]`` for each ``k`` in order."""
    k_count, n = starts.shape
    for i in range(n):
        pos = offsets[i]
        for k in range(k_count):
            a = starts[k, i]
            size = lengths[k, i]
            out[pos : pos + size] = pieces[a : a + size]
            pos += size


def sha256_of_pieces(
    pieces: NDArray[np.uint8], starts: NDArray[np.int64], lengths: NDArray[np.int64]
) -> NDArray[np.uint8]:
    """The sha256 of each row made by joining pieces of one byte table, in order.

    Parameters
    ----------
    pieces : ndarray of uint8
        The byte table.
    starts, lengths : ndarray of int64, shape (k, n)
        Row ``i`` is the concatenation over ``k`` of
        ``pieces[starts[k, i] : starts[k, i] + lengths[k, i]]`` (non-negative, within the table).

    Returns
    -------
    ndarray of uint8, shape (n, 32)
        One digest per row (:func:`sha256_rows` of the joined rows).
    """
    if starts.size and (
        starts.min() < 0 or lengths.min() < 0 or (starts + lengths).max() > pieces.size
    ):
        raise ValueError("starts, lengths: expected pieces within the byte table")
    offsets = np.concatenate(([0], np.cumsum(lengths.sum(axis=0)))).astype(np.int64)
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    _gather_pieces(np.ascontiguousarray(pieces), starts, lengths, offsets, out)
    return sha256_rows(out, offsets)
