"""Hostile input through the real CLI (issue 12): markup, bad paths, signals, caches.

Every case runs ``python -m sweep`` in a subprocess, as a user would. Bad input must exit 2
with a one-paragraph message naming the argument and no traceback; user text must be
printed as given (never read as rich markup, never as HTML in report.md).
"""

from __future__ import annotations

import io
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sweep
from sweep.store._run_store import RunStore
from tests.helpers import small_spec_dict, write_spec

#: Rich markup that crashes a console (an unmatched closing tag) or vanishes (a style tag).
MARKUP = "[/x] [bold]b[/bold]"
#: Text a browser would run if report.md passed it through as HTML.
SCRIPT = "<script>alert(1)</script>"
HOSTILE_TEXT = f"{MARKUP} {SCRIPT}"

HOSTILE_MODULE = f'''
"""Strategies for test_hostile_cli (written to a temp folder on PYTHONPATH)."""
import os
import time

from strategies.momentum import Momentum

if os.environ.get("HOSTILE_BLOCK_IMPORT"):  # a slow start-up: the strategy's import hangs
    open(os.environ["HOSTILE_BLOCK_IMPORT"], "w").close()
    time.sleep(120)


class Boom(Momentum):
    """Momentum whose config with lookback 13 raises a message full of markup and HTML."""

    name = "boom"
    version = "1"

    def evaluate(self, panel, params, rngs):
        marker = os.environ.get("HOSTILE_BLOCK_EVALUATE")
        if marker:  # hang (e.g. while `sweep report` recomputes returns)
            open(marker, "w").close()
            time.sleep(120)
        if (params["lookback"] == 13).any():
            raise ValueError({HOSTILE_TEXT!r})
        return super().evaluate(panel, params, rngs)
'''


@pytest.fixture(scope="module")
def hostile_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile_strategies")
    (folder / "hostile_strats.py").write_text(HOSTILE_MODULE)
    return folder


def _env(hostile_path: Path | None = None, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    if hostile_path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(hostile_path), env.get("PYTHONPATH", "")])
        # Reopening a run folder of this strategy imports it only when allowed (sweep.store._trust).
        allowed = env.get("RAYSWEEP_ALLOW_IMPORT", "")
        env["RAYSWEEP_ALLOW_IMPORT"] = ",".join(filter(None, [allowed, "hostile_strats"]))
    env.update(extra)
    return env


