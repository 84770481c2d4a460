"""The spec's ``[validation]`` section: walk-forward and CPCV folds, checked before a run.

::

    [validation]
    metric = "sharpe"     # what picks each fold's in-sample best: "sharpe" or "mean" of the
                          # excess returns over the spec's benchmark
    walk_forward = { train = "3y", test = "6m", anchored = false, purge = "5d", embargo = "0d" }
    cpcv = { groups = 10, test_groups = 2, purge = "5d", embargo = "1d" }

Lengths are periods (an integer) or calendar units converted with
``metrics.periods_per_year`` (ppy): ``"3y"`` = 3 ppy periods, ``"6m"`` = ppy / 2,
``"2w"`` = 2 ppy / 52, ``"5d"`` = 5 periods (one period a trading day), rounded to the
nearest period. Folds that do not fit the data are refused when the spec is resolved.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from stats import FoldPlan, cpcv_folds, walk_forward_folds
from sweep.errors import SpecError, StatsInputError

Length = int | str
_UNITS = {"y": 1.0, "m": 1.0 / 12.0, "w": 1.0 / 52.0}
_LENGTH = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([ymwd])\s*$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class WalkForwardSpec(_Model):
    """Walk-forward: fit on ``train``, test on the next ``test``, roll (or grow) by ``test``."""

    train: Length
    test: Length
    anchored: bool = False
    purge: Length = 0
    embargo: Length = 0


class CpcvSpec(_Model):
    """Combinatorial purged cross-validation over ``groups`` contiguous groups."""

    groups: int = Field(ge=2, le=30)
    test_groups: int = Field(ge=1)
    purge: Length = 0
    embargo: Length = 0


class ValidationSpec(_Model):
    """Out-of-sample validation of the rule "pick the in-sample best config"."""

    metric: Literal["sharpe", "mean"] = "sharpe"
    walk_forward: WalkForwardSpec | None = None
    cpcv: CpcvSpec | None = None


def periods(value: Length, periods_per_year: float, where: str) -> int:
    """A length in periods: an integer as given, or ``"3y"``/``"6m"``/``"2w"``/``"5d"``.

    Raises
    ------
    SpecError
        For a negative number or text that is not a number and a unit.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise SpecError(f"{where}: expected a length >= 0, got {value}")
        return value
    match = _LENGTH.match(str(value))
    if not match:
        raise SpecError(
            f"{where}: expected periods (an integer) or a number with a unit y, m, w or d "
            f"(e.g. '3y', '6m', '5d'), got {value!r}"
        )
    amount, unit = float(match.group(1)), match.group(2)
    return round(amount) if unit == "d" else round(amount * _UNITS[unit] * periods_per_year)


def fold_plan(
    validation: ValidationSpec | None, n_returns: int, periods_per_year: float
) -> FoldPlan | None:
    """The folds a spec's ``[validation]`` asks for on ``n_returns`` periods (None if none).

    Raises
    ------
    SpecError
        Naming the option, when the folds do not fit the data.
    """
    if validation is None or (validation.walk_forward is None and validation.cpcv is None):
        return None
    folds = []
    if (wf := validation.walk_forward) is not None:
        where = "validation.walk_forward"
        try:
            folds += walk_forward_folds(
                n_returns,
                periods(wf.train, periods_per_year, f"{where}.train"),
                periods(wf.test, periods_per_year, f"{where}.test"),
                anchored=wf.anchored,
                purge=periods(wf.purge, periods_per_year, f"{where}.purge"),
            )
        except StatsInputError as exc:
            raise SpecError(f"validation.{exc}") from exc
        periods(wf.embargo, periods_per_year, f"{where}.embargo")  # checked, has no effect
    if (cv := validation.cpcv) is not None:
        where = "validation.cpcv"
        try:
            folds += cpcv_folds(
                n_returns,
                cv.groups,
                cv.test_groups,
                purge=periods(cv.purge, periods_per_year, f"{where}.purge"),
                embargo=periods(cv.embargo, periods_per_year, f"{where}.embargo"),
            )
        except StatsInputError as exc:
            raise SpecError(f"validation.{exc}") from exc
    return FoldPlan.from_folds(folds)
