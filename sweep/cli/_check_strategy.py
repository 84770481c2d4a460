"""``sweep check-strategy``: the look-ahead check over a sample of a spec's configs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from strategies import LookaheadReport, check_lookahead
from sweep.errors import SpecError
from sweep.spec._models import SweepSpec, load_spec
from sweep.spec._resolve import ResolvedSweep, resolve

#: Default number of configs checked (spread evenly over the grid).
DEFAULT_CONFIGS = 5


def sample_positions(n_grid: int, n_configs: int) -> list[int]:
    """Grid positions spread evenly from the first config to the last (at most ``n_configs``)."""
    if n_configs < 1:
        raise SpecError(f"configs: expected at least 1 config to check, got {n_configs}")
    return sorted({int(i) for i in np.linspace(0, n_grid - 1, min(n_configs, n_grid)).round()})


def check_strategy(
    spec: SweepSpec | ResolvedSweep | str | Path,
    *,
    n_configs: int = DEFAULT_CONFIGS,
    n_cuts: int = 8,
    seed: int = 0,
) -> tuple[LookaheadReport, ...]:
    """Run :func:`strategies.check_lookahead` on configs of a sweep spec.

    Parameters
    ----------
    spec : SweepSpec, ResolvedSweep, str or Path
        The sweep (a TOML path is loaded; its data and strategy are resolved).
    n_configs : int
        Configs checked, spread evenly over the grid (first and last included).
    n_cuts : int
        Cut dates per config (see :func:`strategies.check_lookahead`).
    seed : int
        Seed of the perturbations.

    Returns
    -------
    tuple of LookaheadReport
        One report per config checked, in grid order.

    Raises
    ------
    StrategyError
        The spec's strategy is a batch kernel (it exposes no weights), or it fails.
    """
    if isinstance(spec, str | Path):
        spec = load_spec(spec)
    sweep = spec if isinstance(spec, ResolvedSweep) else resolve(spec)
    reports = []
    for position in sample_positions(len(sweep.grid), n_configs):
        params = sweep.grid.params_at(np.array([position], dtype=np.int64))
        config = {name: values[0].item() for name, values in params.items()}
        reports.append(
            check_lookahead(sweep.strategy, sweep.panel, config, n_cuts=n_cuts, seed=seed)
        )
    return tuple(reports)
