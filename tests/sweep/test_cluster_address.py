"""A cluster address is checked before anything waits on it (issue 42: M7, L1, L2).

``ray.init(address=...)`` retried a port where nothing listens until killed, and a malformed
address or an unbounded ``--workers`` reached Ray (exit 1, or "a local Ray cluster of
99999999 CPUs"). Now each is one line and exit 2, after a bounded wait.
"""

from __future__ import annotations

import os
import socket

import pytest

from sweep.errors import ClusterAddressError, SweepError
from sweep.executors import _address
from sweep.executors._address import check_local_workers, split_address, wait_for_listener
from tests.helpers import run_main, small_spec_dict, write_spec


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1:6379", ("127.0.0.1", 6379)),
        ("ray://head.example:10001", ("head.example", 10001)),
        ("[::1]:6379", ("::1", 6379)),
        ("auto", None),
    ],
)
def test_cluster_addresses_are_parsed(address: str, expected: object) -> None:
    assert split_address(address) == expected


@pytest.mark.parametrize(
    "address",
    ["http://[::1", "ray://127.0.0.1:99999", "127.0.0.1", "127.0.0.1:0", "host:port", "a:1/x", ""],
)
def test_a_malformed_address_is_refused_in_one_line(address: str) -> None:
    with pytest.raises(ClusterAddressError, match="not a cluster address") as info:
        split_address(address)
    assert "expected host:port" in str(info.value)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_silent_address_is_refused_after_a_bounded_wait() -> None:
    port = _closed_port()
    with pytest.raises(ClusterAddressError, match=f"--address 127.0.0.1:{port}: nothing accepted"):
        wait_for_listener(f"127.0.0.1:{port}", timeout=1.0)


def test_a_listening_address_is_accepted_at_once() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        wait_for_listener(f"127.0.0.1:{port}", timeout=30.0)  # returns: nothing raised
        wait_for_listener(f"ray://127.0.0.1:{port}", timeout=30.0)


def test_more_local_workers_than_cpus_are_refused() -> None:
    check_local_workers(os.cpu_count())
    check_local_workers(None)
    with pytest.raises(SweepError, match=f"this machine has {os.cpu_count()} CPUs"):
        check_local_workers((os.cpu_count() or 1) + 1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--address", "http://[::1"], "not a cluster address"),
        (["--address", "ray://127.0.0.1:99999"], "not a cluster address"),
        (["--address", "127.0.0.1:{port}"], "nothing accepted a connection there within 1 s"),
        (["--workers", "99999999"], "--workers 99999999: this machine has"),
        (["--workers", "1" * 20], "--workers"),
    ],
)
def test_the_cli_refuses_a_bad_address_or_workers_with_exit_2(
    tmp_path, monkeypatch, capsys, options: list[str], message: str
) -> None:
    monkeypatch.setattr(_address, "CONNECT_WAIT_S", 1.0)
    spec = write_spec(tmp_path / "s.toml", small_spec_dict())
    filled = [o.format(port=_closed_port()) for o in options]
    code, _, err = run_main(
        monkeypatch,
        capsys,
        "run",
        spec,
        "--run-dir",
        tmp_path / "run",
        "--executor",
        "ray",
        *filled,
    )
    assert code == 2, err
    assert message in " ".join(err.split()) and "Traceback" not in err
    assert not (tmp_path / "run" / "parts").exists() or not any(
        (tmp_path / "run" / "parts").iterdir()
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check-strategy", "examples/breakout_stops.toml", "--seed", "-1"], "--seed"),
        (
            ["check-strategy", "examples/breakout_stops.toml", "--cuts", "100000000"],
            "n_cuts must be between 1 and",
        ),
        (["report", "{run}", "--top", "5000"], "--top"),
    ],
)
def test_numeric_options_are_bounded(
    tmp_path, monkeypatch, capsys, args: list[str], message: str
) -> None:
    """The same class as ``--workers``: a numeric option outside what can be served, exit 2."""
    filled = [a.format(run=tmp_path / "no-run") for a in args]
    code, _, err = run_main(monkeypatch, capsys, *filled)
    assert code == 2, err
    assert message in " ".join(err.split()) and "Traceback" not in err
