"""The ``sweep`` command line (typer).

Exit codes: 0 ok, 1 the sweep failed, 2 bad input, 130 Ctrl-C, 143 SIGTERM. User text
(paths, names, messages, cells) is printed as plain text, never read as rich markup.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import sys
import textwrap
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ParamSpec, TypeVar

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from sweep.cli._import_roots import (
    allowed_roots,
    check_importable,
    importing_from,
    spec_roots,
)
from sweep.cli._output import check_output_file, check_output_folder, writing
from sweep.cli._settings_options import settings_options
from sweep.common import _signals
from sweep.common._numba_cache import ensure_numba_cache
from sweep.errors import USER_ERRORS, ExecutionError, SpecError, SweepError, exit_code
from sweep.executors import (
    ADDRESS_ENVVARS,
    EXECUTOR_CHOICES,
    KINDS,
    LOCAL,
    address_forms,
    local_cluster_kind,
    title_of,
)
from sweep.executors._address import check_local_workers
from sweep.runner._run_settings import RunSettings
from sweep.spec._models import SweepSpec, load_spec
from sweep.spec._resolve import ResolvedSweep

if TYPE_CHECKING:
    import pandas as pd

    from sweep.plan._preflight import SweepPlan
    from sweep.runner._driver import RunSummary
    from sweep.runner._reproduce import Reproduction
    from sweep.runner._status import LiveRate
    from sweep.store._part_environment import EnvironmentUse
    from sweep.store._record import ExecutorChoice, LockInfo

app = typer.Typer(
    name="sweep",
    help="Distributed, resumable, auditable parameter sweeps for trading-strategy backtests.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)
P = ParamSpec("P")
R = TypeVar("R")
#: Most rows of the report's top-configs table (``sweep report --top``): a table a reader reads;
#: ``sweep results`` lists more.
MAX_TOP = 1_000


def _say(console: Console, text: str) -> None:
    """Print plain text: paths, names and messages are never read as markup."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _interrupted(exc: KeyboardInterrupt, message: str) -> typer.Exit:
    """Report Ctrl-C (exit 130) or SIGTERM (exit 143) in one line."""
    what = "terminated (SIGTERM)" if isinstance(exc, _signals.Terminated) else "interrupted"
    _say(err, f"{what}: {message}")
    return typer.Exit(_signals.exit_code(exc))


def _interruptible(func: Callable[P, R]) -> Callable[P, R]:
    """A command that a Ctrl-C or SIGTERM ends with one line and exit 130 or 143."""

    @functools.wraps(func)
    def command(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except (KeyboardInterrupt, ImportError, RuntimeError) as exc:  # see interrupt_behind
            interrupt = _signals.interrupt_behind(exc)
            if interrupt is None:
                raise
            raise _interrupted(interrupt, f"sweep {func.__name__} stopped") from None

    return command


def _print_version(value: bool) -> None:
    if not value:
        return
    from sweep._version import ENGINE_VERSION
    from sweep.common._environment import library_versions

    lines = [f"raysweep {ENGINE_VERSION}"]
    lines += [f"  {name:<11} {v or 'not installed'}" for name, v in library_versions().items()]
    _say(out, "\n".join(lines))
    raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the engine version and the library versions a report records.",
        ),
    ] = False,
) -> None:
    """Distributed, resumable, auditable parameter sweeps for trading-strategy backtests."""


#: Where batches run: ``auto`` or a backend (:data:`sweep.executors.EXECUTOR_CHOICES`).
ExecutorKind = StrEnum("ExecutorKind", {name: name for name in EXECUTOR_CHOICES})  # type: ignore[misc]
#: ``--executor``'s default.
AUTO = ExecutorKind("auto")
#: The cluster backends, as a message lists them ("ray, dask").
CLUSTERS = ", ".join(k for k in KINDS if k != LOCAL)


class OutputFormat(StrEnum):
    """Output formats of ``sweep results``."""

    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"


def _fail(exc: BaseException, code: int) -> typer.Exit:
    err.print(Text.assemble(("error:", "bold red"), " ", str(exc)), soft_wrap=True)
    return typer.Exit(code)


def _load_spec(path: Path) -> SweepSpec:
    """:func:`load_spec`, with a spec that is not UTF-8 text refused as bad input."""
    try:
        return load_spec(path)
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"spec: expected a UTF-8 text file, got {str(path)!r} with byte "
            f"0x{exc.object[exc.start]:02x} at offset {exc.start} ({exc.reason})"
        ) from exc


@contextlib.contextmanager
def _spec_imports(path: Path, app_dirs: list[Path] | None) -> Iterator[SweepSpec]:
    """Load the spec at ``path`` and import its strategy module from the command's folders.

    In the block, ``--app-dir`` folders, the spec's folder and the working folder are searched
    first (:mod:`sweep.cli._import_roots`); a module none of them (nor ``sys.path``) holds is
    refused before anything runs, naming them.
    """
    spec = _load_spec(path)
    roots = spec_roots(path, app_dirs)
    with importing_from(roots):
        check_importable(spec.strategy.name, roots)
        yield spec


def _check_workers(executor: ExecutorKind, workers: int | None, address: str | None) -> None:
    if workers is not None and executor.value == LOCAL:
        raise SweepError(
            f"--workers: applies only with --executor {CLUSTERS} or auto (it caps the CPUs of "
            "the local cluster it starts); the local executor runs in this process. "
            f"Got --workers {workers} with --executor {executor.value}: use --executor "
            f"{CLUSTERS} or auto, or drop --workers"
        )
    if address is None:
        check_local_workers(workers)


