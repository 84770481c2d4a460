"""``--executor auto``: in-process or on a cluster, whichever is predicted to finish first.

The rule (:func:`choose_executor`): with a cluster address (``--address``, or a scheduler's
address in the environment: :func:`sweep.executors.cluster_named`) the sweep runs on that
cluster. Without one, the driver first plans in-process (the planner's warm-up and pilots
measure ``b`` and ``O`` there; their results are kept), then predicts the rest of the sweep
both ways with :func:`sweep.plan._forecast.predict_wall`: in-process from the measured
costs, and on a local cluster (:func:`sweep.executors.local_cluster_kind`) of ``workers``
CPUs from the same ``b`` (same machine), the backend's assumed start-up and per-task
overhead (:func:`sweep.executors.assumed_costs`), with linear scaling. Starting a cluster only
to measure it would cost more than most sweeps that run in-process, so these are
assumptions, recorded as such with the choice; ``sweep plan`` measures them on the actual
cluster.
"""

from __future__ import annotations

import math
import os

from sweep.executors import LOCAL, assumed_costs, local_cluster_kind, title_of
from sweep.plan._forecast import CostModel, crossover, predict_wall
from sweep.plan._planner import PlannerSettings
from sweep.store._record import ExecutorChoice, Plan


def local_workers(requested: int | None) -> int:
    """CPUs a local cluster would use: ``--workers``, else this machine's CPU count."""
    return requested or os.cpu_count() or 1


def assumed_cluster(per_unit: float, floor_overhead: float, workers: int) -> CostModel:
    """The cost model of a local cluster not measured: the backend's assumed costs."""
    startup, overhead = assumed_costs(local_cluster_kind())
    return CostModel(per_unit, max(floor_overhead, overhead), startup, workers)


def _assumed_costs_line(suffix: str) -> str:
    kind = local_cluster_kind()
    startup, overhead = assumed_costs(kind)
    return (
        f"{title_of(kind)} start-up {startup:g} s and {overhead * 1e3:g} ms per task (assumed, "
        f"not measured{suffix})"
    )


def decide(
    configs: int,
    local: CostModel,
    cluster: CostModel | None,
    *,
    address: str | None,
    assumptions: tuple[str, ...] = (),
    settings: PlannerSettings | None = None,
    unit: str = "configs",
    kind: str | None = None,
) -> ExecutorChoice:
    """THE rule of ``--executor auto``, from the costs of both executors.

    The cluster when its ``address`` is given; else the cluster when it has more than one
    worker and its predicted wall time (:func:`sweep.plan._forecast.predict_wall`) is below
    the in-process one; else in-process.

    Parameters
    ----------
    configs : int
        Configs to run (or parts to check, for the passes after a sweep: see ``unit``).
    local, cluster : CostModel
        In-process and cluster costs (``cluster`` None: not known, in-process), per config
        (or part).
    address : str or None
        A cluster address.
    assumptions : tuple of str
        What the costs assume (recorded with the choice).
    settings : PlannerSettings, optional
        The planner's targets (the batch the prediction assumes).
    unit : str, optional
        What ``configs`` counts, as the reason says it.
    kind : str, optional
        The cluster's backend (default: the one ``auto`` starts locally).

    Returns
    -------
    ExecutorChoice
        ``local`` or the cluster's backend, the reason and the predicted wall times.
    """
    settings = settings or PlannerSettings()
    kind = kind or local_cluster_kind()
    title = title_of(kind)
    t_local = predict_wall(configs, local, settings=settings).seconds
    if cluster is None:
        if address:
            return ExecutorChoice("auto", kind, address_reason(kind, address))
        return ExecutorChoice(
            "auto", LOCAL, f"{title}'s costs are not known: in-process", configs, t_local
        )
    t_cluster = predict_wall(configs, cluster, settings=settings).seconds
    p = cluster.workers
    if address:
        chosen, reason = kind, address_reason(kind, address)
    elif p > 1 and t_cluster < t_local:
        chosen = kind
        reason = (
            f"predicted {_secs(t_cluster)} on a local {title} cluster of {p} workers vs "
            f"{_secs(t_local)} in-process for {configs:,} {unit}"
        )
    else:
        chosen = LOCAL
        reason = (
            f"predicted {_secs(t_local)} in-process vs {_secs(t_cluster)} on a local {title} "
            f"cluster of {p} worker{'s' if p > 1 else ''} for {configs:,} {unit}"
        )
    return ExecutorChoice(
        "auto",
        chosen,
        reason,
        configs=configs,
        local_seconds=t_local,
        ray_seconds=t_cluster,
        ray_workers=p,
        crossover_configs=crossover(local, cluster, settings),
        assumptions=assumptions,
    )


