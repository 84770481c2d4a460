"""The sweep a benchmark evaluates: a spec file, or the README's main job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sweep._spec import ResolvedSweep, load_spec, resolve, spec_from_dict

#: Used when no --spec is given: examples/momentum.toml if it is here, else this copy.
DEFAULT_SPEC_PATH = Path("examples/momentum.toml")
DEFAULT_SPEC: dict[str, Any] = {
    "name": "momentum-demo",
    "seed": 20261130,
    "data": {"source": "synthetic"},
    "strategy": {"name": "momentum"},
    "grid": {
        "lookback": {"start": 20, "stop": 320, "step": 3},
        "band": {"linspace": [0.0, 0.02, 100]},
    },
    "costs": {"cost": 0.0},
    "metrics": {
        "periods_per_year": 252,
        "bootstrap_reps": 50,
        "block_length": 21,
        "bootstrap_method": "circular",
        "pbo_blocks": 16,
    },
}


def bench_sweep(spec: str | Path | dict[str, Any] | None = None) -> tuple[ResolvedSweep, str]:
    """Resolve the sweep a benchmark runs.

    Parameters
    ----------
    spec : str, Path, dict or None
        A TOML spec file, a spec dict, or None for ``examples/momentum.toml`` (or the same
        spec built in, when that file is not in the working folder).

    Returns
    -------
    sweep : ResolvedSweep
        The resolved sweep.
    source : str
        Where the spec came from.
    """
    if isinstance(spec, dict):
        return resolve(spec_from_dict(spec)), f"spec {spec.get('name')!r} (given as data)"
    if spec is None:
        if DEFAULT_SPEC_PATH.is_file():
            return resolve(load_spec(DEFAULT_SPEC_PATH)), str(DEFAULT_SPEC_PATH)
        return resolve(spec_from_dict(DEFAULT_SPEC)), "built-in copy of examples/momentum.toml"
    return resolve(load_spec(spec)), str(spec)


def workload_indices(n_grid: int, size: int, seed: int = 0) -> NDArray[np.int64]:
    """``size`` grid positions: a seeded uniform sample (with replacement if the grid is small)."""
    rng = np.random.default_rng(seed)
    replace = size > n_grid
    picked = rng.choice(n_grid, size=size, replace=replace)
    return np.asarray(picked if replace else np.sort(picked), dtype=np.int64)
