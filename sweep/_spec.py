"""The sweep spec: one validated description of a sweep, from TOML or from Python.

Structure is checked by pydantic models (unknown keys are refused with a close-match
suggestion); :func:`resolve` then checks the spec against its strategy and its data
(parameter names and types, windows shorter than the data, PBO block count) and returns a
:class:`ResolvedSweep`, the immutable bundle every executor evaluates.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from stats import FoldPlan
from strategies import COST_PARAMS, Param, Strategy, get_strategy
from sweep._benchmark import check_benchmark
from sweep._data import Panel, load_panel, panel_fingerprint, synthetic_panel
from sweep._fs import is_uri
from sweep._grid import RESERVED_KEYS, Axis, Grid, axis_from_definition
from sweep._provenance import DataOrigin, StrategyOrigin, strategy_origin
from sweep._validation_spec import CpcvSpec, ValidationSpec, WalkForwardSpec, fold_plan
from sweep.errors import (
    GridError,
    SpecError,
    StrategyError,
    StrategySpecError,
    SweepError,
    close_matches,
)

#: Names of the position-function strategies' cost parameters (for a hint in messages).
COST_PARAMETERS = frozenset(p.name for p in COST_PARAMS)
#: Largest PBO block count: C(20, 10) = 184,756 splits.
MAX_PBO_BLOCKS = 20
#: Fewest periods per PBO block.
MIN_PERIODS_PER_BLOCK = 5
#: Longest sweep name.
MAX_NAME_LENGTH = 100
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


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
    layout: Literal["auto", "wide", "long"] = "auto"
    fill: Literal["none", "ffill"] = "none"

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready form.

        ``layout`` and ``fill`` appear only when not their defaults (so a spec written before
        they existed hashes as before); an in-memory source has no ``path``, nor the
        synthetic panel's ``seed`` and ``years``.
        """
        doc = self.model_dump(mode="json")
        for key, default in (("layout", "auto"), ("fill", "none")):
            if doc.get(key) == default:
                doc.pop(key)
        if self.source == "memory":
            doc.pop("seed")
            doc.pop("years")
            doc.pop("path")
        return doc


class StrategySpec(_Model):
    """Which strategy to sweep: a built-in name or an import path ``package.module:Name``."""

    name: str


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
        Out-of-sample folds (walk-forward, CPCV); see :mod:`sweep._validation_spec`.
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


def _describe_errors(exc: ValidationError, fields: dict[str, list[str]]) -> str:
    lines = []
    for err in exc.errors():
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
        if isinstance(path, str) and base_dir is not None and not is_uri(path):
            data["path"] = str((base_dir / path.removeprefix("file://")).resolve())
        doc["data"] = data
    try:
        spec = SweepSpec.model_validate(doc)
    except ValidationError as exc:
        raise SpecError(_describe_errors(exc, _known_fields())) from exc
    if spec.data.source == "file" and not spec.data.path:
        raise SpecError("data.path: required when data.source = 'file'")
    if spec.data.source == "synthetic" and spec.data.path:
        raise SpecError("data: give either source = 'synthetic' or a path, not both")
    if spec.data.source == "memory" and spec.data.path:
        raise SpecError(
            "data: source = 'memory' is a panel handed over from Python; it takes no path "
            f"(got path = {spec.data.path!r}); use source = 'file' for a file"
        )
    return spec


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate a TOML sweep spec.

    Parameters
    ----------
    path : str or Path
        The ``.toml`` file.

    Returns
    -------
    SweepSpec
        The validated spec.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"spec: cannot read {str(p)!r}: {exc.strerror or exc}") from exc
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"spec: {str(p)!r} is not valid TOML: {exc}") from exc
    return spec_from_dict(doc, base_dir=p.resolve().parent)


