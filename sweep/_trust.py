"""What opening a run folder may import: the trust model of ``resume`` and ``report``.

A run folder is data. Its manifest names the strategy the sweep used, but opening the folder
(``sweep resume``, ``sweep report``) imports only a built-in strategy, or a strategy module
the user names on the command line (``--allow-import MODULE``) or in the environment
(``RAYSWEEP_ALLOW_IMPORT``, comma-separated). Even then nothing is imported from inside the
run folder: its path (and the working directory, when that is inside it) is taken off
``sys.path`` while the strategy is imported. ``sweep run SPEC`` imports what the spec names,
since the user hands it the spec.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from strategies import BUILTINS
from sweep._data import Panel
from sweep._fs import is_uri
from sweep._record import Manifest
from sweep._spec import ResolvedSweep, resolve, spec_from_dict
from sweep.errors import UntrustedStrategyError

#: Environment variable with more strategy modules a run folder may import (comma-separated).
ALLOW_IMPORT_ENV = "RAYSWEEP_ALLOW_IMPORT"


def allowed_modules(given: Iterable[str] = ()) -> set[str]:
    """Modules allowed on the command line plus those in :data:`ALLOW_IMPORT_ENV`."""
    names = {g.strip() for g in given}
    names |= {n.strip() for n in os.environ.get(ALLOW_IMPORT_ENV, "").split(",")}
    return {n for n in names if n}


def check_trusted(strategy: str, location: str, allow_import: Iterable[str] = ()) -> None:
    """Refuse a strategy recorded in a run folder unless it is built in or allowed.

    Parameters
    ----------
    strategy : str
        ``strategy.name`` of the recorded spec: a built-in name or ``package.module:Name``.
    location : str
        The run folder (for the message).
    allow_import : iterable of str
        Modules (``package.module``) or full import paths the user allowed.

    Raises
    ------
    UntrustedStrategyError
        When the strategy would be imported without the user's say-so.
    """
    if strategy in BUILTINS:
        return
    module = strategy.partition(":")[0]
    allowed = allowed_modules(allow_import)
    if module in allowed or strategy in allowed:
        return
    raise UntrustedStrategyError(
        f"run folder {location!r} names the strategy {strategy!r}, which is not built in; "
        "opening a run folder never imports code it names. If you trust that module, pass "
        f"--allow-import {module} (or set {ALLOW_IMPORT_ENV}={module})"
    )


@contextlib.contextmanager
def _outside(location: str) -> Iterator[None]:
    """Take the run folder (and a working directory inside it) off ``sys.path``."""
    if is_uri(location):
        yield
        return
    root = Path(location).resolve()

    def inside(entry: str) -> bool:
        path = Path(entry or os.getcwd()).resolve()
        return path == root or root in path.parents

    saved = list(sys.path)
    sys.path[:] = [e for e in sys.path if not inside(e)]
    try:
        yield
    finally:
        sys.path[:] = saved


def resolve_recorded(
    manifest: Manifest,
    location: str,
    allow_import: Iterable[str] = (),
    panel: Panel | None = None,
) -> ResolvedSweep:
    """Resolve the sweep a run folder recorded, importing only what is trusted.

    Parameters
    ----------
    manifest : Manifest
        The run folder's ``manifest.json``, read.
    location : str
        The run folder.
    allow_import : iterable of str
        Strategy modules the user allowed (see :func:`check_trusted`).
    panel : Panel, optional
        The data, when already loaded.

    Returns
    -------
    ResolvedSweep
    """
    spec = spec_from_dict(dict(manifest.spec))
    check_trusted(spec.strategy.name, location, allow_import)
    with _outside(location):
        return resolve(spec, panel)
