"""Give numba a writable cache folder before it is imported (read-only installs).

The compiled kernels use ``numba.njit(cache=True)``. numba writes its cache next to the
source (``__pycache__``), else in ``NUMBA_CACHE_DIR`` when that is set, else in the user's
cache folder (``$XDG_CACHE_HOME/numba`` or ``~/.cache/numba``); when none is writable,
decorating a kernel raises ``RuntimeError: cannot cache function ...``. A read-only package
folder (a system install, a container image) with a read-only home would then make every
command fail at import. :func:`ensure_numba_cache` checks those places the way numba does
and, only when none is usable, points ``NUMBA_CACHE_DIR`` at a private folder under the
system's temp folder. It must run before numba is imported (numba reads the variable once).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import MutableMapping, Sequence
from pathlib import Path

#: Packages whose modules hold cached kernels.
KERNEL_PACKAGES = ("stats", "strategies")


def _writable(folder: Path) -> bool:
    """Whether ``folder`` exists or can be created, and a file can be written in it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def _package_dirs() -> list[Path]:
    root = Path(__file__).resolve().parents[2]  # sweep/common/ -> the packages' folder
    return [root / name for name in KERNEL_PACKAGES]


def _user_cache(environ: MutableMapping[str, str]) -> Path | None:
    base = environ.get("XDG_CACHE_HOME")
    if base is None:
        home = environ.get("HOME")
        if not home:
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "numba"


def ensure_numba_cache(
    environ: MutableMapping[str, str] | None = None,
    package_dirs: Sequence[Path] | None = None,
) -> str | None:
    """Set ``NUMBA_CACHE_DIR`` to a writable temp folder when numba has nowhere to cache.

    Parameters
    ----------
    environ : mutable mapping, optional
        The environment to read and update (default ``os.environ``).
    package_dirs : sequence of Path, optional
        Folders of the modules with cached kernels (default: ``stats/`` and
        ``strategies/`` of this installation).

    Returns
    -------
    str or None
        The folder ``NUMBA_CACHE_DIR`` now names, or None when nothing was changed (the
        variable names a writable folder, or every kernel package's ``__pycache__`` or the
        user's cache folder is writable).

    Notes
    -----
    An unusable ``NUMBA_CACHE_DIR`` is replaced only when numba's own fallbacks are unusable
    too; numba skips it by itself otherwise.
    """
    env = os.environ if environ is None else environ
    given = env.get("NUMBA_CACHE_DIR")
    if given and _writable(Path(given)):
        return None
    dirs = _package_dirs() if package_dirs is None else package_dirs
    if all(_writable(Path(d) / "__pycache__") for d in dirs):
        return None
    user = _user_cache(env)
    if user is not None and _writable(user):
        return None
    try:
        fallback = _private_folder()
    except OSError:
        return None
    env["NUMBA_CACHE_DIR"] = str(fallback)
    return str(fallback)


def _private_folder() -> Path:
    """``<tmp>/raysweep-numba-cache-<uid>`` if it is ours alone, else a fresh temp folder.

    numba loads pickled code from its cache, so a folder someone else could write (or a
    symlink planted in a shared temp folder) is never used.
    """
    uid = os.getuid()
    path = Path(tempfile.gettempdir()) / f"raysweep-numba-cache-{uid}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.lstat()
    except OSError:
        return Path(tempfile.mkdtemp(prefix="raysweep-numba-"))
    private = stat.S_ISDIR(info.st_mode) and info.st_uid == uid and not info.st_mode & 0o022
    if private and _writable(path):
        return path
    return Path(tempfile.mkdtemp(prefix="raysweep-numba-"))
