"""The report's sections as frozen dataclasses; report.json is their serialisation.

Each class lists its JSON keys in the order report.json writes them
(:func:`sweep.common._serial.to_json`); a report.json loads back into :class:`ReportData`
(:func:`sweep.common._serial.from_json`). A part the report could not compute is an
:class:`Unavailable` (``available: false`` and the reason) in place of its record.

Two kinds of value stay JSON objects, because something else owns their shape: the spec,
the data description and the environment recorded in the manifest (see
:mod:`sweep.store._record`), and the rows of the out-of-sample fold table (one column per grid
parameter). The benchmark results of ``sweep bench`` are the records of
:mod:`sweep.store._bench_results`, summarised here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from sweep.common._jsonable import JSONObject
from sweep.common._serial import FLATTENED, OMIT_NONE
from sweep.report._options import ReportOptions
from sweep.report._run_scaling import RunScaling
from sweep.report._verdict import Verdict
from sweep.spec._grid import ParamValue
from sweep.store._bench_results import (
    ClusterInfo,
    FitFailed,
    LawFit,
    OverheadPoint,
    PlannerComparison,
    PlannerFailed,
    ScalingPoint,
    SpeedupPoint,
    UslFit,
)
from sweep.store._part_environment import EnvironmentUse
from sweep.store._record import ExecutorChoice, GridRecord, Plan, StrategyRef


@dataclass(frozen=True, kw_only=True)
class Unavailable:
    """A part of the report that could not be computed, and why."""

    available: Literal[False] = False
    reason: str


# --- 1. identity --------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class CodeInfo:
    """The code building the report: git commit and library versions."""

    git_commit: str | None
    versions: Mapping[str, str | None]
    note: str


@dataclass(frozen=True, kw_only=True)
class IdentitySection:
    """Section 1: what was run, on what data, by which code."""

    run_name: str
    run_dir: str
    created: str | None
    spec_hash: str | None
    spec: JSONObject
    data: JSONObject
    data_origin: str | None = None
    strategy: StrategyRef | None
    strategy_origin: str | None = None
    engine_version: str | None
    session_engine_versions: tuple[str, ...]
    root_seed: int | None
    session_environments: tuple[JSONObject, ...]
    metrics: JSONObject
    grid: GridRecord
    code: CodeInfo


# --- 2. integrity -------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class BadPart:
    """A part whose bytes or contents failed their check."""

    name: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class PartCounts:
    """Parts verified."""

    total: int
    good: int
    bad: tuple[BadPart, ...]


@dataclass(frozen=True, kw_only=True)
class ConfigCounts:
    """Configs of the grid: done (ok or failed), missing, outside the grid."""

    total: int
    done: int
    ok: int
    failed: int
    missing: int
    outside_grid: int
    complete: bool


@dataclass(frozen=True, kw_only=True)
class ErrorGroup:
    """Failed configs sharing one error message."""

    error: str
    count: int


@dataclass(frozen=True, kw_only=True)
class SessionRow:
    """One driver session and how it ended."""

    id: int
    start: str | None
    end: str | None
    host: str | None
    executor: str | None
    status: str
    resumed: bool
    took_over_lock: bool
    configs_computed: int | None
    configs_failed: int | None
    wall_seconds: float | None
    quarantined_parts: int
    table_hash: str | None


@dataclass(frozen=True, kw_only=True)
class IntegritySection:
    """Section 2: hashes, part checks, config counts, error groups, sessions, environments.

    ``environments`` lists every environment that computed the good parts, with their part
    and config counts (:class:`sweep.store._part_environment.EnvironmentUse`; parts
    written before parts recorded one are one use with ``environment = null``);
    ``reproduce`` is the command that re-computes a sample here and compares it;
    ``table_hash_version`` the version of the table hashes (the folder's).
    """

    table_hash: str | None
    table_hash_of_partial_results: str | None
    null_summary_hash: str | None
    recorded_table_hash: str | None
    matches_recorded: bool | None
    parts: PartCounts
    quarantined_files: tuple[str, ...]
    configs: ConfigCounts
    errors: tuple[ErrorGroup, ...]
    sessions: tuple[SessionRow, ...]
    session_endings: Mapping[str, int]
    resumed: bool
    recheck: str
    environments: tuple[EnvironmentUse, ...] = ()
    reproduce: str = ""
    table_hash_version: str = ""
    fold_summary_hash: str | None = None


# --- 3. execution -------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class WallRow:
    """A session's wall time and where it comes from."""

    session: int
    wall_seconds: float | None
    source: str


@dataclass(frozen=True, kw_only=True)
class PlannerRow:
    """What the planner measured and chose in one session."""

    session: int
    executor: str | None
    workers: int | None
    nodes: int | None
    address: str | None
    ray_version: str | None
    source: str | None
    batch_size: int | None
    overhead_seconds: float | None
    transport_seconds: float | None
    fixed_in_task_seconds: float | None
    driver_write_seconds: float | None
    per_config_seconds: float | None
    target_efficiency: float | None
    law_batch: float | None
    clamps: tuple[str, ...]
    pilot_tasks: int
    planning_seconds: float | None = field(default=None, metadata=OMIT_NONE)
    executor_choice: ExecutorChoice | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, kw_only=True)