def address_reason(kind: str, address: str) -> str:
    """Why a pass or sweep runs on a cluster it was given the address of."""
    return f"a {title_of(kind)} cluster address was given ({address})"


def choose_executor(
    plan: Plan,
    configs_left: int,
    *,
    address: str | None,
    workers: int | None,
    settings: PlannerSettings | None = None,
    kind: str | None = None,
) -> ExecutorChoice:
    """Decide where the rest of a sweep runs, from the in-process plan (:func:`decide`).

    Parameters
    ----------
    plan : Plan
        The planner's in-process plan (its measured ``b`` and ``O``).
    configs_left : int
        Configs still to run after the pilots.
    address : str or None
        A cluster address (then: that cluster).
    workers : int or None
        ``--workers`` (CPUs of the local cluster that would be started).
    settings : PlannerSettings, optional
        The planner's targets (the batch the prediction assumes).
    kind : str, optional
        The backend the address names (:func:`sweep.executors.cluster_named`).

    Returns
    -------
    ExecutorChoice
        ``local`` or a cluster's backend, the reason and the predicted wall times.
    """
    b, o = plan.per_config_seconds, plan.overhead_seconds
    if address or not (math.isfinite(b) and b > 0 and math.isfinite(o)):
        if not address:
            cluster = local_cluster_kind()
            return ExecutorChoice(
                "auto",
                LOCAL,
                f"nothing measured to predict from ({plan.source}): in-process; "
                f"pass --executor {cluster} to use {title_of(cluster)}",
                configs=configs_left,
            )
        return decide(configs_left, CostModel(1.0, 0.0), None, address=address, kind=kind)
    n_workers = local_workers(workers)
    title = title_of(local_cluster_kind())
    assumptions = (
        _assumed_costs_line(": run `sweep plan` to measure them"),
        f"{title}'s per-config cost equals the in-process one ({b * 1e3:.3g} ms, same machine)",
        f"linear scaling up to {n_workers} workers",
    )
    return decide(
        configs_left,
        CostModel(b, o),
        assumed_cluster(b, o, n_workers),
        address=None,
        assumptions=assumptions,
        settings=settings,
    )


def choose_pass_executor(parts: int, part_seconds: float, *, workers: int | None) -> ExecutorChoice:
    """Where the rest of a pass after a sweep runs (``verify``, ``report``): :func:`decide`.

    The same law as :func:`choose_executor` with a part as the unit: ``b`` is the seconds
    one part's check took here (measured on the first parts), the local cluster's start-up
    and per-task overhead are the same assumptions, and its per-part cost is the one
    measured here.

    Parameters
    ----------
    parts : int
        Parts still to check.
    part_seconds : float
        Measured seconds to check one part in this process.
    workers : int or None
        ``--workers`` (CPUs of the local cluster that would be started).

    Returns
    -------
    ExecutorChoice
        ``local`` or a cluster's backend, the reason and the predicted wall times of the part
        checks.
    """
    if not (math.isfinite(part_seconds) and part_seconds > 0) or parts <= 0:
        return ExecutorChoice(
            "auto", LOCAL, "no part left to check after the first ones: in-process", parts
        )
    n_workers = local_workers(workers)
    assumptions = (
        _assumed_costs_line(""),
        f"a part's check costs the same on a {title_of(local_cluster_kind())} worker as here "
        f"({part_seconds * 1e3:.3g} ms, same machine)",
        f"linear scaling up to {n_workers} workers",
    )
    return decide(
        parts,
        CostModel(part_seconds, 0.0),
        assumed_cluster(part_seconds, 0.0, n_workers),
        address=None,
        assumptions=assumptions,
        unit="parts",
    )


def _secs(seconds: float) -> str:
    return f"{seconds:.3g} s" if seconds < 100 else f"{seconds:,.0f} s"