def cli(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sweep", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def popen(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "sweep", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # A suite started in the background inherits an ignored SIGINT; a terminal's Ctrl-C
        # reaches a driver whose SIGINT has its default disposition, so give it that.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def assert_bad_input(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    """Exit 2, one paragraph on stderr starting with ``error:``, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    message = proc.stderr.strip()
    assert message.startswith("error: ") and "\n\n" not in message, message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def wait_for(path: Path, proc: subprocess.Popen[str], seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, err = proc.communicate()
            raise AssertionError(f"{path.name} never appeared (exit {proc.returncode}): {err}")
        time.sleep(0.02)


def boom_doc(**overrides: object) -> dict[str, object]:
    return small_spec_dict(strategy={"name": "hostile_strats:Boom"}, **overrides)


@pytest.fixture(scope="module")
def boom_run(tmp_path_factory: pytest.TempPathFactory, hostile_path: Path) -> Path:
    """A finished run whose config with lookback 13 failed with :data:`HOSTILE_TEXT`."""
    folder = tmp_path_factory.mktemp("boom")
    spec = write_spec(folder / "s.toml", boom_doc())
    proc = cli("run", spec, "--run-dir", folder / "run", "--quiet", env=_env(hostile_path))
    assert proc.returncode == 0, proc.stderr
    return folder / "run"


# --- point 5: user text is never read as rich markup ------------------------------------


def _price_csv(path: Path, assets: list[str]) -> Path:
    rng = np.random.default_rng(3)
    close = 100.0 * np.exp(np.cumsum(0.01 * rng.standard_normal((800, len(assets))), axis=0))
    frame = pd.DataFrame(close, columns=assets)
    frame.insert(0, "date", pd.bdate_range("2015-01-01", periods=800).strftime("%Y-%m-%d"))
    frame.to_csv(path, index=False)
    return path


def test_error_messages_print_user_text_and_brackets_verbatim(tmp_path, hostile_path):
    missing = cli("run", tmp_path / f"{MARKUP}.toml")
    assert_bad_input(missing, f"{MARKUP}.toml")

    constrained = {"lookback": [5, 10], "band": [0.0], "where": [f"lookback > {MARKUP}"]}
    where = write_spec(tmp_path / "w.toml", small_spec_dict(grid=constrained))
    assert_bad_input(cli("run", where), "grid.where", MARKUP)

    # brackets in our own messages survive too ("use linspace = [start, stop, num] ...")
    ranged = write_spec(
        tmp_path / "r.toml",
        small_spec_dict(grid={"lookback": {"start": 5.5, "stop": 9}, "band": [0.0]}),
    )
    assert_bad_input(cli("run", ranged), "linspace = [start, stop, num]")

    csv = _price_csv(tmp_path / "prices.csv", ["[/x]", "[bold]"])
    data = small_spec_dict(
        data={"source": "file", "path": str(csv)}, metrics={"benchmark": "nosuch"}
    )
    proc = cli("run", write_spec(tmp_path / "c.toml", data), "--run-dir", tmp_path / "c")
    if "metrics.benchmark" in proc.stderr:  # the column names are quoted in the message
        assert_bad_input(proc, "'[/x]'", "'[bold]'")
    else:  # a stricter data check refused the column names first: still one paragraph
        assert_bad_input(proc)

    raising = cli(
        "run",
        write_spec(tmp_path / "b.toml", boom_doc()),
        "--run-dir",
        tmp_path / "b",
        "--on-error",
        "raise",
        "--quiet",
        env=_env(hostile_path),
    )
    assert raising.returncode == 1 and "Traceback" not in raising.stderr, raising.stderr
    assert HOSTILE_TEXT in raising.stderr and raising.stderr.startswith("error: ")


def test_run_summary_prints_run_folder_and_spec_name_verbatim(tmp_path):
    run_dir = tmp_path / f"run {MARKUP}"
    spec = write_spec(
        tmp_path / "s.toml", small_spec_dict(grid={"lookback": [5, 10], "band": [0.0]})
    )
    proc = cli("run", spec, "--run-dir", run_dir, "--quiet")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert f"run folder: {run_dir}" in proc.stdout
    assert f"sweep report {run_dir}" in proc.stdout
    status = cli("status", run_dir)
    assert status.returncode == 0 and f"sweep report {run_dir}" in status.stdout
    named = write_spec(
        tmp_path / "n.toml",
        small_spec_dict(name=f"wk{MARKUP}", grid={"lookback": [5, 10], "band": [0.0]}),
    )
    proc = cli("run", named, "--quiet", cwd=tmp_path)
    if proc.returncode == 2 and "name" in proc.stderr:
        assert_bad_input(proc, "name")  # spec names restricted to a slug: refused cleanly
        return
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert f"run folder: {Path('runs') / f'wk{MARKUP}'}" in proc.stdout


def test_results_cells_status_and_report_paths_print_verbatim(boom_run, tmp_path):
    table = cli("results", boom_run, "--columns", "lookback,status,error")
    assert table.returncode == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if " 13 " in line)
    assert "error" in row and HOSTILE_TEXT in row
    assert cli("status", boom_run).returncode == 0
    out = tmp_path / f"report {MARKUP}"
    report = cli("report", boom_run, "--out", out, "--quiet")
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
    assert str(out / "report.html") in report.stdout


def test_results_view_headers_and_cells_are_not_markup():
    from rich.console import Console

    from sweep.cli._results_view import results_table_view

    frame = pd.DataFrame({"config_id": ["a" * 32], MARKUP: [MARKUP], "status": ["ok"]})
    console = Console(width=200, record=True, file=io.StringIO())
    table, hidden = results_table_view(frame, ["config_id", MARKUP], console, 1)
    console.print(table)
    text = console.export_text()
    assert not hidden and text.count(MARKUP) == 2


# --- point 12: tracebacks where exit 2 belongs ------------------------------------------


def _unwritable(tmp_path: Path) -> Path:
    if os.geteuid() == 0:  # root writes anywhere on a normal disk, but not into sysfs
        return Path("/sys/raysweep-test-output")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o500)
    return folder / "out"


