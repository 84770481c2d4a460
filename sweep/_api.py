"""The one-call Python API: a strategy object, a grid of Python values and a DataFrame.

::

    import sweep
    result = sweep.run(MyStrategy(), {"lookback": range(20, 260, 20)}, prices_frame,
                       run_dir="runs/mine")
    result.table_hash, result.results().head()
    sweep.resume("runs/mine", data=prices_frame, strategy=MyStrategy())  # same panel, same code
    sweep.report_run("runs/mine", data=prices_frame, strategy=MyStrategy())

The run folder records honestly where the data and the strategy came from
(:mod:`sweep.spec._provenance`): an in-memory panel is kept in the folder (so ``sweep resume``
and ``sweep report`` reopen it from the command line), and a strategy with no importable
identity (defined in ``__main__`` or a notebook) is recorded as such, so the command line
says that only Python can hand it back.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np
import pandas as pd

from strategies import Strategy
from sweep.data._panels import Panel, panel_from_frame
from sweep.errors import GridError, SpecError
from sweep.runner._driver import RunSummary, run_sweep
from sweep.runner._run_settings import RunOptions, RunSettings
from sweep.spec._grid import RESERVED_KEYS
from sweep.spec._models import MetricOptions, StrategySpec, build_spec
from sweep.spec._provenance import DataOrigin, StrategyOrigin, strategy_origin
from sweep.spec._resolve import (
    ResolvedSweep,
    check_strategy_object,
    memory_origin,
    resolve,
    resolve_with,
)

if TYPE_CHECKING:
    from sweep.report import Report, ReportFiles, ReportOptions
    from sweep.runner._reproduce import ReproduceSettings, Reproduction

_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class SweepResult:
    """What :func:`run` and :func:`resume` return.

    Attributes
    ----------
    run_dir : str
        The run folder.
    table_hash : str or None
        The results table hash once every config is done.
    summary : RunSummary
        What the driver session did (configs done, failed, the batch plan).
    data : DataOrigin
        Where the panel came from, as the folder records it.
    strategy : StrategyOrigin
        How the strategy can be found again, as the folder records it.
    fingerprint : str
        The panel's fingerprint.
    """

    run_dir: str
    table_hash: str | None
    summary: RunSummary
    data: DataOrigin
    strategy: StrategyOrigin
    fingerprint: str

    @property
    def complete(self) -> bool:
        """Whether every config of the grid is done."""
        return self.summary.done >= self.summary.total

    def results(self) -> pd.DataFrame:
        """The results table (one row per config, sorted by ``config_id``)."""
        from sweep.store._results import load_results

        return load_results(self.run_dir)


def _plain(value: Any, where: str) -> Any:
    """A grid value as plain JSON data (numpy scalars unwrapped; other types refused)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool | int | float | str):
        return value
    raise GridError(
        f"{where}: expected numbers or true/false, got {type(value).__name__} {value!r}"
    )


def python_grid(grid: Mapping[str, Any]) -> dict[str, Any]:
    """Turn a grid of Python values into the spec's grid (plain, JSON-ready data).

    Parameters
    ----------
    grid : mapping
        Parameter name to a list or tuple of values, a ``range`` (kept as
        ``{start, stop, step}``), a 1-d numpy array, a single value, or any definition the
        spec's ``[grid]`` takes (``{"linspace": [a, b, n]}``, ...); plus optional ``zip``
        (groups of names) and ``where`` (constraint text).

    Returns
    -------
    dict
        The grid as a spec holds it (the order of ``grid`` is the grid's order).
    """
    if not isinstance(grid, Mapping):
        raise GridError(f"grid: expected a mapping of parameter names to values, got {grid!r}")
    out: dict[str, Any] = {}
    for name, values in grid.items():
        where = f"grid.{name}"
        if not isinstance(name, str):
            raise GridError(f"grid: parameter names must be text, got {name!r}")
        if name in RESERVED_KEYS:
            out[name] = (
                values
                if isinstance(values, str)
                else [
                    list(v) if isinstance(v, Sequence) and not isinstance(v, str) else v
                    for v in values
                ]
            )
        elif isinstance(values, range):
            out[name] = {"start": values.start, "stop": values.stop, "step": values.step}
        elif isinstance(values, np.ndarray):
            if values.ndim > 1:
                raise GridError(f"{where}: expected a 1-d array, got shape {values.shape}")
            out[name] = [_plain(v, where) for v in np.atleast_1d(values).tolist()]
        elif isinstance(values, Mapping):
            out[name] = {
                str(k): [_plain(x, where) for x in v] if isinstance(v, list | tuple) else v
                for k, v in values.items()
            }
        elif isinstance(values, list | tuple | pd.Index | pd.Series):
            out[name] = [_plain(v, where) for v in list(values)]
        else:
            out[name] = [_plain(values, where)]
    return out


