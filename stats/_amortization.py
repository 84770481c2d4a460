"""The amortization law of batching: S(B) = B(O + a)/(O + bB), and its fit to timings."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from stats._fixed_math import small_least_squares
from stats._validation import FloatArray, as_float, as_float_array, input_error


@dataclass(frozen=True)
class AmortizationLaw:
    r"""Cost model of running configs in batches: a task of B configs costs ``O + bB``.

    Run one per task, B configs cost ``B(O + a)``; ``a`` (the per-call marginal) defaults
    to ``b``, the law of [1]_.

    Attributes
    ----------
    overhead : float
        Fixed cost O per task (scheduling, argument and result transport), in seconds or
        any unit shared with ``marginal``.
    marginal : float
        Cost b of one config inside a batch.
    per_call_marginal : float or None
        Cost a of one config run alone, on top of O; ``None`` means ``a = b``.

    Notes
    -----
    Everything depends on the ratio ``O/b`` only (and ``a/b``): the speedup
    :math:`S(B) = B(O+a)/(O+bB)` rises from ``(O+a)/(O+b)`` at B = 1 towards the ceiling
    ``(O + a)/b`` (``1 + O/b`` when ``a = b``); the ridge, where overhead equals useful work
    in a batch, is at ``B = O/b``; the batch reaching a fraction f of the ceiling is
    ``B*(f) = fO/(b(1 - f))``, free of ``a``. It is Amdahl's law in the batch size and the
    roofline ridge drawn along the batch axis [1]_ [2]_ [3]_.

    References
    ----------
    .. [1] Seed 000 of this project, "The amortization law" (closed form, calibration
       O = 3,605,000, b = 150,000 op counts).
    .. [2] Amdahl, G. M. (1967). "Validity of the single processor approach to achieving
       large scale computing capabilities". AFIPS Conference Proceedings 30, 483-485.
    .. [3] Williams, S., Waterman, A. and Patterson, D. (2009). "Roofline: an insightful
       visual performance model for multicore architectures". Communications of the ACM
       52(4), 65-76.
    """

    overhead: float
    marginal: float
    per_call_marginal: float | None = None

    def __post_init__(self) -> None:
        """Refuse a negative overhead or a non-positive marginal cost."""
        if not self.overhead >= 0:
            raise input_error(f"overhead: expected a non-negative cost, got {self.overhead!r}")
        if not self.marginal > 0:
            raise input_error(f"marginal: expected a positive cost, got {self.marginal!r}")
        if self.per_call_marginal is not None and not self.per_call_marginal >= 0:
            raise input_error(
                f"per_call_marginal: expected a non-negative cost, got {self.per_call_marginal!r}"
            )

    @property
    def _a(self) -> float:
        return self.marginal if self.per_call_marginal is None else self.per_call_marginal

    @property
    def ceiling(self) -> float:
        """Limit of the speedup as B grows: ``(O + a)/b`` (``1 + O/b`` when ``a = b``)."""
        return (self.overhead + self._a) / self.marginal

    @property
    def ridge(self) -> float:
        """Batch size where a batch's overhead equals its useful work: ``O/b``."""
        return self.overhead / self.marginal

    def batched_cost(self, batch: ArrayLike) -> FloatArray:
        """Cost of one task of B configs, ``O + bB``."""
        b = _batch("batch", batch)
        out: FloatArray = self.overhead + self.marginal * b
        return out

    def per_call_cost(self, batch: ArrayLike) -> FloatArray:
        """Cost of B configs run one per task, ``B(O + a)``."""
        b = _batch("batch", batch)
        out: FloatArray = b * (self.overhead + self._a)
        return out

    def speedup(self, batch: ArrayLike) -> FloatArray:
        """Speedup of one batch of B over B single calls, ``B(O + a)/(O + bB)``."""
        return self.per_call_cost(batch) / self.batched_cost(batch)

    def fraction_of_ceiling(self, batch: ArrayLike) -> FloatArray:
        """``S(B)`` over its ceiling, ``bB/(O + bB)`` (equal to :meth:`useful_share`)."""
        return self.useful_share(batch)

    def overhead_share(self, batch: ArrayLike) -> FloatArray:
        """Share of a batched task's cost that is overhead, ``O/(O + bB)``."""
        return self.overhead / self.batched_cost(batch)

    def useful_share(self, batch: ArrayLike) -> FloatArray:
        """Share of a batched task's cost that is useful work, ``bB/(O + bB)``."""
        b = _batch("batch", batch)
        return self.marginal * b / self.batched_cost(b)

    def batch_for_fraction(self, fraction: float) -> float:
        """Batch size reaching a fraction f of the ceiling, ``fO/(b(1 - f))``."""
        f = as_float("fraction", fraction)
        if not 0.0 < f < 1.0:
            raise input_error(f"fraction: expected a number in (0, 1), got {fraction!r}")
        return f * self.overhead / (self.marginal * (1.0 - f))