@pytest.mark.parametrize(
    ("target", "formats"),
    [
        ("missing folder", ["table"]),
        ("a folder", ["csv"]),
        ("unwritable", ["table", "csv", "json", "parquet"]),
    ],
)
def test_results_output_to_an_unusable_path_exits_2(boom_run, tmp_path, target, formats):
    path = {
        "missing folder": tmp_path / "no" / "such" / "out.txt",
        "a folder": tmp_path,
        "unwritable": _unwritable(tmp_path),
    }[target]
    for fmt in formats:
        proc = cli("results", boom_run, "--format", fmt, "-o", path)
        assert_bad_input(proc, "--output", str(path))


def test_report_out_to_a_file_exits_2(boom_run, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    assert_bad_input(cli("report", boom_run, "--out", afile, "--quiet"), "--out", str(afile))
    under = afile / "report"
    assert_bad_input(cli("report", boom_run, "--out", under, "--quiet"), "--out", str(under))
    assert afile.read_text() == "not a folder"


@pytest.mark.parametrize("command", ["status", "verify", "results", "report", "resume"])
def test_a_file_given_as_run_folder_exits_2(tmp_path, command):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert_bad_input(cli(command, afile), str(afile), "not a folder")


def test_run_dir_under_a_file_or_with_an_unknown_scheme_exits_2(tmp_path):
    spec = write_spec(
        tmp_path / "s.toml", small_spec_dict(grid={"lookback": [5, 10], "band": [0.0]})
    )
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert_bad_input(cli("run", spec, "--run-dir", afile), str(afile), "not a folder")
    assert_bad_input(cli("run", spec, "--run-dir", afile / "run"), str(afile / "run"))
    bogus = "bogus://bucket/run"
    assert_bad_input(cli("run", spec, "--run-dir", bogus), bogus, "s3://")
    assert_bad_input(cli("status", bogus), bogus, "s3://")
    assert afile.read_text() == "x"


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    sock.close()
    return port


S3_ENV = {
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def test_unreachable_object_store_exits_2(tmp_path):
    # Only a closed port on loopback: nothing leaves the machine.
    uri = f"s3://bucket/run?endpoint_override=127.0.0.1:{_closed_port()}&scheme=http"
    spec = write_spec(
        tmp_path / "s.toml", small_spec_dict(grid={"lookback": [5, 10], "band": [0.0]})
    )
    env = _env(**S3_ENV)
    assert_bad_input(cli("status", uri, env=env), uri, "cannot reach")
    assert_bad_input(cli("run", spec, "--run-dir", uri, "--quiet", env=env), uri, "cannot reach")


def test_missing_bucket_exits_2(s3_server, tmp_path):
    uri = f"s3://no-such-bucket/run?endpoint_override={s3_server}&scheme=http&region=us-east-1"
    spec = write_spec(
        tmp_path / "s.toml", small_spec_dict(grid={"lookback": [5, 10], "band": [0.0]})
    )
    proc = cli("run", spec, "--run-dir", uri, "--quiet", env=_env(**S3_ENV))
    assert_bad_input(proc, uri, "no-such-bucket")


def test_a_spec_that_is_not_utf8_exits_2(tmp_path):
    spec = tmp_path / "latin1.toml"
    spec.write_bytes(write_spec(tmp_path / "s.toml", small_spec_dict()).read_bytes() + b"# \xe9\n")
    assert_bad_input(cli("run", spec, "--run-dir", tmp_path / "run"), "UTF-8", str(spec))
    assert not (tmp_path / "run").exists()


def _capped_memory() -> None:
    """A child's address space capped at 1.5 GB: a read without bound fails, not the host."""
    resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))


