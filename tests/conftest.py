"""Shared fixtures: small sweeps that run in well under a second."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sweep import ResolvedSweep, resolve, spec_from_dict, synthetic_panel
from tests.helpers import small_spec_dict

REPO = Path(__file__).resolve().parents[1]
# Ray workers and subprocess drivers import test strategies from the repository root.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
)
# Opening a run folder imports only built-in strategies or allowed modules (sweep.store._trust);
# the suite trusts its own test strategies (tests that check the refusal unset this).
os.environ["RAYSWEEP_ALLOW_IMPORT"] = "tests.strategies_for_tests,tests.hostile_strategies"


@pytest.fixture(scope="session")
def small_panel():  # type: ignore[no-untyped-def]
    return synthetic_panel(years=4)


@pytest.fixture
def small_sweep(small_panel) -> ResolvedSweep:  # type: ignore[no-untyped-def]
    return resolve(spec_from_dict(small_spec_dict()), small_panel)


def assert_loopback_only() -> None:
    """Fail loudly if Ray's node address is anything but loopback (see DESIGN, Testing Ray)."""
    import ipaddress

    import ray

    addresses = {ray.util.get_node_ip_address()} | {n["NodeManagerAddress"] for n in ray.nodes()}
    bad = [a for a in addresses if not ipaddress.ip_address(a).is_loopback]
    if bad:
        ray.shutdown()
        pytest.fail(
            f"Ray bound non-loopback addresses {bad}: run the suite through scripts/test, which "
            "uses a loopback-only network namespace (unshare -n)",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def ray_env(tmp_path_factory):  # type: ignore[no-untyped-def]
    """Token auth and temp files in a temporary folder, never in the home directory."""
    import secrets

    folder = tmp_path_factory.mktemp("ray")
    token = folder / "auth_token"
    token.write_text(secrets.token_hex(32))
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "RAY_TMPDIR")}
    os.environ.update(
        {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token), "RAY_TMPDIR": str(folder)}
    )
    os.environ.pop("RAY_AUTH_TOKEN", None)
    yield folder
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def ray_local(ray_env):  # type: ignore[no-untyped-def]
    """A one-node local Ray with 2 CPUs, shared by a test module."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    assert_loopback_only()
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def s3_server():  # type: ignore[no-untyped-def]
    """An S3-compatible server (moto) on loopback with a bucket ``sweeps``; yields host:port."""
    # moto's server from THIS interpreter's environment (a moto_server found on PATH may
    # belong to another Python with another moto).
    pytest.importorskip("moto.server", reason="moto[server] is not installed (test extra)")
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
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
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
