"""Per-config metrics checked against scipy and pandas on the same returns."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from stats import path_statistics
from strategies import StrategyOutput
from sweep.engine._metrics import config_metrics, shared_draws
from sweep.spec._models import MetricOptions

SETTINGS = MetricOptions(
    periods_per_year=252,
    bootstrap_reps=200,
    block_length=10,
    bootstrap_method="circular",
    pbo_blocks=8,
)


def metrics(out: StrategyOutput, benchmark: np.ndarray | None = None, reps: int = 200):
    t = out.returns.shape[1]
    bench = np.zeros(t) if benchmark is None else benchmark
    draws = shared_draws(5, t, 10, reps, "circular") if reps else None
    return config_metrics(out, bench, draws, SETTINGS).columns


@pytest.fixture
def output():
    rng = np.random.default_rng(42)
    r = rng.standard_t(5, size=(6, 1003)) * 0.01 + np.linspace(-0.0005, 0.002, 6)[:, None]
    turnover = np.abs(rng.standard_normal((6, 1003))) * 0.1
    return StrategyOutput(r, turnover, np.arange(6, dtype=np.int64))


def test_moments_and_sharpe_match_scipy_and_pandas(output):
    m = metrics(output)
    r = output.returns
    frame = pd.DataFrame(r.T)
    np.testing.assert_allclose(m["mean"], frame.mean().to_numpy(), rtol=1e-13)
    np.testing.assert_allclose(m["std"], frame.std(ddof=1).to_numpy(), rtol=1e-13)
    np.testing.assert_allclose(m["skew"], sps.skew(r, axis=1, bias=True), rtol=1e-10)
    np.testing.assert_allclose(
        m["kurtosis"], sps.kurtosis(r, axis=1, fisher=False, bias=True), rtol=1e-10
    )
    np.testing.assert_allclose(
        m["sharpe"], frame.mean().to_numpy() / frame.std().to_numpy(), rtol=1e-12
    )
    np.testing.assert_allclose(m["sharpe_ann"], m["sharpe"] * np.sqrt(252), rtol=1e-15)
    equity = (1 + frame).cumprod()
    np.testing.assert_allclose(m["total_return"], equity.iloc[-1].to_numpy() - 1, rtol=1e-12)
    peak = equity.cummax().clip(lower=1.0)
    np.testing.assert_allclose(m["max_drawdown"], (1 - equity / peak).max().to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(m["turnover"], output.turnover.mean(axis=1) * 252, rtol=1e-12)
    assert m["n_obs"].tolist() == [1003] * 6
    assert m["n_trades"].tolist() == list(range(6))
    # Benchmark zero: excess returns are the returns.
    assert m["excess_sharpe"].tobytes() == m["sharpe"].tobytes()


def test_excess_moments_are_those_of_returns_minus_the_benchmark(output):
    bench = np.random.default_rng(3).standard_normal(1003) * 0.008 + 0.0003
    m = metrics(output, bench)
    excess = pd.DataFrame((output.returns - bench).T)
    np.testing.assert_allclose(m["excess_mean"], excess.mean().to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(m["excess_std"], excess.std().to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        m["excess_kurtosis"], sps.kurtosis(excess.to_numpy().T, axis=1, fisher=False), rtol=1e-10
    )
    np.testing.assert_allclose(m["mean"], output.returns.mean(axis=1), rtol=1e-13)
    # PBO blocks are of the excess returns (the selection metric).
    sums = path_statistics(output.returns - bench, 8).block_sum
    np.testing.assert_allclose(m["blk_sum_03"], sums[:, 3], rtol=1e-12)


def test_block_statistics_drop_the_oldest_remainder(output):
    p = path_statistics(output.returns, 8)
    count, sums, sq = p.block_count, p.block_sum, p.block_sumsq
    assert count == 1003 // 8
    tail = output.returns[:, 1003 - 8 * count :]
    np.testing.assert_allclose(sums[:, 3], tail[:, 3 * count : 4 * count].sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(sq.sum(axis=1), (tail**2).sum(axis=1), rtol=1e-12)


def test_bootstrap_pvalue_is_null_centred():
    rng = np.random.default_rng(1)
    noise = rng.standard_normal((40, 2000)) * 0.01
    edge = noise[:1] + 0.004  # Sharpe ~0.4 per period: a huge edge
    r = np.vstack([edge, noise])
    out = StrategyOutput(r, np.zeros_like(r), np.zeros(41, dtype=np.int64))
    m = metrics(out)
    assert m["p_value"][0] == 1 / 201  # (1 + 0) / (1 + B): never 0
    # Under the null the p-values are roughly uniform, not piled at 0.5.
    p = m["p_value"][1:]
    assert 0.25 < p.mean() < 0.75
    assert (p < 0.2).any() and (p > 0.8).any()


def test_constant_returns_give_nan_sharpe_not_errors():
    r = np.zeros((2, 100))
    out = StrategyOutput(r, np.zeros_like(r), np.zeros(2, dtype=np.int64))
    m = metrics(out)
    assert np.isnan(m["sharpe"]).all() and np.isnan(m["p_value"]).all()
    assert np.isnan(m["t_stat"]).all()
    assert (m["total_return"] == 0).all()
