"""Shared fixtures: small sweeps that run in well under a second."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sweep import ResolvedSweep, resolve, run_sweep, spec_from_dict, synthetic_panel
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
def small_run(tmp_path_factory) -> Path:
    """The small sweep (``small_spec_dict()``, 60 configs) run to completion, once a session.

    Read it only: a test that changes a run folder (resumes it, removes or alters a part)
    works on a copy, ``shutil.copytree(small_run, tmp_path / "run")``.
    """
    run = tmp_path_factory.mktemp("small-run") / "run"
    run_sweep(spec_from_dict(small_spec_dict()), run, progress=False)
    return run


@pytest.fixture(scope="session")
def small_run_parts_of_one(tmp_path_factory) -> Path:
    """The small sweep run one config per part (60 parts), once a session; read it only."""
    run = tmp_path_factory.mktemp("small-run-parts-of-one") / "run"
    run_sweep(spec_from_dict(small_spec_dict()), run, batch_size=1, progress=False)
    return run


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


#: Whether this process's Ray is the shared local cluster of ``ray_local``.
_shared_ray = {"up": False}


def release_shared_ray() -> None:
    """Shut the shared cluster down (a fixture that starts its own Ray calls this first)."""
    import ray

    if _shared_ray["up"] and ray.is_initialized():
        ray.shutdown()
    _shared_ray["up"] = False


def _module_uses_ray_local(request: pytest.FixtureRequest) -> bool:
    return any(
        item.module is request.module and "ray_local" in item.fixturenames  # type: ignore[attr-defined]
        for item in request.session.items
    )


@pytest.fixture(scope="module", autouse=True)
def _no_shared_ray_outside_its_modules(request):  # type: ignore[no-untyped-def]
    """A module that does not use ``ray_local`` starts with no shared cluster running.

    Autouse and module-scoped, so it runs before the module's own fixtures: a module that
    starts its own Ray (other resources, a multi-node cluster, a subprocess cluster) or that
    expects a sweep to start a fresh local one finds none left by the modules before it.
    """
    if _shared_ray["up"] and not _module_uses_ray_local(request):
        release_shared_ray()


@pytest.fixture(scope="session")
def _ray_session_end(ray_env):  # type: ignore[no-untyped-def]
    yield
    release_shared_ray()


@pytest.fixture(scope="module")
def ray_local(ray_env, _ray_session_end):  # type: ignore[no-untyped-def]
    """A one-node local Ray with 2 CPUs, shared by every module that asks for it.

    Started by the first module that uses it and left running for the next ones (a cluster
    start costs seconds); shut down at the end of the session, or before a module that does
    not use it (:func:`_no_shared_ray_outside_its_modules`). A module that needs a cluster of
    its own (other resources, nodes added and removed, a fresh start, ``ray.shutdown``) must
    not use this fixture; it calls :func:`release_shared_ray` before ``ray.init``.
    """
    import ray

    if not (_shared_ray["up"] and ray.is_initialized()):
        if ray.is_initialized():
            ray.shutdown()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        _shared_ray["up"] = True
    assert ray.cluster_resources().get("CPU") == 2, "the shared cluster's resources changed"
    assert_loopback_only()
    return ray


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
