"""Backends: where batches and the passes after a sweep run. Nothing else names an engine.

Owns the backend protocol (:class:`Executor`), its three implementations (in-process, Ray,
Dask), the task every worker runs, the registry below and the clean-up of what a killed
local cluster left running. May import ``common``, ``spec``, ``store`` and ``engine``;
never ``plan``, ``runner``, ``report``, ``bench`` or the CLI.

The rest of raysweep picks a backend by its name (``--executor``) through this registry:
:data:`KINDS`, :func:`make_executor`, :func:`cluster_named` (which engine an address
belongs to), :func:`local_cluster_kind` (the engine ``auto`` may start a local cluster of)
and each backend's assumed costs (:func:`assumed_costs`). Adding an engine is a module here
and a line in :data:`_CLUSTERS`.
"""

from __future__ import annotations

import typing

from sweep import errors as _errors
from sweep.executors._base import BatchOutcome, Executor
from sweep.executors._cluster_executor import ClusterExecutor
from sweep.executors._dask import DaskExecutor
from sweep.executors._dask import scheduler_address as _scheduler_address
from sweep.executors._local import LocalExecutor
from sweep.executors._ray import RayExecutor
from sweep.executors._ray_orphans import stop_leftovers_of as _stop_leftovers_of

if typing.TYPE_CHECKING:
    from collections.abc import Sequence

    from sweep.store._record import Session

__all__ = [
    "ADDRESS_ENVVARS",
    "EXECUTOR_CHOICES",
    "KINDS",
    "LOCAL",
    "BatchOutcome",
    "ClusterExecutor",
    "DaskExecutor",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "address_forms",
    "assumed_costs",
    "clean_up_dead_sessions",
    "cluster_named",
    "local_cluster_kind",
    "make_executor",
    "recorded_kind",
    "title_of",
]

#: The in-process backend's name (no engine).
LOCAL = "local"
_CLUSTERS: dict[str, type[ClusterExecutor]] = {"ray": RayExecutor, "dask": DaskExecutor}
#: Environment variables ``--address`` is read from when not given (Ray's, Dask's).
ADDRESS_ENVVARS = ("RAY_ADDRESS", "DASK_SCHEDULER_ADDRESS")
#: The backends a sweep can run on, by the name ``--executor`` takes.
KINDS = (LOCAL, *_CLUSTERS)
#: What ``--executor`` accepts: a backend, or ``auto`` (chosen per run).
EXECUTOR_CHOICES = ("auto", *KINDS)

#: Assumed costs of a local cluster not yet measured, per engine: the start-up before the
#: first batch runs (the engine, its worker processes, their imports and compiled kernels,
#: the planner's pilots) and the per-task overhead (transport and scheduling). Ray: on the
#: 2-core development machine ``ray.init`` alone took 8.4-10.8 s (``bench_plan.py``) and
#: issue 15 measured the main job at 15.6 s on a fresh local cluster vs about 2.5 s on a
#: warm one, i.e. about 13 s of start-up; ``sweep plan`` and ``sweep bench overhead``
#: measured 2-10 ms a task. Dask: ``benchmarks/bench_backends.py`` on the same machine
#: (loaded) measured a ``LocalCluster`` of 2 processes started with the sweep shipped in
#: 9.8 s (Ray 9.1 s in the same run) and 9.8 ms a no-op task (Ray 2.5 ms).
_ASSUMED_COSTS = {"ray": (12.0, 0.01), "dask": (12.0, 0.01)}


def make_executor(kind: str, **options: typing.Any) -> Executor:
    """Return a backend by name (not started).

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    **options
        ``address`` and ``workers`` for a distributed engine (and the other parameters of
        :class:`ClusterExecutor`, e.g. ``oversubscribe`` for a benchmark).

    Returns
    -------
    Executor
        The backend.
    """
    if kind == LOCAL:
        return LocalExecutor()
    backend = _CLUSTERS.get(kind)
    if backend is None:
        raise _errors.SpecError(
            f"--executor: expected one of {', '.join(EXECUTOR_CHOICES)}, got {kind!r}"
            + _errors.close_matches(kind, EXECUTOR_CHOICES)
        )
    return backend(**options)


def cluster_named(kind: str, address: str | None) -> str | None:
    """The engine a cluster address (or ``DASK_SCHEDULER_ADDRESS``) names, for ``auto``.

    ``tcp://`` (a Dask scheduler's scheme) or no address but ``DASK_SCHEDULER_ADDRESS`` set:
    Dask; any other address: Ray. None: no cluster named (``auto`` then weighs a local
    cluster against in-process). A named engine (``kind`` not ``auto``) is returned as is.
    """
    if kind != "auto":
        return kind
    if address:
        return "dask" if address.startswith("tcp://") else "ray"
    return "dask" if _scheduler_address(None) else None


def local_cluster_kind() -> str:
    """The engine ``auto`` starts a local cluster of when one is predicted to finish first."""
    return "ray"


def assumed_costs(kind: str) -> tuple[float, float]:
    """``(start-up seconds, seconds per task)`` assumed for a local cluster of ``kind``."""
    return _ASSUMED_COSTS[kind]


def address_forms() -> str:
    """The forms ``--address`` takes, engine by engine, and where it is read from otherwise.

    For help texts: the variables are named here, not in the option's ``[env var: ...]``
    line, which the help's option column cuts at 80 columns.
    """
    forms = ", ".join(f"{b.address_forms} (a {b.title} cluster)" for b in _CLUSTERS.values())
    return f"{forms}; when not given, read from {' or '.join(ADDRESS_ENVVARS)}"


def recorded_kind(backend: str | None) -> str:
    """The engine a benchmark record was measured on: the backend it names, None Ray's.

    Ray's records name none (``ray_version`` says it), so that they keep the bytes they had
    before other engines were measured.
    """
    return backend or "ray"


def title_of(kind: str) -> str:
    """A backend's name in messages: ``in-process``, ``Ray``, ``Dask``."""
    return LocalExecutor.title if kind == LOCAL else _CLUSTERS[kind].title


def clean_up_dead_sessions(sessions: Sequence[Session]) -> None:
    """Stop what the killed sessions of a run left running on this machine (Ray's agents)."""
    _stop_leftovers_of(sessions)
