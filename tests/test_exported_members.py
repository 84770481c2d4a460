"""Every public name is listed in ``__all__`` and importable (httpx's test_exported_members),
and each package's list is pinned here with its count (:data:`PUBLIC`, :data:`COUNTS`), so a
new public name is a decision made in this file.

The names a package holds are read with ``vars()``, as httpx does, not ``dir()``: ``sweep``
defines ``__dir__`` (PEP 562) and a check through it would only ever see ``__all__``.
"""

import __future__

import importlib
import types

import pytest

PACKAGES = ["sweep", "strategies", "stats", "sweep.executors", "sweep.report", "sweep.bench"]


def _public_members(module: types.ModuleType) -> set[str]:
    """Public names bound in the module, less submodules and ``from __future__`` features."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType | __future__._Feature)
    }


@pytest.mark.parametrize("package", PACKAGES)
def test_all_exports_exist_and_are_public(package):
    module = importlib.import_module(package)
    exported = list(module.__all__)
    assert len(set(exported)) == len(exported), "duplicates in __all__"
    for name in exported:
        # getattr also loads a lazily exported name (sweep/__init__, PEP 562) into vars().
        assert getattr(module, name, None) is not None, f"{package}.{name} is in __all__ only"
    members = _public_members(module)
    public = {name for name in exported if not name.startswith("_")}  # __version__ aside
    assert members == public, (
        f"public but not exported: {sorted(members - public)}; "
        f"exported but not bound: {sorted(public - members)}"
    )


def test_the_check_sees_a_stray_public_name(monkeypatch):
    import sweep

    monkeypatch.setattr(sweep, "stray_helper", object(), raising=False)
    assert "stray_helper" in _public_members(sweep)


def test_engine_version_matches_pyproject():
    import tomllib
    from pathlib import Path

    import sweep

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert sweep.__version__ == pyproject["project"]["version"]


# --- the public surface, held: a new public name is a visible decision ---------------------
#: Every package's public names (its ``__all__``), as they are meant to be. Adding or cutting a
#: name means editing this list and its count in the same change.
PUBLIC: dict[str, tuple[str, ...]] = {
    "sweep": (
        "Axis",
        "BatchResult",
        "ENGINE_VERSION",
        "Grid",
        "MetricOptions",
        "Panel",
        "PlannerSettings",
        "ReproduceSettings",
        "Reproduction",
        "ResolvedSweep",
        "RunSummary",
        "SweepError",
        "SweepPlan",
        "SweepResult",
        "SweepSpec",
        "__version__",
        "check_strategy",
        "config_id",
        "config_ids",
        "config_seed",
        "config_stream",
        "evaluate_batch",
        "fold_table",
        "load_panel",
        "load_results",
        "load_spec",
        "make_panel",
        "panel_fingerprint",
        "panel_from_frame",
        "plan_sweep",
        "python_grid",
        "report_run",
        "reproduce",
        "resolve",
        "results_hash",
        "results_schema",
        "results_table",
        "resume",
        "run",
        "run_sweep",
        "spec_from_dict",
        "synthetic_panel",
        "table_hash",
    ),
    "strategies": (
        "Accounts",
        "BUILTINS",
        "Book",
        "COST_PARAMS",
        "Costs",
        "EXIT_PARAMS",
        "Execution",
        "ExitCounts",
        "Exits",
        "LookaheadReport",
        "Panel",
        "Param",
        "PositionStrategy",
        "ReturnsStrategy",
        "Strategy",
        "StrategyError",
        "StrategyOutput",
        "account",
        "asset_returns",
        "available_strategies",
        "check_lookahead",
        "close_matches",
        "from_backtesting",
        "get_strategy",
        "group_rows",
        "panel_fingerprint",
        "position_strategy",
        "require_import_path",
        "returns_strategy",
        "strategy_import_path",
    ),
    "stats": (
        "AmortizationFit",
        "AmortizationLaw",
        "BLOCK_METHODS",
        "BlockStats",
        "ConfigNullStats",
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
        "PathStatistics",
        "ResampleDraws",
        "ReturnMoments",
        "SplitRunner",
        "StatsInputError",
        "StepMResult",
        "USLFit",
        "annualised_sharpe",
        "benjamini_hochberg_adjust",
        "block_starts_and_lengths",
        "block_statistics",
        "centred_resample_means",
        "config_null_stats",
        "bootstrap_long_run_sd",
        "consistent_threshold",
        "cscv_best_and_ranks",
        "cpcv_folds",
        "cpcv_paths",
        "data_snooping_tests",
        "deflated_sharpe_ratio",
        "effective_number_of_trials",
        "expected_max_sharpe",
        "fdp_stepm",
        "fixed_exp",
        "fixed_log",
        "fit_amortization",
        "fit_usl",
        "fold_values",
        "group_bounds",
        "gustafson_speedup",
        "holm_adjust",
        "implied_number_of_trials",
        "k_stepm",
        "merge_fold_summaries",
        "merge_null_summaries",
        "min_track_record_length",
        "minimum_backtest_length",
        "minimum_detectable_effect",
        "moments_from_path",
        "multiple_testing_summary",
        "norm_cdf",
        "norm_ppf",
        "path_statistics",
        "pbo_from_block_stats",
        "probabilistic_sharpe_ratio",
        "probability_of_backtest_overfitting",
        "return_moments",
        "sharpe_ratio",
        "stepm",
        "summarize_folds",
        "summarize_null",
        "sweep_wide_critical_value",
        "sweep_wide_pvalue",
        "task_efficiency",
        "trials_from_mean_sq_correlation",
        "usl_peak_workers",
        "usl_throughput",
        "walk_forward_folds",
        "CountedCorrections",
        "PValueCounts",
        "SweepExtremes",
        "TCounts",
        "corrections_counted",
        "data_snooping_counted",
        "fdp_stepm_counted",
        "merge_p_value_counts",
        "merge_t_counts",
        "p_value_counts",
        "stepm_counted",
        "sweep_extremes",
        "t_counts_of",
    ),
    "sweep.executors": (
        "ADDRESS_ENVVARS",
        "BatchOutcome",
        "ClusterExecutor",
        "DaskExecutor",
        "EXECUTOR_CHOICES",
        "Executor",
        "KINDS",
        "LOCAL",
        "LocalExecutor",
        "RayExecutor",
        "address_forms",
        "assumed_costs",
        "clean_up_dead_sessions",
        "cluster_named",
        "local_cluster_kind",
        "make_executor",
        "recorded_kind",
        "title_of",
    ),
    "sweep.report": (
        "REPORT_FORMAT",
        "Report",
        "ReportFiles",
        "ReportOptions",
        "Verdict",
        "VerdictInputs",
        "build_report",
        "default_out_dir",
        "judge_winner",
        "write_report",
    ),
    "sweep.bench": (
        "AmortizationSettings",
        "BenchOutcome",
        "OverheadSettings",
        "ScalingSettings",
        "measure_amortization",
        "measure_overhead",
        "measure_scaling",
        "run_bench",
    ),
}
COUNTS = {
    "sweep": 43,
    "strategies": 30,
    "stats": 89,
    "sweep.executors": 18,
    "sweep.report": 10,
    "sweep.bench": 8,
}


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_exports_exactly_its_listed_names(package):
    exported = sorted(importlib.import_module(package).__all__)
    listed = sorted(PUBLIC[package])
    assert exported == listed, (
        f"{package}: new public names {sorted(set(exported) - set(listed))}, "
        f"gone {sorted(set(listed) - set(exported))}: update PUBLIC and COUNTS on purpose"
    )
    assert len(exported) == COUNTS[package]


def test_the_public_surface_has_198_names_in_six_packages():
    assert set(PUBLIC) == set(PACKAGES) == set(COUNTS)
    assert {p: len(names) for p, names in PUBLIC.items()} == COUNTS
    assert sum(COUNTS.values()) == 198
