"""The verdict: its rule, and that it finds a planted edge among noise and nothing in noise."""

from __future__ import annotations

import pytest

from sweep import run_sweep, spec_from_dict
from sweep.report import ReportOptions, VerdictInputs, build_report, judge_winner

PLANTED = "tests.strategies_for_tests:PlantedEdge"
OPTIONS = ReportOptions(progress=False)


def inputs(**overrides):
    base = {
        "n_configs": 1000,
        "winner": "a=1",
        "winner_sharpe_ann": 1.2,
        "null": "Null hypothesis: no configuration has a positive expected return.",
        "benchmark_sharpe_ann": None,
        "sweep_pvalue": 0.01,
        "reps": 200,
        "alpha": 0.05,
        "prob_oos_loss": 0.2,
        "pbo": 0.6,
        "implied_n": 250.0,
        "dsr_implied": 0.97,
    }
    base.update(overrides)
    return VerdictInputs(**base)


def test_rule_needs_the_sweep_wide_test_and_the_out_of_sample_check():
    assert judge_winner(inputs()).likely_real is True
    assert judge_winner(inputs(sweep_pvalue=0.05)).likely_real is True  # at alpha: rejects
    assert judge_winner(inputs(sweep_pvalue=0.051)).likely_real is False
    assert judge_winner(inputs(prob_oos_loss=0.5)).likely_real is False
    assert judge_winner(inputs(prob_oos_loss=None)).likely_real is False
    assert judge_winner(inputs(sweep_pvalue=None)).likely_real is None


def test_pbo_and_the_deflated_sharpe_do_not_gate():
    # PBO cannot see an edge every config shares; the DSR is reported beside the test.
    assert judge_winner(inputs(pbo=0.99, dsr_implied=0.1)).likely_real is True


def test_paragraph_names_the_null_the_benchmark_and_what_the_pvalue_accounts_for():
    v = judge_winner(inputs(benchmark_sharpe_ann=0.8))
    assert v.paragraph.startswith("Null hypothesis:")
    assert "the benchmark's own is 0.80" in v.paragraph
    assert "p-value is 0.0100" in v.paragraph and "every configuration tried" in v.paragraph
    assert "1,000 configurations" in v.paragraph
    assert "effective number of trials is about 250" in v.paragraph
    assert "likely real" in v.headline
    assert "independent trials" not in judge_winner(inputs(implied_n=None)).paragraph


def test_paragraph_states_the_calibration_the_detectable_size_the_count_and_next_steps():
    from sweep.report._verdict import CALIBRATED_NULL_FAMILIES

    sized = {
        "mde_sharpe_ann": 0.83,
        "single_test_mde_ann": 0.51,
        "power": 0.8,
        "periods": 6300,
        "periods_per_year": 252.0,
        "called_real": 12,
        "fdp_gamma": 0.1,
    }
    luck = judge_winner(inputs(sweep_pvalue=0.3, **sized))
    assert luck.likely_real is False
    text = luck.paragraph
    assert (
        "calibrated on the null families in the documentation's calibration table (Benchmarks, \"The verdict's error rates\"): "
        in text
    )
    assert ", ".join(CALIBRATED_NULL_FAMILIES) in text and "GARCH(1,1)-t" in text
    assert luck.calibrated_on == CALIBRATED_NULL_FAMILIES
    assert "At this length (25.0 years) and over 1,000 configurations" in text
    assert "with 80% power only an edge of annualised excess Sharpe ratio 0.83 or more" in text
    assert "tested alone would need 0.51" in text
    assert "FDP-StepM calls 12 configurations real with at most 10% false" in text
    assert luck.next_steps in text and luck.next_steps.startswith("Next: do not widen the grid")
    assert "holdout" in luck.next_steps and "lengthen the sample" in luck.next_steps
    assert luck.minimum_detectable_sharpe_ann == 0.83 and luck.called_real == 12
    real = judge_winner(inputs(**sized))
    assert real.next_steps.startswith("Next: before trading it, test the winner alone")
    none = judge_winner(inputs(sweep_pvalue=None))
    assert none.calibrated_on == () and "bootstrap_reps of 200 or more" in none.next_steps
    assert "calibrated" not in none.paragraph
    one = judge_winner(inputs(called_real=1, fdp_gamma=0.1))
    assert "calls 1 configuration real" in one.paragraph