class AmortizationFit:
    """``T = O + bB`` fitted to the warm tasks' times."""

    available: Literal[True] = True
    note: str | None
    overhead_seconds: float
    per_config_seconds: float
    r_squared: float
    n_tasks: int
    ridge_batch: float
    batch_for_90pct: float
    batch_for_99pct: float
    ceiling_speedup: float


@dataclass(frozen=True, kw_only=True)
class BatchSizes:
    """Configs per task."""

    min: int
    median: float
    max: int
    distinct: int


@dataclass(frozen=True, kw_only=True)
class PerTaskShare:
    """The overhead share of single tasks."""

    median: float | None
    p90: float | None


@dataclass(frozen=True, kw_only=True)
class ServiceSeconds:
    """Service time over the tasks."""

    total: float
    median: float
    max: float


@dataclass(frozen=True, kw_only=True)
class Lane:
    """One worker's tasks in one session."""

    session: int
    lane: str
    node: str
    worker: str
    tasks: int
    configs: int
    busy_seconds: float
    compute_seconds: float
    first_start: float
    last_end: float


@dataclass(frozen=True, kw_only=True)
class TaskStats:
    """What the task telemetry shows (in the execution section when it was recorded)."""

    utilisation: float | None
    tasks_by_session: Mapping[str, int]
    configs_in_tasks: int
    batch_sizes: BatchSizes
    workers_seen: int
    nodes_seen: int
    overhead_share: float | None
    overhead_share_latency: float | None
    overhead_share_per_task: PerTaskShare
    service_seconds: ServiceSeconds
    fit_service: AmortizationFit | Unavailable
    fit_compute: AmortizationFit | Unavailable
    retries: int
    attempt_unknown: int
    workers: tuple[Lane, ...]


@dataclass(frozen=True, kw_only=True)
class ExecutionSection:
    """Section 3: wall and CPU time, the planner per session, task statistics."""

    wall_seconds: float
    wall_by_session: tuple[WallRow, ...]
    planner: tuple[PlannerRow, ...]
    definitions: Mapping[str, str]
    telemetry: bool
    cpu_seconds: float
    tasks: int
    stats: TaskStats | None = field(default=None, metadata=FLATTENED)


# --- 4. results ---------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class TopRow:
    """One of the best configs."""

    rank: int
    config_id: str
    grid_index: int
    params: Mapping[str, ParamValue]
    excess_sharpe_ann: float
    sharpe_ann: float
    t_stat: float
    p_value: float
    total_return: float
    max_drawdown: float
    turnover: float
    n_trades: int | float
    skew: float
    kurtosis: float


