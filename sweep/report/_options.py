"""What a report build may be asked to do differently from its defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from sweep.common._serial import SKIPPED


@dataclass(frozen=True)
class ReportOptions:
    """Options of :func:`sweep.report.build_report`.

    Attributes
    ----------
    top_k : int
        Rows of the top-configs table.
    heatmap : tuple of (str, str) or None
        Grid axes (x, y) of the heatmap; None picks the two multi-valued axes with the most
        distinct values (ties in grid order).
    heatmap_metric : str
        Results column shown in the heatmap (maximum over the other axes).
    bench_dir : str or None
        Folder of ``sweep bench`` results; None searches ``RUN_DIR/bench`` then
        ``runs/bench``.
    max_return_configs : int
        Configs whose returns are recomputed for the dimensionality of the returns; beyond
        it, a seeded uniform sample of this many.
    max_pbo_configs : int or None
        Configs whose block statistics enter PBO (every one up to 10^6: 12,870 CSCV splits
        over 10^6 configs take about 10 s on two cores); beyond it, a seeded uniform sample.
        None: every ok config (``sweep report --pbo-sample all``; the time grows with the
        configs, the memory does not: PBO runs in passes over the parts).
    sample_seed : int
        Seed of every sample the report draws (the same run gives the same report).
    eigen_max_dim : int
        Li-Ji and Galwey need an eigendecomposition of a ``min(N, T)``-square matrix; it is
        done only up to this size (6,524 took 66 s on two cores).
    alpha : float
        Level of the sweep-wide tests, StepM, the verdict and the Holm and
        Benjamini-Hochberg corrections; FDP-StepM's probability of exceeding ``fdp_gamma``.
    fdp_gamma : float
        The false discovery proportion FDP-StepM tolerates in the configs it calls real.
    progress : bool
        Show progress on a terminal.
    allow_import : tuple of str
        Strategy modules the run folder may import to recompute returns (a non-built-in
        strategy is never imported otherwise; see :mod:`sweep.store._trust`).
    """

    top_k: int = 10
    heatmap: tuple[str, str] | None = None
    heatmap_metric: str = "excess_sharpe_ann"
    bench_dir: str | None = None
    max_return_configs: int = 10_000
    max_pbo_configs: int | None = 1_000_000
    sample_seed: int = 0
    eigen_max_dim: int = 2048
    alpha: float = 0.05
    fdp_gamma: float = 0.1
    progress: bool = field(default=True, metadata=SKIPPED)  # not in report.json
    allow_import: tuple[str, ...] = ()
