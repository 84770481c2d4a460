from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stats import (
    StatsInputError,
    fit_usl,
    gustafson_speedup,
    task_efficiency,
    usl_peak_workers,
    usl_throughput,
)


def test_specsdm91_with_gamma_free_matches_r_usl() -> None:
    # R package usl (Möding), data set `specsdm91` and its vignette/tests: sigma = 0.0277285,
    # kappa = 1.044e-4, gamma = 89.9952, peak at 96.52 users.
    load = [1, 18, 36, 72, 108, 144, 216]
    throughput = [64.9, 995.9, 1652.4, 1853.2, 1828.9, 1775.0, 1702.2]
    fit = fit_usl(load, throughput, gamma="free")
    assert fit.sigma == pytest.approx(0.0277285, abs=1e-7)
    assert fit.kappa == pytest.approx(1.044e-4, abs=5e-8)
    assert fit.gamma == pytest.approx(89.9952, abs=1e-4)
    assert fit.peak_workers == pytest.approx(96.52, abs=0.005)
    assert not fit.gamma_fixed
    np.testing.assert_allclose(fit.predicted + fit.residuals, throughput)


def test_seed_003_table_with_gamma_fixed() -> None:
    # Seed 003 ("Distributed Backtesting"): wall clock 32.73, 16.47, 8.89, 5.05, 4.17,
    # 3.44 s on 1..32 workers; USL fit sigma = 0.0448, kappa = 0.00103, peak ~30 workers.
    workers = np.array([1, 2, 4, 8, 16, 32])
    wall = np.array([32.73, 16.47, 8.89, 5.05, 4.17, 3.44])
    fit = fit_usl(workers, 1.0 / wall)
    assert fit.sigma == pytest.approx(0.0447, abs=2e-4)
    assert fit.kappa == pytest.approx(0.00103, abs=1e-5)
    assert fit.peak_workers == pytest.approx(30, abs=1)
    assert fit.gamma_fixed and fit.gamma == pytest.approx(1 / 32.73)
    assert float(fit.predict(1)) == pytest.approx(1 / 32.73)


@settings(max_examples=25, deadline=None)
@given(
    sigma=st.floats(min_value=0.005, max_value=0.3),
    kappa=st.floats(min_value=1e-5, max_value=1e-2),
    gamma=st.floats(min_value=0.5, max_value=1000.0),
    mode=st.sampled_from(["fixed", "free"]),
)
def test_fit_recovers_planted_parameters(
    sigma: float, kappa: float, gamma: float, mode: str
) -> None:
    p = np.array([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64], dtype=float)
    x = usl_throughput(p, sigma, kappa, gamma)
    fit = fit_usl(p, x, gamma=mode)  # type: ignore[arg-type]
    assert fit.sigma == pytest.approx(sigma, rel=1e-5)
    assert fit.kappa == pytest.approx(kappa, rel=1e-5)
    assert fit.gamma == pytest.approx(gamma, rel=1e-6)
    assert fit.peak_workers == pytest.approx(math.sqrt((1 - sigma) / kappa), rel=1e-5)
    assert fit.r_squared == pytest.approx(1.0, abs=1e-9)


def test_peak_and_linear_scaling() -> None:
    assert usl_peak_workers(0.0, 0.0) == math.inf
    fit = fit_usl([1, 2, 4, 8], [1.0, 2.0, 4.0, 8.0])
    assert fit.sigma == pytest.approx(0.0, abs=1e-9) and fit.kappa == pytest.approx(0.0, abs=1e-9)


def test_fixed_gamma_needs_one_worker() -> None:
    with pytest.raises(StatsInputError, match="gamma='free'"):
        fit_usl([2, 4, 8], [1.0, 1.8, 3.0])
    with pytest.raises(StatsInputError, match="3 distinct"):
        fit_usl([1, 2, 2], [1.0, 1.8, 1.9])
    with pytest.raises(StatsInputError, match="Did you mean 'free'"):
        fit_usl([1, 2, 4], [1.0, 1.8, 3.0], gamma="fre")  # type: ignore[arg-type]


def test_gustafson_speedup() -> None:
    # Gustafson (1988): S = p - alpha (p - 1); alpha = 0 is linear, alpha = 1 is flat.
    np.testing.assert_allclose(gustafson_speedup([1, 8, 1024], 0.0), [1, 8, 1024])
    np.testing.assert_allclose(gustafson_speedup([1, 8, 1024], 1.0), [1, 1, 1])
    assert float(gustafson_speedup(1024, 0.004)) == pytest.approx(1019.908)


def test_task_efficiency_seed_003() -> None:
    # Seed 003: with 0.05 ms of Ray overhead, a 10 ms task runs at a 99% efficiency ceiling
    # and a 0.05 ms task at 50%.
    eff = task_efficiency([10e-3, 0.05e-3], 0.05e-3)
    assert eff[0] == pytest.approx(10 / 10.05, rel=1e-12)  # 99.5%
    assert eff[1] == pytest.approx(0.5)
    with pytest.raises(StatsInputError):
        task_efficiency(-1.0, 0.1)