@dataclass(frozen=True, eq=False)
class ResolvedSweep:
    """A spec checked against its strategy and data: what executors evaluate.

    Attributes
    ----------
    spec : SweepSpec
        The spec.
    strategy : Strategy
        The strategy instance.
    grid : Grid
        The grid over every strategy parameter (costs and defaults as one-value axes).
    panel : Panel
        The price panel.
    fingerprint : str
        sha256 of the panel (:func:`sweep.panel_fingerprint`).
    origin : DataOrigin or None
        Where the panel came from (None only for a sweep built by hand: then the spec's
        data, see :meth:`data_origin`).
    strategy_origin : StrategyOrigin or None
        How the strategy can be imported again (None: found from the object when needed).
    """

    spec: SweepSpec
    strategy: Strategy
    grid: Grid
    panel: Panel
    fingerprint: str
    origin: DataOrigin | None = None
    strategy_origin: StrategyOrigin | None = None

    @property
    def data_origin(self) -> DataOrigin:
        """Where the panel came from (the spec's data when not recorded otherwise)."""
        return self.origin if self.origin is not None else spec_origin(self.spec)

    @property
    def strategy_source(self) -> StrategyOrigin:
        """How the strategy can be imported again (:func:`sweep._provenance.strategy_origin`)."""
        if self.strategy_origin is not None:
            return self.strategy_origin
        return strategy_origin(self.strategy)

    @property
    def n_returns(self) -> int:
        """Number of return periods of every config (one fewer than the panel's dates)."""
        return self.panel.n_periods - 1

    @functools.cached_property
    def fold_plan(self) -> FoldPlan | None:
        """The out-of-sample folds of ``[validation]`` on this data (None without it)."""
        return fold_plan(self.spec.validation, self.n_returns, self.spec.metrics.periods_per_year)


def load_data(spec: SweepSpec) -> Panel:
    """Load the panel a spec names (the synthetic default or a file or folder)."""
    if spec.data.source == "synthetic":
        return synthetic_panel(seed=spec.data.seed, years=spec.data.years)
    if spec.data.source == "memory":
        raise SpecError(
            "data.source: 'memory' means the panel was handed over from Python, so the spec "
            "cannot load it; pass the panel (resolve(spec, panel), sweep.run(..., data=frame)), "
            "or reopen the run folder, which keeps a copy"
        )
    if not spec.data.path:
        raise SpecError("data.path: required when data.source = 'file'")
    return load_panel(spec.data.path, layout=spec.data.layout, fill=spec.data.fill)


def spec_origin(spec: SweepSpec) -> DataOrigin:
    """Where the spec's own data comes from (its synthetic panel or its file)."""
    data = spec.data
    if data.source == "synthetic":
        return DataOrigin(
            "synthetic", None, f"synthetic panel (seed {data.seed}, {data.years} years)"
        )
    if data.source == "file":
        return DataOrigin("file", data.path, f"file {data.path}")
    return DataOrigin("memory", None, "in-memory panel")


@functools.lru_cache(maxsize=8)
def _synthetic_fingerprint(seed: int, years: int) -> str:
    return panel_fingerprint(synthetic_panel(seed=seed, years=years))


def memory_origin(panel: Panel, what: str = "Panel") -> DataOrigin:
    """The origin of a panel handed over in memory: what it was, its shape and dates."""
    first = str(panel.dates[0].astype("datetime64[D]"))
    last = str(panel.dates[-1].astype("datetime64[D]"))
    assets = ", ".join(panel.assets[:5]) + (", ..." if panel.n_assets > 5 else "")
    return DataOrigin(
        "memory",
        None,
        f"in-memory {what}, {panel.n_periods} dates x {panel.n_assets} assets, {first} to "
        f"{last} ({assets})",
    )


def _given_panel(spec: SweepSpec, panel: Panel) -> tuple[SweepSpec, DataOrigin]:
    """Return the spec and origin of a panel handed to :func:`resolve`.

    The spec's own data when the fingerprints match, else an in-memory panel (the spec's
    data becomes ``memory``).
    """
    data = spec.data
    if data.source == "synthetic" and panel_fingerprint(panel) == _synthetic_fingerprint(
        data.seed, data.years
    ):
        return spec, spec_origin(spec)
    if data.source == "file" and data.path:
        try:
            same = panel_fingerprint(load_data(spec)) == panel_fingerprint(panel)
        except SweepError:
            same = False
        if same:
            return spec, spec_origin(spec)
    memory = DataSpec(source="memory", fill=data.fill)
    return spec.model_copy(update={"data": memory}), memory_origin(panel)


