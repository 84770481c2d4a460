"""The report's dimensionality from returns streamed a block at a time."""

from __future__ import annotations

import numpy as np
import pytest

from stats import effective_number_of_trials
from sweep.report._options import ReportOptions
from sweep.report._returns_sample import BLOCK_ROWS, ReturnsDimensionality, dimensionality_record


@pytest.mark.parametrize(("configs", "periods"), [(1_300, 40), (30, 200)])
def test_streamed_blocks_give_the_dimensionality_of_the_whole_matrix(configs, periods):
    # More configs than periods: the Gram route, fed blocks and dropping them; fewer: every
    # block kept and the function run on them. Either way the record of the whole matrix.
    rng = np.random.default_rng(7)
    returns = rng.standard_normal((configs, periods)) * 0.01 + rng.standard_normal(periods) * 0.01
    returns[5] = 0.0  # a constant config, left out
    options = ReportOptions(progress=False)
    streamed = ReturnsDimensionality(options)
    streamed.start(configs, periods)
    for lo in range(0, configs, 300):
        streamed.add(returns[lo : lo + 300])
    whole = effective_number_of_trials(
        returns,
        method="auto",
        seed=options.sample_seed,
        eigenvalues=min(configs, periods) <= options.eigen_max_dim,
        max_eigen_dim=options.eigen_max_dim,
        block_rows=BLOCK_ROWS,
        precision="float32",
    )
    expect = dimensionality_record(whole, configs, 10 * configs, True, options)
    assert streamed.result(10 * configs, True) == expect
    assert expect.constant_configs_left_out == 1