def _check_run_dir(run_dir: str | None) -> None:
    """Refuse an empty ``--run-dir`` (leaving the option out means ``runs/<spec name>``)."""
    if run_dir is not None and not run_dir.strip():
        raise SweepError(
            f"--run-dir: expected a folder path or a URI, got {run_dir!r}; leave the option "
            "out for runs/<spec name>"
        )


RunDirOpt = Annotated[
    str | None,
    typer.Option(
        "--run-dir",
        help="Run folder: a path or a URI such as s3://bucket/prefix (default: runs/<spec name>).",
    ),
]
#: What ``--address`` says of the forms it takes and where it is read from.
_ADDRESS_FORMS = f"{address_forms()}."
AddressOpt = Annotated[
    str | None,
    typer.Option(
        "--address",
        envvar=list(ADDRESS_ENVVARS),
        show_envvar=False,
        help=f"Cluster to join: {_ADDRESS_FORMS}",
    ),
]
PassAddressOpt = Annotated[
    str | None,
    typer.Option(
        "--address",
        envvar=list(ADDRESS_ENVVARS),
        show_envvar=False,
        help="Cluster to join: the per-part work runs there as tasks over groups of parts "
        "(the folder must be reachable from every node: a URI or a shared path); the output "
        f"is the same. {_ADDRESS_FORMS}",
    ),
]
PassExecutorOpt = Annotated[
    ExecutorKind,
    typer.Option(
        "--executor",
        help="Where the per-part checks run. auto: the cluster --address names, else the "
        "first parts are checked here and timed, and the rest runs on a local "
        f"{title_of(local_cluster_kind())} cluster only where that is predicted to finish "
        "first.",
    ),
]
WorkersOpt = Annotated[
    int | None,
    typer.Option("--workers", min=1, metavar="N", help="Cap on the CPUs of a local cluster."),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
DataOpt = Annotated[
    str | None,
    typer.Option(
        "--data",
        help="The run's data (path or URI, with its endpoint options), instead of what the "
        "folder names; checked against the recorded fingerprint.",
    ),
]
AllowImportOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-import",
        help="A strategy module the run folder may import (repeatable); built-ins need none.",
    ),
]
AppDirOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--app-dir",
        help="A folder to import the spec's strategy module from (repeatable), searched "
        "before the spec's folder and the working folder (both searched always).",
    ),
]
AllowedAppDirOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--app-dir",
        help="A folder an --allow-import module is imported from (repeatable); never one "
        "inside the run folder, and it allows nothing by itself.",
    ),
]


def _check_settings(settings: RunSettings) -> None:
    """Refuse options of ``run`` and ``resume`` that contradict each other, before any read."""
    executor = settings.executor
    name = executor if isinstance(executor, str) else executor.name
    _check_workers(ExecutorKind(name), settings.workers, settings.address)


def _execute(spec: SweepSpec | ResolvedSweep, run_dir: str, settings: RunSettings) -> None:
    from sweep.runner._driver import run_sweep

    try:
        summary = run_sweep(spec, run_dir, settings)
    except KeyboardInterrupt as exc:
        raise _interrupted(exc, _interrupted_run(run_dir)) from None
    _say(out, "\n".join(_summary_lines(summary)))
    if summary.total and summary.done >= summary.total and summary.failed >= summary.total:
        _every_config_failed(summary.run_dir, summary.total)


def _summary_lines(summary: RunSummary) -> list[str]:
    """What ``run`` and ``resume`` print when the sweep ends."""
    lines = [
        f"run folder: {summary.run_dir}",
        f"configs:    {summary.done:,} / {summary.total:,} done "
        f"({summary.computed:,} computed now, "
        f"{summary.failed:,} failed)",
        f"batch size: {summary.plan.batch_size} ({summary.plan.source})",
    ]
    choice = summary.executor_choice
    if choice is not None:
        how = "auto: " if choice.requested == "auto" else ""
        lines.insert(2, _fields([f"executor:   {choice.chosen} ({how}{choice.reason})"], 12))
    if summary.quarantined:
        lines.append(f"recomputed: {len(summary.quarantined)} corrupt part(s) moved to quarantine/")
    if summary.table_hash:
        lines.append(f"table hash: {summary.table_hash}")
        lines.append(f"results:    sweep results {summary.run_dir} --top 10")
        lines.append(f"report:     sweep report {summary.run_dir}")
    return lines


@contextlib.contextmanager
def _named_data(run_dir: str, data: str | None) -> Iterator[None]:
    """Reopen ``run_dir`` in this block with the data the user named (``--data``), if any."""
    if data is None:
        yield
        return
    from sweep.store._run_store import RunStore
    from sweep.store._trust import named_panel, supplying

    with supplying(named_panel(RunStore(run_dir).load_manifest(), run_dir, data), None):
        yield


def _interrupted_run(run_dir: str) -> str:
    """What an interrupted ``run``/``resume`` left behind, and the next command."""
    from sweep.store._run_store import RunStore

    started = False
    with contextlib.suppress(Exception):  # best effort: the folder may be unreachable
        started = RunStore(run_dir).exists()
    if started:
        return f"finished parts are saved. Continue with: sweep resume {run_dir}"
    return "stopped before the sweep started; nothing to resume"


