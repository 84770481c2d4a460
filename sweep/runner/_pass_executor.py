"""Where the passes after a sweep run: ``--executor`` of ``verify``, ``status`` and ``report``.

A pass after a sweep does its per-part work (a part's checks and row digest; the report's
passes over the good parts: the read into its reducers, the Sharpe distribution's passes,
PBO's block statistics) and the report's two heavy computations (PBO's splits, the
recomputed returns) either here or as tasks of a backend
(:mod:`sweep.executors._part_tasks`); the output is the same either way.
:class:`PassExecutor` is that choice for one pass:

* a backend named (``--executor NAME``): on the cluster at ``address``, or on a local
  cluster of ``workers`` CPUs started for the pass (and stopped with it);
* ``local``: here, one part after another;
* ``auto`` (the default): the cluster an address names (:func:`sweep.executors.cluster_named`);
  else the first parts are checked here and timed (:data:`PILOT_PARTS`, at least
  :data:`PILOT_SECONDS`), and the rest runs where the amortization law predicts it ends
  first (:func:`sweep.plan._auto.choose_pass_executor`, the rule of ``sweep run --executor
  auto`` with a part as the unit). A local cluster that cannot start leaves the pass here,
  and the choice says so. The report's PBO splits and recomputed returns stay here under
  ``auto`` without an address: a local cluster has this machine's CPUs, which the compiled
  CSCV kernel already uses, and on the 2-core development machine they gained nothing as
  tasks at 10^7 configs (docs/benchmarks/large-sweeps.md). The report's passes over the
  parts (``map_parts``) follow the choice.

The choice (:attr:`PassExecutor.choice`) is shown on screen, not written into the report, so
the report's bytes do not depend on where it was made.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from sweep.engine._evaluate import config_returns_blocks
from sweep.errors import ExecutionError, SweepError
from sweep.executors import LOCAL, Executor, cluster_named, make_executor, title_of
from sweep.executors._part_tasks import config_returns_on, map_part_groups
from sweep.plan._auto import address_reason, choose_pass_executor, local_workers
from sweep.spec._resolve import ResolvedSweep
from sweep.store._part_audit import PartAudit, audit_parts
from sweep.store._part_mapper import map_here
from sweep.store._record import ExecutorChoice
from sweep.store._run_store import RunStore

#: Parts checked here, at most, before ``auto`` decides (the first one is cold: imports).
PILOT_PARTS = 4
#: Seconds of checks here after which ``auto`` decides even before :data:`PILOT_PARTS`
#: (once two parts are done: the first is cold).
PILOT_SECONDS = 0.5

T = TypeVar("T")


class PassExecutor:
    """Where one ``verify``, ``status`` or ``report`` runs its per-part work (module docstring).

    Use it as a context manager: a local cluster it started is stopped on exit.

    Parameters
    ----------
    kind : str
        ``--executor``: ``auto``, ``local`` or a backend's name
        (:data:`sweep.executors.EXECUTOR_CHOICES`).
    address : str, optional
        A cluster to join (``--address``); ignored by ``local``.
    workers : int, optional
        CPUs of a local cluster (``--workers``; default: this machine's).
    """

    def __init__(self, kind: str, address: str | None = None, workers: int | None = None):
        named = cluster_named(kind, address) if kind != LOCAL else None
        if kind != "auto" and kind != LOCAL:
            make_executor(kind)  # an unknown name is refused here, naming the choices
        self.kind, self.address, self.workers = kind, address, workers
        self.choice: ExecutorChoice | None = None
        self._backend: Executor | None = None
        if kind == LOCAL:
            self.choice = ExecutorChoice(kind, LOCAL, "--executor local: in-process")
        elif named is not None and (address or kind == "auto"):
            self.choice = ExecutorChoice(
                kind, named, address_reason(named, address or "in the environment")
            )
        elif named is not None:
            self.choice = ExecutorChoice(
                kind,
                named,
                f"--executor {kind}: a local {title_of(kind)} cluster of "
                f"{local_workers(workers)} CPUs",
                ray_workers=local_workers(workers),
            )

    @property
    def on_cluster(self) -> bool:
        """Whether the pass runs (or will run) on a cluster, as decided so far."""
        return self.choice is not None and self.choice.chosen != LOCAL

    @property
    def _asked_for_cluster(self) -> bool:
        """A cluster named: a backend given by name, or an address under ``auto``."""
        if self.kind == LOCAL:
            return False
        return self.kind != "auto" or cluster_named(self.kind, self.address) is not None

    def map_parts(
        self,
        body: Callable[..., T],
        store: RunStore,
        names: Sequence[str],
        args: tuple[Any, ...],
    ) -> Iterator[T]:
        """``body(location, group, *args)`` over groups of ``names``, where the pass runs.

        ``body`` is a per-part function of a folder location (a task's body, as for
        :func:`sweep.executors._part_tasks.map_part_groups`). Under ``auto`` without a
        cluster named, the first parts are each a group run here and timed, the choice is
        made, and the rest runs as tasks or here. The answers come in the order of the
        groups, which cover ``names`` in order, each as soon as it and those before it are
        in: never a list of all of them.
        """
        done = 0
        if self.choice is None:  # auto, no cluster named: time the first parts here
            pilot: list[T] = []
            seconds = _pilot(body, store, names, args, pilot)
            done = len(pilot)
            self.choice = choose_pass_executor(len(names) - done, seconds, workers=self.workers)
            yield from pilot
            del pilot
        rest = list(names[done:])
        backend = self._ready() if rest and self.on_cluster else None
        if backend is not None:
            yield from map_part_groups(backend, body, store, rest, args)
        else:
            yield from map_here(body, store, rest, args)

    def audit(self, store: RunStore, names: list[str], rehash: bool) -> list[PartAudit]:
        """A :data:`sweep.store._part_audit.PartAuditor`: the audits of ``names``, in order."""
        return [a for group in self.map_parts(audit_parts, store, names, (rehash,)) for a in group]

    def recompute(
        self, sweep: ResolvedSweep, indices: NDArray[np.int64], /
    ) -> Iterable[NDArray[np.float64]]:
        """A :data:`sweep.engine._evaluate.ReturnsRunner`: on the cluster when one was named."""
        backend = self._ready() if self._asked_for_cluster else None
        if backend is not None:
            return config_returns_on(backend)(sweep, indices)
        return config_returns_blocks(sweep, indices)

    def _ready(self) -> Executor | None:
        """The chosen cluster's backend, connected; None: the pass stays here.

        A local cluster ``auto`` chose but that cannot start leaves the pass here (the
        choice says why); an address that cannot be joined, or a backend named, raises.
        """
        if self._backend is not None:
            return self._backend
        assert self.choice is not None
        backend = make_executor(self.choice.chosen, address=self.address, workers=self.workers)
        try:
            backend.connect()
        except SweepError as exc:
            if self._asked_for_cluster or not isinstance(exc, ExecutionError):
                raise
            self.choice = replace(
                self.choice,
                chosen=LOCAL,
                reason=f"{self.choice.reason}; but {exc}: in-process",
            )
            return None
        self._backend = backend
        return backend

    def close(self) -> None:
        """Leave the cluster if this pass joined or started it (a local one stops)."""
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def __enter__(self) -> PassExecutor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _pilot(
    body: Callable[..., T],
    store: RunStore,
    names: Sequence[str],
    args: tuple[Any, ...],
    done: list[T],
) -> float:
    """``body`` of the first parts here, one at a time, into ``done``; seconds a part took.

    At most :data:`PILOT_PARTS`, stopping once :data:`PILOT_SECONDS` have passed but never
    before a second part: the first part also pays the imports and what a process builds
    once per folder (the grid's ids), so the median of the later ones is the measure where
    there are any (a cold first part alone overstated the 10^7 folder's survey, 128 ms a
    part against 18 ms).
    """
    seconds: list[float] = []
    started = time.perf_counter()
    for name in names[:PILOT_PARTS]:
        t0 = time.perf_counter()
        done.append(body(store.location, [name], *args))
        seconds.append(time.perf_counter() - t0)
        if len(seconds) >= 2 and time.perf_counter() - started >= PILOT_SECONDS:
            break
    warm = seconds[1:] or seconds
    return float(np.median(warm)) if warm else float("nan")
