"""What opening a run folder may import: the trust model of ``resume`` and ``report``.

A run folder is data. Its manifest names the strategy the sweep used, but opening the folder
(``sweep resume``, ``sweep report``) imports only a built-in strategy, or a strategy module
the user names on the command line (``--allow-import MODULE``) or in the environment
(``RAYSWEEP_ALLOW_IMPORT``, comma-separated). Even then nothing is imported from inside the
run folder: its path (and the working directory, when that is inside it) is taken off
``sys.path`` while the strategy is imported. ``sweep run SPEC`` imports what the spec names,
since the user hands it the spec.

Opening a folder reaches no endpoint the user did not name. The manifest's spec is checked
against its recorded spec hash before any data is read (:func:`_check_identity`); the
folder's copy of its panel is read where it keeps one; and a data location the folder
names is read only when it carries nothing that says where or how to connect
(:func:`_folder_data_location`): a local path, or ``s3://bucket/key`` / ``gs://bucket/key``
without a query, credentials or port, which go wherever the user's own environment sends
such URIs. A location with ``?endpoint_override=...&scheme=http`` (or any query, a
``user@`` or ``host:port`` part, or another scheme) is refused in one line: the user names
the data themselves (``--data URI``, ``data=`` from Python), and it is checked against the
recorded fingerprint. Stripping the options instead would read another store than the run
used, so the fingerprint would fail anyway, after a request the user never asked for.
"""

from __future__ import annotations

import contextlib
import os
import sys
import urllib.parse
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from strategies import BUILTINS, Strategy
from sweep.common._fs import is_uri
from sweep.data._panels import Panel, load_panel, panel_fingerprint
from sweep.errors import DataError, RunFolderError, StrategySpecError, UntrustedStrategyError
from sweep.spec._models import spec_from_dict
from sweep.spec._provenance import StrategyOrigin
from sweep.spec._resolve import ResolvedSweep, load_data, resolve_with, spec_origin
from sweep.store._file_limits import panel_copy_limit
from sweep.store._panel_copy import read_panel_copy
from sweep.store._record import Manifest
from sweep.store._run_store import RunStore

#: Environment variable with more strategy modules a run folder may import (comma-separated).
ALLOW_IMPORT_ENV = "RAYSWEEP_ALLOW_IMPORT"

#: URI schemes a run folder may name its data with: a bucket and a key, reached wherever the
#: user's environment sends them (never a host, port or option the folder chose).
_BUCKET_SCHEMES = frozenset({"s3", "gs", "gcs"})


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


@dataclass(frozen=True)
class Supplied:
    """A panel and a strategy object handed over from Python to reopen a run folder."""

    panel: Panel | None = None
    strategy: Strategy | None = None


#: What Python handed over for the run folders opened in this context (``sweep.report_run``
#: sets it around the report, whose recomputations reopen the folder several times).
SUPPLIED: ContextVar[Supplied | None] = ContextVar("raysweep_supplied", default=None)


@contextlib.contextmanager
def supplying(panel: Panel | None, strategy: Strategy | None) -> Iterator[None]:
    """Reopen run folders in this block with this panel and strategy (see :data:`SUPPLIED`)."""
    token = SUPPLIED.set(Supplied(panel, strategy))
    try:
        yield
    finally:
        SUPPLIED.reset(token)


def _not_importable(location: str, origin: StrategyOrigin) -> UntrustedStrategyError:
    return UntrustedStrategyError(
        f"run folder {location!r} was run with strategy {origin.name!r} (version "
        f"{origin.version!r}) defined in {origin.defined_in}, which cannot be imported (a "
        "class or object from __main__, a notebook or a function); the command line can "
        "reopen this folder only once the strategy lives in an importable module (then run "
        "the sweep again from it). From Python, hand the object back: "
        f"sweep.resume({location!r}, strategy=obj) or sweep.report_run({location!r}, "
        "strategy=obj)"
    )


def _check_identity(manifest: Manifest, location: str) -> None:
    """Refuse a manifest whose spec does not hash to its recorded spec hash.

    Called before any data is read: a folder whose spec was edited (another grid, strategy,
    seed or data source than its parts were computed with) is refused at once, not after
    its data was fetched.

    Raises
    ------
    RunFolderError
        Naming both hashes.
    """
    found = spec_from_dict(dict(manifest.spec)).spec_hash
    recorded = manifest.run_key.spec_hash
    if found != recorded:
        raise RunFolderError(
            f"run folder {location!r}: manifest.json's spec hashes to {found[:16]}..., but its "
            f"identity records {recorded[:16]}...: the spec was edited after the run "
            "started, so the parts are not its results; no data was read"
        )


def _connection_options(uri: str) -> str | None:
    """What in a data URI says where or how to connect (None for a local path or bucket)."""
    if "://" not in uri or uri.startswith("file://"):
        return None
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme.lower() not in _BUCKET_SCHEMES:
        return f"the scheme {parts.scheme + '://'!r}, which names its own endpoint"
    if parts.query or parts.fragment:
        keys = sorted({k for k, _ in urllib.parse.parse_qsl(parts.query, True)})
        return f"query options ({', '.join(keys) or parts.query or parts.fragment})"
    if "@" in parts.netloc or ":" in parts.netloc:
        return "credentials or a port in its bucket part"
    return None