def _as_panel(data: Any, layout: str, fill: str) -> tuple[Panel | None, Mapping[str, str], str]:
    """The panel (None: the spec loads it), the spec's ``data`` fields and what the data was."""
    if data is None:
        return None, {"source": "synthetic"}, "synthetic"
    if isinstance(data, pd.DataFrame):
        panel = panel_from_frame(data, layout=layout, fill=fill, source="DataFrame")
        return panel, {"source": "memory", "fill": fill}, "DataFrame"
    if isinstance(data, Panel):
        return data, {"source": "memory", "fill": fill}, "Panel"
    if isinstance(data, str | os.PathLike):
        return None, {"source": "file", "path": str(data), "layout": layout, "fill": fill}, "file"
    raise SpecError(
        "data: expected a pandas DataFrame, a sweep.Panel, a file path or URI, or None (the "
        f"synthetic panel), got {type(data).__name__}"
    )


def _strategy(strategy: Any) -> tuple[StrategySpec, Strategy | None, StrategyOrigin | None]:
    """The spec's strategy section, the object (None: imported by name) and its origin."""
    if isinstance(strategy, str):
        return StrategySpec(name=strategy), None, None
    obj = check_strategy_object(strategy)
    origin = strategy_origin(obj)
    source = getattr(obj, "source", None)
    if isinstance(source, dict):  # a backtesting.py class: the spec names it so
        return StrategySpec(name=source["backtesting"], **source), obj, origin
    return StrategySpec(name=origin.import_path or obj.name), obj, origin


def _default_name(strategy: Any) -> str:
    name = strategy if isinstance(strategy, str) else getattr(strategy, "name", "sweep")
    slug = _SLUG.sub("-", str(name).rsplit(":", 1)[-1]).strip("-._")
    return slug[:100] or "sweep"


class SweepOptions(RunOptions, total=False):
    """The keywords of :func:`run` besides the run folder: the spec's and the driver's.

    The driver's are :class:`sweep.runner._run_settings.RunOptions` (every run setting).
    """

    name: str
    seed: int
    costs: Mapping[str, float]
    metrics: MetricOptions | Mapping[str, Any]
    validation: Mapping[str, Any]
    layout: str
    fill: str


def _settings(options: Mapping[str, Any]) -> RunSettings:
    """The driver's settings from keywords (progress off by default from Python)."""
    given = {f.name: options[f.name] for f in fields(RunSettings) if f.name in options}
    return RunSettings(**{"progress": False, **given})