@pytest.mark.parametrize("kind", ["/dev/zero", "a named pipe", "too large", "a directory"])
def test_a_spec_that_is_not_a_small_regular_file_exits_2(tmp_path, kind):
    """Issue 28, point 11: ``sweep run /dev/zero`` was a MemoryError traceback."""
    spec = {"/dev/zero": Path("/dev/zero"), "a directory": tmp_path}.get(kind, tmp_path / "s.toml")
    if kind == "a named pipe":
        os.mkfifo(spec)  # opening it to read would wait for a writer
    elif kind == "too large":
        with spec.open("wb") as fh:
            fh.truncate(9 * 2**20)  # sparse, nothing written: over the 8 MiB limit
    proc = subprocess.run(
        [sys.executable, "-m", "sweep", "run", str(spec), "--run-dir", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_capped_memory,
    )
    expected = {
        "/dev/zero": "a character device",
        "a named pipe": "a named pipe",
        "too large": "is larger than 8 MiB",
        "a directory": "Is a directory",
    }[kind]
    assert_bad_input(proc, "spec: ", repr(str(spec)), expected)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("run_dir", ["", " "])
def test_an_empty_run_dir_is_refused_not_replaced(tmp_path, run_dir):
    """Issue 28, point 11: ``--run-dir ''`` silently ran into runs/<spec name>."""
    spec = write_spec(tmp_path / "s.toml", small_spec_dict(grid={"lookback": [5], "band": [0.0]}))
    proc = cli("run", spec, "--run-dir", run_dir, "--quiet", cwd=tmp_path)
    assert_bad_input(proc, "--run-dir", repr(run_dir), "leave the option out")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("name", [":", "strategies.momentum:", ":Momentum", "..x:Y"])
def test_malformed_strategy_import_path_exits_2(tmp_path, name):
    spec = write_spec(tmp_path / "s.toml", small_spec_dict(strategy={"name": name}))
    proc = cli("run", spec, "--run-dir", tmp_path / "run")
    assert_bad_input(proc, "strategy.name", "package.module:Name", repr(name))
    assert not (tmp_path / "run").exists()


def test_ctrl_c_during_start_up_exits_130(tmp_path, hostile_path):
    marker = tmp_path / "importing"
    spec = write_spec(tmp_path / "s.toml", boom_doc())
    env = _env(hostile_path, HOSTILE_BLOCK_IMPORT=str(marker))
    proc = popen("run", spec, "--run-dir", tmp_path / "run", "--quiet", env=env)
    wait_for(marker, proc)  # the strategy module is being imported
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert "interrupted" in err and "sweep resume" not in err  # nothing to resume yet
    # Ctrl-C while the CLI's own modules load: no traceback from raysweep whenever it lands.
    for delay in (0.05, 0.15, 0.3, 0.5, 0.8):
        proc = popen("status", tmp_path / "nothing", env=_env())
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert not _traceback_through_raysweep(err), (delay, err)
        assert proc.returncode in (130, -signal.SIGINT, 2, 1), (delay, proc.returncode, err)


def _traceback_through_raysweep(err: str) -> bool:
    """Whether ``err`` holds a traceback with a frame in raysweep's own start-up code.

    A Ctrl-C that lands in the interpreter's own start-up (``site`` and the ``.pth`` files,
    ``runpy`` finding the module, the ``sweep`` package's import that ``-m`` runs first)
    prints Python's traceback before any raysweep code can run (exit 1): that is the
    interpreter's behaviour, seen here at delays up to about 40 ms on a quiet machine and
    later under load. From ``sweep/__main__.py`` on, a Ctrl-C must end in one line.
    """
    if "Traceback" not in err:
        return False
    package = Path(sweep.__file__).resolve().parent
    frames = [Path(f) for f in re.findall(r'File "([^"<]+)"', err)]
    return any(f.is_relative_to(package) and f != package / "__init__.py" for f in frames)


def test_ctrl_c_during_report_exits_130(boom_run, tmp_path, hostile_path):
    marker = tmp_path / "evaluating"
    env = _env(hostile_path, HOSTILE_BLOCK_EVALUATE=str(marker))
    proc = popen("report", boom_run, "--out", tmp_path / "rep", env=env)
    wait_for(marker, proc)  # the report is recomputing returns
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert "interrupted" in err


# --- point 15 ----------------------------------------------------------------------------

SLOW = "tests.strategies_for_tests:SlowMomentum"


def _slow_doc() -> dict[str, object]:
    return small_spec_dict(
        strategy={"name": SLOW},
        grid={"lookback": {"start": 5, "stop": 245, "step": 4}, "band": [0.0, 0.01]},
    )  # 120 configs


def _terminate_mid_sweep(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], str, Path]:
    spec = write_spec(tmp_path / "s.toml", _slow_doc())
    run_dir = tmp_path / "run"
    env = _env(RAYSWEEP_TEST_SLEEP="0.02")
    proc = popen("run", spec, "--run-dir", run_dir, "--batch-size", "4", "--quiet", *extra, env=env)
    deadline = time.monotonic() + 240
    while len(list((run_dir / "parts").glob("part-*"))) < 3:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(proc.communicate()[1])
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    return proc, err, run_dir