def _every_config_failed(run_dir: str, total: int) -> None:
    """Fail the command (exit 1) for a sweep in which no config succeeded."""
    from sweep.runner._status import first_error

    raise ExecutionError(
        f"every config failed ({total:,} of {total:,}), so there is nothing to rank or report; "
        f"the first error: {first_error(run_dir)}. Fix the strategy, its parameters or the "
        f"data; every config's error is listed by: sweep results {run_dir} --columns "
        "config_id,error --format csv"
    )


@app.command()
@_interruptible
@settings_options("run")
def run(
    spec: Annotated[Path, typer.Argument(help="Sweep spec (TOML).")],
    run_dir: RunDirOpt = None,
    *,
    settings: RunSettings,  # typer sees one option per setting here (settings_options)
    app_dir: AppDirOpt = None,
) -> None:
    """Run a sweep (or continue it, if the run folder already holds it).

    A strategy module the spec names (module:Name) is imported from the --app-dir folders,
    the spec's folder, the working folder, then PYTHONPATH and the installed packages.
    """
    _check_settings(settings)
    _check_run_dir(run_dir)
    with _spec_imports(spec, app_dir) as sweep_spec:
        folder = run_dir or str(Path("runs") / sweep_spec.name)
        _execute(sweep_spec, folder, settings)


@app.command()
@_interruptible
@settings_options("resume")
def resume(
    run_dir: Annotated[str, typer.Argument(help="Run folder (path or URI) to continue.")],
    *,
    settings: RunSettings,  # typer sees one option per setting here (settings_options)
    allow_import: AllowImportOpt = None,
    data: DataOpt = None,
    app_dir: AllowedAppDirOpt = None,
) -> None:
    """Continue a sweep from its run folder (the spec is read from its manifest).

    Refused (exit 2) when the run's parts were computed with other library versions than
    this environment has, unless --allow-environment-change is given: then a sample of
    finished configs is re-computed first, and the sweep goes on only if it matches.
    """
    from sweep.store._run_store import RunStore
    from sweep.store._trust import resolve_recorded

    _check_settings(settings)
    roots = allowed_roots(app_dir, run_dir)
    manifest = RunStore(run_dir).load_manifest()
    with importing_from(roots):
        with _named_data(run_dir, data):
            sweep = resolve_recorded(manifest, run_dir, allow_import or ())
        _execute(sweep, run_dir, settings)


