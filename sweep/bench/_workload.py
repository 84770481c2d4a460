"""The sweep a benchmark evaluates: a spec file, or the README's main job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sweep.errors import SpecError
from sweep.spec._models import load_spec, spec_from_dict
from sweep.spec._resolve import ResolvedSweep, resolve

#: Used when no --spec is given: the README's main job, looked for in the working folder, then
#: in the source tree this package was installed from (an editable install, or /app in the
#: image). One file: no copy of it lives in the code.
DEFAULT_SPEC_PATH = Path("examples/momentum.toml")


def default_spec_path() -> Path:
    """Where ``examples/momentum.toml`` is; a :class:`SpecError` naming the places looked in."""
    places = [DEFAULT_SPEC_PATH, Path(__file__).resolve().parents[2] / DEFAULT_SPEC_PATH]
    for place in places:
        if place.is_file():
            return place
    looked = ", ".join(str(p) for p in places)
    raise SpecError(f"spec: none given and {DEFAULT_SPEC_PATH} is not here ({looked}); pass one")


def bench_sweep(spec: str | Path | dict[str, Any] | None = None) -> tuple[ResolvedSweep, str]:
    """Resolve the sweep a benchmark runs.

    Parameters
    ----------
    spec : str, Path, dict or None
        A TOML spec file, a spec dict, or None for ``examples/momentum.toml``
        (:func:`default_spec_path`).

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
        path = default_spec_path()
        return resolve(load_spec(path)), str(path)
    return resolve(load_spec(spec)), str(spec)


def workload_indices(n_grid: int, size: int, seed: int = 0) -> NDArray[np.int64]:
    """``size`` grid positions: a seeded uniform sample (with replacement if the grid is small)."""
    rng = np.random.default_rng(seed)
    replace = size > n_grid
    picked = rng.choice(n_grid, size=size, replace=replace)
    return np.asarray(picked if replace else np.sort(picked), dtype=np.int64)
