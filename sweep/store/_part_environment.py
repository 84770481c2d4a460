"""Where a part's bits came from: the environment record each part carries.

Every part holds, in its parquet schema metadata under :data:`ENVIRONMENT_KEY` (beside its
null summary), a compact JSON record of the environment that computed it: the library
versions that decide a result's bits, the CPU architecture, numpy's SIMD baseline and the
dispatch targets it found, numba's target CPU and the C library. It is computed on the
worker, once per process (:func:`current_environment`), and written with the rows, so the
part's sha256 name covers it (invariant 4). It names no host, process or time: parts
computed in one environment stay byte-identical.

Library versions decide whether a run may continue in another environment
(:func:`version_changes`; ``sweep resume`` refuses a change unless told, see
:mod:`sweep.runner._environment_check`); CPU and dispatch differences alone do not (results
are meant to be the same on any CPU, which ``sweep reproduce`` checks) but are recorded and
listed (:func:`environment_uses`) by ``sweep status`` and the report. A part written
before this record existed has none: it still verifies, and is listed as "no environment
record".
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sweep.common._environment import (
    glibc_version,
    numba_target,
    numpy_disabled_features,
    numpy_simd,
    result_versions,
)
from sweep.common._jsonable import JSONObject
from sweep.errors import RunFolderError
from sweep.store._footer_json import brief, footer_json
from sweep.store._record import Manifest, PartInfo

if TYPE_CHECKING:
    from sweep.store._run_store import RunStore

#: Schema-metadata key of the environment record in a part.
ENVIRONMENT_KEY = b"raysweep.environment"
ENVIRONMENT_FORMAT = 1
#: The most bytes a part's environment record may hold (a writer's is about 700).
ENVIRONMENT_MAX_BYTES = 16 * 1024
#: The versions compared when a run continues (a change refuses a resume unless allowed).
COMPARED_VERSIONS = (
    "python",
    "numpy",
    "numba",
    "llvmlite",
    "pandas",
    "pyarrow",
    "scipy",
    "raysweep",
)

#: Library versions as recorded: ``(name, version or None)`` pairs in a fixed order.
Versions = tuple[tuple[str, str | None], ...]


@dataclass(frozen=True)
class PartEnvironment:
    """The environment that computed a part (the record in its schema metadata).

    Attributes
    ----------
    versions : tuple of (name, version)
        ``python``, numpy, numba, llvmlite, pandas, pyarrow, scipy and ``raysweep`` (the
        engine), in that order (None for a library that is not installed).
    machine : str
        The CPU architecture (:func:`platform.machine`: ``x86_64``, ``aarch64``).
    numpy_baseline : tuple of str
        numpy's compiled-in SIMD baseline (``__cpu_baseline__``).
    numpy_found, numpy_not_found : tuple of str
        numpy's dispatch targets this CPU offers, and those it does not (or that
        ``NPY_DISABLE_CPU_FEATURES`` turned off).
    numpy_disabled : str or None
        ``NPY_DISABLE_CPU_FEATURES`` when set.
    numba_cpu : str
        The CPU numba compiles for: ``NUMBA_CPU_NAME`` when set, else LLVM's host CPU name.
    numba_features : str or None
        ``NUMBA_CPU_FEATURES`` when set.
    glibc : str or None
        The GNU C library's version (None on another C library).
    """

    versions: Versions
    machine: str
    numpy_baseline: tuple[str, ...] = ()
    numpy_found: tuple[str, ...] = ()
    numpy_not_found: tuple[str, ...] = ()
    numpy_disabled: str | None = None
    numba_cpu: str = ""
    numba_features: str | None = None
    glibc: str | None = None

    @classmethod
    def here(cls) -> PartEnvironment:
        """The environment of this process (see :func:`current_environment`, cached)."""
        import platform

        baseline, found, not_found = numpy_simd()
        cpu, features = numba_target()
        return cls(
            versions=tuple(result_versions().items()),
            machine=platform.machine(),
            numpy_baseline=baseline,
            numpy_found=found,
            numpy_not_found=not_found,
            numpy_disabled=numpy_disabled_features(),
            numba_cpu=cpu,
            numba_features=features,
            glibc=glibc_version(),
        )

    def version(self, name: str) -> str | None:
        """The recorded version of ``name`` (None when not recorded or not installed)."""
        return dict(self.versions).get(name)

    def to_json(self) -> JSONObject:
        """The JSON object (optional keys left out while unset)."""
        # Hand-written: the part metadata format raysweep-environment-v1 (SIMD lists nested).
        doc: JSONObject = {
            "format": ENVIRONMENT_FORMAT,
            "versions": dict(self.versions),
            "machine": self.machine,
            "numpy_simd": {
                "baseline": list(self.numpy_baseline),
                "found": list(self.numpy_found),
                "not_found": list(self.numpy_not_found),
            },
            "numba_cpu": self.numba_cpu,
            "glibc": self.glibc,
        }
        if self.numpy_disabled is not None:
            doc["npy_disable_cpu_features"] = self.numpy_disabled
        if self.numba_features is not None:
            doc["numba_cpu_features"] = self.numba_features
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> PartEnvironment:
        """Read the object :meth:`to_json` writes (:class:`RunFolderError` if malformed).

        ``format`` must be :data:`ENVIRONMENT_FORMAT` and ``versions`` an object of names to
        version strings (or null); the other keys may be absent (read as empty), but where
        present must have the type :meth:`to_json` writes: text, null where it writes null,
        and lists of text in ``numpy_simd``. Keys it does not write are ignored.
        """
        # Hand-written: the part metadata format, read leniently in its optional keys.
        found = doc.get("format") if isinstance(doc, Mapping) else f"a {type(doc).__name__}"
        if found != ENVIRONMENT_FORMAT or isinstance(found, bool):
            raise RunFolderError(
                f"environment record: expected format {ENVIRONMENT_FORMAT}, got {brief(found)}"
            )
        versions = doc.get("versions")
        simd = doc.get("numpy_simd", {})
        if not isinstance(versions, Mapping) or not isinstance(simd, Mapping):
            raise RunFolderError(
                "environment record: expected 'versions' and 'numpy_simd' objects, got "
                f"{brief(versions)} and {brief(simd)}"
            )
        for name, version in versions.items():
            if version is not None and not isinstance(version, str):
                raise RunFolderError(
                    f"environment record: versions: expected {name!r} text or null, got "
                    f"{brief(version)}"
                )

        def text(key: str) -> str | None:
            value = doc.get(key)
            if value is None or isinstance(value, str):
                return value
            raise RunFolderError(
                f"environment record: expected {key!r} text or null, got {brief(value)}"
            )

        def features(key: str) -> tuple[str, ...]:
            value = simd.get(key, [])
            if not isinstance(value, list) or not all(isinstance(f, str) for f in value):
                raise RunFolderError(
                    f"environment record: expected numpy_simd {key!r} a list of text, got "
                    f"{brief(value)}"
                )
            return tuple(value)

        order = {name: j for j, name in enumerate(COMPARED_VERSIONS)}
        names = sorted(versions, key=lambda k: (order.get(k, len(order)), k))
        return cls(
            versions=tuple((k, versions[k]) for k in names),
            machine=text("machine") or "",
            numpy_baseline=features("baseline"),
            numpy_found=features("found"),
            numpy_not_found=features("not_found"),
            numpy_disabled=text("npy_disable_cpu_features"),
            numba_cpu=text("numba_cpu") or "",
            numba_features=text("numba_cpu_features"),
            glibc=text("glibc"),
        )

    def describe(self) -> str:
        """One line: the versions, then the CPU and its dispatch, then the C library."""
        versions = ", ".join(f"{k} {v or 'not installed'}" for k, v in self.versions)
        simd = " ".join(self.numpy_baseline) or "-"
        if self.numpy_found:
            simd += " + " + " ".join(self.numpy_found)
        cpu = f"{self.machine}, numba cpu {self.numba_cpu}"
        if self.numba_features:
            cpu += f" ({self.numba_features})"
        cpu += f", numpy SIMD {simd}"
        if self.numpy_disabled:
            cpu += f" (NPY_DISABLE_CPU_FEATURES={self.numpy_disabled})"
        return f"{versions}; {cpu}; glibc {self.glibc or '-'}"


def encode_environment(environment: PartEnvironment) -> bytes:
    """The record's bytes in a part: compact JSON with sorted keys (deterministic)."""
    return json.dumps(environment.to_json(), sort_keys=True, separators=(",", ":")).encode()