@dataclass(frozen=True, kw_only=True)
class Distribution:
    """Count, moments, range and quantiles of some values (``std`` None for one value)."""

    count: int
    mean: float
    std: float | None
    min: float
    max: float
    quantiles: Mapping[str, float]


@dataclass(frozen=True, kw_only=True)
class NoValues:
    """The distribution of no values: only the count, 0."""

    count: Literal[0] = 0


@dataclass(frozen=True, kw_only=True)
class Histogram:
    """Bin counts and edges."""

    counts: tuple[int, ...]
    edges: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class HeatmapRecord:
    """A metric over two grid axes (maximum over the others); z is NaN (null) where empty.

    An axis with more than ``MAX_CELLS_PER_AXIS`` (200) values among the configs has 200
    cells, each a run of consecutive values from ``x_values[i]`` to ``x_values_to[i]`` (the
    maximum over the run), and ``x_distinct_values`` says how many values it has; both are
    null when each cell is one value. Likewise for y.
    """

    x: str
    y: str
    x_values: tuple[ParamValue, ...]
    y_values: tuple[ParamValue, ...]
    z: tuple[tuple[float, ...], ...]
    metric: str
    aggregation: str
    aggregated_over: tuple[str, ...]
    chosen: str
    x_values_to: tuple[ParamValue, ...] | None = None
    y_values_to: tuple[ParamValue, ...] | None = None
    x_distinct_values: int | None = None
    y_distinct_values: int | None = None


@dataclass(frozen=True, kw_only=True)
class Profile:
    """A metric along the grid's one varying axis (maximum over the others).

    With more than 200 values, 200 cells of consecutive values from ``values[i]`` to
    ``values_to[i]`` out of ``distinct_values`` (both null otherwise), as in the heatmap.
    """

    axis: str
    values: tuple[ParamValue, ...]
    metric: str
    max: tuple[float, ...]
    values_to: tuple[ParamValue, ...] | None = None
    distinct_values: int | None = None


@dataclass(frozen=True, kw_only=True)
class ResultsSection:
    """Section 4: the top configs, the Sharpe distribution, a heatmap or profile."""

    available: Literal[True] = True
    sorted_by: str
    top: tuple[TopRow, ...]
    sharpe_ann_summary: Distribution | NoValues
    constant_configs: int
    sharpe_ann_histogram: Histogram
    heatmap: HeatmapRecord | None
    profile: Profile | None


# --- 5. multiple testing ------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class BenchmarkInfo:
    """The benchmark, the null hypothesis and the benchmark's own Sharpe ratio."""

    name: str
    null: str
    sharpe: float | None
    sharpe_ann: float | None
    reason: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, kw_only=True)
class Winner:
    """The config with the highest Sharpe ratio of excess returns."""

    config_id: str
    grid_index: int
    params: Mapping[str, ParamValue]
    sharpe: float
    sharpe_ann: float
    own_sharpe_ann: float
    n_obs: int
    skew: float
    kurtosis: float
    t_stat: float
    p_value: float


@dataclass(frozen=True, kw_only=True)
class StepMResult:
    """The configs Romano and Wolf's StepM finds beating the benchmark."""

    alpha: float
    count: int
    config_ids: tuple[str, ...]
    steps: int
    exact: bool
    top_k: int
    note: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, kw_only=True)
class SweepWideTests:
    """Reality Check, SPA, StepM and the winner's sweep-wide p-value."""

    available: Literal[True] = True
    reps: int
    configs: int
    reality_check_pvalue: float
    spa_pvalue: float
    best_t_config_id: str
    stepm: StepMResult
    winner_pvalue: float | None
    statistic: str


@dataclass(frozen=True, kw_only=True)
class ImpliedTrials:
    """The bootstrap-implied number of trials (the effective number of trials)."""

    available: Literal[True] = True
    n: float
    mean_null_max_sharpe: float
    null_sharpe_std: float
    definition: str


