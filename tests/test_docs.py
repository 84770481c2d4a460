"""The documentation stays true: it builds strictly and offline, and what it shows runs.

- ``mkdocs build --strict`` passes (no broken link or anchor, no missing reference, the CLI
  reference generated from the typer app, the API reference from the docstrings), and the
  built site loads nothing from another host (no web font, no CDN script).
- Every ``python`` block of the README and the docs runs, in a scratch folder; where an
  output block follows it, every line shown is a line it printed. Blocks marked with an HTML
  comment are run by the test that owns the marker (``OWNED``).
- Every transcript (a fenced block of ``$ sweep ...`` lines and their output) runs command
  by command in a scratch folder, and every output line shown is printed, in order. In shown
  output ``...`` or ``…`` stands for any text (a timing, a path); runs of spaces are one.
- Nothing outside the benchmark pages cites an issue number or a commit.

Hashes printed next to a ``sweep run`` in a paragraph are checked by
``tests/test_readme_hashes.py``, which also refuses a hash bound to no command.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.test_readme_hashes import (
    FENCE,
    PAGES,
    REPO,
    apply_environment,
    check_pinned_install,
    split_command,
)

#: Markers of python blocks run by their own tests (the marker: the test that runs it).
OWNED = {
    "python-api-example": "tests/sweep/test_python_api.py (needs the skfolio sample)",
    "table-hash-recipe": "tests/sweep/test_readme_recipe.py (needs a run folder)",
    "table-hash-recipe-v2": "tests/sweep/test_readme_recipe.py (needs a run folder)",
    "dask-jobqueue-slurm": "tests/sweep/test_dask.py (a stand-in SLURMCluster: no SLURM here)",
}
MARKER = re.compile(r"^<!-- ([a-z0-9-]+) -->$")
EXTERNAL = re.compile(
    r"""<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)=["']https?://"""
    r"""|url\(\s*["']?https?://|@import\s+["']?https?://""",
    re.I,
)