def _batch(name: str, batch: ArrayLike) -> FloatArray:
    b = as_float_array(name, batch)
    if bool(np.any(b <= 0)):
        raise input_error(f"{name}: expected positive batch sizes, got min {float(b.min())}")
    return b


@dataclass(frozen=True)
class AmortizationFit:
    """Least-squares fit of the amortization law to measured task timings.

    Attributes
    ----------
    overhead : float
        Fitted fixed cost O per task.
    marginal : float
        Fitted cost b per config in a batch.
    per_call_marginal : float or None
        Fitted cost a per config run alone (only when per-call timings were given).
    r_squared : float
        Coefficient of determination over all timings fitted.
    residuals : ndarray of float64
        Measured minus fitted cost, batched timings first, then per-call ones.
    n_points : int
        Number of timings fitted.
    law : AmortizationLaw
        The fitted law (``marginal`` must come out positive; a negative fitted overhead
        or per-call marginal, possible with noisy timings, is clamped to 0 here).
    """

    overhead: float
    marginal: float
    per_call_marginal: float | None
    r_squared: float
    residuals: FloatArray
    n_points: int
    law: AmortizationLaw


def fit_amortization(
    batch_sizes: ArrayLike,
    seconds: ArrayLike,
    *,
    per_call_seconds: ArrayLike | None = None,
) -> AmortizationFit:
    """Fit ``T_task = O + bB`` (and ``O + a`` per single call) by ordinary least squares.

    Parameters
    ----------
    batch_sizes : array_like, shape (k,)
        Configs per task B, at least two distinct values.
    seconds : array_like, shape (k,)
        Measured duration (or any cost) of each of those tasks.
    per_call_seconds : array_like, optional
        Durations of tasks that ran ONE config each in per-call mode, modelled as
        ``O + a``; fitted jointly with the batched timings to give ``a``.

    Returns
    -------
    AmortizationFit

    Raises
    ------
    StatsInputError
        On mismatched lengths, fewer than two distinct batch sizes, or a fitted marginal
        cost that is not positive.

    Notes
    -----
    Unweighted least squares on the task durations (not on the speedup curve): long
    tasks carry more absolute noise and so more weight; fit medians per B if outliers
    (GC pauses, cold starts) dominate. Costs on the op-count calibration of seed 000
    (``O + bB`` for B = 1..61) are recovered exactly, with ``O/b = 24.03``.

    References
    ----------
    .. [1] Seed 000 of this project, "The amortization law", section "Fitting the law back
       out".
    """
    b = _batch("batch_sizes", batch_sizes)
    y = as_float_array("seconds", seconds)
    if b.ndim != 1 or y.shape != b.shape:
        raise input_error(
            f"seconds: expected a 1-D array matching batch_sizes {b.shape}, got {y.shape}"
        )
    if len(np.unique(b)) < 2:
        raise input_error(
            f"batch_sizes: expected at least 2 distinct batch sizes, got {np.unique(b).tolist()}"
        )
    rows = [np.column_stack([np.ones_like(b), b])]
    target = [y]
    if per_call_seconds is not None:
        pc = as_float_array("per_call_seconds", per_call_seconds)
        if pc.ndim != 1 or len(pc) == 0:
            raise input_error(
                f"per_call_seconds: expected a non-empty 1-D array, got shape {pc.shape}"
            )
        rows = [np.column_stack([rows[0], np.zeros_like(b)])]
        rows.append(np.column_stack([np.ones_like(pc), np.zeros_like(pc), np.ones_like(pc)]))
        target.append(pc)
    design = np.vstack(rows)
    observed = np.concatenate(target)
    coef = small_least_squares(design, observed)  # no LAPACK: same bits on any CPU
    fitted = design[:, 0] * coef[0]
    for j in range(1, design.shape[1]):
        fitted = fitted + design[:, j] * coef[j]
    residuals = observed - fitted
    ss_tot = float(((observed - observed.mean()) ** 2).sum())
    ss_res = float((residuals**2).sum())
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    overhead, marginal = float(coef[0]), float(coef[1])
    a = float(coef[2]) if per_call_seconds is not None else None
    if not marginal > 0:
        raise input_error(
            f"seconds: expected durations that grow with batch size, got a fitted marginal "
            f"cost b = {marginal:g}"
        )
    law = AmortizationLaw(
        overhead=max(overhead, 0.0),
        marginal=marginal,
        per_call_marginal=None if a is None else max(a, 0.0),
    )
    return AmortizationFit(
        overhead=overhead,
        marginal=marginal,
        per_call_marginal=a,
        r_squared=r2,
        residuals=residuals,
        n_points=len(observed),
        law=law,
    )
