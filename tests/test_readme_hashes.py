"""Every table hash the README and the docs print comes out of the command printed next to it.

The pages promise their hashes for the pinned install (``constraints.txt``, the one lock the
README's commands install with), so the slow tests first check that the libraries which
decide the bits are installed at the lock's versions, then run each command into a fresh
run folder with the in-process executor and compare the printed hash with the page's.

The hashes and their commands are read from README.md and docs/**/*.md, never written here:
a new hash that no command is bound to fails ``test_every_readme_hash_is_bound_to_a_command``.
Each bound hash is checked once: a paragraph's by ``test_the_readme_hash_is_what_its_command_prints``
here, a transcript's and a python block's by ``tests/test_docs.py``, which runs every
transcript and every python block of the pages and compares all of their shown output. A
hash is bound to a command when it is

- the output line ``table hash: <hash>`` of the nearest ``$ <command>`` line above it in the
  same fenced block (a terminal transcript);
- in a paragraph saying ``(`sweep run ...`) gives table hash `<hash>` ``: the last inline
  ``sweep ...`` command before the hash in the same paragraph, with "table hash" between;
- a line of the output block that directly follows a ``python`` block: that block's output.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
#: Every page that may print a hash: the README and the documentation site's sources.
PAGES = (README, *sorted((REPO / "docs").rglob("*.md")))
LOCK = REPO / "constraints.txt"

#: The libraries whose versions decide the bits of a table (the README's hashes are promised
#: for the pinned versions only, ARCHITECTURE/DESIGN invariant 8).
BIT_DECIDING = ("numpy", "numba", "llvmlite", "pandas", "pyarrow", "scipy")

HASH = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")
FENCE = re.compile(r"^```(\S*)\s*$")
SWEEP_COMMAND = re.compile(r"`((?:[A-Z_][A-Z0-9_]*=\S+ )*(?:\S*/)?sweep [^`]+)`")


@dataclass(frozen=True)
class Segment:
    """A fenced block (``lang`` its info string) or a paragraph (``lang`` None) of the README."""

    lang: str | None
    first_line: int  # 1-based line number of the segment's first content line
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Binding:
    """A hash printed in the README and what prints it."""

    digest: str
    line: int  # line number of the hash in its page
    kind: str  # "command" (a sweep command line) or "python" (a python block's output)
    source: str  # the command line, or the python code
    page: str = "README.md"  # the page, relative to the repository root
    in_transcript: bool = False  # a ``$ command`` transcript's (run whole by tests/test_docs.py)

    @property
    def label(self) -> str:
        what = self.source if self.kind == "command" else "python block"
        return f"{self.page}:{self.line} {what}"


def segments(text: str) -> list[Segment]:
    """The README cut into fenced blocks and paragraphs, in order."""
    out: list[Segment] = []
    lines = text.splitlines()
    i = 0
    paragraph: list[str] = []
    start = 0

    def flush() -> None:
        if paragraph:
            out.append(Segment(None, start, tuple(paragraph)))
            paragraph.clear()

    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence:
            flush()
            body_start = i + 1
            j = body_start
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append(Segment(fence.group(1), body_start + 1, tuple(lines[body_start:j])))
            i = j + 1
            continue
        if lines[i].strip():
            if not paragraph:
                start = i + 1
            paragraph.append(lines[i])
        else:
            flush()
        i += 1
    flush()
    return out


def _bind_in_transcript(segment: Segment, offset: int, digest: str) -> str | None:
    """The ``$ command`` whose output line ``table hash: <digest>`` is at ``offset``."""
    if segment.lines[offset].strip() != f"table hash: {digest}":
        return None
    for line in reversed(segment.lines[:offset]):
        if line.startswith("$ "):
            return line[2:].strip()
    return None


def _bind_in_paragraph(segment: Segment, digest: str) -> str | None:
    """The last inline ``sweep ...`` command before "table hash ... `<digest>`"."""
    text = " ".join(segment.lines)
    at = text.find(f"`{digest}`")
    if at < 0:
        return None
    commands = list(SWEEP_COMMAND.finditer(text, 0, at))
    if not commands or "table hash" not in text[commands[-1].end() : at]:
        return None
    return commands[-1].group(1)


def bindings(text: str | None = None, page: str = "README.md") -> tuple[list[Binding], list[str]]:
    """(every hash of a page bound to what prints it, the hashes bound to nothing, described).

    Without ``text``, every page of ``PAGES`` is read.
    """
    if text is None:
        bound: list[Binding] = []
        unbound: list[str] = []
        for path in PAGES:
            found = bindings(path.read_text(), str(path.relative_to(REPO)))
            bound += found[0]
            unbound += found[1]
        return bound, unbound
    segs = segments(text)
    bound, unbound = [], []
    for index, segment in enumerate(segs):
        for offset, line in enumerate(segment.lines):
            for match in HASH.finditer(line):
                digest, number = match.group(0), segment.first_line + offset
                binding = _bind(segs, index, offset, digest, page)
                if binding is None:
                    unbound.append(f"{page}:{number}: {digest} ({line.strip()[:80]!r})")
                else:
                    bound.append(binding)
    return bound, unbound


def _bind(segs: list[Segment], index: int, offset: int, digest: str, page: str) -> Binding | None:
    """What prints the hash ``digest`` on line ``offset`` of segment ``index``, if anything."""
    segment = segs[index]
    number = segment.first_line + offset
    if segment.lang is None:
        command = _bind_in_paragraph(segment, digest)
        return Binding(digest, number, "command", command, page) if command else None
    if segment.lang == "" and index > 0 and segs[index - 1].lang == "python":
        if segment.lines[offset].strip() != digest:
            return None
        return Binding(digest, number, "python", "\n".join(segs[index - 1].lines), page)
    if segment.lang in ("", "console", "shell", "bash"):
        command = _bind_in_transcript(segment, offset, digest)
        return Binding(digest, number, "command", command, page, True) if command else None
    return None


def locked_versions() -> dict[str, str]:
    """Canonical name -> version of every pin of constraints.txt."""
    pins: dict[str, str] = {}
    for line in LOCK.read_text().splitlines():
        spec = line.split("#", 1)[0].strip()
        if spec:
            name, _, version = spec.partition("==")
            pins[canonicalize_name(name)] = version
    return pins


def version_mismatches() -> list[str]:
    """``name: installed X, constraints.txt pins Y`` for each bit-deciding library that differs."""
    pins = locked_versions()
    found = []
    for name in BIT_DECIDING:
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = "not installed"
        if installed != pins.get(name):
            found.append(f"{name}: installed {installed}, constraints.txt pins {pins.get(name)}")
    return found


# ---- the install ------------------------------------------------------------------------------
def test_the_readme_commands_and_scripts_test_install_from_the_lock() -> None:
    """Issue 27 point 5: the Quick start's two commands install constraints.txt's versions."""
    text = README.read_text()
    start = text.index("## Quick start")
    quick = text[start : text.index("\n## ", start)]
    blocks = [b.strip() for b in re.findall(r"```bash\n(.*?)```", quick, flags=re.S)]
    assert len(blocks) == 2, "the Quick start has two commands: the main job and the suite"
    main_job, suite = blocks
    installs = re.findall(r"pip install [^&]*", main_job)
    assert installs, main_job
    assert all("-c constraints.txt" in i for i in installs), installs
    assert "sweep run examples/momentum.toml" in main_job and "sweep report" in main_job
    assert suite == "scripts/test"
    script = (REPO / "scripts" / "test").read_text()
    installs = re.findall(r"pip install .*", script)
    assert len(installs) >= 2 and all("-c constraints.txt" in i for i in installs), installs
    stamp = next(line for line in script.splitlines() if line.startswith("WANT="))
    assert "sha256sum pyproject.toml constraints.txt" in stamp, "the stamp must cover the lock"
    assert "exec scripts/test" in (REPO / ".ci" / "run").read_text()


# ---- the binding ------------------------------------------------------------------------------
def test_every_readme_hash_is_bound_to_a_command() -> None:
    bound, unbound = bindings()
    assert not unbound, (
        "README.md prints hashes that no command is bound to, so no test checks them (show "
        "the command as `$ sweep ...` above a `table hash: ...` line, or name it in the same "
        "paragraph, see tests/test_readme_hashes.py):\n" + "\n".join(unbound)
    )
    assert bound, "README.md prints no table hash at all: has the Quick start lost its figure?"


def test_the_binding_rules_bind_what_they_should_and_nothing_else() -> None:
    digest = "ab" * 32
    text = f"""\
