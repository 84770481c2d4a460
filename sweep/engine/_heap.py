"""Keep freed memory in the evaluating process for reuse, or hand it back (glibc only).

Every sub-batch allocates, fills and frees a few arrays of ``configs x periods`` floats
(the strategy's returns and turnover, the excess returns): about 3 MiB each on the main job.
glibc's defaults serve an allocation that large with a fresh ``mmap`` (or trim the heap as
soon as it is freed), so every sub-batch pays the page faults and the kernel's zeroing of
brand-new pages again, which cost about a third of the main job's evaluation time (measured:
``benchmarks/bench_kernels.py``). :func:`retain_freed_memory` raises glibc's mmap and trim
thresholds to :data:`RETAINED_BYTES`, so those arrays reuse pages the process already has.

It changes only where the allocator gets memory, never a value, and it is process-wide:
the process keeps up to :data:`RETAINED_BYTES` of freed memory at the heap's top instead of
returning it to the system. Elsewhere than glibc (macOS, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import os

#: ``mallopt`` parameters (glibc's ``malloc.h``).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

#: Allocations up to this size come from the heap, and up to this much free memory at the
#: heap's top is kept (glibc's own ceiling for its adaptive mmap threshold).
RETAINED_BYTES = 32 * 2**20

_state = {"applied": False}


def retain_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds to :data:`RETAINED_BYTES`, once per process.

    Returns
    -------
    bool
        Whether the thresholds are set (False where the C library is not glibc or refused).
    """
    if _state["applied"]:
        return True
    if not _glibc():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    applied = bool(
        mallopt(M_MMAP_THRESHOLD, RETAINED_BYTES) and mallopt(M_TRIM_THRESHOLD, RETAINED_BYTES)
    )
    _state["applied"] = applied
    return applied


def return_freed_memory() -> bool:
    """Hand the free pages of the heap back to the system (glibc's ``malloc_trim(0)``).

    Memory freed in small pieces stays in the process (the heap cannot shrink past a live
    allocation at its top); trimming releases every whole free page, wherever it lies. A
    long pass that has just dropped a large working set calls it so that the next pass
    starts from what is really held. Changes no value.

    Returns
    -------
    bool
        Whether any memory was released (False where the C library is not glibc).
    """
    if not _glibc():
        return False
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes, trim.restype = (ctypes.c_size_t,), ctypes.c_int
    return bool(trim(0))


def _glibc() -> bool:
    """Whether this process runs on glibc (its ``confstr`` names it)."""
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError, AttributeError):  # not a name this platform knows
        return False
