"""Strategies used by tests, importable by path (``tests.strategies_for_tests:Name``)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from strategies import Param, StrategyOutput
from strategies.momentum import Momentum


class SlowMomentum(Momentum):
    """Momentum that sleeps ``RAYSWEEP_TEST_SLEEP`` seconds per config (default 5 ms).

    The sleep is read in the driver when the strategy is built and travels with the pickled
    instance, so Ray workers started earlier sleep as the driver's environment says. With
    ``RAYSWEEP_TEST_BUSY_DIR`` set, a worker holds the file ``<node id>.<pid>`` there while it
    sleeps (``worker.<pid>`` off Ray), so a test can tell which process is running a task
    right now. With
    ``RAYSWEEP_TEST_GATE`` naming a file, every evaluation waits while that file exists (up
    to 10 minutes), so a test can hold a sweep mid-run for as long as it needs, on any machine.
    """

    name = "slow_momentum"
    version = os.environ.get("RAYSWEEP_TEST_STRATEGY_VERSION", "1")

    def __init__(self) -> None:
        self.sleep_per_config = float(os.environ.get("RAYSWEEP_TEST_SLEEP", "0.005"))
        self.busy_dir = os.environ.get("RAYSWEEP_TEST_BUSY_DIR")
        self.gate = os.environ.get("RAYSWEEP_TEST_GATE")

    def evaluate(
        self, panel: Any, params: Mapping[str, Any], rngs: Sequence[np.random.Generator]
    ) -> StrategyOutput:
        if self.gate is not None:
            deadline = time.monotonic() + 600
            while Path(self.gate).exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        with self._busy_marker():
            time.sleep(self.sleep_per_config * len(params["lookback"]))
        return super().evaluate(panel, params, rngs)

    @contextlib.contextmanager
    def _busy_marker(self) -> Iterator[None]:
        if self.busy_dir is None:
            yield
            return
        import ray

        node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else "worker"
        marker = Path(self.busy_dir) / f"{node}.{os.getpid()}"
        marker.touch()
        try:
            yield
        finally:
            marker.unlink(missing_ok=True)


class Raising(Momentum):
    """Momentum that raises for lookbacks divisible by 13."""

    name = "raising"
    version = "1"

    def evaluate(
        self, panel: Any, params: Mapping[str, Any], rngs: Sequence[np.random.Generator]
    ) -> StrategyOutput:
        bad = params["lookback"] % 13 == 0
        if bad.any():
            raise ValueError(f"lookback {int(params['lookback'][bad][0])} is unlucky")
        return super().evaluate(panel, params, rngs)


class PlantedEdge:
    """Random-return strategies: config ``edge = e`` earns N(e * sigma, sigma) per period.

    Uses the config's own strategy stream, so results are reproducible and batch-independent.
    """

    name = "planted_edge"
    version = "1"
    params = (
        Param("member", "int", minimum=0, doc="which noise strategy"),
        Param("edge", "float", default=0.0, doc="per-period Sharpe of the true edge"),
    )

    def evaluate(
        self, panel: Any, params: Mapping[str, Any], rngs: Sequence[np.random.Generator]
    ) -> StrategyOutput:
        n, t = params["member"].shape[0], panel.n_periods - 1
        out = np.empty((n, t))
        for i in range(n):
            out[i] = rngs[i].standard_normal(t) * 0.01 + params["edge"][i] * 0.01
        return StrategyOutput(out, np.zeros((n, t)), np.zeros(n, dtype=np.int64))


class TiedNoise:
    """Noise with exact ties and constant configs, for PBO's rules on ties and NaN.

    Config ``member = m > 0`` earns N(0, 1%) noise from ``default_rng(m)`` over the last 40%
    of the periods and nothing before (so no config has a Sharpe ratio over the first half
    of the blocks: the CSCV split holding them in sample has no key anywhere); ``copy``
    changes nothing (its configs tie exactly in every split); member 0 earns nothing at all
    (a constant config: NaN Sharpe ratio).
    """

    name = "tied_noise"
    version = "1"
    params = (
        Param("member", "int", minimum=0, doc="which noise (0: none)"),
        Param("copy", "int", minimum=0, doc="changes nothing"),
    )

    def evaluate(
        self, panel: Any, params: Mapping[str, Any], rngs: Sequence[np.random.Generator]
    ) -> StrategyOutput:
        n, t = params["member"].shape[0], panel.n_periods - 1
        out = np.zeros((n, t))
        start = t - (2 * t) // 5
        for i in range(n):
            member = int(params["member"][i])
            if member:
                out[i, start:] = np.random.default_rng(member).standard_normal(t - start) * 0.01
        return StrategyOutput(out, np.zeros((n, t)), np.zeros(n, dtype=np.int64))
