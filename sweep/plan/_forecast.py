"""Predicted wall time of a sweep on an executor, and the crossover between executors.

Pure functions of measured costs (no I/O, no Ray): ``sweep plan`` and ``--executor auto``
measure the inputs, this module turns them into predictions.

The model is the amortization law of the design (``T_task = O + b B``) with the planner's
own batch choice, plus a fixed start-up and the cluster's scaling:

* batch ``B``: :func:`sweep.plan._planner.clamp_batch` of ``B*(f) = f O / (b (1 - f))`` for the
  ``n`` configs and ``p`` workers (the batch the driver would choose);
* worker-seconds ``W = ceil(n / B) O + n b`` (every task pays ``O``, every config ``b``);
* wall time ``T(n, p) = S + W / C(p)``, where ``S`` is the start-up (a local Ray cluster's
  start, the warm-up and the overhead probes; about 0 in-process) and ``C(p)`` the relative
  capacity of ``p`` workers: the Universal Scalability Law
  ``C(p) = p / (1 + sigma (p - 1) + kappa p (p - 1))`` when a ``sweep bench scaling`` fit
  exists, else ``C(p) = p`` (linear scaling, stated as an assumption).

The crossover is the smallest grid size ``n`` for which the Ray prediction is below the
in-process one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from stats import AmortizationLaw
from sweep.common._serial import JSONRecord
from sweep.plan._planner import PlannerSettings, clamp_batch

#: Largest grid the crossover search considers (beyond: "Ray never wins").
CROSSOVER_LIMIT = 10**12


@dataclass(frozen=True)
class Scaling:
    """Relative capacity ``C(p)`` of ``p`` workers.

    Attributes
    ----------
    sigma, kappa : float
        USL contention and coherency (0 and 0: linear scaling).
    source : str
        Where they come from, in words (``"assumed linear"`` or the bench file).
    """

    sigma: float = 0.0
    kappa: float = 0.0
    source: str = "assumed: linear scaling (no `sweep bench scaling` result)"

    def capacity(self, workers: int) -> float:
        """``p / (1 + sigma (p - 1) + kappa p (p - 1))`` (``p`` when linear)."""
        p = float(workers)
        return p / (1.0 + self.sigma * (p - 1.0) + self.kappa * p * (p - 1.0))

    @property
    def linear(self) -> bool:
        """Whether this is the linear assumption."""
        return self.sigma == 0.0 and self.kappa == 0.0


@dataclass(frozen=True)
class CostModel:
    """The measured (or assumed) costs of one executor.

    Attributes
    ----------
    per_config_seconds : float
        ``b``: one config's compute on one worker.
    overhead_seconds : float
        ``O``: per task (transport, fixed in-task cost, the driver's part write).
    startup_seconds : float
        ``S``: paid once (cluster start, warm-up, overhead probes).
    workers : int
        Workers available (``p`` at most this).
    scaling : Scaling
        ``C(p)``.
    """

    per_config_seconds: float
    overhead_seconds: float
    startup_seconds: float = 0.0
    workers: int = 1
    scaling: Scaling = Scaling()

    def __post_init__(self) -> None:
        if not (self.per_config_seconds > 0 and math.isfinite(self.per_config_seconds)):
            raise ValueError(f"per_config_seconds: expected > 0, got {self.per_config_seconds!r}")
        if not (self.overhead_seconds >= 0 and math.isfinite(self.overhead_seconds)):
            raise ValueError(f"overhead_seconds: expected >= 0, got {self.overhead_seconds!r}")
        if not (self.startup_seconds >= 0 and math.isfinite(self.startup_seconds)):
            raise ValueError(f"startup_seconds: expected >= 0, got {self.startup_seconds!r}")
        if self.workers < 1:
            raise ValueError(f"workers: expected >= 1, got {self.workers}")


@dataclass(frozen=True)
class WallPrediction(JSONRecord):
    """The predicted run of ``configs`` configs on ``workers`` workers (JSON: its fields)."""

    configs: int
    workers: int
    batch_size: int
    tasks: int
    worker_seconds: float
    capacity: float
    seconds: float


def predict_wall(
    configs: int,
    model: CostModel,
    workers: int | None = None,
    settings: PlannerSettings | None = None,
) -> WallPrediction:
    """Predict the wall time of a sweep (see the module docstring for the model).

    Parameters
    ----------
    configs : int
        Configs to run (``n >= 0``).
    model : CostModel
        The executor's costs.
    workers : int, optional
        ``p`` (default: all of ``model.workers``).
    settings : PlannerSettings, optional
        The planner's targets (the batch choice; default :class:`PlannerSettings()`).

    Returns
    -------
    WallPrediction
        Batch size, tasks, worker-seconds, ``C(p)`` and wall seconds.
    """
    settings = settings or PlannerSettings()
    p = model.workers if workers is None else workers
    if not 1 <= p <= model.workers:
        raise ValueError(f"workers: expected 1..{model.workers}, got {p}")
    if configs <= 0:
        return WallPrediction(0, p, 0, 0, 0.0, model.scaling.capacity(p), 0.0)
    b, o = model.per_config_seconds, model.overhead_seconds
    law = AmortizationLaw(o, b).batch_for_fraction(settings.target_efficiency) if o else 1.0
    batch, _ = clamp_batch(law, configs, p, b, settings)
    tasks = math.ceil(configs / batch)
    work = tasks * o + configs * b
    capacity = model.scaling.capacity(p)
    return WallPrediction(
        configs, p, batch, tasks, work, capacity, model.startup_seconds + work / capacity
    )


def crossover(
    local: CostModel,
    cluster: CostModel,
    settings: PlannerSettings | None = None,
) -> int | None:
    """The smallest grid size at which a cluster (all its workers) is predicted to win.

    Parameters
    ----------
    local, cluster : CostModel
        In-process and the cluster's costs.
    settings : PlannerSettings, optional
        The planner's targets (default :class:`PlannerSettings()`).

    Returns
    -------
    int or None
        ``n`` such that ``predict_wall(n, cluster) < predict_wall(n, local)`` and not at
        ``n - 1`` on the bisection below (doubling from 1, then bisecting); None when the
        cluster is not faster even at :data:`CROSSOVER_LIMIT` configs.
    """

    def cluster_wins(n: int) -> bool:
        return predict_wall(n, cluster, settings=settings).seconds < (
            predict_wall(n, local, settings=settings).seconds
        )

    hi = 1
    while not cluster_wins(hi):
        if hi >= CROSSOVER_LIMIT:
            return None
        hi = min(hi * 2, CROSSOVER_LIMIT)
    lo = hi // 2  # the cluster does not win at lo (or lo == 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if cluster_wins(mid):
            hi = mid
        else:
            lo = mid
    return hi