@app.command()
@_interruptible
def status(
    run_dir: Annotated[str, typer.Argument(help="Run folder (path or URI).")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    address: PassAddressOpt = None,
    executor: PassExecutorOpt = AUTO,
    workers: WorkersOpt = None,
) -> None:
    """Show progress of a run folder: done, failed, parts, sessions, last activity, hash.

    Every part is read and checked: here, or as tasks of a cluster (--address, or a local
    one where auto predicts it faster); the status is the same. What a killed session of
    this run left running on this machine (a local Ray's agents) is stopped and named on
    stderr.
    """
    from sweep.executors import clean_up_dead_sessions
    from sweep.runner._pass_executor import PassExecutor
    from sweep.runner._status import run_status

    _check_workers(executor, workers, address)
    with PassExecutor(executor.value, address, workers) as passes:
        info = run_status(run_dir, mapper=passes.map_parts)
    clean_up_dead_sessions(info.sessions)
    if as_json:
        out.print_json(json.dumps(info.to_json()))
        return
    total, done = info.total, info.done
    share = done / total if total else 1.0
    filled = round(30 * share)
    lines = [
        f"name:          {info.name}",
        f"progress:      [{'#' * filled}{'.' * (30 - filled)}] {share:.1%}",
        f"configs:       {done:,} of {total:,} done, {info.failed:,} failed, "
        f"{info.remaining:,} remaining",
        f"parts:         {info.parts:,} good"
        + (f", {len(info.bad_parts)} bad (left out)" if info.bad_parts else ""),
        *_environment_lines(info.environments, "environments:  "),
        f"last activity: {info.last_activity or '-'}",
        f"driver:        {_driver_text(info.lock)}",
        *_live_lines(info.live),
        f"table hash:    {info.table_hash or '- (until every config is done)'}",
        f"hash version:  {info.table_hash_version}",
    ]
    if info.recorded is not None and info.table_hash is not None:
        lines.append(_fields([f"recorded:      {info.recorded.describe(info.table_hash)}"], 15))
    if passes.on_cluster and passes.choice is not None:  # shown when not the usual in-process
        where = title_of(passes.choice.chosen)
        lines.append(_fields([f"parts read:    on {where} ({passes.choice.reason})"], 15))
    if info.live is not None:
        lines.append(f"next:          a driver is running; follow it with: sweep status {run_dir}")
    elif info.remaining:
        lines.append(f"next:          sweep resume {run_dir}")
    else:
        lines.append(f"next:          sweep report {run_dir}   (or: sweep results {run_dir})")
    _say(out, "\n".join(lines))
    sessions = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for header in ("session", "start (UTC)", "end", "host", "executor", "status", "configs"):
        sessions.add_column(header, no_wrap=True)
    for s in info.sessions:
        sessions.add_row(
            *map(
                Text,
                (
                    str(s.id),
                    _when(s.start),
                    _when(s.end, s.start),
                    str(s.host),
                    str(s.executor or ""),
                    str(s.status),
                    f"{_session_configs(s.id, s.configs_computed, info.live):,}",
                ),
            )
        )
    out.print()
    out.print(sessions)


def _environment_lines(uses: tuple[EnvironmentUse, ...], label: str) -> list[str]:
    """Every environment that computed the good parts, one wrapped line each."""
    indent = " " * len(label)
    if not uses:
        return [f"{label}- (no parts yet)"]
    head = f"{label}{len(uses)} computed the parts" + (
        " (a mixed run: see each one's parts and configs)" if len(uses) > 1 else ""
    )
    return [head, *(_fields([f"{indent}{u.describe()}"], len(indent)) for u in uses)]


def _when(stamp: str | None, same_day_as: str | None = None) -> str:
    """An ISO time as ``YYYY-MM-DD HH:MM:SS`` (only the time when on ``same_day_as``'s day)."""
    if not stamp:
        return "-"
    day, _, rest = stamp.partition("T")
    clock = rest[:8]
    return clock if same_day_as and same_day_as.startswith(day) else f"{day} {clock}"


def _session_configs(session: int, recorded: int | None, live: LiveRate | None) -> int:
    """Configs a session computed: recorded at its end, live from telemetry while running."""
    if live is not None and session == live.session:
        return live.configs
    return int(recorded or 0)


def _live_lines(live: LiveRate | None) -> list[str]:
    """The running session's rate and time left (nothing when no driver runs)."""
    if live is None:
        return []
    from sweep.plan._eta import Eta

    estimate = Eta(live.configs_per_second, live.seconds_left)
    if not estimate.known:
        return [f"rate:          - (session {live.session} is planning; no task done yet)"]
    return [
        f"rate:          {estimate.rate_text()} (session {live.session}, "
        f"{live.executor}, {live.configs:,} configs so far)",
        f"time left:     {estimate.left_text()} at that rate",
    ]


def _driver_text(lock: LockInfo | None) -> str:
    if lock is None or not lock.usable:
        return "none running"
    return f"lock held by pid {lock.pid} on {lock.host}"


@app.command()
@_interruptible
def verify(
    run_dir: Annotated[str, typer.Argument(help="Run folder (path or URI).")],
    address: PassAddressOpt = None,
    executor: PassExecutorOpt = AUTO,
    workers: WorkersOpt = None,
) -> None:
    """Re-hash every part and check the manifest; print the table hash (exit 1 on a mismatch).

    Parts are read one at a time here, or as tasks of a Ray or Dask cluster (--address,
    --executor, or a local one where auto predicts it faster); the output is the same.
    """
    from sweep.runner._pass_executor import PassExecutor
    from sweep.runner._status import verify_run

    _check_workers(executor, workers, address)
    with PassExecutor(executor.value, address, workers) as passes:
        verification = verify_run(run_dir, auditor=passes.audit)
    for part in verification.bad_parts:
        _say(err, f"BAD PART parts/{part.name}: {part.reason}")
    for part in verification.bad_telemetry:
        _say(err, f"bad telemetry telemetry/{part.name}: {part.reason} (results unaffected)")
    bad = len(verification.bad_parts)
    _say(out, f"parts verified: {verification.good_parts} good, {bad} bad")
    _say(out, _choice_line(passes.choice))
    if bad:
        _say(err, "resume the sweep to recompute the configs of the bad parts")
        raise typer.Exit(1)
    _say(out, f"configs: {verification.done:,} / {verification.total:,}")
    _say(out, "\n".join(_environment_lines(verification.environments, "environments: ")))
    if verification.table_hash:
        _say(out, f"table hash: {verification.table_hash}")
    _say(out, f"hash version: {verification.table_hash_version}")
    if verification.null_summary_hash:
        _say(out, f"null summary hash: {verification.null_summary_hash}")
    if verification.fold_summary_hash:
        _say(out, f"fold summary hash: {verification.fold_summary_hash}")
    recorded, found = verification.recorded, verification.table_hash
    differs = False
    if recorded is not None and found is not None:
        differs = not recorded.agrees(found)
        _say(err if differs else out, _fields([f"recorded: {recorded.describe(found)}"], 10))
    for name in verification.digest_mismatches:
        _say(
            err,
            f"BAD DIGEST parts/{name}: the row digest stored in the part does not match its "
            "rows (the table hash above is of the rows; the part was rewritten after it was "
            "computed)",
        )
    if verification.digest_mismatches or differs:
        raise typer.Exit(1)


@app.command()
@_interruptible
def reproduce(
    run_dir: Annotated[str, typer.Argument(help="Run folder (path or URI), read only.")],
    sample: Annotated[
        int, typer.Option("--sample", min=0, help="Finished configs re-computed, drawn at random.")
    ] = 64,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            min=0,
            max=(1 << 63) - 1,
            help="Seed of the random draws of configs and parts (default: a fresh one, "
            "printed, so the audit can be repeated).",
        ),
    ] = None,
    parts: Annotated[
        int,
        typer.Option(
            "--parts",
            min=0,
            help="Whole parts re-computed, drawn at random; their null and fold summaries too.",
        ),
    ] = 2,
    executor: Annotated[
        ExecutorKind,
        typer.Option(
            "--executor",
            help="Where to re-compute. auto: the cluster --address names, else here.",
        ),
    ] = AUTO,
    address: AddressOpt = None,
    workers: WorkersOpt = None,
    show: Annotated[
        int, typer.Option("--show", min=0, help="Mismatches printed (0: every one).")
    ] = 100,
    allow_import: AllowImportOpt = None,
    data: DataOpt = None,
    app_dir: AllowedAppDirOpt = None,
) -> None:
    """Re-compute a sample of a run's configs here and compare them bit for bit.

    Every column of each sampled config, and the rows, null summary and fold summary of a
    few whole parts, are compared by their exact bytes with what the run folder holds.
    Exit 0 when everything matches, 1 on a mismatch (each one printed: config, column,
    both values), 2 on bad input.
    """
    from sweep.runner._reproduce import ReproduceSettings, reproduce_run

    _check_workers(executor, workers, address)
    settings = ReproduceSettings(sample=sample, seed=seed, parts=parts)  # SweepError if empty
    with importing_from(allowed_roots(app_dir, run_dir)), _named_data(run_dir, data):
        found = reproduce_run(
            run_dir,
            settings,
            executor=executor.value,
            address=address,
            workers=workers,
            allow_import=allow_import or (),
        )
    _say(out, "\n".join(_reproduce_lines(found, show or None)))
    if not found.full_match:
        raise typer.Exit(1)


