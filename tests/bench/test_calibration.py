"""A small fixed-seed run of the verdict's calibration (benchmarks/bench_calibration.py).

The panels, the sweep and the bootstrap are all seeded, so the counts below are the same on
every machine; the bounds are set where a correctly calibrated rule passes for almost any
seeds (Binomial(24, 0.05) >= 5 has probability 0.008), so the test cannot flake and fails
when the verdict's false-positive rate or power is off by a wide margin.
"""

from __future__ import annotations

import numpy as np
import pytest

from strategies import panel_fingerprint
from sweep._calibration import (
    EQUITY_DRIFT,
    FAMILIES,
    GARCH_ALPHA,
    GARCH_BETA,
    LISTED_THROUGHOUT,
    NOISE_VOL,
    calibration_panel,
    calibration_spec,
    family_panel,
    family_spec,
    judge_panel,
)
from sweep.data._panels import Panel

pytestmark = pytest.mark.slow


def verdicts(edge: float, seeds: range) -> list[bool]:
    return [
        judge_panel(
            calibration_panel(s, edge, n_days=3000), calibration_spec(s, reps=100)
        ).likely_real
        for s in seeds
    ]


def test_martingale_panels_are_rarely_called_real():
    assert sum(verdicts(0.0, range(100, 124))) <= 4


def test_a_strong_planted_edge_is_usually_found():
    assert sum(verdicts(0.3, range(200, 208))) >= 6


# The null families of issue 26 (sweep._calibration.FAMILIES): what the generators promise,
# and a few panels of each through the whole pipeline.


def _returns(panel: Panel) -> np.ndarray:
    return panel.close[1:] / panel.close[:-1] - 1.0


def test_garch_family_has_persistence_0_98_and_t4_shocks():
    """Peer: arch's GARCH(1,1) with Student-t errors, fitted to 20,000 generated days."""
    arch = pytest.importorskip("arch")
    r = _returns(family_panel(FAMILIES["garch_t4"], 3, n_days=20_000))[:, 0]
    fit = arch.arch_model(100 * r, mean="Zero", vol="GARCH", p=1, q=1, dist="t").fit(disp="off")
    persistence = fit.params["alpha[1]"] + fit.params["beta[1]"]
    assert abs(persistence - (GARCH_ALPHA + GARCH_BETA)) < 0.01
    assert 3.3 < fit.params["nu"] < 5.0
    assert abs(r.std() / NOISE_VOL - 1) < 0.1  # unit unconditional variance


def test_drift_corr_family_has_correlation_0_6_and_a_positive_drift():
    r = _returns(family_panel(FAMILIES["drift_corr"], 3, n_days=20_000))
    corr = np.corrcoef(r.T)
    assert np.all(np.abs(corr[np.triu_indices(3, 1)] - 0.6) < 0.02)
    assert np.all(np.abs(r.mean(axis=0) / EQUITY_DRIFT - 1) < 0.4)


def test_regime_family_doubles_the_volatility_for_the_middle_third():
    r = _returns(family_panel(FAMILIES["regime"], 3, n_days=6000))
    calm = np.concatenate([r[:1999], r[4000:]]).std()
    assert abs(r[2000:3999].std() / calm - 2.0) < 0.08


def test_listings_family_lists_and_delists_inside_the_sample():
    panel = family_panel(FAMILIES["listings"], 3)
    assert panel.live is not None
    assert panel.live[:, :LISTED_THROUGHOUT].all()
    assert not panel.live[:, LISTED_THROUGHOUT:].all()


def test_martingale_family_is_the_old_calibration_panel_bit_for_bit():
    old = calibration_panel(9, 0.16)
    assert np.array_equal(family_panel(FAMILIES["martingale"], 9, 0.16).close, old.close)
    assert panel_fingerprint(old) == panel_fingerprint(
        family_panel(FAMILIES["martingale"], 9, 0.16)
    )


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_runs_through_the_pipeline(name):
    """Three null panels and one strong planted edge (best Sharpe ~1) per family.

    Deterministic (fixed seeds); the bounds are loose (two of three nulls called real has
    probability 0.007 at a 5% rate).
    """
    family = FAMILIES[name]
    null = [
        judge_panel(family_panel(family, s, n_days=3000), family_spec(family, s, reps=100))
        for s in (300, 301, 302)
    ]
    assert sum(o.likely_real for o in null) <= 1
    assert all(0 < o.sweep_pvalue <= 1 for o in null)
    edge = judge_panel(family_panel(family, 303, family.edges[0]), family_spec(family, 303))
    assert edge.winner_sharpe_ann > 0


def test_fast_spa_gives_arch_spa_pvalues():
    """The bench's anchor: FastSPA is arch's SPA (same draws and formulas), only faster."""
    arch_bootstrap = pytest.importorskip("arch.bootstrap")
    from benchmarks.bench_calibration import FastSPA

    rng = np.random.default_rng(4)
    for _ in range(3):
        losses = 0.01 * rng.standard_normal((1200, 12)) - 0.0006 * rng.standard_normal(12)
        bench = 0.01 * rng.standard_normal(1200)
        peer = arch_bootstrap.SPA(
            bench, losses, block_size=21, reps=300, bootstrap="circular", seed=2
        )
        fast = FastSPA(bench, losses, block_size=21, reps=300, bootstrap="circular", seed=2)
        peer.compute()
        fast.compute()
        assert np.allclose(fast._loss_diff_var, peer._loss_diff_var, rtol=1e-12, atol=0)
        assert list(fast.pvalues) == list(peer.pvalues)
