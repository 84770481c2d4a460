"""A report of a run folder on an S3-compatible store (moto's server on loopback)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest

from sweep import run_sweep, spec_from_dict
from sweep.report import build_report, default_out_dir, write_report
from tests.helpers import small_spec_dict
from tests.report.conftest import FAST


@pytest.fixture(scope="module")
def s3_server():
    if shutil.which("moto_server") is None:
        pytest.skip("moto[server] is not installed (test extra)")
    import pyarrow.fs as pafs

    env = {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = subprocess.Popen(
        ["moto_server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        pafs.S3FileSystem(
            endpoint_override=f"127.0.0.1:{port}",
            scheme="http",
            region="us-east-1",
            allow_bucket_creation=True,
        ).create_dir("sweeps")
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_report_of_a_run_on_s3_matches_the_local_one(s3_server, runs, reports, tmp_path):
    uri = f"s3://sweeps/runs/demo?endpoint_override={s3_server}&scheme=http&region=us-east-1"
    run_sweep(spec_from_dict(small_spec_dict()), uri, progress=False)
    report = build_report(uri, FAST)
    local = reports["complete"][0].data
    assert report.data["integrity"]["table_hash"] == local["integrity"]["table_hash"]
    assert report.data["integrity"]["matches_recorded"] is True
    assert (
        report.data["multiple_testing"]["effective_n"] == local["multiple_testing"]["effective_n"]
    )
    assert str(default_out_dir(uri)) == "report-demo"
    files = write_report(report, tmp_path / "report-demo")
    assert files.html.is_file() and "s3://sweeps/runs/demo" in files.markdown.read_text()
