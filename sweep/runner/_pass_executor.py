"""Where the passes after a sweep run: ``--executor auto|local|ray`` of ``verify`` and ``report``.

A pass after a sweep does its per-part work (a part's checks and row digest; the report's
passes over the good parts: the read into its reducers, the Sharpe distribution's passes,
PBO's block statistics) and the report's two heavy computations (PBO's splits, the
recomputed returns) either here or as Ray tasks (:mod:`sweep.executors._part_tasks`); the
output is the same either way.
:class:`PassExecutor` is that choice for one pass:

* ``ray``: on the cluster at ``address``, or on a local Ray cluster of ``workers`` CPUs
  started for the pass (and shut down with it);
* ``local``: here, one part after another;
* ``auto`` (the default): Ray when ``address`` is given; else the first parts are checked
  here and timed (:data:`PILOT_PARTS`, at least :data:`PILOT_SECONDS`), and the rest runs
  where the amortization law predicts it ends first (:func:`sweep.plan._auto.choose_pass_executor`,
  the rule of ``sweep run --executor auto`` with a part as the unit). A local cluster that
  cannot start leaves the pass here, and the choice says so. The report's PBO splits and
  recomputed returns stay here under ``auto``: a local cluster has this machine's CPUs, which
  the compiled CSCV kernel already uses, and on the 2-core development machine they gained
  nothing as Ray tasks at 10^7 configs (docs/benchmarks/large-sweeps.md); they run on Ray with
  ``--address`` or ``--executor ray``. The report's passes over the parts (``map_parts``)
  follow the choice.

The choice (:attr:`PassExecutor.choice`) is shown on screen, not written into the report, so
the report's bytes do not depend on where it was made.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any, Literal, TypeVar

import numpy as np
from numpy.typing import NDArray

from stats import cscv_best_and_ranks
from sweep.engine._evaluate import config_returns_blocks
from sweep.errors import ExecutionError, SweepError
from sweep.executors._part_tasks import (
    config_returns_on_ray,
    cscv_splits_on_ray,
    map_part_groups,
    worker_location,
)
from sweep.executors._ray import init_ray
from sweep.plan._auto import choose_pass_executor, local_workers
from sweep.spec._resolve import ResolvedSweep
from sweep.store._part_audit import PartAudit, PartAuditor, audit_here, audit_parts
from sweep.store._part_mapper import map_here
from sweep.store._record import ExecutorChoice
from sweep.store._run_store import RunStore

#: Parts checked here, at most, before ``auto`` decides (the first one is cold: imports).
PILOT_PARTS = 4
#: Seconds of checks here after which ``auto`` decides even before :data:`PILOT_PARTS`
#: (once two parts are done: the first is cold).
PILOT_SECONDS = 0.5

PassKind = Literal["auto", "local", "ray"]
T = TypeVar("T")


def part_auditor(address: str | None) -> PartAuditor:
    """How a pass audits parts: here, or as Ray tasks on ``address``.

    Parameters
    ----------
    address : str, optional
        A Ray cluster: the audits run there as tasks over groups of parts
        (:func:`sweep.executors._part_tasks.map_part_groups`); None: in this process.

    Returns
    -------
    PartAuditor
        The same audits either way, in the order of the names asked.
    """
    if address is None:
        return audit_here
    return lambda store, names, rehash: _audits_on_ray(store, names, rehash, address)


def _audits_on_ray(
    store: RunStore, names: list[str], rehash: bool, address: str | None
) -> list[PartAudit]:
    """The audits of ``names`` as Ray tasks (``address`` None: the Ray already started)."""
    groups = map_part_groups(audit_parts, worker_location(store), names, (rehash,), address=address)
    return [audit for group in groups for audit in group]


class PassExecutor:
    """Where one ``verify`` or ``report`` runs its per-part work (see the module docstring).

    Use it as a context manager: a local Ray cluster it started is shut down on exit.

    Parameters
    ----------
    kind : {"auto", "local", "ray"}
        ``--executor``.
    address : str, optional
        A Ray cluster to join (``--address``); ignored by ``local``.
    workers : int, optional
        CPUs of a local Ray cluster (``--workers``; default: this machine's).
    """

    def __init__(self, kind: PassKind, address: str | None = None, workers: int | None = None):
        if kind not in ("auto", "local", "ray"):
            raise ValueError(f"kind: expected auto, local or ray, got {kind!r}")
        self.kind, self.address, self.workers = kind, address, workers
        self.choice: ExecutorChoice | None = None
        self._joined = False  # Ray initialised by this pass (joined or started)
        if kind == "local":
            self.choice = ExecutorChoice(kind, "local", "--executor local: in-process")
        elif address:
            self.choice = ExecutorChoice(
                kind, "ray", f"a Ray cluster address was given ({address})"
            )
        elif kind == "ray":
            self.choice = ExecutorChoice(
                kind,
                "ray",
                f"--executor ray: a local Ray cluster of {local_workers(workers)} CPUs",
                ray_workers=local_workers(workers),
            )

    @property
    def on_ray(self) -> bool:
        """Whether the pass runs (or will run) on Ray, as decided so far."""
        return self.choice is not None and self.choice.chosen == "ray"

    @property
    def _asked_for_ray(self) -> bool:
        """Ray named: ``--address`` (not with ``local``) or ``--executor ray``."""
        return self.kind == "ray" or (self.kind == "auto" and bool(self.address))

    def map_parts(
        self,
        body: Callable[..., T],
        store: RunStore,
        names: Sequence[str],
        args: tuple[Any, ...],
    ) -> list[T]:
        """``body(location, group, *args)`` over groups of ``names``, where the pass runs.

        ``body`` is a per-part function of a folder location (a Ray task's body, as for
        :func:`sweep.executors._part_tasks.map_part_groups`). Under ``auto`` with no
        address, the first parts are each a group run here and timed, the choice is made,
        and the rest runs as Ray tasks or here as one group. The results are in the order of
        the groups, which cover ``names`` in order.
        """
        done: list[T] = []
        if self.choice is None:  # auto, no address: time the first parts here, then decide
            done, seconds = _pilot(body, store, names, args)
            self.choice = choose_pass_executor(
                len(names) - len(done), seconds, workers=self.workers
            )
        rest = list(names[len(done) :])
        if rest and self.on_ray and self._ray_ready():
            return done + map_part_groups(body, worker_location(store), rest, args, address=None)
        return [*done, *map_here(body, store, rest, args)]

    def audit(self, store: RunStore, names: list[str], rehash: bool) -> list[PartAudit]:
        """A :data:`sweep.store._part_audit.PartAuditor`: the audits of ``names``, in order."""
        groups = self.map_parts(audit_parts, store, names, (rehash,))
        return [audit for group in groups for audit in group]

    def pbo_splits(
        self,
        counts: NDArray[np.float64],
        sums: NDArray[np.float64],
        sums_sq: NDArray[np.float64],
        combos: NDArray[np.int8],
        sharpe: bool,
        /,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """A :class:`stats.SplitRunner`: PBO's splits, on Ray when asked for (not ``auto``)."""
        if self._asked_for_ray and self._ray_ready():
            return cscv_splits_on_ray(None)(counts, sums, sums_sq, combos, sharpe)
        return cscv_best_and_ranks(counts, sums, sums_sq, combos, sharpe)

    def recompute(
        self, sweep: ResolvedSweep, indices: NDArray[np.int64], /
    ) -> Iterable[NDArray[np.float64]]:
        """A :data:`sweep.engine._evaluate.ReturnsRunner`: on Ray when asked for (not ``auto``)."""
        if self._asked_for_ray and self._ray_ready():
            return config_returns_on_ray(None)(sweep, indices)
        return config_returns_blocks(sweep, indices)

    def _ray_ready(self) -> bool:
        """Ray initialised for this pass (joined, or a local cluster started); False: not.

        A local cluster ``auto`` chose but that cannot start leaves the pass here (the
        choice says why); an address that cannot be joined, or ``--executor ray``, raises.
        """
        import ray

        if self._joined or ray.is_initialized():
            return True
        try:
            init_ray(self.address, local_workers(self.workers))
        except SweepError:
            raise
        except Exception as exc:
            if self.kind == "auto" and not self.address and self.choice is not None:
                self.choice = replace(
                    self.choice,
                    chosen="local",
                    reason=f"{self.choice.reason}; but Ray did not start ({exc}): in-process",
                )
                return False
            raise ExecutionError(
                f"cannot start or join Ray (address {self.address!r}): {exc}"
            ) from exc
        self._joined = True
        return True

    def close(self) -> None:
        """Leave Ray if this pass initialised it (a local cluster it started stops)."""
        if self._joined:
            import ray

            ray.shutdown()
            self._joined = False

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
    body: Callable[..., T], store: RunStore, names: Sequence[str], args: tuple[Any, ...]
) -> tuple[list[T], float]:
    """``body`` of the first parts here, one at a time, and the seconds one part took.

    At most :data:`PILOT_PARTS`, stopping once :data:`PILOT_SECONDS` have passed but never
    before a second part: the first part also pays the imports and what a process builds
    once per folder (the grid's ids), so the median of the later ones is the measure where
    there are any (a cold first part alone overstated the 10^7 folder's survey, 128 ms a
    part against 18 ms).
    """
    done: list[T] = []
    seconds: list[float] = []
    started = time.perf_counter()
    for name in names[:PILOT_PARTS]:
        t0 = time.perf_counter()
        done.append(body(store.location, [name], *args))
        seconds.append(time.perf_counter() - t0)
        if len(seconds) >= 2 and time.perf_counter() - started >= PILOT_SECONDS:
            break
    warm = seconds[1:] or seconds
    return done, (float(np.median(warm)) if warm else float("nan"))