def _assert_terminated_cleanly(proc: subprocess.Popen[str], err: str, run_dir: Path) -> None:
    assert proc.returncode == 143, (proc.returncode, err)
    assert "Traceback" not in err and "sweep resume" in err, err
    store = RunStore(run_dir)
    session = store.read_manifest()["sessions"][-1]
    assert session["status"] == "interrupted" and session["end"], session
    assert store.read_lock() is None and not (run_dir / "lock").exists()
    assert all(c.ok for c in store.verify_parts())
    assert 0 < store.done_mask(120).sum() < 120


def test_sigterm_interrupts_the_session_and_releases_the_lock(tmp_path):
    _assert_terminated_cleanly(*_terminate_mid_sweep(tmp_path))
    resumed = cli("resume", tmp_path / "run", "--quiet", env=_env(RAYSWEEP_TEST_SLEEP="0"))
    assert resumed.returncode == 0 and "table hash:" in resumed.stdout, resumed.stderr


@pytest.mark.ray
def test_sigterm_under_ray_interrupts_the_session_and_releases_the_lock(ray_env, tmp_path):
    # ray.init installs its own SIGTERM handler (sys.exit); the driver must win it back.
    _assert_terminated_cleanly(
        *_terminate_mid_sweep(tmp_path, "--executor", "ray", "--workers", "1")
    )


@pytest.mark.parametrize("command", ["run", "resume"])
def test_workers_with_the_local_executor_exits_2(boom_run, tmp_path, hostile_path, command):
    spec = write_spec(tmp_path / "s.toml", small_spec_dict())
    target = spec if command == "run" else boom_run
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = cli(
        command,
        target,
        "--executor",
        "local",
        "--workers",
        "4",
        cwd=tmp_path,
        env=_env(hostile_path),
    )
    assert_bad_input(proc, "--workers", "--executor ray", "4")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert len(RunStore(boom_run).read_manifest()["sessions"]) == 1


def test_piped_results_print_full_values(boom_run):
    # A forced terminal (FORCE_COLOR, TTY_COMPATIBLE) and a narrow COLUMNS do not make a
    # pipe a terminal: every column and every whole value is printed.
    for env in ({}, {"FORCE_COLOR": "1", "COLUMNS": "40"}, {"TTY_COMPATIBLE": "1"}):
        proc = cli("results", boom_run, "--all", env=_env(**env))
        assert proc.returncode == 0, proc.stderr
        assert "…" not in proc.stdout and "not shown" not in proc.stderr, env
        assert "excess_kurtosis" in proc.stdout and HOSTILE_TEXT in proc.stdout, env


