"""``--executor auto``: in-process or Ray, whichever is predicted to finish first.

The rule (:func:`choose_executor`): with a cluster address (``--address`` or
``RAY_ADDRESS``) the sweep runs on Ray. Without one, the driver first plans in-process (the
planner's warm-up and pilots measure ``b`` and ``O`` there; their results are kept), then
predicts the rest of the sweep both ways with :func:`sweep.plan._forecast.predict_wall`:
in-process from the measured costs, and on a local Ray cluster of ``workers`` CPUs from the
same ``b`` (same machine), an assumed start-up :data:`RAY_STARTUP_SECONDS` and per-task
overhead :data:`RAY_TASK_OVERHEAD_SECONDS`, with linear scaling. Starting Ray only to measure
it would cost more than most sweeps that run in-process, so these are assumptions, recorded
as such with the choice; ``sweep plan`` measures them on the actual cluster.
"""

from __future__ import annotations

import math
import os

from sweep.plan._forecast import CostModel, crossover, predict_wall
from sweep.plan._planner import PlannerSettings
from sweep.store._record import ExecutorChoice, Plan

#: Assumed start-up of a local Ray cluster before the first batch runs: ``ray.init``, the
#: worker processes, their imports and compiled kernels, and the planner's pilots. On the
#: 2-core development machine ``ray.init`` alone took 8.4-10.8 s (``bench_plan.py``) and
#: issue 15 measured the main job at 15.6 s on a fresh local cluster vs about 2.5 s on a warm
#: one (3.7 s in-process / 1.46-1.60x), i.e. about 13 s of start-up.
RAY_STARTUP_SECONDS = 12.0
#: Assumed per-task overhead on a local Ray cluster (transport and scheduling; ``sweep plan``
#: and ``sweep bench overhead`` measured 2-10 ms on a 2-core machine).
RAY_TASK_OVERHEAD_SECONDS = 0.01


def local_workers(requested: int | None) -> int:
    """CPUs a local Ray cluster would use: ``--workers``, else this machine's CPU count."""
    return requested or os.cpu_count() or 1


def decide(
    configs: int,
    local: CostModel,
    ray: CostModel | None,
    *,
    address: str | None,
    assumptions: tuple[str, ...] = (),
    settings: PlannerSettings | None = None,
    unit: str = "configs",
) -> ExecutorChoice:
    """THE rule of ``--executor auto``, from the costs of both executors.

    Ray when a cluster ``address`` is given; else Ray when it has more than one worker and
    its predicted wall time (:func:`sweep.plan._forecast.predict_wall`) is below the in-process
    one; else in-process.

    Parameters
    ----------
    configs : int
        Configs to run (or parts to check, for the passes after a sweep: see ``unit``).
    local, ray : CostModel
        In-process and Ray costs (``ray`` None: not known, in-process), per config (or
        part).
    address : str or None
        A Ray cluster address.
    assumptions : tuple of str
        What the costs assume (recorded with the choice).
    settings : PlannerSettings, optional
        The planner's targets (the batch the prediction assumes).
    unit : str, optional
        What ``configs`` counts, as the reason says it.

    Returns
    -------
    ExecutorChoice
        ``local`` or ``ray``, the reason and the predicted wall times.
    """
    settings = settings or PlannerSettings()
    t_local = predict_wall(configs, local, settings=settings).seconds
    if ray is None:
        if address:
            return ExecutorChoice("auto", "ray", f"a Ray cluster address was given ({address})")
        return ExecutorChoice(
            "auto", "local", "Ray's costs are not known: in-process", configs, t_local
        )
    t_ray = predict_wall(configs, ray, settings=settings).seconds
    p = ray.workers
    if address:
        chosen, reason = "ray", f"a Ray cluster address was given ({address})"
    elif p > 1 and t_ray < t_local:
        chosen = "ray"
        reason = (
            f"predicted {_secs(t_ray)} on a local Ray cluster of {p} workers vs "
            f"{_secs(t_local)} in-process for {configs:,} {unit}"
        )
    else:
        chosen = "local"
        reason = (
            f"predicted {_secs(t_local)} in-process vs {_secs(t_ray)} on a local Ray cluster "
            f"of {p} worker{'s' if p > 1 else ''} for {configs:,} {unit}"
        )
    return ExecutorChoice(
        "auto",
        chosen,
        reason,
        configs=configs,
        local_seconds=t_local,
        ray_seconds=t_ray,
        ray_workers=p,
        crossover_configs=crossover(local, ray, settings),
        assumptions=assumptions,
    )


