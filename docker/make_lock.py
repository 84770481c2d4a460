"""Write docker/requirements.lock: the runtime dependency closure of pyproject, pinned and hashed.

The pins are the exact versions installed in the environment that runs this script (the
project's development venv, where the test suite passes), so the image runs what was tested::

    .venv/bin/python docker/make_lock.py > docker/requirements.lock.new
    mv docker/requirements.lock.new docker/requirements.lock

Only ``[project].dependencies`` (with their extras, e.g. ``ray[default]``) and what they
require on Linux / CPython 3.11 are pinned; test tools, the optional ``peers`` extra and the
editable raysweep itself are left out.

Every pin carries the sha256 of each wheel that the package index offers for that version and
that can install in the image on either target (CPython 3.11, glibc Linux up to 2.36 as in
Debian bookworm, x86_64 and aarch64): docker/Dockerfile installs the lock with
``--require-hashes --only-binary=:all:``. The hashes come from the index's JSON simple API
(PEP 691), nothing is downloaded; a pin without a wheel for one of the targets is an error.
To re-hash the pins of an existing lock without changing a version (e.g. when the venv has
moved on)::

    .venv/bin/python docker/make_lock.py --pins docker/requirements.lock > requirements.lock.new

The index is ``--index-url``, else ``$PIP_INDEX_URL``, else pip's default index.
``tests/docker/test_deploy_files.py`` checks the lock (every pin hashed, closed under its
requirements, pyproject's dependencies satisfied).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tomllib
import urllib.request
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion

ROOT = Path(__file__).resolve().parents[1]

#: The image's Python and platforms: CPython 3.11 on Debian bookworm (glibc 2.36).
PYTHON = (3, 11)
GLIBC_MINOR = 36
ARCHES = ("x86_64", "aarch64")


def marker_ok(req: Requirement, extra: str) -> bool:
    """Whether a requirement applies on the image's platform for the given extra."""
    if req.marker is None:
        return True
    env = {**default_environment(), "extra": extra}
    return bool(req.marker.evaluate(env))  # type: ignore[arg-type]


def closure(roots: list[str]) -> dict[str, str]:
    """Canonical name -> installed version for the roots and everything they require."""
    pins: dict[str, str] = {}
    queue: list[tuple[str, frozenset[str]]] = []
    for text in roots:
        req = Requirement(text)
        queue.append((req.name, frozenset(req.extras)))
    seen: set[tuple[str, frozenset[str]]] = set()
    while queue:
        name, extras = queue.pop()
        key = (canonicalize_name(name), extras)
        if key in seen:
            continue
        seen.add(key)
        dist = metadata.distribution(name)
        pins[canonicalize_name(dist.metadata["Name"])] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            if any(marker_ok(req, e) for e in ("", *extras)):
                queue.append((req.name, frozenset(req.extras)))
    return pins


def read_pins(path: Path) -> dict[str, str]:
    """Canonical name -> version of a lock file (``name==version``, hashes and comments ignored)."""
    pins: dict[str, str] = {}
    for line in path.read_text().replace("\\\n", " ").splitlines():
        spec = line.split("#", 1)[0].split()
        if spec:
            name, sep, version = spec[0].partition("==")
            if not sep:
                raise SystemExit(f"{path}: {spec[0]!r} is not pinned with ==")
            pins[canonicalize_name(name)] = version
    return pins


def target_tags(arch: str) -> set[Tag]:
    """The wheel tags pip accepts for the image's CPython 3.11 on glibc Linux of ``arch``."""
    platforms = [f"manylinux_2_{minor}_{arch}" for minor in range(GLIBC_MINOR, 4, -1)]
    platforms.append(f"manylinux2014_{arch}")  # = manylinux_2_17
    if arch == "x86_64":
        platforms += ["manylinux2010_x86_64", "manylinux1_x86_64"]  # = 2_12, 2_5
    tags = set(cpython_tags(PYTHON, abis=["cp311", "abi3", "none"], platforms=platforms))
    tags |= set(compatible_tags(PYTHON, "cp311", platforms))
    return tags


def default_index() -> str:
    """``$PIP_INDEX_URL``, else the index that pip itself uses by default."""
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"]
    from pip._internal.models.index import PyPI  # pip's own default, not a name of ours

    return str(PyPI.simple_url)


def wheel_hashes(index: str, name: str, version: str) -> list[str]:
    """sha256 of every wheel of ``name==version`` that installs on one of the targets.

    Raises SystemExit when a target has no wheel (the image installs wheels only).
    """
    request = urllib.request.Request(
        f"{index.rstrip('/')}/{name}/",
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    wanted = {arch: target_tags(arch) for arch in ARCHES}
    hashes: set[str] = set()
    covered: set[str] = set()
    for file in files:
        filename = file["filename"]
        if not filename.endswith(".whl"):
            continue
        try:
            _, wheel_version, _, tags = parse_wheel_filename(filename)
        except (InvalidWheelFilename, InvalidVersion):
            continue  # an old release's name that today's rules reject: not one of ours
        if str(wheel_version) != version and wheel_version.public != version:
            continue
        arches = {arch for arch, ok in wanted.items() if tags & ok}
        if arches and "sha256" in file.get("hashes", {}):
            hashes.add(file["hashes"]["sha256"])
            covered |= arches
    missing = [arch for arch in ARCHES if arch not in covered]
    if missing:
        raise SystemExit(f"{name}=={version}: no cp311 wheel for {', '.join(missing)} on {index}")
    return sorted(hashes)


def main(argv: list[str] | None = None) -> None:
    """Print the lock file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pins", type=Path, help="keep the versions of this lock file")
    parser.add_argument("--index-url", default=None, help="a PEP 691 simple index")
    args = parser.parse_args(argv)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    if args.pins:
        pins = read_pins(args.pins)
        source = f"the pins of {args.pins.name}, re-hashed"
    else:
        pins = closure(project["dependencies"])
        source = "the development venv"
    pins.pop(canonicalize_name(project["name"]), None)
    index = args.index_url or default_index()
    major, minor = PYTHON
    lines = [
        "# Exact runtime dependencies of raysweep for docker/Dockerfile (Linux, CPython "
        f"{major}.{minor}).",
        f"# Generated by docker/make_lock.py from {source}; do not edit by hand.",
        f"# Hashes: every cp{major}{minor} wheel for {' and '.join(ARCHES)} (glibc <= "
        f"2.{GLIBC_MINOR}) that the index lists;",
        "# installed with pip install --require-hashes --only-binary=:all:.",
        "# Checked by tests/docker/test_deploy_files.py.",
    ]
    for name, version in sorted(pins.items()):
        hashes = wheel_hashes(index, name, version)
        lines.append(f"{name}=={version} \\")
        lines += [f"    --hash=sha256:{h} \\" for h in hashes[:-1]]
        lines.append(f"    --hash=sha256:{hashes[-1]}")
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