def decode_environment(blob: bytes) -> PartEnvironment:
    """Read a record written by :func:`encode_environment`.

    Raises
    ------
    RunFolderError
        ``environment record: ...``: over :data:`ENVIRONMENT_MAX_BYTES`, not JSON, nested
        too deeply to read, or not the object :meth:`PartEnvironment.to_json` writes.
    """
    doc = footer_json(blob, "environment record", ENVIRONMENT_MAX_BYTES)
    return PartEnvironment.from_json(doc)


@functools.cache
def current_environment() -> PartEnvironment:
    """The environment of this process, computed once per process.

    The versions and the dispatch a process uses do not change under it. Workers call it
    for every part they compute (:func:`with_environment`); the driver calls it to compare
    a run's environment with its own.
    """
    return PartEnvironment.here()


def with_environment(table: pa.Table, environment: PartEnvironment | None = None) -> pa.Table:
    """Attach an environment record (default: this process's) to a part's table."""
    blob = encode_environment(current_environment() if environment is None else environment)
    return table.replace_schema_metadata({**(table.schema.metadata or {}), ENVIRONMENT_KEY: blob})


def environment_of(schema: pa.Schema) -> PartEnvironment | None:
    """The environment record a part's schema carries, or None (a part written before it)."""
    blob = (schema.metadata or {}).get(ENVIRONMENT_KEY)
    return None if blob is None else decode_environment(blob)


