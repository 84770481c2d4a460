"""Helpers shared by tests (importable as tests.helpers)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def small_spec_dict(**overrides: Any) -> dict[str, Any]:
    """A momentum sweep of 60 configs on 4 years of synthetic data."""
    doc: dict[str, Any] = {
        "name": "small",
        "seed": 7,
        "data": {"source": "synthetic", "years": 4},
        "strategy": {"name": "momentum"},
        "grid": {
            "lookback": {"start": 5, "stop": 125, "step": 8},
            "band": [0.0, 0.005, 0.01, 0.02],
        },
        "metrics": {"bootstrap_reps": 20, "block_length": 10, "pbo_blocks": 8},
    }
    doc.update(overrides)
    return doc


def write_spec(path: Path, doc: dict[str, Any]) -> Path:
    """Write a spec dict as TOML (the subset our specs use)."""
    lines: list[str] = []

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, float):
            return repr(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        return str(v)

    for k, v in doc.items():
        if not isinstance(v, dict):
            lines.append(f"{k} = {value(v)}")
    for k, v in doc.items():
        if isinstance(v, dict):
            lines.append(f"[{k}]")
            lines.extend(f"{kk} = {value(vv)}" for kk, vv in v.items())
    path.write_text("\n".join(lines) + "\n")
    return path


class StopAfter:
    """A local executor that runs only the first ``n`` batches (a session cut short)."""

    name = "local"

    def __init__(self, n: int) -> None:
        from sweep.executors._local import LocalExecutor

        self._inner, self._n = LocalExecutor(), n
        self.workers = 1

    def __getattr__(self, item):
        return getattr(self._inner, item)

    def run(self, batches):
        for k, outcome in enumerate(self._inner.run(batches)):
            yield outcome
            if k + 1 >= self._n:
                return


@contextlib.contextmanager
def small_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """Mount a tmpfs of ``size`` (e.g. ``"160k"``) on a new ``folder``; skip the test if we cannot."""
    import subprocess

    import pytest

    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def sp500_path() -> Path:
    """Return the real panel the tests use (skipping where it is not installed).

    Daily adjusted closes of 20 S&P 500 stocks, 1990-01-02 to 2022-12-28 (8,313 dates),
    shipped inside the ``skfolio`` wheel (BSD-3-Clause) as
    ``skfolio/datasets/data/sp500_dataset.csv.gz``. Located through the installed
    distribution's file list, so skfolio itself is never imported; skfolio is in the
    ``test`` and ``data`` extras.
    """
    from importlib.metadata import PackageNotFoundError, distribution

    import pytest

    try:
        path = Path(str(distribution("skfolio").locate_file(SP500_FILE)))
    except PackageNotFoundError:
        pytest.skip("skfolio (the real S&P 500 sample panel) is not installed")
    if not path.is_file():
        pytest.skip(f"skfolio's wheel has no {SP500_FILE}")
    return path


SP500_FILE = "skfolio/datasets/data/sp500_dataset.csv.gz"


def listed_sp500(frame: Any) -> Any:
    """The real S&P 500 sample with listings and delistings made by masking real series.

    AMD is listed from 2000-01-03 (nothing before), RRC delisted after 2015-12-31, and GE
    both listed late (1995-01-03) and delisted early (2018-06-29): NaN outside those spans.
    """
    import pandas as pd

    masked = frame.copy()
    dates = pd.DatetimeIndex(masked.index)
    masked.loc[dates < "2000-01-03", "AMD"] = float("nan")
    masked.loc[dates > "2015-12-31", "RRC"] = float("nan")
    masked.loc[(dates < "1995-01-03") | (dates > "2018-06-29"), "GE"] = float("nan")
    return masked


def rewrite_part(path: Path, table: Any) -> Path:
    """Replace a part by ``table`` (a pyarrow Table), named by the sha256 of its bytes.

    The store's own serialisation and atomic write, so the part stays valid (a tampered
    value that the store does not quarantine); returns the new path.
    """
    import hashlib

    from sweep.common._fs import parquet_bytes
    from sweep.store._run_store import RunStore

    store = RunStore(path.parent.parent)
    data = parquet_bytes(table)
    name = f"part-{hashlib.sha256(data).hexdigest()}.parquet"
    path.unlink()
    store.fs.write_atomic(store.fs.join("parts", name), data)
    return path.parent / name


def read_part_table(path: Path, columns: list[str] | None = None) -> Any:
    """A part's rows with all of its metadata, as the store reads them.

    ``pq.read_table`` leaves out the footer-only keys (the null and fold summaries,
    :data:`sweep.store._run_store.FOOTER_ONLY_KEYS`); a test that rewrites a part from
    what it read must keep them.
    """
    import pyarrow.parquet as pq

    from sweep.common._fs import footer_schema

    parquet = pq.ParquetFile(path)
    table = parquet.read(columns=columns, use_threads=False)
    return table.replace_schema_metadata(footer_schema(parquet).metadata)


def batch_again(run_dir: Path, part: Path, offset: int, length: int) -> Any:
    """A batch written twice: ``length`` rows of a part from ``offset`` computed again.

    The rows of ``Table.slice(offset, length)``, footer and all.

    What a driver writes when a batch is repeated (the same rows, bit for bit, invariant 1),
    with the null and fold summaries of those rows. A slice of the part's table would keep
    the whole part's summaries, which the part check refuses (they name other rows). The
    table carries no run binding (:func:`sweep.store._run_store.RunStore.write_part` adds it).
    """
    from sweep.engine._evaluate import evaluate_batch
    from sweep.store._run_store import RunStore
    from sweep.store._trust import resolve_recorded

    sweep = resolve_recorded(RunStore(run_dir).load_manifest(), str(run_dir), ())
    positions = read_part_table(part, ["grid_index"]).column(0).to_numpy()[offset:][:length]
    return evaluate_batch(sweep, positions).table


def run_main(monkeypatch: Any, capsys: Any, *args: str | Path) -> tuple[int, str, str]:
    """The console entry point in this process: (exit code, stdout, stderr)."""
    import signal
    import sys

    import pytest

    from sweep.__main__ import main

    monkeypatch.setattr(sys, "argv", ["sweep", *map(str, args)])
    previous = signal.getsignal(signal.SIGTERM)  # main() makes SIGTERM raise: undo it after
    try:
        with pytest.raises(SystemExit) as info:
            main()
    finally:
        signal.signal(signal.SIGTERM, previous)
    captured = capsys.readouterr()
    code = info.value.code
    return (code if isinstance(code, int) else 0), captured.out, captured.err


@contextlib.contextmanager
def loopback_dask_cluster(workers: int = 2) -> Iterator[str]:
    """A local Dask cluster of one-thread worker processes on loopback only; its address.

    No dashboard and no port 8787 held (the scheduler's HTTP routes on a free port), so a
    test's own local cluster can start beside it.
    """
    import ipaddress

    from distributed import LocalCluster

    cluster = LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
    )
    try:
        hosts = {w.get("host") for w in cluster.scheduler_info["workers"].values()}
        assert all(ipaddress.ip_address(h).is_loopback for h in hosts), hosts
        yield cluster.scheduler_address
    finally:
        cluster.close()
