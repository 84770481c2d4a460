"""A report of a run folder on an S3-compatible store (moto's server on loopback)."""

from __future__ import annotations

from sweep import run_sweep, spec_from_dict
from sweep.report import build_report, default_out_dir, write_report
from tests.helpers import small_spec_dict
from tests.report.conftest import FAST


def test_report_of_a_run_on_s3_matches_the_local_one(s3_server, runs, reports, tmp_path):
    uri = f"s3://sweeps/report-test/demo?endpoint_override={s3_server}&scheme=http&region=us-east-1"
    run_sweep(spec_from_dict(small_spec_dict()), uri, progress=False)
    report = build_report(uri, FAST)
    local = reports["complete"][0].to_json()
    assert report.to_json()["integrity"]["table_hash"] == local["integrity"]["table_hash"]
    assert report.to_json()["integrity"]["matches_recorded"] is True
    assert (
        report.to_json()["multiple_testing"]["sweep_wide"]
        == local["multiple_testing"]["sweep_wide"]
    )
    assert str(default_out_dir(uri)) == "report-demo"
    files = write_report(report, tmp_path / "report-demo")
    assert files.html.is_file() and "s3://sweeps/report-test/demo" in files.markdown.read_text()