def choose_executor(
    plan: Plan,
    configs_left: int,
    *,
    address: str | None,
    workers: int | None,
    settings: PlannerSettings | None = None,
) -> ExecutorChoice:
    """Decide where the rest of a sweep runs, from the in-process plan (:func:`decide`).

    Parameters
    ----------
    plan : Plan
        The planner's in-process plan (its measured ``b`` and ``O``).
    configs_left : int
        Configs still to run after the pilots.
    address : str or None
        A Ray cluster address (then: Ray).
    workers : int or None
        ``--workers`` (CPUs of the local Ray cluster that would be started).
    settings : PlannerSettings, optional
        The planner's targets (the batch the prediction assumes).

    Returns
    -------
    ExecutorChoice
        ``local`` or ``ray``, the reason and the predicted wall times.
    """
    b, o = plan.per_config_seconds, plan.overhead_seconds
    if address or not (math.isfinite(b) and b > 0 and math.isfinite(o)):
        if not address:
            return ExecutorChoice(
                "auto",
                "local",
                f"nothing measured to predict from ({plan.source}): in-process; "
                "pass --executor ray to use Ray",
                configs=configs_left,
            )
        return decide(configs_left, CostModel(1.0, 0.0), None, address=address)
    n_workers = local_workers(workers)
    ray = CostModel(b, max(o, RAY_TASK_OVERHEAD_SECONDS), RAY_STARTUP_SECONDS, n_workers)
    assumptions = (
        f"Ray start-up {RAY_STARTUP_SECONDS:g} s and {RAY_TASK_OVERHEAD_SECONDS * 1e3:g} ms per "
        "task (assumed, not measured: run `sweep plan` to measure them)",
        f"Ray's per-config cost equals the in-process one ({b * 1e3:.3g} ms, same machine)",
        f"linear scaling up to {n_workers} workers",
    )
    return decide(
        configs_left,
        CostModel(b, o),
        ray,
        address=None,
        assumptions=assumptions,
        settings=settings,
    )


def choose_pass_executor(parts: int, part_seconds: float, *, workers: int | None) -> ExecutorChoice:
    """Where the rest of a pass after a sweep runs (``verify``, ``report``): :func:`decide`.

    The same law as :func:`choose_executor` with a part as the unit: ``b`` is the seconds
    one part's check took here (measured on the first parts), Ray's start-up and per-task
    overhead are the same assumptions, and its per-part cost is the one measured here.

    Parameters
    ----------
    parts : int
        Parts still to check.
    part_seconds : float
        Measured seconds to check one part in this process.
    workers : int or None
        ``--workers`` (CPUs of the local Ray cluster that would be started).

    Returns
    -------
    ExecutorChoice
        ``local`` or ``ray``, the reason and the predicted wall times of the part checks.
    """
    if not (math.isfinite(part_seconds) and part_seconds > 0) or parts <= 0:
        return ExecutorChoice(
            "auto", "local", "no part left to check after the first ones: in-process", parts
        )
    n_workers = local_workers(workers)
    ray = CostModel(part_seconds, RAY_TASK_OVERHEAD_SECONDS, RAY_STARTUP_SECONDS, n_workers)
    assumptions = (
        f"Ray start-up {RAY_STARTUP_SECONDS:g} s and {RAY_TASK_OVERHEAD_SECONDS * 1e3:g} ms per "
        "task (assumed, not measured)",
        f"a part's check costs the same on a Ray worker as here ({part_seconds * 1e3:.3g} ms, "
        "same machine)",
        f"linear scaling up to {n_workers} workers",
    )
    return decide(
        parts,
        CostModel(part_seconds, 0.0),
        ray,
        address=None,
        assumptions=assumptions,
        unit="parts",
    )


def _secs(seconds: float) -> str:
    return f"{seconds:.3g} s" if seconds < 100 else f"{seconds:,.0f} s"