def run(
    strategy: Any,
    grid: Mapping[str, Any],
    data: Any = None,
    *,
    run_dir: str | os.PathLike[str] | None = None,
    **options: Unpack[SweepOptions],
) -> SweepResult:
    """Run a sweep from Python in one call and write its run folder.

    Parameters
    ----------
    strategy : Strategy or str
        A strategy object (any object satisfying :class:`strategies.Strategy`, e.g. an
        instance of a batch-kernel class, wherever it is defined), a built-in name or an
        import path ``package.module:Name``.
    grid : mapping
        Parameter axes as Python values (:func:`python_grid`): lists, ranges, numpy
        arrays, single values or spec definitions; ``zip`` and ``where`` as in a spec.
    data : DataFrame, Panel, str, Path or None
        The price panel: a wide or long DataFrame (:func:`sweep.panel_from_frame`), a
        :class:`Panel`, a file/folder path or URI (:func:`sweep.load_panel`), or None for
        the synthetic panel. NaN marks a missing price (a listing or a delisting).
    run_dir : str or path, optional
        The run folder (path or URI); default ``runs/<name>``. Continued if it holds this
        sweep, refused if it holds another.
    **options
        ``name`` (default: the strategy's name), ``seed`` (default 0), ``costs``,
        ``metrics`` (a :class:`MetricOptions` or a mapping), ``validation`` (as the spec's
        sections); ``layout`` and ``fill`` (how to read ``data``, see
        :func:`sweep.load_panel`); and every setting of :func:`sweep.run_sweep`
        (``executor``, ``address``, ``workers``, ``batch_size``, ``on_error``, ``progress``
        (default False here), ``allow_environment_change``, ...).

    Returns
    -------
    SweepResult
        The run folder, table hash, what the session did, and where data and strategy came
        from; :meth:`SweepResult.results` reads the table.
    """
    spec_name, obj, known = _strategy(strategy)
    layout, fill = options.get("layout", "auto"), options.get("fill", "none")
    panel, data_fields, what = _as_panel(data, layout, fill)
    spec = build_spec(
        name=options.get("name") or _default_name(strategy),
        seed=options.get("seed", 0),
        data=data_fields,
        strategy=spec_name,
        grid=python_grid(grid),
        metrics=options.get("metrics"),
        costs=options.get("costs"),
        validation=options.get("validation"),
        base_dir=Path.cwd(),  # a relative data path: from here
    )
    if panel is None:
        sweep = resolve(spec, strategy=obj)
    elif what == "DataFrame":
        sweep = resolve_with(spec, panel, memory_origin(panel, "DataFrame"), obj, known)
    else:
        sweep = resolve(spec, panel, strategy=obj)
    return _run(sweep, run_dir or Path("runs") / spec.name, _settings(options))


def _run(
    sweep: ResolvedSweep, run_dir: str | os.PathLike[str], settings: RunSettings
) -> SweepResult:
    from sweep.store._run_store import provenance_of

    summary = run_sweep(sweep, run_dir, settings)
    provenance = provenance_of(sweep)
    return SweepResult(
        run_dir=summary.run_dir,
        table_hash=summary.table_hash,
        summary=summary,
        data=provenance.data,
        strategy=provenance.strategy,
        fingerprint=sweep.fingerprint,
    )


def _reopen(
    run_dir: str | os.PathLike[str],
    data: Any,
    strategy: Any,
    allow_import: Sequence[str],
) -> ResolvedSweep:
    """The sweep a run folder recorded, with what Python handed over."""
    from sweep.store._run_store import RunStore
    from sweep.store._trust import named_panel, resolve_recorded

    location = str(run_dir)
    manifest = RunStore(location).load_manifest()
    panel = None
    if data is not None:
        recorded = manifest.spec.get("data", {})
        fill = str(recorded.get("fill", "none"))
        layout = str(recorded.get("layout", "auto"))
        panel, _, _ = _as_panel(data, layout, fill)
        if panel is None:  # a path: load it the way the spec would
            panel = named_panel(manifest, location, str(data))
    obj = None if strategy is None or isinstance(strategy, str) else check_strategy_object(strategy)
    return resolve_recorded(manifest, location, allow_import, panel=panel, strategy=obj)