def _folder_data_location(uri: str, location: str) -> str:
    """The data location a run folder names, if reading it reaches no endpoint it chose.

    Parameters
    ----------
    uri : str
        The spec's ``data.path`` as the manifest stores it.
    location : str
        The run folder (for the message).

    Returns
    -------
    str
        ``uri`` unchanged: a local path, or a bucket URI without options.

    Raises
    ------
    DataError
        The URI carries connection options (an ``endpoint_override``, a ``scheme``, any
        query), credentials, a port or another scheme; the message says how to name the
        data yourself.
    """
    options = _connection_options(uri)
    if options is None:
        return uri
    raise DataError(
        f"run folder {location!r} names its data at {uri!r}, with {options}; opening a run "
        "folder never takes an endpoint, scheme or connection option from it. If you trust "
        f"that location, name the data yourself: --data {uri!r} (sweep.resume(run_dir, "
        "data=...) from Python); it is checked against the recorded fingerprint"
    )


def named_panel(manifest: Manifest, location: str, data: str) -> Panel:
    """The data the user names for a run folder (``--data``), read as the spec read its own.

    The folder's identity is checked first (:func:`_check_identity`); the panel is loaded
    with the recorded ``layout`` and ``fill`` and checked against the recorded fingerprint
    where it is used (:func:`recorded_panel`).
    """
    _check_identity(manifest, location)
    recorded = manifest.spec.get("data", {})
    layout = str(recorded.get("layout", "auto"))
    fill = str(recorded.get("fill", "none"))
    return load_panel(data, layout=layout, fill=fill)


def recorded_panel(
    manifest: Manifest, location: str, panel: Panel | None = None, *, check: bool = True
) -> Panel:
    """The data a run folder recorded, checked against its fingerprint.

    The manifest's spec is checked against its spec hash first (:func:`_check_identity`).
    ``panel`` (handed over from Python, or named with ``--data``) is used as given when it
    has the recorded fingerprint; otherwise the folder's copy is read where it keeps one
    (an in-memory panel; always checked); else the spec's data is loaded, if its location
    names no endpoint (:func:`_folder_data_location`), and checked unless ``check`` is
    False (``resume`` then refuses it as another sweep's data, naming what differs).
    """
    _check_identity(manifest, location)
    recorded = manifest.run_key.data_fingerprint
    if panel is not None:
        found = panel_fingerprint(panel)
        if found != recorded:
            raise DataError(
                f"data: the panel handed over has fingerprint {found[:16]}..., but run folder "
                f"{location!r} was run on {recorded[:16]}... "
                f"({_data_description(manifest)}); expected the same data"
            )
        return panel
    provenance = manifest.provenance
    if manifest.spec.get("data", {}).get("source") == "memory" or (
        provenance is not None and (provenance.data.kind == "memory" or provenance.data.copy)
    ):
        limit = panel_copy_limit(manifest.data)
        return read_panel_copy(RunStore(location).fs, location, recorded, limit)
    spec = spec_from_dict(dict(manifest.spec))
    if spec.data.path:
        _folder_data_location(spec.data.path, location)
    loaded = load_data(spec)
    found = panel_fingerprint(loaded)
    if check and found != recorded:
        raise DataError(
            f"the data the spec names now has fingerprint {found[:16]}..., the run used "
            f"{recorded[:16]}... ({_data_description(manifest)})"
        )
    return loaded


def _data_description(manifest: Manifest) -> str:
    if manifest.provenance is not None:
        return manifest.provenance.data.description
    data = manifest.spec.get("data", {})
    return f"{data.get('source')} data" + (f" {data['path']}" if data.get("path") else "")


def resolve_recorded(
    manifest: Manifest,
    location: str,
    allow_import: Iterable[str] = (),
    panel: Panel | None = None,
    strategy: Strategy | None = None,
    *,
    check_data: bool = False,
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
        The data, handed over from Python or already loaded (checked against the recorded
        fingerprint); else the spec's data, or the folder's copy of an in-memory panel.
    strategy : Strategy, optional
        The strategy object, handed over from Python (its name and version must be the
        recorded ones); else imported, if trusted.
    check_data : bool
        Refuse the spec's data unless it has the recorded fingerprint (the report); by
        default ``resume`` refuses it later, naming every difference.

    Returns
    -------
    ResolvedSweep

    Raises
    ------
    UntrustedStrategyError
        A strategy that is not built in and not allowed, or that cannot be imported at all
        (then the message says how to hand it over from Python).
    """
    record = manifest
    supplied = SUPPLIED.get() or Supplied()
    panel = panel if panel is not None else supplied.panel
    strategy = strategy if strategy is not None else supplied.strategy
    spec = spec_from_dict(dict(record.spec))
    provenance = record.provenance
    if strategy is None:
        if provenance is not None and provenance.needs_python:
            raise _not_importable(location, provenance.strategy)
        check_trusted(spec.strategy.name, location, allow_import)
    else:
        ref = record.run_key.strategy
        if ref is not None and (strategy.name, strategy.version) != (ref.name, ref.version):
            raise StrategySpecError(
                f"strategy: the object handed over is {strategy.name!r} version "
                f"{strategy.version!r}, but run folder {location!r} was run with {ref.name!r} "
                f"version {ref.version!r}; expected the same strategy"
            )
    data = recorded_panel(record, location, panel, check=check_data)
    origin = provenance.data if provenance is not None else spec_origin(spec)
    known = provenance.strategy if provenance is not None else None
    with _outside(location):
        return resolve_with(spec, data, origin, strategy, known)