def planted_spec(edge: float) -> dict:
    # 200 noise strategies (edge 0), plus member 0 once more with a true per-period Sharpe of
    # `edge` (1.6 annualised for 0.1): 201 configs over 25 years of daily periods.
    grid = {"member": {"start": 0, "stop": 200}, "edge": [0.0, edge]}
    if edge:
        grid["where"] = ["edge == 0 or member == 0"]
    else:
        grid["edge"] = [0.0]
    return {
        "name": "planted" if edge else "noise",
        "seed": 11,
        "data": {"source": "synthetic", "years": 25},
        "strategy": {"name": PLANTED},
        "grid": grid,
        "metrics": {"bootstrap_reps": 100, "block_length": 10, "pbo_blocks": 16},
    }


@pytest.fixture(scope="module")
def planted_reports(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted")
    out = {}
    for edge in (0.1, 0.0):
        run_dir = root / f"edge-{edge}"
        run_sweep(spec_from_dict(planted_spec(edge)), run_dir, progress=False)
        out[edge] = build_report(run_dir, OPTIONS).to_json()
    return out


def test_planted_edge_is_flagged_as_likely_real(planted_reports):
    d = planted_reports[0.1]
    mt = d["multiple_testing"]
    assert mt["naive_n"] == 201
    assert mt["winner"]["params"]["edge"] == 0.1
    # Independent noise: the bootstrap-implied number of trials is of the order of the naive.
    assert mt["implied_trials"]["n"] > 50
    assert abs(mt["dimensionality"]["mean_pairwise_correlation"]) < 0.05
    assert mt["sweep_wide"]["winner_pvalue"] <= 0.05
    assert mt["deflation"]["implied"]["dsr"] > 0.99
    assert mt["pbo"]["prob_oos_loss"] < 0.5
    assert d["verdict"]["likely_real"] is True
    # The planted config is among those called real, first by t; the edge (1.6 a year) is
    # above what the sweep could detect.
    called = mt["discoveries"]
    assert called["count"] >= 1 and called["first"][0]["params"]["edge"] == 0.1
    assert mt["detectable"]["sharpe_ann"] < mt["winner"]["sharpe_ann"]
    assert d["verdict"]["called_real"] == called["count"]
    assert d["verdict"]["minimum_detectable_sharpe_ann"] == mt["detectable"]["sharpe_ann"]


def test_pure_noise_is_not_flagged(planted_reports):
    d = planted_reports[0.0]
    mt = d["multiple_testing"]
    assert mt["naive_n"] == 200
    assert mt["sweep_wide"]["winner_pvalue"] > 0.05
    assert d["verdict"]["likely_real"] is False
    assert "not distinguishable from selection luck" in d["verdict"]["headline"]
    assert mt["discoveries"]["count"] == mt["sweep_wide"]["stepm"]["count"] == 0
    assert "minimum detectable effect" in d["verdict"]["paragraph"]
    assert d["verdict"]["next_steps"].startswith("Next: do not widen the grid")


def test_with_walk_forward_its_psr_decides_out_of_sample():
    # Walk-forward replaces the CSCV criterion: PSR >= 0.95 of the stitched OOS excess returns.
    assert judge_winner(inputs(oos_psr=0.95, prob_oos_loss=0.9)).likely_real is True
    assert judge_winner(inputs(oos_psr=0.949, prob_oos_loss=0.0)).likely_real is False
    assert judge_winner(inputs(oos_psr=0.99, sweep_pvalue=0.2)).likely_real is False
    verdict = judge_winner(inputs(oos_psr=0.97))
    assert "walk-forward out-of-sample PSR 0.970 (>= 0.95)" in verdict.reasons
    assert "PSR 0.970 (the rule asks for at least 0.95)" in verdict.paragraph


def test_walk_forward_that_could_not_be_computed_does_not_hold():
    verdict = judge_winner(inputs(oos_psr=float("nan"), prob_oos_loss=0.0))
    assert verdict.likely_real is False
    assert any("could not be computed" in r for r in verdict.reasons)
