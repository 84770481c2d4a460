"""The report's sections for complete, resumed, partial and failing runs; stability."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from sweep import load_results, results_hash
from sweep.common._jsonable import dumps
from sweep.engine._evaluate import results_schema
from sweep.errors import SweepError
from sweep.report import ReportOptions, build_report, default_out_dir
from sweep.report._cli_support import parse_heatmap
from sweep.report._load import load_run
from tests.report.conftest import FAST

SECTIONS = (
    "identity",
    "integrity",
    "execution",
    "results",
    "multiple_testing",
    "out_of_sample",
    "scaling",
)
MD_HEADINGS = (
    "## 1. Identity",
    "## 2. Integrity",
    "## 3. Execution",
    "## 4. Results",
    "## 5. Multiple testing",
    "## 6. Out of sample",
    "## 7. Scaling",
    "### Verdict",
)


@pytest.mark.parametrize("name", ["complete", "partial", "resumed", "failing"])
def test_every_section_is_in_json_markdown_and_html(reports, name):
    _, files = reports[name]
    doc = json.loads(files.json.read_text())
    for section in SECTIONS:
        assert section in doc, section
    assert doc["format"] == "raysweep-report-v1"
    md = files.markdown.read_text()
    html = files.html.read_text()
    for heading in MD_HEADINGS:
        assert heading in md, heading
        assert heading.lstrip("# ") in html, heading
    assert "<script" not in html and "http://" not in html and "https://" not in html
    for name_ in doc["figures"]:
        assert f"figures/{name_}.png" in md
        assert (files.folder / "figures" / f"{name_}.png").is_file()
    assert html.count("data:image/png;base64,") == len(doc["figures"])


def test_identity_and_integrity_of_a_complete_run(reports, runs):
    report, _ = reports["complete"]
    d = report.to_json()
    ident = d["identity"]
    assert ident["run_name"] == "small"
    assert len(ident["spec_hash"]) == 64 and len(ident["data"]["fingerprint"]) == 64
    assert ident["strategy"] == {"name": "momentum", "version": "1"}
    assert ident["root_seed"] == 7 and ident["grid"]["size"] == 60
    assert ident["code"]["versions"]["numpy"] and ident["code"]["versions"]["python"]
    assert ident["code"]["git_commit"] is None or len(ident["code"]["git_commit"]) == 40
    integrity = d["integrity"]
    assert integrity["table_hash"] == results_hash(runs["complete"])
    assert integrity["matches_recorded"] is True
    assert integrity["parts"]["bad"] == [] and integrity["parts"]["good"] >= 1
    assert integrity["configs"] == {
        "total": 60,
        "done": 60,
        "ok": 60,
        "failed": 0,
        "missing": 0,
        "outside_grid": 0,
        "complete": True,
    }
    assert integrity["recheck"] == f"sweep verify {runs['complete']}"
    assert [s["status"] for s in integrity["sessions"]] == ["completed"]
    # Every environment that computed the parts, and how to re-compute a sample here.
    [env] = integrity["environments"]
    assert env["parts"] == integrity["parts"]["good"] and env["configs"] == 60
    assert env["environment"]["versions"]["numpy"] == ident["code"]["versions"]["numpy"]
    assert integrity["reproduce"] == f"sweep reproduce {runs['complete']}"


def test_resumed_run_reports_both_sessions_and_the_same_hash(reports):
    complete, _ = reports["complete"]
    resumed, _ = reports["resumed"]
    integrity = resumed.to_json()["integrity"]
    assert integrity["resumed"] is True
    assert [s["id"] for s in integrity["sessions"]] == [1, 2]
    assert [s["resumed"] for s in integrity["sessions"]] == [False, True]
    assert integrity["table_hash"] == complete.to_json()["integrity"]["table_hash"]
    execution = resumed.to_json()["execution"]
    assert set(execution["tasks_by_session"]) == {"1", "2"}
    assert execution["configs_in_tasks"] == 60
    assert [p["batch_size"] for p in execution["planner"]] == [5, 9]
    assert execution["tasks"] == 3 + 5
    # Results and statistics do not depend on how the run was split into sessions.
    for key in ("results", "multiple_testing", "verdict"):
        assert dumps(resumed.to_json()[key]) == dumps(complete.to_json()[key]), key


def test_partial_run_is_marked_incomplete(reports):
    report, files = reports["partial"]
    integrity = report.to_json()["integrity"]
    assert integrity["table_hash"] is None
    assert integrity["table_hash_of_partial_results"] is not None
    assert integrity["configs"]["done"] == 15 and integrity["configs"]["missing"] == 45
    assert report.to_json()["multiple_testing"]["naive_n"] == 15
    assert "incomplete" in report.to_json()["verdict"]["paragraph"]
    assert "45 missing" in files.markdown.read_text()


def test_failed_configs_are_grouped_by_message(reports):
    report, files = reports["failing"]
    integrity = report.to_json()["integrity"]
    assert integrity["configs"]["failed"] == 6 and integrity["configs"]["ok"] == 74
    assert integrity["errors"] == [
        {"error": "ValueError: lookback 13 is unlucky", "count": 2},
        {"error": "ValueError: lookback 26 is unlucky", "count": 2},
        {"error": "ValueError: lookback 39 is unlucky", "count": 2},
    ]
    assert report.to_json()["multiple_testing"]["naive_n"] == 74
    assert report.to_json()["multiple_testing"]["returns"]["configs"] == 74
    assert "lookback 26 is unlucky" in files.html.read_text()


def test_execution_section_fits_and_telemetry(reports):
    execution = reports["complete"][0].to_json()["execution"]
    assert execution["tasks"] >= 1 and execution["configs_in_tasks"] == 60
    assert execution["cpu_seconds"] > 0 and execution["wall_seconds"] > 0
    assert 0.0 <= execution["overhead_share"] <= 1.0
    assert execution["retries"] == 0
    assert execution["fit_service"]["available"] is False  # one batch size only
    assert "2 distinct batch sizes" in execution["fit_service"]["reason"]
    resumed = reports["resumed"][0].to_json()["execution"]
    # Sessions of 5- and 9-config tasks: 6 warm tasks of 2 sizes (timings too small to be
    # sure of the sign of the fitted slope, so only its presence is checked here).
    fit = resumed["fit_service"]
    assert fit["available"] or "grow with batch size" in fit["reason"]
    assert [w["tasks"] for w in resumed["workers"]] == [3, 5]


def test_results_section_top_table_and_automatic_heatmap(reports):
    results = reports["complete"][0].to_json()["results"]
    top = results["top"]
    assert len(top) == 10 and [r["rank"] for r in top] == list(range(1, 11))
    sharpes = [r["excess_sharpe_ann"] for r in top]
    assert sharpes == sorted(sharpes, reverse=True)
    hm = results["heatmap"]
    # lookback has 15 values, band 4: both multi-valued, in grid order.
    assert (hm["x"], hm["y"], hm["chosen"]) == ("lookback", "band", "automatic")
    assert len(hm["z"]) == 4 and len(hm["z"][0]) == 15
    assert sum(results["sharpe_ann_histogram"]["counts"]) == 60


def test_heatmap_axes_can_be_chosen_and_are_checked(runs):
    options = ReportOptions(progress=False, heatmap=("band", "lookback"))
    hm = build_report(runs["complete"], options).to_json()["results"]["heatmap"]
    assert (hm["x"], hm["y"], hm["chosen"]) == ("band", "lookback", "--heatmap")
    with pytest.raises(SweepError, match=r"'lokback' is not a grid parameter.*'lookback'"):
        build_report(runs["complete"], ReportOptions(progress=False, heatmap=("lokback", "band")))
    assert parse_heatmap("band, lookback") == ("band", "lookback")
    with pytest.raises(SweepError, match="--heatmap"):
        parse_heatmap("band")


def test_multiple_testing_section(reports):
    mt = reports["complete"][0].to_json()["multiple_testing"]
    assert mt["naive_n"] == 60
    assert (
        mt["benchmark"]["name"] == "zero" and "positive expected return" in mt["benchmark"]["null"]
    )
    dims = mt["dimensionality"]
    assert dims["method"] == "exact" and 1.0 <= dims["value"] <= 60
    assert "not a number of trials" in dims["meaning"]
    assert -1.0 <= dims["mean_pairwise_correlation"] <= 1.0
    assert dims["li_ji"] is not None and dims["galwey"] is not None and dims["nyholt"] is not None
    assert mt["returns"]["recomputed"] is True and mt["returns"]["sampled"] is False
    check = mt["returns"]["sharpe_check"]
    assert check["identical"] == check["compared"] == 60
    # A seeded sample of 16 done configs and the winner, every column compared by bytes.
    rows = mt["returns"]["row_check"]
    assert rows["identical"] == rows["compared"] in (16, 17) and rows["mismatches"] == []
    assert rows["sample"].endswith("and the winner") and rows["values_differing"] == 0
    assert "integrity_failure" not in reports["complete"][0].to_json()["verdict"]
    sw = mt["sweep_wide"]
    assert sw["available"] is True and sw["reps"] == 20 and sw["configs"] == 60
    for key in ("reality_check_pvalue", "spa_pvalue", "winner_pvalue"):
        assert 1 / 21 <= sw[key] <= 1.0  # (1 + #) / (1 + B): never 0
    assert sw["stepm"]["exact"] is True and sw["stepm"]["count"] >= 0
    # The exact values are pinned by test_sweep_wide_pvalues_are_the_definitions below.
    implied = mt["implied_trials"]
    assert implied["available"] is True and implied["n"] >= 1.0
    # The same count under the report's name for it, with how it is measured.
    effective = mt["effective_number_of_trials"]
    assert effective["n"] == implied["n"] and effective["naive_n"] == 60
    assert (
        "joint-bootstrap" in effective["measured"]
        and "dimensionality" in (effective["not_dimensionality"])
    )
    assert effective["dsr"] == mt["deflation"]["implied"]["dsr"]
    called = mt["discoveries"]
    assert called["available"] is True and called["gamma"] == 0.1 and called["alpha"] == 0.05
    assert called["stepm_count"] == sw["stepm"]["count"] <= called["count"] <= 60
    assert called["k_counts"][0] == called["stepm_count"] and len(called["first"]) <= 10
    assert called["count"] == 0 or called["first"][0]["rank"] == 1
    det = mt["detectable"]
    assert det["available"] is True and det["power"] == 0.8
    assert det["sharpe_ann"] > det["single_test_sharpe_ann"] > 0
    assert det["sharpe_ann"] == pytest.approx(det["sharpe"] * math.sqrt(252))
    naive, boot = mt["deflation"]["naive"], mt["deflation"]["implied"]
    assert naive["n_trials"] == 60 and boot["n_trials"] == implied["n"]
    # At the implied N the expected maximum is the mean bootstrap maximum (by construction).
    assert boot["expected_max_sharpe"] == pytest.approx(implied["mean_null_max_sharpe"], rel=1e-6)
    assert naive["psr"] == boot["psr"]
    assert 0.0 <= mt["pbo"]["pbo"] <= 1.0 and mt["pbo"]["splits"] == 70
    # 20 replications cannot support Holm over 60 p-values: the report says why.
    corr = mt["corrections"]
    assert corr["available"] is False and "B + 1 >= m / alpha" in corr["reason"]
    assert "spa" not in mt
    assert len(mt["expected_max_curve"]["n"]) == len(
        mt["expected_max_curve"]["expected_max_sharpe"]
    )


def test_returns_are_sampled_above_the_cap(runs):
    options = ReportOptions(progress=False, max_return_configs=25)
    mt = build_report(runs["complete"], options).to_json()["multiple_testing"]
    assert mt["returns"]["sampled"] is True and mt["returns"]["configs"] == 25
    assert "seeded uniform sample of 25" in mt["returns"]["sample"]
    assert mt["dimensionality"]["scope"].startswith("extrapolated to all 60 configs")
    assert 1.0 <= mt["dimensionality"]["value"] <= 60


def test_report_json_is_stable_across_builds(runs):
    first = build_report(runs["resumed"], FAST).to_json()
    second = build_report(runs["resumed"], FAST).to_json()
    first.pop("generated"), second.pop("generated")
    assert dumps(first) == dumps(second)


def test_default_output_folder():
    assert str(default_out_dir("runs/x")) == "runs/x/report"
    assert str(default_out_dir("s3://bucket/prefix/momentum-demo/")) == "report-momentum-demo"


def test_a_run_folder_without_results_still_gets_a_report(tmp_path):
    from sweep import resolve, spec_from_dict
    from sweep.report import write_report
    from sweep.store._run_store import RunStore
    from tests.helpers import small_spec_dict

    _sweep = resolve(spec_from_dict(small_spec_dict()))
    RunStore(tmp_path / "run").create(_sweep, results_schema(_sweep))
    no_bench = replace(FAST, bench_dir=str(tmp_path / "no-bench"))  # not the working folder's
    report = build_report(tmp_path / "run", no_bench)
    assert report.to_json()["integrity"]["configs"]["done"] == 0
    assert report.to_json()["results"]["available"] is False
    assert report.to_json()["multiple_testing"]["available"] is False
    assert report.to_json()["verdict"] is None and report.figures == {}
    files = write_report(report, tmp_path / "out")
    assert "No verdict" in files.markdown.read_text()


def test_moved_data_still_gets_the_sweep_wide_tests(tmp_path):
    import pandas as pd

    from sweep import run_sweep, spec_from_dict, synthetic_panel
    from tests.helpers import small_spec_dict

    panel = synthetic_panel(years=4)
    prices = tmp_path / "prices.csv"
    pd.DataFrame(
        panel.close, index=pd.DatetimeIndex(panel.dates), columns=list(panel.assets)
    ).to_csv(prices, index_label="date")
    run_sweep(
        spec_from_dict(small_spec_dict(data={"path": str(prices)})),
        tmp_path / "run",
        progress=False,
    )
    prices.unlink()
    mt = build_report(tmp_path / "run", FAST).to_json()["multiple_testing"]
    assert (
        mt["returns"]["recomputed"] is False
        and "cannot rebuild the sweep" in mt["returns"]["reason"]
    )
    assert mt["dimensionality"] is None
    # Everything the verdict needs is stored in the parts: no returns are recomputed for it.
    assert mt["sweep_wide"]["available"] is True
    assert mt["deflation"]["naive"]["dsr"] is not None
    assert mt["deflation"]["implied"]["dsr"] is not None
    assert mt["pbo"]["available"] is True  # from the stored block statistics


def test_sweep_wide_pvalues_are_the_definitions_on_the_runs_null(runs, reports):
    """The report's p-values, recomputed here from the run's stored null and its table.

    White (2000): ``(1 + #{V*_b >= sqrt(n) max_k ē_k}) / (1 + B)``; Hansen (2005) SPA and the
    winner's sweep-wide p-value: ``(1 + #{max(0, T*_b) >= max(0, t)}) / (1 + B)``. The
    hand-computed values of the same formulas are in tests/stats/test_stats_snooping_by_hand.
    """
    mt = reports["complete"][0].to_json()["multiple_testing"]
    sw = mt["sweep_wide"]
    null = load_run(runs["complete"]).null_summary
    assert null is not None and null.reps == sw["reps"] == 20
    table = load_results(runs["complete"])
    ok = table[np.isfinite(table["t_stat"])]
    n_obs = int(ok["n_obs"].iloc[0])

    def pvalue(null_values: np.ndarray, observed: float) -> float:
        return (1 + int(np.sum(null_values >= observed))) / (1 + 20)

    floored = np.maximum(null.spa, 0.0)
    rc = pvalue(null.reality_check, math.sqrt(n_obs) * float(ok["excess_mean"].max()))
    spa = pvalue(floored, max(float(ok["t_stat"].max()), 0.0))
    winner = table.loc[table["config_id"] == mt["winner"]["config_id"], "t_stat"].iloc[0]
    assert (sw["reality_check_pvalue"], sw["spa_pvalue"]) == (rc, spa)
    assert sw["winner_pvalue"] == pvalue(floored, max(float(winner), 0.0))
    # StepM at the report's alpha = 0.05 with B = 20 allows no exceedance ((1 + 0) / 21 <=
    # 0.05 < 2 / 21): its first round rejects the configs whose t is above every SPA
    # maximum; on this no-edge run there is none, so it stops there with nothing.
    assert float(ok["t_stat"].max()) <= float(null.spa.max())
    assert (sw["stepm"]["count"], sw["stepm"]["steps"]) == (0, 1)