def _reproduce_lines(found: Reproduction, show: int | None) -> list[str]:
    """What ``sweep reproduce`` prints: environments, counts, mismatches, the verdict."""
    from sweep.runner._reproduce import mismatch_lines

    lines = [f"run folder:   {found.run_dir}"]
    lines += _environment_lines(found.recorded, "recorded:     ")
    lines.append(f"recomputed:   {found.executor} executor, {len(found.recomputed)} environment(s)")
    lines += [_fields([f"{' ' * 14}{u.describe('batch')}"], 14) for u in found.recomputed]
    lines.append(
        f"sample:       {found.matched:,} of {found.sampled:,} configs match bit for bit in "
        f"every column"
    )
    for part in found.parts:
        text = (
            f"part:         {part.name}: {part.configs_matched:,} of {part.configs:,} configs "
            f"match; null summary: {part.null_summary}; fold summary: {part.fold_summary}"
        )
        lines.append(_fields([text], 14))
    if found.bad_parts:
        lines.append(f"left out:     {found.bad_parts} bad part(s) (sweep verify names them)")
    lines += [f"mismatch:     {m}" for m in mismatch_lines(found, show)]  # one line each
    lines.append(
        "result:       full match: the run reproduces in this environment"
        if found.full_match
        else f"result:       MISMATCH: {len(found.mismatches):,} value(s) differ"
    )
    lines.append(f"repeat with:  --seed {found.seed} (the same configs and parts)")
    return lines


def _folds_text(run_dir: str, frame: pd.DataFrame) -> str:
    """``sweep results --folds`` on screen: each fold's test window, choice and metrics."""
    from sweep.store._run_store import RunStore

    varying = RunStore(run_dir).load_manifest().grid.varying
    metric = next(c for c in frame.columns if c.startswith("in_sample_"))
    view = frame[["fold", "test", *varying, metric, "oos_sharpe"]].copy()
    # A CPCV split tests several windows: the first, and how many more (csv has all).
    view["test"] = [
        t if " + " not in t else f"{t.split(' + ')[0]} (+{t.count(' + ')})" for t in view["test"]
    ]
    view = view.rename(columns={metric: metric.replace("in_sample_", "is_")})
    return view.to_string(index=False, float_format=lambda v: f"{v:.3g}") + "\n"


@app.command()
@_interruptible
def results(
    run_dir: Annotated[str, typer.Argument(help="Run folder (path or URI).")],
    top: Annotated[
        int | None,
        typer.Option(
            "--top",
            min=1,
            help="Only the best K rows: the parts are streamed, keeping the best K (without "
            "--top every row is read into one table).",
        ),
    ] = None,
    sort: Annotated[
        str, typer.Option("--sort", help="Metric to sort by (descending).")
    ] = "excess_sharpe_ann",
    columns: Annotated[
        str | None,
        typer.Option("--columns", help="Table columns, comma-separated (default: key ones)."),
    ] = None,
    show_all: Annotated[
        bool, typer.Option("--all", help="Every column in the table (but PBO block sums).")
    ] = False,
    fmt: Annotated[
        OutputFormat, typer.Option("--format", help="Output format.")
    ] = OutputFormat.table,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to a file.")] = None,
    folds: Annotated[
        bool, typer.Option("--folds", help="The validation folds instead: each fold's choice.")
    ] = False,
    allow_import: AllowImportOpt = None,
    address: PassAddressOpt = None,
    executor: PassExecutorOpt = AUTO,
    workers: WorkersOpt = None,
    app_dir: AllowedAppDirOpt = None,
) -> None:
    """Print or export a run folder's results (the table view rounds; csv/json/parquet do not).

    With --top (the best K of each group of parts) or --folds (every part checked, its fold
    summary read), the parts are read here or as tasks of a Ray or Dask cluster (--address,
    --executor, or a local one where auto predicts it faster); the output is the same.
    """
    from sweep.report._oos_selection import fold_table
    from sweep.runner._pass_executor import PassExecutor
    from sweep.runner._status import results_frame

    _check_workers(executor, workers, address)
    roots = allowed_roots(app_dir, run_dir)  # used by --folds, which recomputes returns
    if output is not None:
        check_output_file(output, "--output")
    elif fmt is OutputFormat.parquet:
        raise SweepError("--format parquet: expected --output FILE (parquet is not printed)")
    if folds:
        with importing_from(roots), PassExecutor(executor.value, address, workers) as passes:
            allowed = tuple(allow_import or ())
            frame = fold_table(run_dir, allowed, passes.map_parts, passes.recompute)
    else:
        with PassExecutor(executor.value, address, workers) as passes:
            frame, notes = results_frame(run_dir, sort, top, passes=passes)
        for note in notes:
            _say(err, f"note: {note}")
        if top is not None:  # the parts were streamed: say where (stderr, not in the data)
            _say(err, _choice_line(passes.choice))
        if fmt is OutputFormat.table:
            _print_results_table(run_dir, frame, columns, show_all, output)
            return
    text = (
        ""
        if fmt is OutputFormat.parquet
        else (
            _folds_text(run_dir, frame) if fmt is OutputFormat.table else _results_text(frame, fmt)
        )
    )
    if output is None:
        sys.stdout.write(text)
        return
    with writing(output, "--output"):
        if fmt is OutputFormat.parquet:
            frame.to_parquet(output, index=False)
        else:
            output.write_text(text, encoding="utf-8")


