"""Pin the statistics API of ``stats``; tests/test_exported_members.py checks ``__all__``."""

from __future__ import annotations

import stats

EXPECTED = {
    "AmortizationFit",
    "AmortizationLaw",
    "BLOCK_METHODS",
    "BlockStats",
    "ConfigNullStats",
    "DataSnoopingResult",
    "NullSummary",
    "ResampleDraws",
    "StatsInputError",
    "StepMResult",
    "centred_resample_means",
    "bootstrap_long_run_sd",
    "config_null_stats",
    "consistent_threshold",
    "data_snooping_tests",
    "implied_number_of_trials",
    "merge_null_summaries",
    "stepm",
    "summarize_null",
    # out-of-sample folds (walk-forward, CPCV)
    "Fold",
    "FoldPlan",
    "FoldSummary",
    "GramTrials",
    "cpcv_folds",
    "cpcv_paths",
    "fold_values",
    "group_bounds",
    "merge_fold_summaries",
    "summarize_folds",
    "walk_forward_folds",
    "sweep_wide_pvalue",
    # generalized error rates and the minimum detectable effect
    "KStepMResult",
    "FDPStepMResult",
    "k_stepm",
    "fdp_stepm",
    # the step-down tests and corrections from per-part counts (no per-config array)
    "TCounts",
    "t_counts_of",
    "merge_t_counts",
    "SweepExtremes",
    "sweep_extremes",
    "stepm_counted",
    "data_snooping_counted",
    "fdp_stepm_counted",
    "PValueCounts",
    "p_value_counts",
    "merge_p_value_counts",
    "CountedCorrections",
    "corrections_counted",
    "DetectableEffect",
    "minimum_detectable_effect",
    "sweep_wide_critical_value",
    "DeflatedSharpe",
    "EffectiveTrials",
    "MultipleTestingSummary",
    "PBOResult",
    "PathStatistics",
    "SplitRunner",
    "ReturnMoments",
    "USLFit",
    "annualised_sharpe",
    "benjamini_hochberg_adjust",
    "block_starts_and_lengths",
    "block_statistics",
    "deflated_sharpe_ratio",
    "effective_number_of_trials",
    "trials_from_mean_sq_correlation",
    "expected_max_sharpe",
    "fixed_exp",
    "fixed_log",
    "norm_cdf",
    "norm_ppf",
    "cscv_best_and_ranks",
    "fit_amortization",
    "fit_usl",
    "gustafson_speedup",
    "holm_adjust",
    "min_track_record_length",
    "minimum_backtest_length",
    "moments_from_path",
    "multiple_testing_summary",
    "path_statistics",
    "pbo_from_block_stats",
    "probabilistic_sharpe_ratio",
    "probability_of_backtest_overfitting",
    "return_moments",
    "sharpe_ratio",
    "task_efficiency",
    "usl_peak_workers",
    "usl_throughput",
}


def test_statistics_api_is_exported() -> None:
    # The public API, pinned: adding or removing a name is a deliberate change here too.
    assert set(stats.__all__) == EXPECTED
    assert len(set(stats.__all__)) == len(stats.__all__)


def test_every_export_exists_and_is_documented() -> None:
    for name in stats.__all__:
        obj = getattr(stats, name)
        if callable(obj):
            assert obj.__doc__, name
