"""The bench -> report seam: benchmark results are typed records, saved and read by one rule.

No Ray here: the records are made up; tests/bench/test_bench.py measures real ones.
"""

from __future__ import annotations

import json
import math

import pytest

from sweep.bench._io import write_bench
from sweep.common._serial import RecordFormatError
from sweep.store._bench_results import (
    FORMAT,
    BenchResults,
    ClusterInfo,
    FitFailed,
    OverheadPoint,
    OverheadResult,
    ScalingPoint,
    ScalingResult,
    UslFit,
    bench_from_json,
    load_bench,
    local_reader,
)

CLUSTER = ClusterInfo(
    nodes=1,
    cpus=2,
    node_addresses=("127.0.0.1",),
    ray_version="2.60.0",
    driver_host_cpus=2,
    address="local",
)


def _overhead(**changes: object) -> OverheadResult:
    base = {
        "workers": 2,
        "rounds": 2,
        "method": "no-ops",
        "points": (OverheadPoint(0, 0.004, (0.004, 0.005)),),
        "overhead_seconds": 0.004,
        "per_byte_seconds": None,
        "result_bytes_per_config": 375,
    }
    return OverheadResult(**{**base, **changes})  # type: ignore[arg-type]


def test_a_result_is_written_with_the_file_keys_in_order(tmp_path):
    files = write_bench(_overhead(cluster=CLUSTER, spec="spec 'small'"), tmp_path)
    doc = json.loads(files["json"].read_text())
    assert list(doc)[:3] == ["format", "generated", "kind"] and list(doc)[-2:] == [
        "cluster",
        "spec",
    ]
    assert doc["format"] == FORMAT and doc["kind"] == "overhead" and doc["per_byte_seconds"] is None
    assert doc["points"] == [
        {"payload_bytes": 0, "overhead_seconds": 0.004, "rounds": [0.004, 0.005]}
    ]
    back = bench_from_json(doc)
    assert back == OverheadResult(
        **{**vars(_overhead(cluster=CLUSTER, spec="spec 'small'")), "generated": doc["generated"]}
    )  # type: ignore[arg-type]
    assert files["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_failed_fit_and_a_null_peak_read_back_as_such(tmp_path):
    failed = ScalingResult(
        cluster_cpus=1,
        max_workers=1,
        cpus_per_task=1.0,
        batch_size=10,
        tasks=3,
        configs=30,
        rounds=1,
        warm_workers=1,
        method="m",
        points=(ScalingPoint(1, 1, (0.1,), 300.0),),
        fit=FitFailed(reason="workers: expected at least 3 distinct worker counts"),
    )
    write_bench(failed, tmp_path)
    found = load_bench(local_reader(tmp_path))
    assert found.scaling is not None and isinstance(found.scaling.fit, FitFailed)
    assert found.scaling.fit.reason.startswith("workers:") and found.found() == (found.scaling,)
    doc = json.loads((tmp_path / "scaling.json").read_text())
    doc["fit"] = {
        "available": True,
        "sigma": 0.1,
        "kappa": 0.0,
        "gamma": 300.0,
        "peak_workers": None,
        "peak_throughput": None,
        "r_squared": 1.0,
    }
    fit = bench_from_json(doc).fit
    assert isinstance(fit, UslFit) and fit.peak_workers is None and math.isnan(fit.peak_throughput)


def test_foreign_or_malformed_files_are_skipped(tmp_path):
    write_bench(_overhead(), tmp_path)
    assert load_bench(local_reader(tmp_path)).overhead is not None
    doc = json.loads((tmp_path / "overhead.json").read_text())
    for broken in (
        {**doc, "format": "raysweep-bench-v0"},
        {**doc, "kind": "scaling"},
        {k: v for k, v in doc.items() if k != "points"},
        {**doc, "workers": "two"},
    ):
        (tmp_path / "overhead.json").write_text(json.dumps(broken))
        assert load_bench(local_reader(tmp_path)) == BenchResults()
    (tmp_path / "overhead.json").write_text("{not json")
    assert load_bench(local_reader(tmp_path)) == BenchResults()


def test_reading_a_wrong_document_names_why():
    with pytest.raises(RecordFormatError, match="format 'x', expected 'raysweep-bench-v1'"):
        bench_from_json({"format": "x"})
    with pytest.raises(RecordFormatError, match="kind 'speed'"):
        bench_from_json({"format": FORMAT, "kind": "speed"})
    with pytest.raises(RecordFormatError, match=r"overhead\.json: missing key 'rounds'"):
        bench_from_json({"format": FORMAT, "kind": "overhead", "workers": 1}, "overhead.json")
