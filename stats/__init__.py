"""Pure statistics for parameter sweeps: arrays in, frozen dataclasses or arrays out.

No Ray, no I/O, no global random state: functions that need randomness take a
``numpy.random.Generator`` or a seed. Sharpe ratios are PER PERIOD unless a name says
otherwise, and kurtosis is RAW (normal = 3). Return series are laid out (series, periods),
one config per row, except the PBO matrix, which follows its paper: (periods, strategies).
Bad inputs raise :class:`StatsInputError` (a ``ValueError``); ``stats`` imports nothing from
``sweep`` or ``strategies``. Every transcendental that feeds a result goes through
``fixed_exp``/``fixed_log``/``norm_cdf``/``norm_ppf``: the same bits on every CPU.
"""

from stats._amortization import AmortizationFit, AmortizationLaw, fit_amortization
from stats._bootstrap import BLOCK_METHODS, block_starts_and_lengths
from stats._bootstrap_variance import bootstrap_long_run_sd
from stats._cscv_kernel import cscv_best_and_ranks
from stats._data_snooping import (
    ConfigNullStats,
    NullSummary,
    ResampleDraws,
    centred_resample_means,
    config_null_stats,
    consistent_threshold,
    implied_number_of_trials,
    merge_null_summaries,
    summarize_null,
    sweep_wide_pvalue,
)
from stats._detectable_effect import (
    DetectableEffect,
    minimum_detectable_effect,
    sweep_wide_critical_value,
)
from stats._effective_trials import (
    EffectiveTrials,
    GramTrials,
    effective_number_of_trials,
    trials_from_mean_sq_correlation,
)
from stats._fixed_math import fixed_exp, fixed_log, norm_cdf, norm_ppf
from stats._folds import (
    Fold,
    FoldPlan,
    FoldSummary,
    cpcv_folds,
    cpcv_paths,
    fold_values,
    group_bounds,
    merge_fold_summaries,
    summarize_folds,
    walk_forward_folds,
)
from stats._generalized_error import (
    FDPStepMResult,
    KStepMResult,
    fdp_stepm,
    fdp_stepm_counted,
    k_stepm,
)
from stats._moments import (
    ReturnMoments,
    annualised_sharpe,
    moments_from_path,
    return_moments,
    sharpe_ratio,
)
from stats._multiple_comparison import (
    CountedCorrections,
    MultipleTestingSummary,
    PValueCounts,
    benjamini_hochberg_adjust,
    corrections_counted,
    holm_adjust,
    merge_p_value_counts,
    multiple_testing_summary,
    p_value_counts,
)
from stats._pbo import (
    BlockStats,
    PBOResult,
    SplitRunner,
    block_statistics,
    pbo_from_block_stats,
    probability_of_backtest_overfitting,
)
from stats._row_kernel import PathStatistics, path_statistics
from stats._sharpe_inference import (
    DeflatedSharpe,
    deflated_sharpe_ratio,
    expected_max_sharpe,
    min_track_record_length,
    minimum_backtest_length,
    probabilistic_sharpe_ratio,
)
from stats._stats_errors import StatsInputError
from stats._stepm import (
    DataSnoopingResult,
    StepMResult,
    SweepExtremes,
    data_snooping_counted,
    data_snooping_tests,
    stepm,
    stepm_counted,
    sweep_extremes,
)
from stats._threshold_counts import TCounts, merge_t_counts, t_counts_of
from stats._usl import (
    USLFit,
    fit_usl,
    gustafson_speedup,
    task_efficiency,
    usl_peak_workers,
    usl_throughput,
)

__all__ = [
    "BLOCK_METHODS",
    "AmortizationFit",
    "AmortizationLaw",
    "BlockStats",
    "ConfigNullStats",
    "CountedCorrections",
    "DataSnoopingResult",
    "DeflatedSharpe",
    "DetectableEffect",
    "EffectiveTrials",
    "FDPStepMResult",
    "Fold",
    "FoldPlan",
    "FoldSummary",
    "GramTrials",
    "KStepMResult",
    "MultipleTestingSummary",
    "NullSummary",
    "PBOResult",
    "PValueCounts",
    "PathStatistics",
    "ResampleDraws",
    "ReturnMoments",
    "SplitRunner",
    "StatsInputError",
    "StepMResult",
    "SweepExtremes",
    "TCounts",
    "USLFit",
    "annualised_sharpe",
    "benjamini_hochberg_adjust",
    "block_starts_and_lengths",
    "block_statistics",
    "bootstrap_long_run_sd",
    "centred_resample_means",
    "config_null_stats",
    "consistent_threshold",
    "corrections_counted",
    "cpcv_folds",
    "cpcv_paths",
    "cscv_best_and_ranks",
    "data_snooping_counted",
    "data_snooping_tests",
    "deflated_sharpe_ratio",
    "effective_number_of_trials",
    "expected_max_sharpe",
    "fdp_stepm",
    "fdp_stepm_counted",
    "fit_amortization",
    "fit_usl",
    "fixed_exp",
    "fixed_log",
    "fold_values",
    "group_bounds",
    "gustafson_speedup",
    "holm_adjust",
    "implied_number_of_trials",
    "k_stepm",
    "merge_fold_summaries",
    "merge_null_summaries",
    "merge_p_value_counts",
    "merge_t_counts",
    "min_track_record_length",
    "minimum_backtest_length",
    "minimum_detectable_effect",
    "moments_from_path",
    "multiple_testing_summary",
    "norm_cdf",
    "norm_ppf",
    "p_value_counts",
    "path_statistics",
    "pbo_from_block_stats",
    "probabilistic_sharpe_ratio",
    "probability_of_backtest_overfitting",
    "return_moments",
    "sharpe_ratio",
    "stepm",
    "stepm_counted",
    "summarize_folds",
    "summarize_null",
    "sweep_extremes",
    "sweep_wide_critical_value",
    "sweep_wide_pvalue",
    "t_counts_of",
    "task_efficiency",
    "trials_from_mean_sq_correlation",
    "usl_peak_workers",
    "usl_throughput",
    "walk_forward_folds",
]