@dataclass(frozen=True, kw_only=True)
class EffectiveNumberOfTrials:
    """The effective number of trials: the count the report deflates the winner at.

    The same N as ``implied_trials.n`` (kept under that key for readers of earlier
    reports), named as the report names it; ``dsr`` is the winner's deflated Sharpe ratio at
    it. The dimensionality estimators (participation ratio, Nyholt, Li-Ji, Galwey) are
    reported under their own names and are not trial counts.
    """

    available: Literal[True] = True
    n: float
    naive_n: int
    measured: str
    dsr: float | None
    not_dimensionality: str


@dataclass(frozen=True, kw_only=True)
class DetectableSharpe:
    """The smallest excess Sharpe ratio the sweep-wide test detects with the stated power."""

    available: Literal[True] = True
    power: float
    alpha: float
    sharpe: float
    sharpe_ann: float
    single_test_sharpe_ann: float
    critical_value: float
    sweep_critical_value: float
    null_sharpe_std: float
    periods: int
    configs: int
    model: str


@dataclass(frozen=True, kw_only=True)
class Discovery:
    """One of the configs called real, by rank of its studentised statistic."""

    rank: int
    config_id: str
    grid_index: int
    params: Mapping[str, ParamValue]
    t_stat: float
    excess_sharpe_ann: float


@dataclass(frozen=True, kw_only=True)
class Discoveries:
    """How many configs are real: FDP-StepM, with the false discovery proportion controlled."""

    available: Literal[True] = True
    method: str
    gamma: float
    alpha: float
    count: int
    configs: int
    k: int
    k_counts: tuple[int, ...]
    stepm_count: int
    critical_value: float | None
    exact: bool
    all_subsets: bool
    top_k: int
    first: tuple[Discovery, ...]
    meaning: str
    note: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, kw_only=True)
class Deflated:
    """E[max] of null Sharpe ratios, PSR and DSR of the winner at one trial count."""

    n_trials: float
    sharpe_std: float
    expected_max_sharpe: float
    expected_max_sharpe_ann: float
    winner_over_expected_max: float | None
    z: float
    dsr: float
    psr: float


@dataclass(frozen=True, kw_only=True)
class DeflationError:
    """A trial count the deflated Sharpe ratio could not be computed at."""

    n_trials: float
    error: str


@dataclass(frozen=True, kw_only=True)
class Deflation:
    """The deflated Sharpe ratio at the naive and at the effective number of trials.

    ``implied`` is the effective number of trials (the bootstrap-implied count; the key keeps
    its first name for readers of earlier reports).
    """

    naive: Deflated | DeflationError | None
    implied: Deflated | DeflationError | None


@dataclass(frozen=True, kw_only=True)
class Degradation:
    """Out-of-sample against in-sample Sharpe of the in-sample best, fitted by a line."""

    slope: float
    intercept: float
    r_squared: float


@dataclass(frozen=True, kw_only=True)
class ConfigShare:
    """A config and the share of CSCV splits it was the in-sample best in."""

    config_id: str
    share: float


@dataclass(frozen=True, kw_only=True)
class InSampleBest:
    """Which configs were the in-sample best across the CSCV splits."""

    distinct_configs: int
    most_frequent: tuple[ConfigShare, ...]


@dataclass(frozen=True, kw_only=True)
class PBOSection:
    """Probability of backtest overfitting (CSCV)."""

    available: Literal[True] = True
    pbo: float
    metric: str
    blocks: int
    splits: int
    configs: int
    sampled: bool
    periods_per_block: int
    leading_periods_dropped: int
    prob_oos_loss: float
    degradation: Degradation
    logit_quantiles: Mapping[str, float]
    logit_histogram: Histogram
    in_sample_best: InSampleBest


@dataclass(frozen=True, kw_only=True)
class Corrections:
    """Holm and Benjamini-Hochberg survivors among the per-config bootstrap p-values."""

    available: Literal[True] = True
    alpha: float
    tests: int
    raw: int
    holm: int
    benjamini_hochberg: int
    holm_survivors: tuple[str, ...]
    bootstrap_reps: int
    smallest_p_value: float
    winner_holm_adjusted: float | None = field(default=None, metadata=OMIT_NONE)
    winner_bh_adjusted: float | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, kw_only=True)