def resume(
    run_dir: str | os.PathLike[str],
    *,
    data: Any = None,
    strategy: Any = None,
    allow_import: Sequence[str] = (),
    **options: Unpack[RunOptions],
) -> SweepResult:
    """Continue a sweep from its run folder, from Python.

    Parameters
    ----------
    run_dir : str or path
        The run folder.
    data : DataFrame, Panel, str or None
        The same panel the run used (checked by fingerprint; a different panel is refused
        naming both fingerprints). None: the spec's data, or the folder's copy of an
        in-memory panel.
    strategy : Strategy, optional
        The strategy object (needed when it has no importable identity; its name and
        version must be the recorded ones).
    allow_import : sequence of str
        Strategy modules the folder may import (see :mod:`sweep.store._trust`).
    **options
        Every setting of :func:`sweep.run_sweep` (``executor``, ``address``, ``workers``,
        ``batch_size``, ``on_error``, ``progress`` (default False here),
        ``allow_environment_change``: continue under other library versions once a sample
        of finished configs re-computed here matches bit for bit, ...).

    Returns
    -------
    SweepResult

    Raises
    ------
    EnvironmentChangedError
        When the run's parts were computed with other library versions, unless allowed.
    """
    sweep = _reopen(run_dir, data, strategy, tuple(allow_import))
    return _run(sweep, run_dir, _settings(options))


def reproduce(
    run_dir: str | os.PathLike[str],
    settings: ReproduceSettings | None = None,
    *,
    data: Any = None,
    strategy: Any = None,
    allow_import: Sequence[str] = (),
    executor: str = "local",
    address: str | None = None,
    workers: int | None = None,
) -> Reproduction:
    """Re-compute a sample of a run's configs here; compare them bit for bit (``sweep reproduce``).

    Parameters
    ----------
    run_dir : str or path
        The run folder (read only).
    settings : ReproduceSettings, optional
        Configs sampled, their seed and whole parts re-evaluated (default: 64, 0, 2).
    data, strategy
        As :func:`resume`: what the folder cannot find itself.
    allow_import : sequence of str
        Strategy modules the folder may import (see :mod:`sweep.store._trust`).
    executor : str
        Where the configs are evaluated again: ``local``, ``auto`` or a backend
        (``ray``, ``dask``); with an ``address``, the cluster it names.
    address, workers : optional
        A cluster to join (Ray or Dask); CPUs of a local one.

    Returns
    -------
    Reproduction
        How many sampled configs matched, each whole part's rows and summaries, every
        mismatch (config, column, both values), and the environments recorded and used;
        ``full_match`` is the verdict.
    """
    from sweep.runner._reproduce import reproduce_run

    sweep = _reopen(run_dir, data, strategy, tuple(allow_import))
    return reproduce_run(
        run_dir, settings, executor=executor, address=address, workers=workers, sweep=sweep
    )


def report_run(
    run_dir: str | os.PathLike[str],
    *,
    data: Any = None,
    strategy: Any = None,
    out: str | os.PathLike[str] | None = None,
    options: ReportOptions | None = None,
) -> tuple[Report, ReportFiles]:
    """Build and write the audit report of a run folder, from Python.

    Parameters
    ----------
    run_dir : str or path
        The run folder.
    data, strategy
        As :func:`resume`: what the report's recomputations need when the folder cannot
        find them itself (a strategy with no importable identity).
    out : str or path, optional
        Output folder (default: as ``sweep report``).
    options : ReportOptions, optional
        Report options.

    Returns
    -------
    (Report, ReportFiles)
        The report and the files written.
    """
    from sweep.report import ReportOptions, build_report, default_out_dir, write_report
    from sweep.store._trust import supplying

    location = str(run_dir)
    sweep = _reopen(location, data, strategy, (options or ReportOptions()).allow_import)
    with supplying(sweep.panel, sweep.strategy):
        built = build_report(location, options or ReportOptions(progress=False))
    files = write_report(built, Path(out) if out is not None else default_out_dir(location))
    return built, files
