"""A run folder cannot make the user's credentials travel (issue 28, point 1).

A hostile manifest named its data ``s3://b/x.parquet?endpoint_override=HOST:PORT&scheme=http``:
``sweep resume`` and ``sweep report`` with AWS variables set sent signed requests (the access
key id in the Authorization header) to that endpoint, and ``resume`` did so before comparing
the spec hash. Here the endpoint is a listener on 127.0.0.1 (only loopback is ever named), the
credentials are fake, and the tests assert that nothing connects.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from sweep import results_hash, run_sweep, spec_from_dict, synthetic_panel
from sweep.errors import DataError, RunFolderError
from sweep.store._panel_copy import write_panel_copy
from sweep.store._run_store import RunStore
from tests.helpers import small_spec_dict

FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "AKIAFAKEFAKEFAKE0028",
    "AWS_SECRET_ACCESS_KEY": "fake-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@contextlib.contextmanager
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP listener on 127.0.0.1: its port, and the first bytes of every connection."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.settimeout(0.1)
    seen: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(1.0)
                try:
                    seen.append(conn.recv(4096))
                except OSError:
                    seen.append(b"")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(sock.getsockname()[1]), seen
    finally:
        stop.set()
        thread.join()
        sock.close()


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sweep", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, **FAKE_AWS},
        timeout=300,
    )


@pytest.fixture(scope="module")
def file_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A complete run on a local parquet file: (folder, the file, the table hash)."""
    base = tmp_path_factory.mktemp("file_run")
    panel = synthetic_panel(years=4)
    prices = base / "prices.parquet"
    frame = pd.DataFrame(panel.close, columns=list(panel.assets))
    frame.insert(0, "date", pd.DatetimeIndex(panel.dates))
    frame.to_parquet(prices, index=False)
    doc = small_spec_dict(
        data={"source": "file", "path": str(prices)},
        grid={"lookback": [5, 10, 20, 40], "band": [0.0]},
    )
    run = base / "run"
    run_sweep(spec_from_dict(doc), run, batch_size=2, progress=False)
    return run, prices, results_hash(run)


def hostile_copy(run: Path, dst: Path, data_path: str, **edits: object) -> Path:
    """A copy of ``run`` whose manifest names ``data_path`` (spec and provenance), one part
    fewer (so a resume has work), and ``edits`` applied to its spec."""
    shutil.copytree(run, dst)
    next(iter(sorted((dst / "parts").glob("part-*.parquet")))).unlink()
    manifest = json.loads((dst / "manifest.json").read_text())
    manifest["spec"]["data"]["path"] = data_path
    manifest["spec"].update(edits)
    if manifest.get("provenance"):
        manifest["provenance"]["data"]["location"] = data_path
    (dst / "manifest.json").write_text(json.dumps(manifest))
    return dst


def endpoint_uri(port: int) -> str:
    return f"s3://b/x.parquet?endpoint_override=127.0.0.1:{port}&scheme=http"


@pytest.mark.parametrize("command", ["resume", "report", "reproduce"])
def test_opening_a_folder_connects_to_no_endpoint_it_names(file_run, tmp_path, command):
    run, _, _ = file_run
    with listener() as (port, seen):
        folder = hostile_copy(run, tmp_path / "run", endpoint_uri(port))
        extra = ["--out", str(tmp_path / "report"), "-q"] if command == "report" else []
        proc = cli(command, folder, *extra)
    assert seen == [], f"{command} connected to the folder's endpoint: {seen[:1]}"
    assert "Traceback" not in proc.stderr, proc.stderr
    if command == "report":  # the report is written, without what needs the data
        assert proc.returncode == 0, proc.stderr
        report = (tmp_path / "report" / "report.json").read_text()
        assert "never takes an endpoint, scheme or connection option" in report
        return
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    message = proc.stderr.strip()
    assert message.startswith("error: ") and "\n" not in message, message
    assert "query options (endpoint_override, scheme)" in message
    assert f"--data '{endpoint_uri(port)}'" in message


def test_the_user_names_the_data_and_the_run_resumes(file_run, tmp_path):
    run, prices, table_hash = file_run
    with listener() as (port, seen):
        folder = hostile_copy(run, tmp_path / "run", endpoint_uri(port))
        resumed = cli("resume", folder, "-q", "--data", prices)
    assert seen == []
    assert resumed.returncode == 0, resumed.stderr
    assert f"table hash: {table_hash}" in resumed.stdout
    other = tmp_path / "other.parquet"
    frame = pd.read_parquet(prices)
    frame[frame.columns[1]] *= 1.01
    frame.to_parquet(other, index=False)
    (folder / "parts" / next(iter(os.listdir(folder / "parts")))).unlink()
    refused = cli("resume", folder, "-q", "--data", other)
    assert refused.returncode == 2 and "the panel handed over has fingerprint" in refused.stderr


def test_the_folder_s_own_panel_copy_is_read_not_the_uri(file_run, tmp_path):
    run, prices, table_hash = file_run
    from sweep import load_panel

    with listener() as (port, seen):
        folder = hostile_copy(run, tmp_path / "run", endpoint_uri(port))
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["provenance"]["data"]["copy"] = "data/panel.parquet"
        (folder / "manifest.json").write_text(json.dumps(manifest))
        write_panel_copy(RunStore(folder).fs, load_panel(prices))
        resumed = cli("resume", folder, "-q")
    assert seen == []
    assert resumed.returncode == 0, resumed.stderr
    assert f"table hash: {table_hash}" in resumed.stdout


def test_an_edited_spec_is_refused_before_any_data_is_read(file_run, tmp_path, monkeypatch):
    import sweep.store._trust as trust

    run, prices, _ = file_run
    folder = hostile_copy(run, tmp_path / "run", str(prices), seed=8)

    def no_reading(*args: object, **kwargs: object) -> None:
        raise AssertionError("the data was read before the spec hash was compared")

    monkeypatch.setattr(trust, "load_data", no_reading)
    monkeypatch.setattr(trust, "read_panel_copy", no_reading)
    manifest = RunStore(folder).load_manifest()
    with pytest.raises(RunFolderError) as info:
        trust.resolve_recorded(manifest, str(folder))
    assert "manifest.json's spec hashes to" in str(info.value)
    assert "no data was read" in str(info.value)


@pytest.mark.parametrize(
    ("uri", "refused"),
    [
        ("/data/prices.parquet", None),
        ("file:///data/prices.parquet", None),
        ("s3://bucket/prices.parquet", None),
        ("gs://bucket/prices/", None),
        ("s3://b/x.parquet?region=us-east-1", "query options (region)"),
        ("s3://b/x.parquet?endpoint_override=h:1&scheme=http", "endpoint_override, scheme"),
        ("s3://key:secret@b/x.parquet", "credentials or a port"),
        ("hdfs://namenode:8020/prices.parquet", "the scheme 'hdfs://'"),
    ],
)
def test_which_data_locations_a_folder_may_name(uri, refused):
    from sweep.store._trust import _folder_data_location

    if refused is None:
        assert _folder_data_location(uri, "run") == uri
        return
    with pytest.raises(DataError) as info:
        _folder_data_location(uri, "run")
    assert refused in str(info.value) and "--data" in str(info.value)