class TooFewReplications:
    """Holm and BH not computed: the bootstrap's smallest p-value is too large."""

    available: Literal[False] = False
    tests: int
    bootstrap_reps: int
    reason: str


@dataclass(frozen=True, kw_only=True)
class SharpeCheck:
    """The recomputed Sharpe ratios against the stored ones."""

    compared: int
    identical: int
    max_abs_difference: float


@dataclass(frozen=True, kw_only=True)
class RowCheck:
    """Stored rows against the same configs evaluated again here, every column by its bytes.

    ``identical < compared`` is a failed integrity check: the verdict is withheld.
    """

    sample: str
    compared: int
    identical: int
    columns: int
    values_differing: int
    mismatches: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ReturnsInfo:
    """Which configs' returns were recomputed, how, and whether they match the stored ones."""

    configs: int
    of: int
    sampled: bool
    sample: str
    deterministic: str
    recomputed: bool
    reason: str | None = field(default=None, metadata=OMIT_NONE)
    periods: int | None = field(default=None, metadata=OMIT_NONE)
    non_finite_rows_dropped: int | None = field(default=None, metadata=OMIT_NONE)
    sharpe_check: SharpeCheck | None = field(default=None, metadata=OMIT_NONE)
    row_check: RowCheck | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, kw_only=True)
class Dimensionality:
    """The dimensionality of the configs' returns (descriptive; not a trial count)."""

    value: float
    estimator: str
    method: str
    scope: str
    configs_used: int
    constant_configs_left_out: int
    pairs_sample_size: int
    periods: int
    participation_ratio: float
    participation_ratio_adjusted: float
    participation_ratio_se: float
    nyholt: float
    li_ji: float | None
    galwey: float | None
    li_ji_of_sample: float | None
    galwey_of_sample: float | None
    eigen_method: str
    eigen_note: str | None
    mean_pairwise_correlation: float
    mean_sq_pairwise_correlation: float
    meaning: str


@dataclass(frozen=True, kw_only=True)
class DimensionalityError:
    """The dimensionality could not be computed."""

    value: None = None
    error: str
    meaning: str


@dataclass(frozen=True, kw_only=True)
class ExpectedMaxCurve:
    """E[max] of null Sharpe ratios (per period) against the number of trials."""

    n: tuple[float, ...]
    expected_max_sharpe: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class MultipleTestingSection:
    """Section 5: does the winner beat the benchmark after the whole search."""

    available: Literal[True] = True
    naive_n: int
    naive_n_definition: str
    selection_metric: str
    benchmark: BenchmarkInfo
    trial_sharpe_variance: float
    trial_sharpe_std: float | None
    sharpe_convention: str
    winner: Winner | None
    sweep_wide: SweepWideTests | Unavailable
    discoveries: Discoveries | Unavailable | None = field(default=None, metadata=OMIT_NONE)
    detectable: DetectableSharpe | Unavailable | None = field(default=None, metadata=OMIT_NONE)
    implied_trials: ImpliedTrials | Unavailable
    effective_number_of_trials: EffectiveNumberOfTrials | Unavailable | None = field(
        default=None, metadata=OMIT_NONE
    )
    deflation: Deflation | None
    pbo: PBOSection | Unavailable
    corrections: Corrections | TooFewReplications | Unavailable
    returns: ReturnsInfo
    dimensionality: Dimensionality | DimensionalityError | None
    expected_max_curve: ExpectedMaxCurve


# --- 6. out of sample ---------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class WalkForwardRecord:
    """The stitched walk-forward record of the rule 'take the in-sample best'."""

    folds: int
    periods: int
    first: str
    last: str
    sharpe: float
    sharpe_ann: float
    psr: float
    in_sample_sharpe_ann: float
    efficiency: float
    holds: bool
    rule: str
    total_return: float
    benchmark_total_return: float
    fixed_winner_total_return: float