Some text.

```
$ PYTHONPATH=examples sweep run examples/x.toml --quiet
configs:    12 / 12 done
table hash: {digest}
```

The main job (`sweep run examples/momentum.toml`) gives table hash
`{digest}`.

```python
print("ab" * 32)
```

```
{digest}
```

A hash nobody prints: `{"cd" * 32}`, and `sweep verify r` next to another, `{"ef" * 32}`.

```
$ sweep status r
table:  {"01" * 32}
```
"""
    bound, unbound = bindings(text)
    assert [(b.kind, b.source) for b in bound] == [
        ("command", "PYTHONPATH=examples sweep run examples/x.toml --quiet"),
        ("command", "sweep run examples/momentum.toml"),
        ("python", 'print("ab" * 32)'),
    ]
    assert [b.line for b in bound] == [6, 10, 17]
    assert [u.split(": ")[1].split()[0] for u in unbound] == ["cd" * 32, "ef" * 32, "01" * 32]


def test_the_version_check_names_what_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    real = metadata.version

    def fake(name: str) -> str:
        return "0.0.1" if name == "numba" else real(name)

    monkeypatch.setattr(metadata, "version", fake)
    found = version_mismatches()
    assert any(m.startswith("numba: installed 0.0.1, constraints.txt pins ") for m in found)


# ---- running the commands ---------------------------------------------------------------------
def split_command(command: str) -> tuple[dict[str, str], list[str]]:
    """(environment assignments, sweep arguments) of a shown ``[VAR=value ...] sweep ...``."""
    words = shlex.split(command)
    env: dict[str, str] = {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    assert words and Path(words[0]).name == "sweep", f"not a sweep command: {command!r}"
    return env, words[1:]


def apply_environment(env: dict[str, str], root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Set a command's assignments; ``PYTHONPATH`` entries (relative to ``root``) on sys.path."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
        if key == "PYTHONPATH":  # read by the interpreter at start-up only
            for entry in reversed(value.split(os.pathsep)):
                monkeypatch.syspath_prepend(str(root / entry))


def _sweep_argv(command: str, run_dir: Path) -> tuple[dict[str, str], list[str]]:
    """(environment assignments, sweep arguments) of a README command, into ``run_dir``."""
    env, args = split_command(command)
    assert args[:1] == ["run"], f"only `sweep run` prints a table hash here: {command!r}"
    for option in ("--run-dir", "--executor"):
        assert option not in args, f"{command!r} sets {option}, which the test sets"
    return env, [*args, "--run-dir", str(run_dir), "--executor", "local"]


def _run_command(command: str, run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a README ``sweep run`` command in this process, from the repository root."""
    from typer.testing import CliRunner

    from sweep.cli._app import app

    env, args = _sweep_argv(command, run_dir)
    monkeypatch.chdir(REPO)
    apply_environment(env, REPO, monkeypatch)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, f"{command!r} failed:\n{result.output}"
    found = re.findall(r"^table hash: ([0-9a-f]{64})$", result.output, flags=re.M)
    assert len(found) == 1, f"{command!r} printed no table hash:\n{result.output}"
    return str(found[0])


def check_pinned_install() -> None:
    """Fail unless this is the install the pages' hashes are promised for."""
    mismatches = version_mismatches()
    assert not mismatches, (
        "the pages' hashes are promised for the pinned install only, and this environment "
        "differs from constraints.txt:\n  " + "\n  ".join(mismatches) + "\nInstall the pins: "
        '.venv/bin/pip install -c constraints.txt -e ".[test]" (scripts/test does).'
    )
    assert sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11), (
        f"constraints.txt is the lock for CPython 3.11; this is {sys.version.split()[0]}"
    )


PARAGRAPH_BINDINGS = [b for b in bindings()[0] if b.kind == "command" and not b.in_transcript]


@pytest.mark.slow
@pytest.mark.parametrize("binding", PARAGRAPH_BINDINGS, ids=lambda b: b.label)
def test_the_readme_hash_is_what_its_command_prints(
    binding: Binding, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_pinned_install()
    got = _run_command(binding.source, tmp_path / "run", monkeypatch)
    assert got == binding.digest, (
        f"{binding.label}: the command prints table hash {got}, the page says {binding.digest}"
    )
