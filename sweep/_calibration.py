"""Measure the audit verdict's error rates on generated panels (the calibration harness).

A panel comes from a *family* (:data:`FAMILIES`): a way of generating prices under which no
config of the family's grid beats the family's benchmark in expectation (the null), plus,
for the power rows, a planted momentum edge: each asset's return gets a persistent,
zero-mean AR(1) drift that trend-following can follow. The families:

- ``martingale``: independent zero-mean simple returns, constant volatility (the easy null);
- ``garch_t4``: volatility clustering, GARCH(1,1) of persistence 0.98 with Student-t(4)
  innovations;
- ``regime``: volatility doubling for the middle third of the sample;
- ``drift_corr``: positive drift (an annualised Sharpe of about 0.63 per asset) and
  cross-correlation 0.6, against buy-and-hold (whose own Sharpe is then high, as in equity
  data): a long/short book earns less than the benchmark in expectation;
- ``listings``: ten assets, six of them listed or delisted inside the sample, swept with the
  position strategy ``xs_momentum``;
- ``sma_cross``: one asset with positive drift through the long-only ``sma_cross``, whose
  excess over buy-and-hold is negative in expectation (it is out of the market some of the
  time);
- ``defaults``: martingale panels swept with the metrics a spec gets when it names no
  ``[metrics]`` (benchmark ``"zero"``, B = 200, circular blocks of 21).

Each panel goes through the whole pipeline a user runs: the sweep (kernel, metrics,
joint-bootstrap null summaries, parts on disk), the report's loader and its testing section,
and the verdict. ``benchmarks/bench_calibration.py`` runs it on hundreds of panels; a slow
test runs a small fixed-seed version.

Generators follow invariant 8 (same bits on any machine): normal draws from numpy's
``Generator``, Student-t(4) built from five normals (``z / sqrt(chi2_4 / 4)``), the
correlation as a one-factor sum, GARCH as an elementwise recursion; no BLAS, no
CPU-dispatched transcendental.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, NotRequired, TypedDict

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.signal import lfilter
from scipy.stats import binomtest

from sweep.data._benchmark import benchmark_returns
from sweep.data._panels import Panel, make_panel
from sweep.engine._evaluate import config_returns
from sweep.report._hypothesis_tests import testing_section
from sweep.report._load import load_run, scan_settings
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
from sweep.store._results import load_results

#: Daily volatility of each asset's noise (unconditional, for the GARCH family).
NOISE_VOL = 0.01
#: Persistence of the planted drift (half-life of about three months of business days).
DRIFT_PHI = 0.5 ** (1 / 63)
#: GARCH(1,1) of the ``garch_t4`` family: ``h' = (1 - a - b) + a eps^2 + b h``, a + b = 0.98.
GARCH_ALPHA = 0.08
GARCH_BETA = 0.90
#: Daily mean simple return of the drifting families (annualised Sharpe 0.0004/0.01*sqrt(252)).
EQUITY_DRIFT = 0.0004
#: Assets of the ``listings`` family listed from the first to the last date.
LISTED_THROUGHOUT = 4
#: Noise is clipped symmetrically here (a heavy-tailed draw cannot take a price below 0;
#: symmetric clipping of a symmetric shock keeps its conditional mean at 0).
MAX_SHOCK = 0.5


class RangeAxis(TypedDict):
    """A grid axis ``{start, stop, step}`` (stop excluded), as a spec holds it."""

    start: int
    stop: int
    step: NotRequired[int]


class LinspaceAxis(TypedDict):
    """A grid axis ``{linspace = [lo, hi, count]}``, as a spec holds it."""

    linspace: list[float]


#: A grid as a spec holds it: axes by name, lists of values, and ``where`` constraints.
GridDefinition = dict[str, RangeAxis | LinspaceAxis | list[int] | list[str]]

#: The grids: ``625`` and ``10000`` for ``momentum`` (lookback x band), ``xs`` for
#: ``xs_momentum`` (lookback x top_k x skip), ``sma`` for ``sma_cross`` (fast < slow).
GRIDS: dict[str, GridDefinition] = {
    "625": {
        "lookback": {"start": 20, "stop": 320, "step": 12},
        "band": {"linspace": [0.0, 0.02, 25]},
    },
    "10000": {
        "lookback": {"start": 20, "stop": 320, "step": 3},
        "band": {"linspace": [0.0, 0.02, 100]},
    },
    "xs": {
        "lookback": {"start": 20, "stop": 320, "step": 12},
        "top_k": [1, 2, 3],
        "skip": [0, 21],
    },
    "sma": {
        "fast": {"start": 5, "stop": 105, "step": 4},
        "slow": {"start": 20, "stop": 320, "step": 12},
        "where": ["fast < slow"],
    },
}

Volatility = Literal["constant", "garch", "regime"]
Innovations = Literal["normal", "t4"]


@dataclass(frozen=True)
class Family:
    """A null family of generated panels and how they are swept.

    Attributes
    ----------
    name : str
        Key in :data:`FAMILIES`.
    null : str
        Why no config beats the benchmark in expectation on these panels.
    strategy : str
        The built-in strategy swept.
    grid : str
        Key in :data:`GRIDS`.
    benchmark : str or None
        ``[metrics] benchmark``; None: the spec names no ``[metrics]`` (every default).
    n_assets : int
        Assets of a panel.
    volatility : {"constant", "garch", "regime"}
        Constant, GARCH(1,1) (:data:`GARCH_ALPHA`, :data:`GARCH_BETA`), or doubled for the
        middle third of the dates.
    innovations : {"normal", "t4"}
        Gaussian or Student-t(4) scaled to unit variance.
    drift : float
        Daily mean simple return of every asset.
    correlation : float
        Correlation of the innovations of any two assets (one common factor).
    listings : bool
        Assets after the first :data:`LISTED_THROUGHOUT` may list late and delist early.
    edges : tuple of float
        Planted-edge strengths (drift std / noise std) whose grid-best annualised excess
        Sharpe is about 1 and about 0.5 (:func:`true_best_sharpe` on a 150,000-day panel;
        tuned to it once by interpolation); empty: no power rows.
    """

    name: str
    null: str
    strategy: str = "momentum"
    grid: str = "625"
    benchmark: str | None = "buy_and_hold"
    n_assets: int = 3
    volatility: Volatility = "constant"
    innovations: Innovations = "normal"
    drift: float = 0.0
    correlation: float = 0.0
    listings: bool = False
    edges: tuple[float, ...] = ()


#: The null families (module docstring); ``edges`` give a best Sharpe of ~1 and ~0.5.
FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            "martingale",
            "zero-mean returns: no position formed from past prices earns anything",
            edges=(0.16, 0.10),
        ),
        Family(
            "garch_t4",
            "zero-mean GARCH(1,1) returns (persistence 0.98, t(4) shocks): a martingale",
            volatility="garch",
            innovations="t4",
            edges=(0.141, 0.0844),
        ),
        Family(
            "regime",
            "zero-mean returns whose volatility doubles for the middle third: a martingale",
            volatility="regime",
            edges=(0.235, 0.1435),
        ),
        Family(
            "drift_corr",
            "iid returns with equal positive drift: any book with gross long exposure "
            "below 1 earns less than buy-and-hold",
            drift=EQUITY_DRIFT,
            correlation=0.6,
            edges=(0.212, 0.158),
        ),
        Family(
            "listings",
            "zero-mean returns: a dollar-neutral book and buy-and-hold both earn 0",
            strategy="xs_momentum",
            grid="xs",
            n_assets=10,
            listings=True,
            edges=(0.104, 0.068),
        ),
        Family(
            "sma_cross",
            "iid returns with positive drift: a long-only book out of the market some of "
            "the time earns less than buy-and-hold",
            strategy="sma_cross",
            grid="sma",
            n_assets=1,
            drift=EQUITY_DRIFT,
            edges=(0.207, 0.145),
        ),
        Family(
            "defaults",
            "zero-mean returns: no position formed from past prices earns anything, so no "
            "config has a positive expected return (the zero benchmark)",
            benchmark=None,
            edges=(0.093, 0.060),
        ),
    )
}


def _unit_innovations(rng: np.random.Generator, family: Family, n_days: int) -> NDArray[np.float64]:
    """Unit-variance innovations, (n_days, n_assets), correlated as the family says."""
    a = family.n_assets
    z = rng.standard_normal((n_days, a))
    if family.correlation:
        rho = family.correlation
        common = rng.standard_normal((n_days, 1))
        z = math.sqrt(rho) * common + math.sqrt(1.0 - rho) * z
    if family.innovations == "t4":
        # t(4) = z / sqrt(chi2_4 / 4), chi2_4 a sum of four squared normals (one per cell:
        # sums, products and a correctly rounded sqrt only); var t(4) = 2.
        g = rng.standard_normal((4, n_days, a))
        chi2 = ((g[0] * g[0] + g[1] * g[1]) + g[2] * g[2]) + g[3] * g[3]
        z = z / np.sqrt(chi2 * 0.25) / math.sqrt(2.0)
    return z


def _volatility_path(family: Family, z: NDArray[np.float64]) -> NDArray[np.float64]:
    """``sigma_t z_t`` with unit unconditional variance (GARCH) or the regime's scale."""
    if family.volatility == "garch":
        omega = 1.0 - GARCH_ALPHA - GARCH_BETA
        h = np.ones(z.shape[1])
        eps = np.empty_like(z)
        for t in range(z.shape[0]):
            eps[t] = np.sqrt(h) * z[t]
            h = omega + GARCH_ALPHA * (eps[t] * eps[t]) + GARCH_BETA * h
        return eps
    if family.volatility == "regime":
        n = z.shape[0]
        scale = np.ones((n, 1))
        scale[n // 3 : 2 * n // 3] = 2.0
        return z * scale
    return z


def _live_mask(rng: np.random.Generator, n_days: int, n_assets: int) -> NDArray[np.bool_]:
    """Where each asset is listed.

    The first :data:`LISTED_THROUGHOUT` assets are listed throughout; each other one lists
    late (in the first half) and delists early (in the second half), each with probability
    1/2.
    """
    live = np.ones((n_days, n_assets), dtype=bool)
    k = n_assets - LISTED_THROUGHOUT
    if k <= 0:
        return live
    late = rng.random(k) < 0.5
    early = rng.random(k) < 0.5
    first = np.where(late, rng.integers(1, n_days // 2, size=k), 0)
    last = np.where(early, rng.integers(n_days // 2, n_days - 1, size=k), n_days)
    for j in range(k):
        live[: first[j], LISTED_THROUGHOUT + j] = False
        live[last[j] :, LISTED_THROUGHOUT + j] = False
    return live


def family_panel(family: Family, seed: int, edge: float = 0.0, n_days: int = 6000) -> Panel:
    """A generated close-price panel of one family, with or without a planted edge.

    Parameters
    ----------
    family : Family
        How to generate it (:data:`FAMILIES`).
    seed : int
        Seed of the generator (the same seed gives the same panel, bit for bit).
    edge : float
        Standard deviation of the planted drift, as a multiple of :data:`NOISE_VOL`; 0 gives
        the null.
    n_days : int
        Number of closes.

    Returns
    -------
    Panel
        Simple returns ``r_t = mu + m_t + clip(0.01 sigma_t z_t, +-0.5)``: ``mu`` the
        family's drift, ``m_t`` a zero-mean AR(1) of persistence :data:`DRIFT_PHI` scaled to
        ``edge * 0.01`` (independent across assets; 0 when ``edge`` is 0), ``sigma_t z_t``
        the family's unit-variance shocks; closes ``100 * cumprod(1 + r)``, NaN where an
        asset is not listed. Draws in this order: the shocks, the common factor, the
        chi-squares, the drift's shocks, the listings; the martingale family is therefore
        :func:`calibration_panel`'s panel, bit for bit.
    """
    rng = np.random.default_rng(seed)
    a = family.n_assets
    shocks = _volatility_path(family, _unit_innovations(rng, family, n_days))
    returns = np.clip(NOISE_VOL * shocks, -MAX_SHOCK, MAX_SHOCK)
    if family.drift:
        returns += family.drift
    if edge > 0:
        drift_shocks = rng.standard_normal((n_days + 500, a))
        drift = lfilter([1.0], [1.0, -DRIFT_PHI], drift_shocks, axis=0)[500:]
        returns += drift * (edge * NOISE_VOL * math.sqrt(1 - DRIFT_PHI**2))
    close = 100.0 * np.cumprod(1.0 + returns, axis=0)
    if family.listings:
        close[~_live_mask(rng, n_days, a)] = np.nan
    # A long panel (true_best_sharpe) starts early: nanosecond dates end in 2262.
    dates = pd.bdate_range("2000-01-03" if n_days <= 60_000 else "1678-01-03", periods=n_days)
    assets = tuple(f"A{i}" for i in range(a))
    return make_panel(dates, assets, close, source=f"{family.name} panel (seed {seed})")


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
        0), and closes ``100 * cumprod(1 + r)`` (the ``martingale`` family).
    """
    family = replace(FAMILIES["martingale"], n_assets=n_assets)
    return family_panel(family, seed, edge, n_days)


#: The main job's walk-forward block, used with ``walk_forward=True``.
WALK_FORWARD = WalkForwardSpec(train="3y", test="6m", purge="5d")
#: What :func:`judge_panel` may also compute on a panel's returns, e.g. a peer library's test:
#: ``anchor(config_returns (m, T), benchmark_returns (T,)) -> p-value``.
Anchor = Callable[[NDArray[np.float64], NDArray[np.float64]], float]


def _main_metrics(benchmark: str, reps: int) -> MetricOptions:
    return MetricOptions(
        benchmark=benchmark,
        bootstrap_reps=reps,
        block_length=21,
        bootstrap_method="circular",
        pbo_blocks=16,
    )


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
        metrics=_main_metrics(benchmark, reps),
        validation=(ValidationSpec(walk_forward=WALK_FORWARD) if walk_forward else None),
    )


def family_spec(
    family: Family, seed: int, reps: int = 200, walk_forward: bool = False
) -> SweepSpec:
    """The spec a family's panels are swept with.

    The family's strategy and grid; the main job's metrics against the family's benchmark,
    or, for a family without one (``defaults``), no ``[metrics]`` at all: every default
    (:class:`sweep.spec._models.MetricOptions`), with ``reps`` only if it is not the default.
    """
    metrics: MetricOptions | None = None
    if family.benchmark is not None:
        metrics = _main_metrics(family.benchmark, reps)
    elif reps != MetricOptions().bootstrap_reps:
        metrics = MetricOptions(bootstrap_reps=reps)
    return build_spec(
        name=f"calibration-{family.name}",
        seed=seed,
        data={"source": "synthetic"},
        strategy=family.strategy,
        grid=GRIDS[family.grid],
        metrics=metrics,
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
    anchor_pvalue : float or None
        What the ``anchor`` of :func:`judge_panel` returned (None without one).
    """

    likely_real: bool
    sweep_pvalue: float
    prob_oos_loss: float | None
    pbo: float | None
    winner_sharpe_ann: float
    oos_psr: float | None = None
    oos_holds: bool = False
    anchor_pvalue: float | None = None


def judge_panel(
    panel: Panel,
    spec: SweepSpec,
    workdir: str | Path | None = None,
    anchor: Anchor | None = None,
) -> PanelOutcome:
    """Sweep one panel into a temporary run folder and return the report's verdict.

    Parameters
    ----------
    panel : Panel
        The prices.
    spec : SweepSpec
        The sweep (see :func:`calibration_spec`, :func:`family_spec`).
    workdir : str or Path, optional
        Parent of the temporary run folder.
    anchor : callable, optional
        Called with every config's returns (recomputed, grid order) and the benchmark's;
        its p-value is returned beside the verdict (e.g. arch's SPA on the same losses).

    Returns
    -------
    PanelOutcome
        The verdict and the numbers it was decided from. The report's dimensionality step
        (descriptive, not part of the verdict) is limited to 64 configs to save time. The
        sweep runs in-process (``executor="local"``).
    """
    resolved = resolve(spec, panel)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        run_sweep(resolved, Path(tmp) / "run", progress=False, executor="local")
        options = ReportOptions(max_return_configs=64, progress=False)
        run = load_run(Path(tmp) / "run", settings=scan_settings(options))
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
    anchor_pvalue = None
    if anchor is not None:
        returns = config_returns(resolved, np.arange(len(resolved.grid), dtype=np.int64))
        anchor_pvalue = anchor(returns, benchmark_returns(spec.metrics.benchmark, panel))
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
        anchor_pvalue=anchor_pvalue,
    )


#: Closes of the long panel of :func:`true_best_sharpe` (575 years of business days, as
#: many as nanosecond dates hold from 1678).
LONG_PANEL_DAYS = 150_000


def true_best_sharpe(
    family: Family, edge: float, n_days: int = LONG_PANEL_DAYS, seed: int = 1
) -> float:
    """The grid's best annualised excess Sharpe on one very long panel (its true edge).

    With ``n_days`` of 150,000 a config's Sharpe has a standard error of about 0.041
    annualised, so this measures the strength of the planted edge, not selection luck.
    """
    spec = family_spec(family, seed, reps=0)
    resolved = resolve(spec, family_panel(family, seed, edge, n_days))
    with tempfile.TemporaryDirectory() as tmp:
        run_sweep(resolved, Path(tmp) / "run", progress=False, executor="local")
        results = load_results(Path(tmp) / "run")
    return float(results["excess_sharpe_ann"].max())


def best_config_sharpe(
    edge: float, grid: str = "625", n_days: int = LONG_PANEL_DAYS, seed: int = 1
) -> float:
    """:func:`true_best_sharpe` of the martingale family swept with ``grid``."""
    return true_best_sharpe(replace(FAMILIES["martingale"], grid=grid), edge, n_days, seed)


def rate_interval(hits: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) confidence interval of a binomial proportion."""
    ci = binomtest(hits, trials).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)
