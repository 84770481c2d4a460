"""A cluster address, checked before anything waits on it; a local cluster's size, bounded.

``ray.init(address=...)`` retries a host and port where nothing listens for minutes (each
attempt logs "Failed to connect to GCS" and waits again), and passes a malformed address to
Ray's own parser. Here an address is parsed first (``host:port``, ``[v6]:port``,
``ray://host:port``, a Dask scheduler's ``tcp://host:port`` or ``auto``) and a TCP
connection to it is tried for at most :data:`CONNECT_WAIT_S` seconds: a bad or silent
address is one line and exit 2 (:class:`sweep.errors.ClusterAddressError`). A port that
accepts connections but is not a Ray head or a Dask scheduler is left to the engine's own
wait.
"""

from __future__ import annotations

import os
import socket
import time
from urllib.parse import urlsplit

from sweep.errors import ClusterAddressError, SweepError

#: Seconds a cluster address may take to accept a TCP connection (a head just started may
#: need a few seconds before its port opens).
CONNECT_WAIT_S = 15.0
#: The schemes an address may start with (Ray's client, Dask's scheduler).
SCHEMES = ("ray://", "tcp://")
#: Seconds between connection attempts within :data:`CONNECT_WAIT_S`.
_RETRY_S = 0.5


def split_address(address: str) -> tuple[str, int] | None:
    """The host and port of a cluster address, or None for ``auto``.

    Raises
    ------
    ClusterAddressError
        Naming the address and the forms expected.
    """
    if address == "auto":
        return None
    text = address
    for scheme in SCHEMES:
        text = text.removeprefix(scheme)
    try:
        parts = urlsplit(f"//{text}")
        host, port = parts.hostname, parts.port
    except ValueError as exc:  # an unclosed [ or a port outside 0..65535
        raise _malformed(address, str(exc)) from exc
    if not host or port is None or port == 0 or parts.path or parts.query or parts.username:
        raise _malformed(address, "expected a host and a port")
    return host, port


def wait_for_listener(address: str, timeout: float | None = None) -> None:
    """Return once ``address`` accepts a TCP connection; refuse after ``timeout`` seconds.

    ``timeout`` defaults to :data:`CONNECT_WAIT_S`.

    Raises
    ------
    ClusterAddressError
        Nothing accepted a connection at the address in time.
    """
    where = split_address(address)
    if where is None:
        return
    timeout = CONNECT_WAIT_S if timeout is None else timeout
    deadline = time.monotonic() + timeout
    last: OSError | None = None
    while True:
        left = deadline - time.monotonic()
        try:
            with socket.create_connection(where, timeout=max(0.1, min(left, 5.0))):
                return
        except OSError as exc:
            last = exc
        if time.monotonic() + _RETRY_S >= deadline:
            break
        time.sleep(_RETRY_S)
    raise ClusterAddressError(
        f"--address {address}: nothing accepted a connection there within {timeout:g} s "
        f"({last}); start the cluster's head (ray start --head, or dask scheduler) or give "
        "its address"
    )


def check_local_workers(workers: int | None) -> None:
    """Refuse a local cluster of more workers than this machine has CPUs.

    Raises
    ------
    SweepError
        Naming the CPUs this machine has.
    """
    cpus = os.cpu_count() or 1
    if workers is not None and workers > cpus:
        raise SweepError(
            f"--workers {workers}: this machine has {cpus} CPUs, and a local cluster of "
            "more workers than CPUs only queues them; give at most that many, or join a "
            "larger cluster with --address"
        )


def _malformed(address: str, why: str) -> ClusterAddressError:
    return ClusterAddressError(
        f"--address {address!r}: not a cluster address ({why}); expected host:port, "
        "[v6 address]:port, ray://host:port, tcp://host:port (a Dask scheduler) or auto"
    )