def _results_text(frame: pd.DataFrame, fmt: OutputFormat) -> str:
    text: str = (
        frame.to_csv(index=False)
        if fmt is OutputFormat.csv
        else frame.to_json(orient="records", indent=1)
    )
    return text if text.endswith("\n") else text + "\n"


def _print_results_table(
    run_dir: str, frame: pd.DataFrame, columns: str | None, show_all: bool, output: Path | None
) -> None:
    """The readable table: fitted to a terminal; whole on a pipe or in a file."""
    from sweep.cli._results_view import results_table_view, view_columns
    from sweep.store._run_store import RunStore

    grid = RunStore(run_dir).load_manifest().grid
    params = grid.varying or grid.param_names
    names = None if columns is None else [c.strip() for c in columns.split(",") if c.strip()]
    shown = view_columns(frame, params, names, show_all)
    keep = 1 + sum(p in shown for p in params)
    if output is not None:
        with writing(output, "--output"), output.open("w", encoding="utf-8") as fh:
            console = Console(file=fh, width=10_000)
            console.print(results_table_view(frame, shown, console, keep, fit=False)[0])
        return
    fit = sys.stdout.isatty()  # rich may call a pipe a terminal (FORCE_COLOR, TTY_COMPATIBLE)
    console = out if fit else Console(width=10_000)
    table, hidden = results_table_view(frame, shown, console, keep, fit=fit)
    console.print(table)
    if hidden:
        _say(
            err,
            f"not shown (terminal too narrow): {', '.join(hidden)}\n"
            "widen the terminal, pick --columns, or use --format csv",
        )


@app.command()
@_interruptible
def strategies() -> None:
    """List the built-in strategies and their parameters."""
    from strategies import available_strategies, get_strategy

    table = Table("strategy", "version", "parameters")
    for name in available_strategies():
        s = get_strategy(name)
        params = ", ".join(
            f"{p.name}: {p.kind}" + (f" = {p.default}" if p.default is not None else "")
            for p in s.params
        )
        table.add_row(Text(name), Text(s.version), Text(params))
    out.print(table)


@app.command("check-strategy")
@_interruptible
def check_strategy_command(
    spec_path: Annotated[Path, typer.Argument(metavar="SPEC", help="Sweep spec (TOML).")],
    configs: Annotated[
        int, typer.Option("--configs", min=1, help="Configs checked, spread over the grid.")
    ] = 5,
    cuts: Annotated[
        int, typer.Option("--cuts", min=1, help="Cut dates per config (prices after each move).")
    ] = 8,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the perturbations.")] = 0,
    app_dir: AppDirOpt = None,
) -> None:
    """Look-ahead check: perturb prices after t; report any weight at or before t that changed.

    Exit 0 when no checked config looks ahead, 1 when one does (the first offending period
    is named), 2 on bad input (a batch-kernel strategy exposes no weights to check).
    """
    from sweep.cli._check_strategy import check_strategy

    with _spec_imports(spec_path, app_dir) as spec:
        reports = check_strategy(spec, n_configs=configs, n_cuts=cuts, seed=seed)
    width = max(40, out.width)
    for report in reports:
        mark = "ok    " if report.clean else "FAIL  "
        _say(
            out,
            textwrap.fill(
                report.message(),
                width,
                initial_indent=mark,
                subsequent_indent=" " * 6,
                break_on_hyphens=False,
            ),
        )
    bad = [r for r in reports if not r.clean]
    if bad:
        _say(err, f"look-ahead check failed for {len(bad)} of {len(reports)} configs")
        raise typer.Exit(1)


def _check_alpha(value: float) -> float:
    if not 0.0 < value < 1.0:
        raise typer.BadParameter(f"expected a level strictly between 0 and 1, got {value:g}")
    return value


def _pbo_configs(value: str) -> int | None:
    """``--pbo-sample``: a number of configs (at least 2), or None for ``all``."""
    if value == "all":
        return None
    if not value.isdigit() or int(value) < 2:
        raise typer.BadParameter(f"expected a number of configs (at least 2) or all, got {value!r}")
    return int(value)


def _check_pbo_sample(value: str | None) -> str | None:
    if value is not None:
        _pbo_configs(value)
    return value


