"""The verdict: its rule, and that it finds a planted edge among noise and nothing in noise."""

from __future__ import annotations

import pytest

from sweep import run_sweep, spec_from_dict
from sweep.report import ReportOptions, VerdictInputs, build_report, judge_winner

PLANTED = "tests.strategies_for_tests:PlantedEdge"
OPTIONS = ReportOptions(progress=False, spa_max_configs=20, spa_reps=50)


def inputs(**overrides):
    base = {
        "naive_n": 1000,
        "effective_n": 40.0,
        "mean_correlation": 0.3,
        "winner": "a=1",
        "winner_sharpe_ann": 1.2,
        "expected_max_ann": 0.6,
        "dsr_naive": 0.9,
        "dsr_effective": 0.97,
        "pbo": 0.2,
    }
    base.update(overrides)
    return VerdictInputs(**base)


def test_rule_needs_dsr_at_the_effective_count_and_a_low_pbo():
    assert judge_winner(inputs()).likely_real is True
    assert judge_winner(inputs(dsr_effective=0.94)).likely_real is False
    assert judge_winner(inputs(pbo=0.5)).likely_real is False
    assert judge_winner(inputs(pbo=None)).likely_real is False
    assert judge_winner(inputs(dsr_naive=None, dsr_effective=None)).likely_real is None


def test_without_an_effective_count_the_naive_dsr_decides():
    assert judge_winner(inputs(effective_n=None, dsr_effective=None, dsr_naive=0.96)).likely_real
    assert not judge_winner(inputs(effective_n=None, dsr_effective=None)).likely_real


def test_paragraph_states_both_counts_and_the_correlation():
    v = judge_winner(inputs())
    assert "1,000 configurations" in v.paragraph and "40.0 independent trials" in v.paragraph
    assert "mean pairwise correlation 0.30" in v.paragraph
    assert "likely real" in v.headline and "naive" not in v.headline
    strong = judge_winner(inputs(dsr_naive=0.99))
    assert "even at the naive count" in strong.headline


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
        "metrics": {"bootstrap_reps": 20, "block_length": 10, "pbo_blocks": 16},
    }


@pytest.fixture(scope="module")
def planted_reports(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted")
    out = {}
    for edge in (0.1, 0.0):
        run_dir = root / f"edge-{edge}"
        run_sweep(spec_from_dict(planted_spec(edge)), run_dir, progress=False)
        out[edge] = build_report(run_dir, OPTIONS).data
    return out


def test_planted_edge_is_flagged_as_likely_real(planted_reports):
    d = planted_reports[0.1]
    mt = d["multiple_testing"]
    assert mt["naive_n"] == 201
    assert mt["winner"]["params"]["edge"] == 0.1
    # Independent noise: the effective number of trials is close to the naive one.
    assert mt["effective_n"]["value"] > 150
    assert abs(mt["effective_n"]["mean_pairwise_correlation"]) < 0.05
    assert mt["deflation"]["effective"]["dsr"] > 0.99
    assert mt["pbo"]["pbo"] < 0.1
    assert d["verdict"]["likely_real"] is True


def test_pure_noise_is_not_flagged(planted_reports):
    d = planted_reports[0.0]
    mt = d["multiple_testing"]
    assert mt["naive_n"] == 200
    assert mt["deflation"]["effective"]["dsr"] < 0.95
    assert d["verdict"]["likely_real"] is False
    assert "not distinguishable from selection luck" in d["verdict"]["headline"]