def test_report_markdown_escapes_html(boom_run, tmp_path):
    proc = cli("report", boom_run, "--out", tmp_path / "rep", "--quiet")
    assert proc.returncode == 0, proc.stderr
    markdown = (tmp_path / "rep" / "report.md").read_text()
    html = (tmp_path / "rep" / "report.html").read_text()
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert SCRIPT not in markdown and escaped in markdown
    assert SCRIPT not in html and escaped in html


def test_markdown_code_blocks_cannot_be_escaped():
    from sweep.report._blocks import Code, Heading
    from sweep.report._render_md import render_markdown

    text = render_markdown([Heading(1, f"Sweep {SCRIPT}"), Code(f"x\n```\n{SCRIPT}\n", "json")])
    assert SCRIPT not in text.split("````json")[0]
    assert "````json\n" in text and f"{SCRIPT}\n\n````" in text  # a longer fence


# --- numba's cache when the package folder and the home folder are read-only ------------


def test_numba_cache_falls_back_to_a_writable_folder(tmp_path):
    from sweep.common._numba_cache import ensure_numba_cache

    blocked = tmp_path / "afile"
    blocked.write_text("x")
    env = {"NUMBA_CACHE_DIR": str(blocked / "numba"), "HOME": str(blocked)}
    chosen = ensure_numba_cache(env, package_dirs=[blocked / "pkg"])
    assert chosen is not None and env["NUMBA_CACHE_DIR"] == chosen
    probe = Path(chosen) / "probe"
    probe.write_text("ok")
    probe.unlink()
    fine = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    assert ensure_numba_cache(fine, package_dirs=[blocked / "pkg"]) is None
    assert fine == {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    writable = {"HOME": str(blocked)}
    assert ensure_numba_cache(writable, package_dirs=[tmp_path / "pkg"]) is None
    assert "NUMBA_CACHE_DIR" not in writable


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="needs root and unshare for read-only bind mounts",
)
def test_cli_runs_with_read_only_package_and_home(tmp_path):
    repo = Path(__file__).resolve().parents[2]
    home = tmp_path / "home"
    home.mkdir()
    spec = write_spec(
        tmp_path / "s.toml", small_spec_dict(grid={"lookback": [5, 10], "band": [0.0]})
    )
    script = textwrap.dedent(
        f"""
        set -e
        for d in {repo} {home}; do mount --bind "$d" "$d"; mount -o remount,ro,bind "$d"; done
        if touch {repo}/stats/__pycache__/probe 2>/dev/null; then exit 97; fi
        cd {home}
        env -u NUMBA_CACHE_DIR -u XDG_CACHE_HOME HOME={home} \\
          {sys.executable} -m sweep run {spec} --run-dir {tmp_path / "run"} --quiet
        """
    )
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode == 97 or "mount:" in proc.stderr:
        pytest.skip(f"cannot make read-only bind mounts here: {proc.stderr[-300:]}")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "table hash:" in proc.stdout


def test_an_import_failed_by_a_ctrl_c_counts_as_the_ctrl_c():
    """A Ctrl-C inside a C extension's initialisation surfaces as ImportError("initialization
    failed") caused by the KeyboardInterrupt: the CLI reports it as the interrupt it is."""
    from sweep.common._signals import Terminated, interrupt_behind

    ctrl_c = KeyboardInterrupt()
    try:
        try:
            raise ctrl_c
        except KeyboardInterrupt as exc:
            raise ImportError("initialization failed") from exc
    except ImportError as failed:
        assert interrupt_behind(failed) is ctrl_c
    stop = Terminated()
    assert interrupt_behind(stop) is stop
    assert interrupt_behind(ImportError("no module named x")) is None
    looped = ImportError("a")
    looped.__context__ = ValueError("b")
    looped.__context__.__context__ = looped  # a cycle ends the walk
    assert interrupt_behind(looped) is None
