"""The sweep spec's models: one validated description of a sweep, from TOML or from Python.

Structure is checked by pydantic models (unknown keys are refused with a close-match
suggestion); :func:`sweep.spec._resolve.resolve` then checks the spec against its strategy
and its data. A TOML file's table reaches :func:`spec_from_dict`; the Python API builds the
typed spec from its values with :func:`build_spec` (the same models, the same messages).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from strategies import COST_PARAMS
from sweep.common._fs import is_uri
from sweep.errors import (
    SpecError,
    close_matches,
)
from sweep.spec._validation_spec import CpcvSpec, ValidationSpec, WalkForwardSpec

#: Names of the position-function strategies' cost parameters (for a hint in messages).
COST_PARAMETERS = frozenset(p.name for p in COST_PARAMS)
#: Largest PBO block count: C(20, 10) = 184,756 splits.
MAX_PBO_BLOCKS = 20
#: Fewest periods per PBO block.
MIN_PERIODS_PER_BLOCK = 5
#: Longest sweep name.
MAX_NAME_LENGTH = 100
#: Largest spec file read (bytes): a spec is a short TOML file, even with long value lists.
MAX_SPEC_BYTES = 8 * 2**20
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_M = TypeVar("_M", bound=BaseModel)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class DataSpec(_Model):
    """Where the price panel comes from, and how to read it.

    Attributes
    ----------
    source : {"synthetic", "file", "memory"}
        The embedded synthetic panel, a file or folder (``path``), or a panel handed over
        from Python (a DataFrame or a Panel; the run folder keeps a copy).
    path : str or None
        A file or a folder of per-asset files: a local path or a URI pyarrow reads
        (``s3://``, ``gs://``); see :func:`sweep.load_panel`.
    seed, years : int
        Of the synthetic panel.
    ohlcv : bool
        The synthetic panel also gives ``open``, ``high``, ``low`` and ``volume`` (its
        closes are the same either way); see :func:`sweep.synthetic_panel`.
    layout : {"auto", "wide", "long"}
        Of a single file (``auto``: long when it has an ``asset`` column).
    fill : {"none", "ffill"}
        A missing price inside an asset's listed span: an error naming the cell, or the last
        price carried forward.
    """

    source: Literal["synthetic", "file", "memory"] = "synthetic"
    path: str | None = None
    seed: int = Field(default=20261130, ge=0)
    years: int = Field(default=25, ge=1, le=200)
    ohlcv: bool = False
    layout: Literal["auto", "wide", "long"] = "auto"
    fill: Literal["none", "ffill"] = "none"

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready form.

        ``layout``, ``fill`` and ``ohlcv`` appear only when not their defaults (so a spec
        written before they existed hashes as before); an in-memory source has no ``path``,
        nor the synthetic panel's ``seed`` and ``years``.
        """
        doc = self.model_dump(mode="json")
        for key, default in (("layout", "auto"), ("fill", "none"), ("ohlcv", False)):
            if doc.get(key) == default:
                doc.pop(key)
        if self.source == "memory":
            doc.pop("seed")
            doc.pop("years")
            doc.pop("path")
        return doc


class StrategySpec(_Model):
    """Which strategy to sweep: a built-in name or an import path ``package.module:Name``.

    Attributes
    ----------
    name : str
        A built-in name or an import path. With ``backtesting``, that path.
    backtesting : str or None
        ``package.module:StrategyClass``, a backtesting.py ``Strategy`` subclass swept with
        :func:`strategies.from_backtesting` (``name`` may be left out: it is this path).
    backtest : dict
        Keyword arguments of ``backtesting.Backtest`` (``cash``, ``commission``, ...).
    """

    name: str
    backtesting: str | None = None
    backtest: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _backtesting_names_the_strategy(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("backtesting") is not None:
            given = data.get("name")
            if given is not None and given != data["backtesting"]:
                raise ValueError(
                    f"give backtesting = {data['backtesting']!r} alone, or the same path as "
                    f"name (got name = {given!r})"
                )
            data = {**data, "name": data["backtesting"]}
        return data

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form.

        ``backtesting`` and ``backtest`` appear only when given (older specs hash as before).
        """
        doc: dict[str, Any] = {"name": self.name}
        if self.backtesting is not None:
            doc["backtesting"] = self.backtesting
            doc["backtest"] = dict(self.backtest)
        return doc


class MetricOptions(_Model):
    """Options of the per-config metrics (they change results, so they are part of the spec)."""

    periods_per_year: float = Field(default=252.0, gt=0, allow_inf_nan=False)
    bootstrap_reps: int = Field(default=200, ge=0, le=100_000)
    block_length: int = Field(default=21, ge=1)
    bootstrap_method: Literal["circular", "stationary"] = "circular"
    pbo_blocks: int = Field(default=16, ge=2)
    benchmark: str = Field(default="zero", min_length=1)
    stepm_top_k: int = Field(default=32, ge=1, le=4096)

    @field_validator("periods_per_year", mode="before")
    @classmethod
    def _int_is_float(cls, v: Any) -> Any:
        return float(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @field_validator("pbo_blocks")
    @classmethod
    def _even(cls, v: int) -> int:
        if v % 2:
            raise ValueError(f"must be even (CSCV splits the blocks in halves), got {v}")
        if v > MAX_PBO_BLOCKS:
            raise ValueError(
                f"must be at most {MAX_PBO_BLOCKS} (C(S, S/2) splits grow fast), got {v}"
            )
        return v


class SweepSpec(_Model):
    """A validated sweep spec.

    Attributes
    ----------
    name : str
        Name of the sweep, a folder-safe slug (the default run folder is ``runs/<name>``).
    seed : int
        Root seed of every config's seed sequence.
    data : DataSpec
        The price panel.
    strategy : StrategySpec
        The strategy.
    grid : dict
        Parameter axes, plus optional ``zip`` groups and ``where`` constraints.
    metrics : MetricOptions
        Per-config metric options.
    costs : dict of str to float
        Strategy parameters held fixed across the grid (e.g. ``cost = 0.0005``).
    validation : ValidationSpec or None
        Out-of-sample folds (walk-forward, CPCV); see :mod:`sweep.spec._validation_spec`.
    """

    name: str = Field(min_length=1)
    seed: int = Field(ge=0)
    data: DataSpec = DataSpec()
    strategy: StrategySpec
    grid: dict[str, Any]
    metrics: MetricOptions = MetricOptions()
    costs: dict[str, float] = Field(default_factory=dict)
    validation: ValidationSpec | None = None

    @field_validator("name")
    @classmethod
    def _slug(cls, v: str) -> str:
        if len(v) > MAX_NAME_LENGTH or not _NAME.fullmatch(v):
            raise ValueError(
                "expected a folder name (the default run folder is runs/<name>): letters, "
                "digits, '.', '_' and '-', starting with a letter or digit, at most "
                f"{MAX_NAME_LENGTH} characters"
            )
        return v

    @field_validator("costs", mode="before")
    @classmethod
    def _costs_finite(cls, v: Any) -> Any:
        if isinstance(v, dict):
            for key, value in v.items():
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ValueError(f"{key}: expected a number, got {value!r}")
                if not math.isfinite(value):
                    raise ValueError(f"{key}: expected a finite number, got {value!r}")
            return {k: float(x) for k, x in v.items()}
        return v

    def to_dict(self) -> dict[str, Any]:
        """Return the spec as plain JSON-ready data (what the manifest stores).

        A spec without ``[validation]`` has no such key (so its hash is what it was before
        validation existed).
        """
        doc = self.model_dump(mode="json")
        doc["data"] = self.data.to_dict()
        doc["strategy"] = self.strategy.to_dict()
        if doc.get("validation") is None:
            doc.pop("validation", None)
        return doc

    def identity(self) -> dict[str, Any]:
        """Return what identifies the sweep's results: the spec without the data's location.

        The data file's path and layout are left out (a moved or re-laid-out file is the
        same data); the data itself is identified by its fingerprint, which the manifest
        records beside the spec hash.
        """
        doc = self.to_dict()
        doc["data"].pop("path", None)
        doc["data"].pop("layout", None)
        # The grid's key order fixes the canonical order of configs: keep it in the hash.
        doc["grid"] = [[name, definition] for name, definition in self.grid.items()]
        return doc

    @property
    def spec_hash(self) -> str:
        """sha256 of the canonical JSON of :meth:`identity` (sorted keys, no whitespace)."""
        blob = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


def _describe_errors(errors: Sequence[ErrorDetails], fields: dict[str, list[str]]) -> str:
    lines = []
    for err in errors:
        loc = ".".join(str(p) for p in err["loc"]) or "spec"
        if err["type"] == "extra_forbidden":
            parent = ".".join(str(p) for p in err["loc"][:-1])
            key = str(err["loc"][-1])
            lines.append(
                f"{loc}: unknown key {key!r}." + close_matches(key, fields.get(parent, []))
            )
        elif err["type"] == "missing":
            lines.append(f"{loc}: required, but missing")
        else:
            given = err.get("input")
            msg = err["msg"].removeprefix("Value error, ")
            # Some validators already say what they got: do not say it twice.
            lines.append(f"{loc}: {msg}" if ", got " in msg else f"{loc}: {msg} (got {given!r})")
    return "invalid sweep spec: " + "; ".join(lines)


def _known_fields() -> dict[str, list[str]]:
    return {
        "": list(SweepSpec.model_fields),
        "data": list(DataSpec.model_fields),
        "strategy": list(StrategySpec.model_fields),
        "metrics": list(MetricOptions.model_fields),
        "validation": list(ValidationSpec.model_fields),
        "validation.walk_forward": list(WalkForwardSpec.model_fields),
        "validation.cpcv": list(CpcvSpec.model_fields),
    }


def _absolute(path: str, base_dir: Path | None) -> str:
    """A relative local ``data.path`` made absolute from ``base_dir`` (URIs as they are)."""
    if base_dir is None or is_uri(path):
        return path
    return str((base_dir / path.removeprefix("file://")).resolve())


def _checked(spec: SweepSpec) -> SweepSpec:
    """The rules between ``data.source`` and ``data.path`` (after the models' checks)."""
    if spec.data.source == "file" and not spec.data.path:
        raise SpecError("data.path: required when data.source = 'file'")
    if spec.data.source == "synthetic" and spec.data.path:
        raise SpecError("data: give either source = 'synthetic' or a path, not both")
    if spec.data.ohlcv and spec.data.source != "synthetic":
        raise SpecError(
            "data.ohlcv: only the synthetic panel makes open, high, low and volume; expected "
            f"source = 'synthetic', got source = {spec.data.source!r} (a file gives its own "
            "fields as columns: see sweep.load_panel)"
        )
    if spec.data.source == "memory" and spec.data.path:
        raise SpecError(
            "data: source = 'memory' is a panel handed over from Python; it takes no path "
            f"(got path = {spec.data.path!r}); use source = 'file' for a file"
        )
    return spec


def spec_from_dict(doc: dict[str, Any], base_dir: Path | None = None) -> SweepSpec:
    """Validate a spec given as plain data (the shape of the TOML file).

    Parameters
    ----------
    doc : dict
        The spec.
    base_dir : Path, optional
        Folder that a relative ``data.path`` is relative to (the TOML file's folder).

    Returns
    -------
    SweepSpec
        The validated spec; ``data.path`` made absolute.
    """
    doc = dict(doc)
    data = doc.get("data")
    if isinstance(data, dict):
        data = dict(data)
        if "path" in data and "source" not in data:
            data["source"] = "file"
        path = data.get("path")
        if isinstance(path, str):
            data["path"] = _absolute(path, base_dir)
        doc["data"] = data
    try:
        spec = SweepSpec.model_validate(doc)
    except ValidationError as exc:
        raise SpecError(_describe_errors(exc.errors(), _known_fields())) from exc
    return _checked(spec)


#: The spec's top-level fields in order: a single validation reports its errors in it.
_FIELD_ORDER = {name: k for k, name in enumerate(SweepSpec.model_fields)}


def _part(
    model: type[_M], given: _M | Mapping[str, Any] | None, where: str, errors: list[ErrorDetails]
) -> _M | None:
    """``given`` as the model (validated), or None with its errors added, located ``where``."""
    if given is None or isinstance(given, model):
        return given
    try:
        return model.model_validate(dict(given))
    except ValidationError as exc:
        errors += [{**e, "loc": (where, *e["loc"])} for e in exc.errors()]
        return None


def build_spec(  # noqa: PLR0913 - keyword-only: the spec's sections, and where it is
    *,
    name: str,
    seed: int,
    data: Mapping[str, Any],
    strategy: str | StrategySpec,
    grid: Mapping[str, Any],
    metrics: MetricOptions | Mapping[str, Any] | None = None,
    costs: Mapping[str, float] | None = None,
    validation: ValidationSpec | Mapping[str, Any] | None = None,
    base_dir: Path | None = None,
) -> SweepSpec:
    """Build the typed spec from Python values (the Python API's path).

    Each part is validated by its model and the whole by :class:`SweepSpec`; their errors are
    reported together, located and ordered as :func:`spec_from_dict` reports those of the
    same spec written as a table, so a mistake reads the same from Python and from TOML.

    Parameters
    ----------
    name, seed : str, int
        The sweep's name and root seed.
    data : mapping
        :class:`DataSpec`'s fields (``source``, ``path``, ``layout``, ``fill``); a relative
        local ``path`` is made absolute from ``base_dir``.
    strategy : str or StrategySpec
        The strategy's built-in name or import path, or its whole section.
    grid : mapping
        The grid as a spec holds it (:func:`sweep.python_grid`).
    metrics, costs, validation : optional
        The spec's sections, as models or mappings.
    base_dir : Path, optional
        Folder a relative data path is relative to.

    Returns
    -------
    SweepSpec
        The validated spec.
    """
    errors: list[ErrorDetails] = []
    fields = dict(data)
    if isinstance(fields.get("path"), str):
        fields["path"] = _absolute(fields["path"], base_dir)
    data_spec = _part(DataSpec, fields, "data", errors)
    metric_options = _part(MetricOptions, metrics, "metrics", errors)
    validation_spec = _part(ValidationSpec, validation, "validation", errors)
    spec: SweepSpec | None = None
    try:
        spec = SweepSpec(
            name=name,
            seed=seed,
            data=data_spec or DataSpec(),
            strategy=strategy
            if isinstance(strategy, StrategySpec)
            else StrategySpec(name=strategy),
            grid=dict(grid),
            metrics=metric_options or MetricOptions(),
            costs=dict(costs or {}),
            validation=validation_spec,
        )
    except ValidationError as exc:
        errors += exc.errors()
    if errors or spec is None:
        errors.sort(key=lambda e: _FIELD_ORDER.get(str(e["loc"][0]), 0) if e["loc"] else -1)
        raise SpecError(_describe_errors(errors, _known_fields()))
    return _checked(spec)


def _file_kind(mode: int) -> str:
    """What a file that is not a regular file is, for a message."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _read_spec_text(path: Path) -> str:
    """The text of a spec file: a regular file of at most :data:`MAX_SPEC_BYTES`, UTF-8.

    A device, a pipe or a directory is refused before anything is read (reading
    ``/dev/zero`` would never end; a pipe is opened without waiting for a writer), and at
    most one byte more than the limit is ever read. Line ends are read as Python's text
    mode reads them.

    Raises
    ------
    SpecError
        Unreadable, not a regular file, or too large.
    UnicodeDecodeError
        Not UTF-8 (the offset is from the start of the file).
    """
    where = repr(str(path))
    try:
        # Non-blocking: opening a pipe must not wait for a writer before it is refused.
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as fh:
            if not stat.S_ISREG(mode := os.fstat(fh.fileno()).st_mode):
                raise SpecError(f"spec: expected a TOML file, got {where}, {_file_kind(mode)}")
            data = fh.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise SpecError(f"spec: cannot read {where}: {exc.strerror or exc}") from exc
    if len(data) > MAX_SPEC_BYTES:
        raise SpecError(
            f"spec: {where} is larger than {MAX_SPEC_BYTES // 2**20} MiB; expected a sweep "
            "spec (a short TOML file)"
        )
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate a TOML sweep spec.

    Parameters
    ----------
    path : str or Path
        The ``.toml`` file (a regular file of at most :data:`MAX_SPEC_BYTES`).

    Returns
    -------
    SweepSpec
        The validated spec.
    """
    p = Path(path)
    text = _read_spec_text(p)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"spec: {str(p)!r} is not valid TOML: {exc}") from exc
    return spec_from_dict(doc, base_dir=p.resolve().parent)
