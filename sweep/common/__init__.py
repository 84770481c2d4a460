"""Shared plumbing of the engine.

Shared plumbing with no knowledge of sweeps: the local and object-store filesystems
(atomic writes), JSON encoding and the generic record serialiser, the environment record,
numba's cache folder, signal handling and the matplotlib set-up.

May import only ``sweep.errors``, ``stats`` and ``strategies``; every other package may
import it.
"""
