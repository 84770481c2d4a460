"""``--executor auto``: in-process or Ray, whichever is predicted to finish first.

The rule (:func:`choose_executor`): with a cluster address (``--address`` or
``RAY_ADDRESS``) the sweep runs on Ray. Without one, the driver first plans in-process (the
planner's warm-up and pilots measure ``b`` and ``O`` there; their results are kept), then
predicts the rest of the sweep both ways with :func:`sweep._forecast.predict_wall`:
in-process from the measured costs, and on a local Ray cluster of ``workers`` CPUs from the
same ``b`` (same machine), an assumed start-up :data:`RAY_STARTUP_SECONDS` and per-task
overhead :data:`RAY_TASK_OVERHEAD_SECONDS`, with linear scaling. Starting Ray only to measure
it would cost more than most sweeps that run in-process, so these are assumptions, recorded
as such with the choice; ``sweep plan`` measures them on the actual cluster.
"""

from __future__ import annotations

import math
import os

from sweep._forecast import CostModel, Scaling, crossover, predict_wall
from sweep._planner import PlannerSettings
from sweep._record import ExecutorChoice, Plan

#: Assumed start-up of a local Ray cluster before the first batch runs: ``ray.init``, the
#: worker processes, their imports and compiled kernels, and the planner's probes (a 2-core
#: machine measured 6-9 s with ``sweep plan``).
RAY_STARTUP_SECONDS = 6.0
#: Assumed per-task overhead on a local Ray cluster (transport and scheduling; ``sweep plan``
#: and ``sweep bench overhead`` measured 2-10 ms on a 2-core machine).
RAY_TASK_OVERHEAD_SECONDS = 0.01


def local_workers(requested: int | None) -> int:
    """CPUs a local Ray cluster would use: ``--workers``, else this machine's CPU count."""
    return requested or os.cpu_count() or 1


def choose_executor(
    plan: Plan,
    configs_left: int,
    *,
    address: str | None,
    workers: int | None,
    settings: PlannerSettings | None = None,
) -> ExecutorChoice:
    """Decide where the rest of a sweep runs, from the in-process plan.

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
    if address:
        return ExecutorChoice(
            "auto", "ray", f"a Ray cluster address was given ({address}): the sweep runs there"
        )
    b, o = plan.per_config_seconds, plan.overhead_seconds
    if not (math.isfinite(b) and b > 0 and math.isfinite(o)):
        return ExecutorChoice(
            "auto",
            "local",
            f"nothing measured to predict from ({plan.source}): in-process; "
            "pass --executor ray to use Ray",
            configs=configs_left,
        )
    n_workers = local_workers(workers)
    local = CostModel(b, o)
    ray = CostModel(
        b,
        max(o, RAY_TASK_OVERHEAD_SECONDS),
        RAY_STARTUP_SECONDS,
        n_workers,
        Scaling(),
    )
    t_local = predict_wall(configs_left, local, settings=settings).seconds
    t_ray = predict_wall(configs_left, ray, settings=settings).seconds
    cross = crossover(local, ray, settings)
    assumptions = (
        f"Ray start-up {RAY_STARTUP_SECONDS:g} s and {RAY_TASK_OVERHEAD_SECONDS * 1e3:g} ms per "
        "task (assumed, not measured: run `sweep plan` to measure them)",
        f"Ray's per-config cost equals the in-process one ({b * 1e3:.3g} ms, same machine)",
        f"linear scaling up to {n_workers} workers",
    )
    if n_workers > 1 and t_ray < t_local:
        chosen = "ray"
        reason = (
            f"predicted {_secs(t_ray)} on a local Ray cluster of {n_workers} workers vs "
            f"{_secs(t_local)} in-process for the {configs_left:,} configs left"
        )
    else:
        chosen = "local"
        reason = (
            f"predicted {_secs(t_local)} in-process vs {_secs(t_ray)} on a local Ray cluster "
            f"of {n_workers} worker{'s' if n_workers > 1 else ''} for the {configs_left:,} "
            "configs left"
        )
    return ExecutorChoice(
        "auto",
        chosen,
        reason,
        configs=configs_left,
        local_seconds=t_local,
        ray_seconds=t_ray,
        ray_workers=n_workers,
        crossover_configs=cross,
        assumptions=assumptions,
    )


def _secs(seconds: float) -> str:
    return f"{seconds:.3g} s" if seconds < 100 else f"{seconds:,.0f} s"