@app.command()
@_interruptible
def report(
    run_dir: Annotated[str, typer.Argument(help="Run folder (path or URI).")],
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Output folder (default: RUN_DIR/report; ./report-<name> for a URI)."
        ),
    ] = None,
    heatmap: Annotated[
        str | None,
        typer.Option("--heatmap", help="Heatmap axes X,Y (default: the two with most values)."),
    ] = None,
    top: Annotated[
        int, typer.Option("--top", min=1, max=MAX_TOP, help="Rows of the top-configs table.")
    ] = 10,
    bench_dir: Annotated[
        Path | None,
        typer.Option(
            "--bench", help="Folder of sweep bench results (default: RUN_DIR/bench, runs/bench)."
        ),
    ] = None,
    alpha: Annotated[
        float,
        typer.Option(
            "--alpha",
            callback=_check_alpha,
            help="Level of the sweep-wide tests, StepM and the verdict (0 < alpha < 1).",
        ),
    ] = 0.05,
    pbo_sample: Annotated[
        str | None,
        typer.Option(
            "--pbo-sample",
            metavar="N|all",
            callback=_check_pbo_sample,
            help=(
                "Configs PBO ranks: every ok config up to N, a seeded uniform sample of N "
                "beyond (default: 1000000), or all."
            ),
        ),
    ] = None,
    quiet: QuietOpt = False,
    allow_import: AllowImportOpt = None,
    data: DataOpt = None,
    address: PassAddressOpt = None,
    executor: PassExecutorOpt = AUTO,
    workers: WorkersOpt = None,
    app_dir: AllowedAppDirOpt = None,
) -> None:
    """Write the audit report of a run folder: report.json, report.md and report.html.

    Its passes over the parts, PBO's two among them, run here or as tasks of a Ray or Dask
    cluster (--address, --executor, or a local one where auto predicts it faster); with
    --address or a cluster named by --executor, the recomputed returns run there too. The
    report is the same.
    """
    from dataclasses import replace

    from sweep.report import ReportOptions, build_report, default_out_dir, write_report
    from sweep.report._cli_support import parse_heatmap, summary_lines
    from sweep.runner._pass_executor import PassExecutor

    _check_workers(executor, workers, address)
    if out_dir is not None:
        check_output_folder(out_dir, "--out")
    roots = allowed_roots(app_dir, run_dir)
    options = ReportOptions(
        top_k=top,
        heatmap=parse_heatmap(heatmap),
        bench_dir=None if bench_dir is None else str(bench_dir),
        alpha=alpha,
        progress=not quiet,
        allow_import=tuple(allow_import or ()),
    )
    if pbo_sample is not None:
        options = replace(options, max_pbo_configs=_pbo_configs(pbo_sample))
    try:
        with (
            importing_from(roots),
            _named_data(run_dir, data),
            PassExecutor(executor.value, address, workers) as passes,
        ):
            built = build_report(
                run_dir,
                options,
                auditor=passes.audit,
                recompute=passes.recompute,
                mapper=passes.map_parts,
            )
        target = out_dir or default_out_dir(run_dir)
        check_output_folder(target, "--out")
        with writing(target, "--out"):
            files = write_report(built, target)
    except KeyboardInterrupt as exc:
        raise _interrupted(exc, "no complete report was written; run sweep report again") from None
    _say(out, "\n".join(summary_lines(built, files)))
    _say(out, _choice_line(passes.choice))


def _choice_line(choice: ExecutorChoice | None) -> str:
    """Where a pass after a sweep checked its parts, and why (one wrapped line)."""
    import textwrap

    if choice is None:
        return "executor: local (no part to check)"
    text = f"executor: {title_of(choice.chosen)} ({choice.reason})"
    width = max(40, min(out.width, 100))
    return "\n".join(textwrap.wrap(text, width, subsequent_indent=" " * 10))


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def _wall(seconds: float) -> str:
    from sweep.plan._eta import format_duration

    return f"{seconds:.2f} s" if seconds < 60 else format_duration(seconds)


def _fields(lines: list[str], indent: int = 13) -> str:
    """``label:   text`` lines wrapped to the terminal, continued under the text."""
    import textwrap

    width = max(40, min(out.width, 100))
    wrapped = []
    for line in lines:
        wrapped += textwrap.wrap(
            line,
            width,
            subsequent_indent=" " * indent,
            break_on_hyphens=False,
            break_long_words=False,
        ) or [""]
    return "\n".join(wrapped)


def _plan_lines(found: SweepPlan) -> list[str]:
    """``sweep plan`` on screen: the grid, the measurements, the crossover and the choice."""
    axes = " x ".join(f"{a.name} {a.size}" for a in found.axes)
    product = math.prod(a.size for a in found.axes)
    if product != found.configs:
        axes += f": {product:,} combinations before zip groups and constraints"
    local = found.local
    lines = [
        f"sweep:       {found.name}: {found.configs:,} configs ({axes})",
        f"in-process:  b {_ms(local.per_config_seconds)} per config, "
        f"O {_ms(local.overhead_seconds)} per task",
    ]
    cluster = found.cluster
    if cluster is None:
        lines.append(f"cluster:     {found.cluster_note}")
    else:
        where = cluster.describe.address or ""
        lines.append(
            f"{title_of(cluster.executor) + ':':<13}{cluster.workers} workers ({where} cluster), "
            f"start-up {_ms(cluster.startup_seconds)}, b {_ms(cluster.per_config_seconds)} per "
            f"config, O {_ms(cluster.overhead_seconds)} per task"
        )
    lines.append(f"scaling:     {found.scaling.source}")
    return lines


def _plan_table(found: SweepPlan) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for header in ("executor", "workers", "batch", "tasks", "wall", "vs in-process"):
        table.add_column(header, justify="left" if header == "executor" else "right")
    base = found.predictions[0].wall.seconds
    for row in found.predictions:
        w = row.wall
        table.add_row(
            "in-process" if row.executor == LOCAL else row.executor,
            str(w.workers),
            f"{w.batch_size:,}",
            f"{w.tasks:,}",
            _wall(w.seconds),
            f"{base / w.seconds:.2f}x" if w.seconds > 0 else "-",
        )
    return table