def _coerce_axis(axis: Axis, param: Param) -> Axis:
    values = axis.values
    where = f"grid.{axis.name}"
    kind = values.dtype.kind
    if param.kind == "int":
        if kind != "i":
            raise GridError(
                f"{where}: expected integers, got {values.dtype} values like {values[0].item()!r}"
            )
    elif param.kind == "float":
        if kind not in "if":
            raise GridError(
                f"{where}: expected numbers, got {values.dtype} values like {values[0].item()!r}"
            )
        values = values.astype(np.float64)
    elif param.kind == "bool" and kind != "b":
        raise GridError(
            f"{where}: expected true/false, got {values.dtype} values like {values[0].item()!r}"
        )
    if param.minimum is not None and (values < param.minimum).any():
        bad = values[values < param.minimum][0].item()
        raise GridError(f"{where}: expected values >= {param.minimum}, got {bad!r}")
    if param.maximum is not None and (values > param.maximum).any():
        bad = values[values > param.maximum][0].item()
        raise GridError(f"{where}: expected values <= {param.maximum}, got {bad!r}")
    return Axis(axis.name, values)


def _check_windows(grid: Grid, strategy: Strategy, panel: Panel) -> None:
    for param in strategy.params:
        if not param.window:
            continue
        values = grid.axis(param.name).values
        if (values < 1).any():
            raise GridError(
                f"grid.{param.name}: a window must be at least 1 period, got {int(values.min())}"
            )
        if (values >= panel.n_periods).any():
            raise GridError(
                f"grid.{param.name}: a window must be shorter than the data "
                f"({panel.n_periods} periods), got {int(values.max())}"
            )


def _load_strategy(name: str) -> Strategy:
    """The spec's strategy; a :class:`StrategyError` is raised again as a spec error."""
    try:
        return get_strategy(name)
    except StrategyError as exc:
        if isinstance(exc, SweepError):
            raise
        raise StrategySpecError(str(exc)) from exc


def _given_names(spec: SweepSpec, strategy: Strategy) -> list[str]:
    """The grid's parameter names, each checked against the strategy (costs too)."""
    declared = {p.name: p for p in strategy.params}
    given = [k for k in spec.grid if k not in RESERVED_KEYS]
    for section, names in (("grid", given), ("costs", list(spec.costs))):
        for name in names:
            if name in declared:
                continue
            hint = ""
            if name in COST_PARAMETERS:
                hint = (
                    f" {name!r} belongs to the cost model of position-function strategies; "
                    f"{strategy.name!r} is a batch kernel with its own cost parameters."
                )
            raise GridError(
                f"{section}.{name}: strategy {strategy.name!r} has no parameter {name!r} "
                f"(parameters: {sorted(declared)})." + hint + close_matches(name, declared)
            )
    both = sorted(set(given) & set(spec.costs))
    if both:
        raise SpecError(f"costs: {both} also appear in [grid]; give each parameter once")
    return given


def _fixed_axis(spec: SweepSpec, strategy: Strategy, param: Param) -> Axis:
    """The one-value axis of a parameter the grid does not give: its cost or its default."""
    if param.name in spec.costs:
        value: Any = spec.costs[param.name]
    elif param.default is not None:
        value = param.default
    else:
        raise GridError(
            f"grid: strategy {strategy.name!r} needs parameter {param.name!r} "
            f"({param.doc or param.kind}), which the grid does not give"
        )
    return _coerce_axis(axis_from_definition(param.name, [value]), param)


def _full_grid(spec: SweepSpec, strategy: Strategy) -> Grid:
    """The grid over every strategy parameter: the spec's axes, then costs and defaults."""
    given = _given_names(spec, strategy)
    declared = {p.name: p for p in strategy.params}
    base = Grid.from_definition(spec.grid)
    axes = [_coerce_axis(a, declared[a.name]) for a in base.axes]
    axes += [_fixed_axis(spec, strategy, p) for p in strategy.params if p.name not in given]
    return Grid(axes, [list(g) for g in base.zip_groups], [c.text for c in base.constraints])