@dataclass(frozen=True)
class EnvironmentUse:
    """One environment that computed part of a run, and how much of it.

    Attributes
    ----------
    environment : PartEnvironment or None
        The record (None: parts written before parts recorded their environment).
    parts : int
        Good parts computed in it.
    configs : int
        Rows of those parts.
    """

    environment: PartEnvironment | None
    parts: int
    configs: int

    def describe(self, unit: str = "part") -> str:
        """``<environment>: N parts, M configs`` (or the no-record wording).

        ``unit`` names what :attr:`parts` counts (``batch`` for a re-computation).
        """
        what = (
            "no environment record (parts written before raysweep recorded one)"
            if self.environment is None
            else self.environment.describe()
        )
        units = unit if self.parts == 1 else ("batches" if unit == "batch" else f"{unit}s")
        return f"{what}: {self.parts:,} {units}, {self.configs:,} configs"

    def to_json(self) -> JSONObject:
        """``{"environment": record or null, "parts", "configs"}``."""
        # Hand-written: it nests PartEnvironment's format, which the generic rule cannot.
        return {
            "environment": None if self.environment is None else self.environment.to_json(),
            "parts": self.parts,
            "configs": self.configs,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> EnvironmentUse:
        """Read what :meth:`to_json` writes."""
        # Hand-written: the inverse of to_json above (PartEnvironment's format inside).
        env = doc.get("environment")
        return cls(
            environment=None if env is None else PartEnvironment.from_json(env),
            parts=int(doc.get("parts") or 0),
            configs=int(doc.get("configs") or 0),
        )


def group_environments(
    found: Iterable[tuple[PartEnvironment | None, int]],
) -> tuple[EnvironmentUse, ...]:
    """Group ``(environment, rows)`` of parts into uses, most configs first.

    Ties are ordered by the record's JSON, so the order never depends on the parts' order;
    parts without a record come last.
    """
    counts: dict[PartEnvironment | None, list[int]] = {}
    for env, rows in found:
        entry = counts.setdefault(env, [0, 0])
        entry[0] += 1
        entry[1] += int(rows)
    uses = [EnvironmentUse(env, n, rows) for env, (n, rows) in counts.items()]

    def key(use: EnvironmentUse) -> tuple[bool, int, str]:
        env = use.environment
        text = "" if env is None else encode_environment(env).decode()
        return (env is None, -use.configs, text)

    return tuple(sorted(uses, key=key))


def environment_uses(store: RunStore, checks: Sequence[PartInfo]) -> tuple[EnvironmentUse, ...]:
    """Every environment that computed a run's good parts, with part and config counts.

    Parameters
    ----------
    store : RunStore
        The run folder (each good part's footer is read).
    checks : sequence of PartInfo
        The part checks (:func:`sweep.store._run_store.read_run`); bad parts are left out.

    Returns
    -------
    tuple of EnvironmentUse
        Most configs first; parts without a record grouped last as one use.
    """
    return group_environments(
        (environment_of(store.read_part_schema(c.name)), c.rows) for c in checks if c.ok
    )


def compared(versions: Iterable[tuple[str, str | None]]) -> Versions:
    """The versions of :data:`COMPARED_VERSIONS` among ``versions`` (in that order)."""
    given = dict(versions)
    return tuple((k, given[k]) for k in COMPARED_VERSIONS if k in given)


def version_changes(recorded: Versions, current: Versions) -> list[str]:
    """What changed from ``recorded`` to ``current``: ``["numpy 2.4.6 -> 2.3.5", ...]``.

    Only the libraries of :data:`COMPARED_VERSIONS` recorded in both are compared (a driver
    session of an older engine did not record llvmlite).
    """
    old, new = dict(compared(recorded)), dict(compared(current))
    return [
        f"{name} {old[name] or 'not installed'} -> {new[name] or 'not installed'}"
        for name in COMPARED_VERSIONS
        if name in old and name in new and old[name] != new[name]
    ]


def session_versions(manifest: Manifest) -> tuple[Versions, ...]:
    """The library versions the driver sessions recorded (for parts without a record).

    Sessions that computed no config are left out; ``raysweep`` is the session's engine
    version. Distinct sets only, in session order.
    """
    out: list[Versions] = []
    for session in manifest.sessions_in_order():
        if session.configs_computed == 0:
            continue
        recorded = session.environment.get("versions")
        if not isinstance(recorded, Mapping):
            continue
        pairs = [(str(k), None if v is None else str(v)) for k, v in recorded.items()]
        if session.engine_version:
            pairs.append(("raysweep", str(session.engine_version)))
        versions = compared(pairs)
        if versions and versions not in out:
            out.append(versions)
    return tuple(out)


def run_versions(uses: Sequence[EnvironmentUse], manifest: Manifest) -> tuple[Versions, ...]:
    """The distinct library versions a run's good parts were computed with.

    From the parts' records; for parts without one (written before they recorded it), the
    versions the driver sessions recorded (:func:`session_versions`). Empty when the run
    has no good part.
    """
    out: list[Versions] = []
    for use in uses:
        if use.environment is not None:
            versions = compared(use.environment.versions)
            if versions not in out:
                out.append(versions)
    if any(use.environment is None for use in uses):
        out += [v for v in session_versions(manifest) if v not in out]
    return tuple(out)
