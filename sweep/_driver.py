"""The driver: open the run folder, plan, stream batches through an executor, write parts.

The driver never holds more than the in-flight batches' results: the work still to do is one
int64 array of grid positions, consumed lazily in batches; each finished batch is written as
a part as soon as it arrives. A SIGKILL loses at most the batches in flight; Ctrl-C (or
SIGTERM, raised as :class:`sweep._signals.Terminated`) stops after the part being written,
records the session as interrupted and releases the lock; the CLI exits 130 (143).
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from sweep._environment import environment
from sweep._planner import BatchPlan, PlannerSettings, plan_batches
from sweep._progress import SweepProgress
from sweep._results import results_hash
from sweep._signals import sigterm_as_interrupt
from sweep._spec import ResolvedSweep, SweepSpec, resolve
from sweep._status import failed_count
from sweep._store import TELEMETRY, RunStore, utc_now
from sweep._version import ENGINE_VERSION
from sweep.errors import ConfigFailedError, ExecutionError, GridError, RunFolderError
from sweep.executors import BatchOutcome, Executor, make_executor

OnError = Literal["record", "raise"]

#: Driver memory per config: one byte of done mask, eight of to-do grid position.
DRIVER_BYTES_PER_CONFIG = 9


@dataclass(frozen=True)
class RunSummary:
    """What a driver session did.

    Attributes
    ----------
    run_dir : str
        The run folder.
    total, done, failed : int
        Configs in the grid, configs with results, configs whose status is ``error``.
    computed : int
        Configs evaluated by this session.
    quarantined : list of str
        Parts that failed their self-check and were moved aside.
    table_hash : str or None
        The results table hash once every config is done.
    plan : dict
        The batch plan.
    status : str
        ``completed``, ``interrupted`` or ``failed``.
    """

    run_dir: str
    total: int
    done: int
    failed: int
    computed: int
    quarantined: list[str]
    table_hash: str | None
    plan: dict[str, Any]
    status: str


def _batches(todo: NDArray[np.int64], size: int) -> Iterator[NDArray[np.int64]]:
    for lo in range(0, todo.shape[0], size):
        yield todo[lo : lo + size]


def _finish_session(store: RunStore, session_id: int, **fields: Any) -> None:
    manifest = store.read_manifest()
    for session in manifest["sessions"]:
        if session["id"] == session_id:
            session.update(fields)
    store.write_manifest(manifest)


def available_memory() -> int | None:
    """Bytes of memory this machine can still give a process (None where unknown).

    ``MemAvailable`` of ``/proc/meminfo`` on Linux, else the free physical pages.
    """
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return None


def _size(n_bytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n_bytes < 1024 or unit == "GiB":
            return f"{n_bytes:,.0f} {unit}" if unit == "B" else f"{n_bytes:,.1f} {unit}"
        n_bytes /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def check_driver_memory(n_configs: int) -> None:
    """Refuse a grid whose done mask and to-do list would not fit in this machine's memory.

    Parameters
    ----------
    n_configs : int
        Configs in the grid.
    """
    need = n_configs * DRIVER_BYTES_PER_CONFIG
    have = available_memory()
    if have is not None and need > have:
        raise GridError(
            f"grid: {n_configs:,} configs need about {_size(need)} of driver memory (a done "
            f"flag and a to-do position per config, {DRIVER_BYTES_PER_CONFIG} bytes each), but "
            f"this machine has {_size(have)} available; split the sweep into smaller grids or "
            "run the driver on a machine with more memory"
        )


def _open_store(store: RunStore, sweep: ResolvedSweep) -> None:
    if store.exists():
        store.check_compatible(sweep)
        return
    if not store.is_fresh():
        raise RunFolderError(
            f"run folder {store.location!r} exists, is not empty and has no manifest.json; "
            "choose an empty or new folder"
        )
    try:
        store.create(sweep)
    except RunFolderError:
        if not store.exists():
            raise
        store.check_compatible(sweep)  # another driver created it just now: join it


def run_sweep(
    spec: SweepSpec | ResolvedSweep,
    run_dir: str | os.PathLike[str],
    *,
    executor: str | Executor = "local",
    batch_size: int | None = None,
    on_error: OnError = "record",
    progress: bool = True,
    address: str | None = None,
    workers: int | None = None,
    planner: PlannerSettings | None = None,
) -> RunSummary:
    """Run (or continue) a sweep in a run folder.

    Parameters
    ----------
    spec : SweepSpec or ResolvedSweep
        What to run.
    run_dir : str or path
        The run folder; created if new, continued if it holds this sweep, refused if it holds
        another (:class:`sweep.errors.RunFolderError`).
    executor : {"local", "ray"} or Executor
        Where batches run.
    batch_size : int, optional
        Fixed configs per task; default: chosen by the planner.
    on_error : {"record", "raise"}
        A config that raises is recorded with ``status = "error"`` (default), or the sweep
        stops at the first such config (:class:`sweep.errors.ConfigFailedError`) without
        writing its batch.
    progress : bool
        Show a progress bar on a terminal.
    address, workers : optional
        Ray cluster address and CPU cap (Ray executor only).
    planner : PlannerSettings, optional
        Targets of the batch-size planner (default :class:`PlannerSettings()`).

    Returns
    -------
    RunSummary
        What this session did and, when complete, the table hash.
    """
    sweep = spec if isinstance(spec, ResolvedSweep) else resolve(spec)
    planner = planner or PlannerSettings()
    if batch_size is not None and batch_size < 1:
        raise RunFolderError(f"--batch-size: expected a positive integer, got {batch_size}")
    if on_error not in ("record", "raise"):
        raise RunFolderError(f"--on-error: expected 'record' or 'raise', got {on_error!r}")
    check_driver_memory(len(sweep.grid))
    with sigterm_as_interrupt() as rearm:
        store = RunStore(run_dir)
        _open_store(store, sweep)
        with store.locked() as lock:
            session_id, exe = _start_session(store, executor, address, workers, lock)
            options = _Options(batch_size, on_error, progress, planner, rearm)
            return _run_session(store, sweep, exe, session_id, options)


@dataclass(frozen=True)
class _Options:
    """How a session runs (see :func:`run_sweep`); ``rearm_sigterm`` after ``exe.start``."""

    batch_size: int | None
    on_error: OnError
    progress: bool
    planner: PlannerSettings
    rearm_sigterm: Callable[[], bool]


def _start_session(
    store: RunStore,
    executor: str | Executor,
    address: str | None,
    workers: int | None,
    lock: dict[str, Any],
) -> tuple[int, Executor]:
    """Mark dead sessions killed, make the executor, record a running session."""
    manifest = store.read_manifest()
    for session in manifest["sessions"]:
        if session.get("status") == "running":
            session["status"] = "killed"
    session_id = len(manifest["sessions"]) + 1
    exe = (
        make_executor(executor, address=address, workers=workers)
        if isinstance(executor, str)
        else executor
    )
    manifest["sessions"].append(
        {
            "id": session_id,
            "start": utc_now(),
            "end": None,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "engine_version": ENGINE_VERSION,
            "executor": exe.name,
            "environment": environment(),
            "status": "running",
            "took_over_lock": lock["took_over"],
        }
    )
    store.write_manifest(manifest)
    return session_id, exe


def _run_session(
    store: RunStore, sweep: ResolvedSweep, exe: Executor, session_id: int, options: _Options
) -> RunSummary:
    store.ensure_folders()
    store.remove_temp_files()
    quarantined = [c.name for c in store.verify_parts() if not c.ok]
    for name in quarantined:
        store.quarantine(name)
    for check in store.check_telemetry():
        if not check.ok:
            store.quarantine(check.name, TELEMETRY)
    total = len(sweep.grid)
    computed = 0
    failed = 0
    status = "failed"
    plan = BatchPlan(batch_size=0, source="nothing to do")
    started = time.perf_counter()

    def write(outcome: BatchOutcome) -> float:
        nonlocal computed, failed
        if outcome.result.n_errors and options.on_error == "raise":
            raise ConfigFailedError(
                f"a config failed and --on-error is 'raise': {outcome.result.first_error} "
                "(its batch was not written; rerun with --on-error record to keep going)"
            )
        t0 = time.perf_counter()
        try:
            store.write_part(outcome.result.table, {**outcome.telemetry, "session": session_id})
        except OSError as exc:
            raise ExecutionError(
                f"cannot write a part in {store.location!r}: {exc.strerror or exc}. Finished parts "
                "are intact; fix the cause (e.g. free disk space) and run: "
                f"sweep resume {store.location}"
            ) from exc
        store.heartbeat()
        computed += int(outcome.indices.shape[0])
        failed += outcome.result.n_errors
        return time.perf_counter() - t0

    try:
        todo, done = _todo(store, total)
        with SweepProgress(total, done, options.progress) as bar:
            if todo.shape[0]:
                exe.start(sweep)
                options.rearm_sigterm()  # ray.init installs its own SIGTERM handler
                try:

                    def on_pilot(outcome: BatchOutcome) -> float:
                        seconds = write(outcome)
                        bar.advance(int(outcome.indices.shape[0]), 0.0)
                        return seconds

                    plan, todo = plan_batches(
                        exe, todo, options.batch_size, on_pilot, options.planner
                    )
                    _finish_session(
                        store, session_id, plan=plan.to_dict(), executor_info=exe.describe()
                    )
                    for outcome in exe.run(_batches(todo, plan.batch_size)):
                        write(outcome)
                        elapsed = time.perf_counter() - started
                        bar.advance(int(outcome.indices.shape[0]), computed / max(elapsed, 1e-9))
                finally:
                    exe.close()
        status = "completed"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        with contextlib.suppress(OSError):  # best effort: the disk may be full
            _finish_session(
                store,
                session_id,
                end=utc_now(),
                status=status,
                configs_computed=computed,
                configs_failed=failed,
                quarantined=quarantined,
                wall_seconds=time.perf_counter() - started,
            )
    done_now = done + computed
    good = store.good_parts()[0] if done_now >= total or done else []
    table_hash = results_hash(store.location, good) if done_now >= total else None
    failed_total = failed if done == 0 else failed_count(store, good)
    if table_hash is not None:
        _finish_session(store, session_id, table_hash=table_hash)
    return RunSummary(
        store.location,
        total,
        done_now,
        failed_total,
        computed,
        quarantined,
        table_hash,
        plan.to_dict(),
        status,
    )


def _todo(store: RunStore, total: int) -> tuple[NDArray[np.int64], int]:
    """Grid positions still to do, and the count of configs done."""
    mask = store.done_mask(total)
    done = int(mask.sum())
    np.logical_not(mask, out=mask)
    return np.flatnonzero(mask).astype(np.int64, copy=False), done