@dataclass(frozen=True, kw_only=True)
class CPCVRecord:
    """Combinatorial purged cross-validation: the out-of-sample Sharpe of each path."""

    splits: int
    paths: int
    path_sharpe_ann: tuple[float, ...]
    median_sharpe_ann: float | None
    prob_negative: float | None


@dataclass(frozen=True, kw_only=True)
class OutOfSampleSection:
    """Section 6: walk-forward and CPCV validation of the selection rule.

    ``folds`` are the rows of :meth:`sweep.report._oos_selection.OutOfSample.table` (fold, windows,
    the chosen parameters by name, in-sample and out-of-sample metric).
    """

    available: Literal[True] = True
    metric: str
    folds: tuple[JSONObject, ...]
    walk_forward: WalkForwardRecord | None
    cpcv: CPCVRecord | None
    paragraph: str


# --- 7. scaling ---------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class OverheadSummary:
    """What the report keeps of ``sweep bench overhead`` (:class:`OverheadResult`)."""

    workers: int
    overhead_seconds: float | None
    per_byte_seconds: float | None
    points: tuple[OverheadPoint, ...]
    method: str
    generated: str | None
    cluster: ClusterInfo | None
    spec: str | None


@dataclass(frozen=True, kw_only=True)
class AmortizationSummary:
    """What the report keeps of ``sweep bench amortization`` (:class:`AmortizationResult`)."""

    batch_sizes: tuple[int, ...]
    speedup: tuple[SpeedupPoint, ...]
    fit: LawFit | FitFailed
    planner: Plan | PlannerFailed | None
    comparison: PlannerComparison | None
    method: str
    generated: str | None
    cluster: ClusterInfo | None
    spec: str | None


@dataclass(frozen=True, kw_only=True)
class ScalingSummary:
    """What the report keeps of ``sweep bench scaling`` (:class:`ScalingResult`)."""

    cluster_cpus: int
    max_workers: int
    cpus_per_task: float
    batch_size: int
    tasks: int
    points: tuple[ScalingPoint, ...]
    fit: UslFit | FitFailed
    method: str
    generated: str | None
    cluster: ClusterInfo | None
    spec: str | None


@dataclass(frozen=True, kw_only=True)
class ScalingSection:
    """Section 7: the run's own scaling and the ``sweep bench`` results found."""

    available: Literal[True] = True
    source: str
    searched: tuple[str, ...]
    from_run: RunScaling | None = field(default=None, metadata=OMIT_NONE)
    overhead: OverheadSummary | None = field(default=None, metadata=OMIT_NONE)
    amortization: AmortizationSummary | None = field(default=None, metadata=OMIT_NONE)
    scaling: ScalingSummary | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, kw_only=True)
class NoBenchmarks:
    """No ``sweep bench`` results were found (the run's own scaling is still there)."""

    available: Literal[False] = False
    searched: tuple[str, ...]
    hint: str
    from_run: RunScaling | None = field(default=None, metadata=OMIT_NONE)


# --- the whole report ---------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Generated:
    """When and by what the report was built, the seconds each step took and its peak memory.

    ``step_peak_rss_mib`` is each step's own peak resident set size in MiB
    (:mod:`sweep.report._step_progress`); empty where it cannot be measured and in reports
    written before it was recorded.
    """

    at: str
    by: str
    step_seconds: Mapping[str, float]
    step_peak_rss_mib: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ReportData:
    """Everything report.json holds (:func:`sweep.common._serial.to_json` writes it)."""

    format: str
    generated: Generated
    options: ReportOptions
    identity: IdentitySection
    integrity: IntegritySection
    execution: ExecutionSection
    results: ResultsSection | Unavailable
    multiple_testing: MultipleTestingSection | Unavailable
    out_of_sample: OutOfSampleSection | Unavailable
    verdict: Verdict | None
    scaling: ScalingSection | NoBenchmarks
    figures: tuple[str, ...] = field(default=())