def _plan_footer(found: SweepPlan) -> list[str]:
    lines = []
    if found.cluster is not None:
        cross = found.crossover_configs
        n = found.cluster.workers
        title = title_of(found.cluster.executor)
        lines.append(
            f"crossover:   {title} ({n} workers) beats in-process above {cross:,} configs"
            if cross is not None
            else f"crossover:   none: {title} ({n} workers) is not predicted to beat in-process"
        )
    choice = found.choice
    lines.append(f"auto:        {choice.chosen} ({choice.reason})")
    lines += [f"assumes:     {a}" for a in found.assumptions[:1]]
    lines.append("             (sweep plan --json has every measurement)")
    return lines


@app.command()
@_interruptible
def plan(
    spec: Annotated[Path, typer.Argument(help="Sweep spec (TOML).")],
    address: AddressOpt = None,
    workers: Annotated[
        int | None,
        typer.Option("--workers", min=1, help="CPUs of the local cluster (N predicted)."),
    ] = None,
    executor: Annotated[
        ExecutorKind,
        typer.Option(
            "--executor",
            help="The cluster measured beside in-process. auto: the one --address names, else "
            f"a local {title_of(local_cluster_kind())} cluster; local: in-process only (no "
            "crossover).",
        ),
    ] = AUTO,
    bench_dir: Annotated[
        Path | None,
        typer.Option("--bench", help="Folder of sweep bench results (default runs/bench)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    app_dir: AppDirOpt = None,
) -> None:
    """Know before you launch: measure b and O, predict wall times, name the crossover."""
    from sweep.plan._preflight import plan_sweep
    from sweep.spec._resolve import resolve

    if executor.value == LOCAL and (address or workers):
        raise SweepError(
            "--executor local: measures in-process only, so --address and --workers do not "
            f"apply; got --address {address!r} and --workers {workers!r}"
        )
    with _spec_imports(spec, app_dir) as sweep_spec:
        found = plan_sweep(
            resolve(sweep_spec),
            address=address,
            workers=workers,
            kind=None if executor.value == "auto" else executor.value,
            bench_dir=None if bench_dir is None else str(bench_dir),
        )
    if as_json:
        sys.stdout.write(json.dumps(found.to_json(), indent=2) + "\n")
        return
    _say(out, _fields(_plan_lines(found)))
    out.print()
    out.print(_plan_table(found))
    out.print()
    _say(out, _fields(_plan_footer(found)))


class BenchKind(StrEnum):
    """What ``sweep bench`` measures."""

    overhead = "overhead"
    amortization = "amortization"
    scaling = "scaling"


#: The backends ``sweep bench`` measures: the distributed ones of the registry.
BenchBackend = StrEnum("BenchBackend", {name: name for name in KINDS if name != LOCAL})  # type: ignore[misc]


@app.command()
@_interruptible
def bench(
    kind: Annotated[BenchKind, typer.Argument(help="What to measure.")],
    executor: Annotated[
        BenchBackend | None,
        typer.Option(
            "--executor",
            help="Backend measured (default: the one --address names, else the one a local "
            "cluster of auto runs on).",
        ),
    ] = None,
    address: AddressOpt = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            help="overhead: workers (and CPUs of a local cluster); scaling: largest p.",
        ),
    ] = None,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder for <kind>.json and <kind>.png.")
    ] = Path("runs/bench"),
    spec: Annotated[
        Path | None,
        typer.Option("--spec", help="Sweep spec evaluated (default examples/momentum.toml)."),
    ] = None,
) -> None:
    """Measure a cluster (Ray or Dask): per-task overhead, batching amortization, or scaling (USL).

    With --address tcp://host:port (a Dask scheduler) Dask is measured unless --executor
    says otherwise.
    """
    from sweep.bench import run_bench
    from sweep.bench._run import bench_table  # a rich Table: the CLI's, not library API

    outcome = run_bench(
        kind.value,
        executor=None if executor is None else executor.value,
        address=address,
        workers=workers,
        spec=spec,
        out=out_dir,
    )
    out.print(bench_table(outcome.result))
    _say(out, f"wrote {outcome.files['json']} and {outcome.files['png']}")


def main() -> None:
    """Console-script entry point: map errors to exit codes and one-paragraph messages.

    Usage errors (unknown command or option, missing argument) are handled by typer in
    standalone mode: a usage message and exit code 2. An error of
    :data:`sweep.errors.USER_ERRORS` raised by a command (a :class:`SweepError`, or a
    strategy's or a statistic's error) prints its message and exits with its code (2 for bad
    input, 1 for a failed sweep), without a traceback. A Ctrl-C exits 130 and a SIGTERM 143,
    each with one line (a running sweep first records its session as interrupted and
    releases its lock). numba is given a writable cache folder first
    (:func:`sweep.common._numba_cache.ensure_numba_cache`).
    """
    _signals.install()
    ensure_numba_cache()
    try:
        app()
    except USER_ERRORS as exc:
        raise SystemExit(_fail(exc, exit_code(exc)).exit_code) from None
    except (ImportError, RuntimeError) as exc:  # a Ctrl-C in an extension or __set_name__
        interrupt = _signals.interrupt_behind(exc)
        if interrupt is None:
            raise
        raise SystemExit(_interrupted(interrupt, "sweep stopped").exit_code) from None
