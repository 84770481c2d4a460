"""Measure the audit verdict's error rates on generated panels (the calibration harness).

A panel is either a martingale (zero-mean simple returns: no config can beat any benchmark
in expectation) or carries a planted momentum edge: each asset's return has a persistent,
zero-mean AR(1) drift that trailing-return momentum can follow, while buy-and-hold earns
nothing. Each panel goes through the whole pipeline a user runs: the sweep (kernel, metrics,
joint-bootstrap null summaries, parts on disk), the report's loader and its testing section,
and the verdict. ``benchmarks/bench_calibration.py`` runs it on hundreds of panels; a slow
test runs a small fixed-seed version.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.signal import lfilter
from scipy.stats import binomtest

from sweep.data._panels import Panel, make_panel
from sweep.report._hypothesis_tests import testing_section
from sweep.report._load import load_run
from sweep.report._oos_section import out_of_sample_section
from sweep.report._options import ReportOptions
from sweep.report._sections import (
    MultipleTestingSection,
    OutOfSampleSection,
    PBOSection,
    SweepWideTests,
)
from sweep.report._step_progress import Steps
from sweep.report._verdict import holds_out_of_sample
from sweep.runner._driver import run_sweep
from sweep.spec._models import MetricOptions, SweepSpec, build_spec
from sweep.spec._resolve import resolve
from sweep.spec._validation_spec import ValidationSpec, WalkForwardSpec

#: Daily volatility of each asset's noise.
NOISE_VOL = 0.01
#: Persistence of the planted drift (half-life of about three months of business days).
DRIFT_PHI = 0.5 ** (1 / 63)
#: The grids: (lookback start, stop, step) and (band lo, hi, count), momentum strategy.
GRIDS: dict[str, dict[str, Any]] = {
    "625": {
        "lookback": {"start": 20, "stop": 320, "step": 12},
        "band": {"linspace": [0.0, 0.02, 25]},
    },
    "10000": {
        "lookback": {"start": 20, "stop": 320, "step": 3},
        "band": {"linspace": [0.0, 0.02, 100]},
    },
}


def calibration_panel(seed: int, edge: float = 0.0, n_days: int = 6000, n_assets: int = 3) -> Panel:
    """A generated close-price panel: a martingale, or one with a planted momentum edge.

    Parameters
    ----------
    seed : int
        Seed of the generator (the same seed gives the same panel, bit for bit).
    edge : float
        Standard deviation of the planted drift, as a multiple of the noise volatility;
        0 gives a martingale.
    n_days : int
        Number of closes.
    n_assets : int
        Number of assets (independent of one another).

    Returns
    -------
    Panel
        Simple returns ``r_t = m_t + 0.01 z_t``, with ``m_t`` a zero-mean AR(1) of
        persistence :data:`DRIFT_PHI` scaled to ``edge * 0.01`` (``m_t = 0`` when ``edge`` is
        0), and closes ``100 * cumprod(1 + r)``.
    """
    rng = np.random.default_rng(seed)
    returns = NOISE_VOL * rng.standard_normal((n_days, n_assets))
    if edge > 0:
        shocks = rng.standard_normal((n_days + 500, n_assets))
        drift = lfilter([1.0], [1.0, -DRIFT_PHI], shocks, axis=0)[500:]
        returns += drift * (edge * NOISE_VOL * math.sqrt(1 - DRIFT_PHI**2))
    close = 100.0 * np.cumprod(1.0 + returns, axis=0)
    dates = pd.bdate_range("2000-01-03", periods=n_days)
    assets = tuple(f"A{i}" for i in range(n_assets))
    return make_panel(dates, assets, close, source=f"calibration panel (seed {seed})")


#: The main job's walk-forward block, used with ``walk_forward=True``.
WALK_FORWARD = WalkForwardSpec(train="3y", test="6m", purge="5d")


def calibration_spec(
    seed: int,
    grid: str = "625",
    reps: int = 200,
    benchmark: str = "buy_and_hold",
    walk_forward: bool = False,
) -> SweepSpec:
    """The spec every calibration panel is swept with (the main job's metrics).

    With ``walk_forward`` it has the main job's ``[validation] walk_forward`` block too, so
    the verdict's out-of-sample criterion is the walk-forward PSR instead of CSCV.
    """
    return build_spec(
        name=f"calibration-{grid}",
        seed=seed,
        data={"source": "synthetic"},
        strategy="momentum",
        grid=GRIDS[grid],
        metrics=MetricOptions(
            benchmark=benchmark,
            bootstrap_reps=reps,
            block_length=21,
            bootstrap_method="circular",
            pbo_blocks=16,
        ),
        validation=(ValidationSpec(walk_forward=WALK_FORWARD) if walk_forward else None),
    )


@dataclass(frozen=True)
class PanelOutcome:
    """What the pipeline concluded on one panel.

    Attributes
    ----------
    likely_real : bool
        The verdict.
    sweep_pvalue : float
        The winner's sweep-wide p-value.
    prob_oos_loss : float or None
        CSCV probability of an out-of-sample loss of the in-sample best.
    pbo : float or None
        Probability of backtest overfitting.
    winner_sharpe_ann : float
        The winner's annualised Sharpe ratio of excess returns.
    oos_psr : float or None
        PSR of the walk-forward out-of-sample excess returns (None without walk-forward).
    oos_holds : bool
        The verdict's out-of-sample criterion.
    """

    likely_real: bool
    sweep_pvalue: float
    prob_oos_loss: float | None
    pbo: float | None
    winner_sharpe_ann: float
    oos_psr: float | None = None
    oos_holds: bool = False


def judge_panel(panel: Panel, spec: SweepSpec, workdir: str | Path | None = None) -> PanelOutcome:
    """Sweep one panel into a temporary run folder and return the report's verdict.

    Parameters
    ----------
    panel : Panel
        The prices.
    spec : SweepSpec
        The sweep (see :func:`calibration_spec`).
    workdir : str or Path, optional
        Parent of the temporary run folder.

    Returns
    -------
    PanelOutcome
        The verdict and the numbers it was decided from. The report's dimensionality step
        (descriptive, not part of the verdict) is limited to 64 configs to save time.
    """
    resolved = resolve(spec, panel)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        run_sweep(resolved, Path(tmp) / "run", progress=False)
        run = load_run(Path(tmp) / "run")
        options = ReportOptions(max_return_configs=64, progress=False)
        oos, _ = out_of_sample_section(run, options, resolved)
        section, verdict, _ = testing_section(run, options, Steps(enabled=False), oos)
    if verdict is None or verdict.likely_real is None:
        raise RuntimeError("the pipeline gave no verdict on a calibration panel")
    walk = oos.walk_forward if isinstance(oos, OutOfSampleSection) else None
    psr = None if walk is None else walk.psr
    if not isinstance(section, MultipleTestingSection) or section.winner is None:
        raise RuntimeError("the pipeline found no winner on a calibration panel")
    tests = section.sweep_wide
    pbo = section.pbo if isinstance(section.pbo, PBOSection) else None
    prob_oos_loss = None if pbo is None else pbo.prob_oos_loss
    return PanelOutcome(
        likely_real=bool(verdict.likely_real),
        sweep_pvalue=float(tests.winner_pvalue)
        if isinstance(tests, SweepWideTests) and tests.winner_pvalue is not None
        else math.nan,
        prob_oos_loss=prob_oos_loss,
        pbo=None if pbo is None else pbo.pbo,
        winner_sharpe_ann=section.winner.sharpe_ann,
        oos_psr=psr,
        oos_holds=holds_out_of_sample(prob_oos_loss, psr),
    )


def best_config_sharpe(
    edge: float, grid: str = "625", n_days: int = 200_000, seed: int = 1
) -> float:
    """The grid's best annualised excess Sharpe on one very long panel (its true edge).

    With ``n_days`` of 200,000 a config's Sharpe has a standard error of about 0.036
    annualised, so this measures the strength of the planted edge, not selection luck.
    """
    spec = calibration_spec(seed, grid, reps=0)
    resolved = resolve(spec, calibration_panel(seed, edge, n_days))
    with tempfile.TemporaryDirectory() as tmp:
        run_sweep(resolved, Path(tmp) / "run", progress=False)
        results = load_run(Path(tmp) / "run").results
    return float(results["excess_sharpe_ann"].max())


def rate_interval(hits: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) confidence interval of a binomial proportion."""
    ci = binomtest(hits, trials).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)