def _check_listings(strategy: Strategy, panel: Panel) -> None:
    """Refuse a panel with listings for a strategy that does not declare it honours them.

    A position-function strategy does (its weights are forced to zero where an asset is not
    listed); a batch kernel must say so with ``honours_listings = True``, because the engine
    cannot see its weights.
    """
    if panel.has_listings and not getattr(strategy, "honours_listings", False):
        raise StrategySpecError(
            f"strategy.name: strategy {strategy.name!r} is a batch kernel that does not honour "
            "a panel with listings and delistings (it could hold an asset that is not listed); "
            "use a position-function strategy instead: a built-in (xs_momentum, trend_filter, "
            "rsi_reversion, bollinger_reversion) or your own strategies.position_strategy; a "
            "batch kernel that holds nothing where panel.live is False may declare "
            "honours_listings = True"
        )


def _check_metrics(metrics: MetricOptions, n_returns: int) -> None:
    """Refuse PBO blocks or a bootstrap block length the data's return count cannot hold."""
    per_block = n_returns // metrics.pbo_blocks
    if per_block < MIN_PERIODS_PER_BLOCK:
        raise SpecError(
            f"metrics.pbo_blocks: {metrics.pbo_blocks} blocks leave {per_block} periods per "
            f"block on {n_returns} returns; expected at least {MIN_PERIODS_PER_BLOCK} per block"
        )
    if metrics.bootstrap_reps and metrics.block_length >= n_returns:
        raise SpecError(
            f"metrics.block_length: expected fewer than {n_returns} periods (the data's return "
            f"count), got {metrics.block_length}"
        )


def check_strategy_object(strategy: Any) -> Strategy:
    """Refuse (:class:`StrategySpecError`) an object that is not a Strategy, naming its lack."""
    if isinstance(strategy, Strategy):
        return strategy
    lacking = [m for m in ("name", "version", "params", "evaluate") if not hasattr(strategy, m)]
    raise StrategySpecError(
        "strategy: expected a Strategy (an object with name, version, params and "
        f"evaluate(panel, params, rngs)), a built-in name or an import path, got "
        f"{type(strategy).__name__}" + (f" without {lacking}" if lacking else "")
    )


def resolve(
    spec: SweepSpec, panel: Panel | None = None, *, strategy: Strategy | None = None
) -> ResolvedSweep:
    """Check a spec against its strategy and data and build the full grid.

    Parameters
    ----------
    spec : SweepSpec
        The spec.
    panel : Panel, optional
        The price panel; loaded from the spec when omitted. A panel whose fingerprint is not
        that of the data the spec names is recorded as in-memory data: the returned sweep's
        spec says ``data.source = "memory"`` and the run folder keeps a copy of the panel.
    strategy : Strategy, optional
        The strategy object; imported from ``spec.strategy.name`` when omitted.

    Returns
    -------
    ResolvedSweep
        Strategy, grid (every strategy parameter present, in the grid's order followed by
        fixed costs and defaults in the strategy's order), panel, its fingerprint and where
        the panel came from.
    """
    if panel is None:
        return resolve_with(spec, load_data(spec), spec_origin(spec), strategy)
    spec, origin = _given_panel(spec, panel)
    return resolve_with(spec, panel, origin, strategy)


def resolve_with(
    spec: SweepSpec,
    panel: Panel,
    origin: DataOrigin,
    strategy: Strategy | None = None,
    known_origin: StrategyOrigin | None = None,
) -> ResolvedSweep:
    """:func:`resolve` with the panel's origin already known (a run folder's record)."""
    if strategy is None:
        strategy = _load_strategy(spec.strategy.name)
    else:
        strategy = check_strategy_object(strategy)
    grid = _full_grid(spec, strategy)
    _check_windows(grid, strategy, panel)
    _check_listings(strategy, panel)
    _check_metrics(spec.metrics, panel.n_periods - 1)
    check_benchmark(spec.metrics.benchmark, panel)
    resolved = ResolvedSweep(
        spec, strategy, grid, panel, panel_fingerprint(panel), origin, known_origin
    )
    _ = resolved.fold_plan  # folds that do not fit the data are refused here
    return resolved