@dataclass(frozen=True)
class Block:
    """A fenced block of a page, with the marker above it and the block right after it."""

    page: str
    line: int
    lang: str
    body: str
    marker: str | None
    following: tuple[str, str] | None  # (lang, body) of the next fenced block, if adjacent

    @property
    def label(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a page, in order."""
    lines = path.read_text().splitlines()
    found: list[tuple[int, str, str, str | None, int]] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        above = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        marker = MARKER.match(above.strip())
        body = "\n".join(lines[i + 1 : j])
        found.append((i + 1, fence.group(1), body, marker.group(1) if marker else None, j))
        i = j + 1
    page = str(path.relative_to(REPO))
    out = []
    for n, (line, lang, body, marker, end) in enumerate(found):
        following = None
        if n + 1 < len(found):
            gap = lines[end + 1 : found[n + 1][0] - 1]
            if not any(g.strip() for g in gap):
                following = (found[n + 1][1], found[n + 1][2])
        out.append(Block(page, line, lang, body, marker, following))
    return out


ALL_BLOCKS = [block for page in PAGES for block in blocks(page)]
PYTHON_BLOCKS = [b for b in ALL_BLOCKS if b.lang == "python"]
TRANSCRIPTS = [
    b for b in ALL_BLOCKS if b.lang in ("", "console") and b.body.lstrip().startswith("$ ")
]


def shown_lines_match(shown: str, printed: str) -> list[str]:
    """The shown lines not found, in order, in the printed text (empty: all found).

    Runs of white space count as one space on both sides, so a line the terminal wrapped
    still matches; ``...`` or ``…`` in a shown line stands for any text.
    """
    text = " ".join(printed.split())
    missing, at = [], 0
    for line in (s for s in shown.splitlines() if s.strip()):
        parts = re.split(r"\.\.\.|…", " ".join(line.split()))
        found = re.compile(".*?".join(re.escape(p) for p in parts)).search(text, at)
        if found is None:
            missing.append(line)
        else:
            at = found.end()
    return missing


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder where ``examples/`` is the repository's, as a reader's clone."""
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_pages_have_blocks_to_check() -> None:
    assert len(PYTHON_BLOCKS) >= 4 and len(TRANSCRIPTS) >= 2
    unknown = {b.marker for b in PYTHON_BLOCKS if b.marker and b.marker not in OWNED}
    assert not unknown, f"python blocks with markers no test owns: {unknown}"
    for marker, owner in OWNED.items():
        assert any(b.marker == marker for b in PYTHON_BLOCKS), f"no block carries {marker}"
        assert marker in (REPO / owner.split(" ")[0]).read_text() or marker.startswith(
            "table-hash-recipe"
        ), owner


def test_the_match_rule_finds_what_it_should() -> None:
    printed = "run folder: runs/x\nexecutor:   local (named)\ntable hash: ab\n"
    assert shown_lines_match("run folder: runs/x\nexecutor: ...\ntable hash: ab", printed) == []
    assert shown_lines_match("table hash: ab\nrun folder: runs/x", printed) == [
        "run folder: runs/x"
    ]
    assert shown_lines_match("table hash: cd", printed) == ["table hash: cd"]


@pytest.mark.parametrize(
    "block", [b for b in PYTHON_BLOCKS if b.marker is None], ids=lambda b: b.label
)
def test_every_python_block_runs_and_prints_what_is_shown(
    block: Block, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sweep

    check_pinned_install()
    monkeypatch.syspath_prepend(str(REPO / "examples"))
    for name in ("run", "resume"):  # in-process: the pages' hashes do not depend on it
        real = getattr(sweep, name)
        monkeypatch.setattr(sweep, name, lambda *a, _f=real, **k: _f(*a, executor="local", **k))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            exec(compile(block.body, block.label, "exec"), {"__name__": "__docs__"})
        except ImportError as exc:
            if "backtesting" not in str(exc):
                raise
            pytest.skip(f"{block.label} needs backtesting.py (the optional extra): {exc}")
    if block.following and block.following[0] == "":
        missing = shown_lines_match(block.following[1], out.getvalue())
        assert not missing, f"{block.label} did not print {missing}; it printed:\n{out.getvalue()}"


def _run_cli(words: list[str]) -> tuple[int, str]:
    """A ``sweep`` command in this process (the in-process executor when it takes one)."""
    from typer.testing import CliRunner

    from sweep.cli._app import app

    if words[0] in ("run", "resume") and not any(w.startswith("--executor") for w in words):
        words = [*words, "--executor", "local"]
    result = CliRunner().invoke(app, words)
    return result.exit_code, result.output


@pytest.mark.slow
@pytest.mark.parametrize("block", TRANSCRIPTS, ids=lambda b: b.label)
def test_every_transcript_runs_and_prints_what_is_shown(
    block: Block, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_pinned_install()
    steps = re.split(r"^\$ ", block.body.strip(), flags=re.M)[1:]
    for step in steps:
        command, _, shown = step.partition("\n")
        env, args = split_command(command)
        apply_environment(env, scratch, monkeypatch)
        code, printed = _run_cli(args)
        missing = shown_lines_match(shown, printed)
        assert not missing, (
            f"{block.label} `{command}` (exit {code}) did not print {missing}:\n{printed}"
        )


def test_the_site_builds_strictly_and_loads_nothing_from_elsewhere(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    cli = (site / "reference" / "cli.html").read_text()
    for command in ("run", "resume", "report", "verify", "reproduce", "check-strategy"):
        assert f"sweep {command}" in cli, f"the generated CLI reference lacks `sweep {command}`"
    for option in ("--executor", "--allow-import", "--batch-size", "--app-dir"):
        assert option in cli, f"the generated CLI reference lacks the option {option}"
    assert "position_strategy" in (site / "reference" / "api.html").read_text()
    fetched = [
        f"{page.relative_to(site)}: {match.group(0)}"
        for page in site.rglob("*")
        if page.suffix in (".html", ".css")
        for match in EXTERNAL.finditer(page.read_text(errors="replace"))
    ]
    assert not fetched, "the site loads from another host:\n" + "\n".join(fetched[:20])


def test_no_page_outside_the_benchmarks_cites_an_issue_or_a_commit() -> None:
    cite = re.compile(r"\bissue \d+|\(#\d+\)|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,12}\b")
    found = []
    for page in PAGES:
        if "benchmarks" in page.parts:
            continue
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for match in cite.finditer(line):
                found.append(f"{page.relative_to(REPO)}:{number}: {match.group(0)}")
    assert not found, "\n".join(found)
