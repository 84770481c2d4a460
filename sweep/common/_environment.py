"""What code and environment a driver session, a report or a part was computed with.

Driver sessions and the report record :func:`environment` (git commit, library versions,
platform). Each part records where its bits came from: the library versions that decide
them (:func:`result_versions`), the CPU architecture and the dispatch in use
(:func:`numpy_simd`, :func:`numba_target`) and the C library (:func:`glibc_version`),
assembled into :class:`sweep.store._part_environment.PartEnvironment`. Nothing here names
a host, a process or a time, so two processes of one environment give the same values.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path

from sweep._version import ENGINE_VERSION
from sweep.common._jsonable import JSONObject

#: Libraries whose versions the report records (those installed).
LIBRARIES = (
    "numpy",
    "pandas",
    "pyarrow",
    "scipy",
    "numba",
    "llvmlite",
    "ray",
    "matplotlib",
    "arch",
)
#: The libraries whose versions decide a result's bits, in the order a part records them
#: (after ``python``, and before ``raysweep``, the engine's own version).
RESULT_LIBRARIES = ("numpy", "numba", "llvmlite", "pandas", "pyarrow", "scipy")
#: numpy's switch that turns off CPU dispatch targets (recorded when set).
NUMPY_DISABLE_ENV = "NPY_DISABLE_CPU_FEATURES"


def git_commit(path: Path | None = None) -> str | None:
    """Return ``git rev-parse HEAD`` of the checkout holding ``path``, or None.

    Parameters
    ----------
    path : Path, optional
        A folder inside the checkout; default: the folder above the ``sweep`` package (an
        editable install or a source checkout).

    Returns
    -------
    str or None
        The 40-hex commit, or None when the code is not in a git checkout (an installed
        wheel) or git is unavailable.
    """
    root = path or Path(__file__).resolve().parents[2]  # sweep/common/ -> the checkout
    if not (root / ".git").exists():
        return None
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = proc.stdout.strip()
    return commit if proc.returncode == 0 and len(commit) == 40 else None


@functools.cache
def _installed_version(name: str) -> str | None:
    """One distribution's installed version (None when not installed), read once per process.

    The libraries a running process uses do not change under it (an upgrade installed
    meanwhile is not the code it has imported), and reading package metadata costs about
    35 ms for all of them, paid by every driver session otherwise.
    """
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def _installed_versions() -> tuple[tuple[str, str | None], ...]:
    """The versions of :data:`LIBRARIES`, read once per process."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    out.update((name, _installed_version(name)) for name in LIBRARIES)
    return tuple(out.items())


def library_versions() -> dict[str, str | None]:
    """Python's and each library's installed version (None when not installed)."""
    return dict(_installed_versions())


def environment() -> JSONObject:
    """Git commit (when the code is a checkout), Python and library versions, platform."""
    return {
        "git_commit": git_commit(),
        "versions": dict(library_versions()),
        "platform": platform.platform(),
    }


def result_versions() -> dict[str, str | None]:
    """The versions that decide a result's bits: ``python``, :data:`RESULT_LIBRARIES`, ``raysweep``.

    ``raysweep`` is the engine's own version (:data:`sweep._version.ENGINE_VERSION`).
    """
    out: dict[str, str | None] = {"python": platform.python_version()}
    out.update((name, _installed_version(name)) for name in RESULT_LIBRARIES)
    out["raysweep"] = ENGINE_VERSION
    return out


def numpy_simd() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The SIMD dispatch numpy uses in this process, as :func:`numpy.show_runtime` shows it.

    Returns
    -------
    baseline : tuple of str
        The features numpy was compiled for (``__cpu_baseline__``).
    found, not_found : tuple of str
        The dispatch targets (``__cpu_dispatch__``) this CPU offers and does not offer, as
        ``__cpu_features__`` says at run time (:data:`NUMPY_DISABLE_ENV` turns targets off
        there).
    """
    try:
        umath = importlib.import_module("numpy._core._multiarray_umath")
    except ImportError:  # pragma: no cover - numpy < 2
        umath = importlib.import_module("numpy.core._multiarray_umath")
    features = dict(getattr(umath, "__cpu_features__", {}))
    dispatch = tuple(str(f) for f in getattr(umath, "__cpu_dispatch__", ()))
    baseline = tuple(str(f) for f in getattr(umath, "__cpu_baseline__", ()))
    found = tuple(f for f in dispatch if features.get(f))
    return baseline, found, tuple(f for f in dispatch if not features.get(f))


def numpy_disabled_features() -> str | None:
    """The value of :data:`NUMPY_DISABLE_ENV` when set (numpy reads it at import)."""
    return os.environ.get(NUMPY_DISABLE_ENV) or None


def numba_target() -> tuple[str, str | None]:
    """The CPU numba compiles for, and the features it was told to use.

    Returns
    -------
    cpu : str
        ``NUMBA_CPU_NAME`` when set (e.g. ``generic``), else LLVM's name of the host CPU
        (:func:`llvmlite.binding.get_host_cpu_name`).
    features : str or None
        ``NUMBA_CPU_FEATURES`` when set (else numba uses the host's).
    """
    from numba.core import config

    cpu = getattr(config, "CPU_NAME", None)
    features = getattr(config, "CPU_FEATURES", None)
    if not cpu:
        import llvmlite.binding as llvm

        cpu = llvm.get_host_cpu_name()
    return str(cpu), (str(features) if features else None)


def glibc_version() -> str | None:
    """The GNU C library's version (``"2.36"``), or None on another C library."""
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, OSError, ValueError):
        text = None
    if text and text.startswith("glibc "):
        return text.removeprefix("glibc ").strip()
    lib, version = platform.libc_ver()
    return version if lib == "glibc" and version else None
