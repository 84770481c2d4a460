"""The deployment files agree with each other, with the entrypoint and with pyproject.

No Docker engine or Kubernetes is needed: the files are parsed (YAML, the Dockerfile's
instructions, the entrypoint's defaults) and compared. What they cannot show (that the image
builds, that KubeRay accepts the RayJob) is listed in docs/how-to/cluster.md.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
ROOT_LOCK = REPO / "constraints.txt"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
TEST_ONLY = {
    "pytest",
    "pytest-timeout",
    "hypothesis",
    "ruff",
    "mypy",
    "pandas-stubs",
    "moto",
    "boto3",
}


# ---- parsers ------------------------------------------------------------------------------------
def dockerfile(text: str | None = None) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of docker/Dockerfile (or of text), continuation lines joined."""
    out: list[tuple[str, str]] = []
    pending = ""
    if text is None:
        text = (DOCKER / "Dockerfile").read_text()
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def instructions(name: str) -> list[str]:
    return [rest for word, rest in dockerfile() if word == name]


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for rest in instructions("ENV"):
        for item in shlex.split(rest):
            key, _, value = item.partition("=")
            env[key] = value
    return env


def exposed_ports() -> set[int]:
    ports: set[int] = set()
    for rest in instructions("EXPOSE"):
        for item in rest.split():
            low, _, high = item.split("/")[0].partition("-")
            ports.update(range(int(low), int(high or low) + 1))
    return ports


def entrypoint_defaults() -> dict[str, str]:
    """``VAR=${VAR-default}`` / ``VAR=${VAR:-default}`` settings at the top of the entrypoint."""
    pattern = re.compile(r"^([A-Z_]+)=\$\{\1:?-(.*?)\}(?:\s|$)")
    found = {}
    for line in (DOCKER / "entrypoint").read_text().splitlines():
        match = pattern.match(line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def entrypoint_modes() -> set[str]:
    text = (DOCKER / "entrypoint").read_text()
    block = text[text.index("case $mode in") :]
    return set(re.findall(r"^\s+([a-z-]+)\) mode_", block, flags=re.M))


def lock_entries() -> dict[str, tuple[str, list[str]]]:
    """Canonical name -> (version, [--hash options]) of docker/requirements.lock.

    One requirement per logical line (``\\`` continuation lines joined, as pip reads them).
    """
    entries: dict[str, tuple[str, list[str]]] = {}
    text = (DOCKER / "requirements.lock").read_text().replace("\\\n", " ")
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            name, sep, version = words[0].partition("==")
            assert sep, f"requirements.lock: {words[0]!r} is not pinned with =="
            key = canonicalize_name(name)
            assert key not in entries, f"requirements.lock pins {name} twice"
            entries[key] = (version.strip(), words[1:])
    return entries


def lock() -> dict[str, str]:
    return {key: version for key, (version, _) in lock_entries().items()}


def compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    return doc


def kuberay() -> dict[str, dict[str, Any]]:
    docs: dict[str, dict[str, Any]] = {}
    for path in sorted((DOCKER / "kuberay").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs[doc["kind"]] = doc
    return docs


def compose_default(value: str) -> str:
    """``${NAME:-default}`` -> default (what compose uses when NAME is unset)."""
    match = re.fullmatch(r"\$\{[A-Z_]+:?-(.*)\}", value)
    return match.group(1) if match else value


def image_name() -> str:
    return f"raysweep:{PROJECT['version']}"


def ray_pods() -> dict[str, dict[str, Any]]:
    """Pod specs of the RayJob: head, each worker group, the submitter."""
    spec = kuberay()["RayJob"]["spec"]
    pods = {
        "head": spec["rayClusterSpec"]["headGroupSpec"]["template"]["spec"],
        "submitter": spec["submitterPodTemplate"]["spec"],
    }
    for group in spec["rayClusterSpec"]["workerGroupSpecs"]:
        pods[f"worker:{group['groupName']}"] = group["template"]["spec"]
    return pods


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container.get("env", [])}


# ---- the files parse ------------------------------------------------------------------------------
def test_the_yaml_files_parse_and_name_their_kinds():
    assert set(compose()["services"]) == {"ray-head", "worker", "driver"}
    docs = kuberay()
    assert docs["RayJob"]["apiVersion"] == "ray.io/v1"
    assert docs["PersistentVolumeClaim"]["apiVersion"] == "v1"


def test_the_entrypoint_is_an_executable_bash_script_with_the_three_modes():
    path = DOCKER / "entrypoint"
    assert os.access(path, os.X_OK), "docker/entrypoint must be executable (git keeps the bit)"
    assert path.read_text().startswith("#!/usr/bin/env bash\n")
    subprocess.run(["bash", "-n", str(path)], check=True)
    assert {"head", "worker", "driver", "healthcheck"} <= entrypoint_modes()
    usage = subprocess.run(
        [str(path), "help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "RAYSWEEP_PYTHON": sys.executable},
    ).stdout
    for name in entrypoint_defaults():
        assert name in usage, f"`entrypoint help` does not list {name}"


# ---- Dockerfile against pyproject and the lock ------------------------------------------------------
def test_dockerfile_base_user_and_entrypoint():
    base = instructions("FROM")
    assert base == ["${PYTHON_IMAGE}"]
    # Pinned by digest (issue 16 point 7); the tag names the Python and the Debian release.
    args = [a for a in instructions("ARG") if a.startswith("PYTHON_IMAGE=")]
    assert len(args) == 1 and re.fullmatch(
        r"PYTHON_IMAGE=python:3\.11-slim-bookworm@sha256:[0-9a-f]{64}", args[0]
    ), args
    python = Version("3.11")
    assert python in Requirement(f"python{PROJECT['requires-python']}").specifier
    users = instructions("USER")
    assert users and users[-1] not in ("root", "0"), "the image must run as a non-root user"
    assert instructions("ENTRYPOINT") == ['["/app/docker/entrypoint"]']


def test_the_runbooks_custom_strategy_recipe_installs_as_root_and_ends_as_the_images_user():
    """docs/how-to/cluster.md's ``FROM raysweep`` recipe: the base image ends as a non-root user, who
    cannot pip-install into the system site-packages ("Permission denied")."""
    doc = (REPO / "docs" / "how-to" / "cluster.md").read_text()
    blocks = re.findall(r"```dockerfile\n(.*?)```", doc, flags=re.S)
    recipes = [dockerfile(b) for b in blocks if b.startswith("FROM raysweep")]
    assert len(recipes) == 1, "docs/how-to/cluster.md has one custom-strategy Dockerfile recipe"
    steps = recipes[0]
    assert steps[0] == ("FROM", image_name())
    final_user = instructions("USER")[-1]
    assert final_user not in ("root", "0")
    user = final_user  # what the recipe starts as: the base image's last USER
    installs = 0
    for word, rest in steps:
        if word == "USER":
            user = rest
        elif word == "RUN" and "pip install" in rest:
            installs += 1
            assert user in ("root", "0"), f"`RUN {rest}` runs as {user}: Permission denied"
            assert "--no-deps" in rest, "the recipe must not change the locked dependencies"
    assert installs == 1
    assert user == final_user, "the recipe's image must run as the base image's user again"


def test_dockerfile_installs_the_lock_then_the_repository_without_dependencies():
    steps = dockerfile()
    copies = [rest for word, rest in steps if word == "COPY"]
    runs = [rest for word, rest in steps if word == "RUN"]
    assert "docker/requirements.lock /tmp/requirements.lock" in copies
    assert ". /app" in copies
    lock_install = next(
        i for i, r in enumerate(runs) if "--requirement /tmp/requirements.lock" in r
    )
    repo_install = next(
        i
        for i, r in enumerate(runs)
        if "pip install --no-cache-dir --no-deps --no-build-isolation /app" in r
    )
    assert lock_install < repo_install
    assert "pip check" in runs[repo_install]
    # What the install needs gets past the build-context filter.
    ignore = [
        line.strip()
        for line in (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert ignore[0] == "*", "an allow-list: everything out, then what the image needs"
    admitted = {line.strip("!/") for line in ignore if line.startswith("!")}
    packages = {
        p.rstrip("*") for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    }
    assert packages | {"pyproject.toml", PROJECT["readme"], "docker", "examples"} <= admitted


def test_the_build_fetches_no_frontend_and_no_unpinned_build_backend():
    """Issue 16 point 7 (part): no `# syntax=` frontend image; the build backend that
    `pip install /app` needs comes from docker/build.lock, pinned with a hash."""
    first = (DOCKER / "Dockerfile").read_text().splitlines()[0]
    assert not re.match(r"#\s*syntax\s*=", first, flags=re.I), "a frontend image is pulled"
    pins = {}
    for line in (DOCKER / "build.lock").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            spec, _, rest = line.partition(" ")
            name, sep, version = spec.partition("==")
            assert sep and re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", rest.strip()), line
            pins[canonicalize_name(name)] = version
    for text in PYPROJECT["build-system"]["requires"]:
        req = Requirement(text)
        key = canonicalize_name(req.name)
        assert key in pins and Version(pins[key]) in req.specifier, text
    runs = instructions("RUN")
    backend = next(i for i, r in enumerate(runs) if "/tmp/build.lock" in r)
    assert "--require-hashes" in runs[backend] and "--no-deps" in runs[backend]
    repo = next(i for i, r in enumerate(runs) if " /app" in r and "pip install" in r)
    assert backend < repo and "--no-build-isolation" in runs[repo]
    assert "docker/build.lock /tmp/build.lock" in instructions("COPY")


def test_every_pin_of_the_lock_has_hashes_and_the_image_installs_it_with_require_hashes():
    """Issue 16 point 7: pip refuses a file whose sha256 is not in the lock, any requirement
    that is not pinned, and sdists (which would fetch an unpinned build backend)."""
    entries = lock_entries()
    assert len(entries) >= 70, "the lock has lost pins"
    for name, (version, options) in entries.items():
        assert options, f"{name}=={version} has no --hash"
        for option in options:
            assert re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", option), f"{name}: {option}"
        assert len(set(options)) == len(options), f"{name}: a hash twice"
    runs = instructions("RUN")
    install = next(r for r in runs if "--requirement /tmp/requirements.lock" in r)
    command = install[: install.index("--requirement /tmp/requirements.lock")]
    assert "pip install" in command and "--require-hashes" in command, install
    assert "--only-binary=:all:" in command, install
    # make_lock.py reads the pins back as written (its --pins mode re-hashes without a change).
    make_lock = load_make_lock()
    assert make_lock.read_pins(DOCKER / "requirements.lock") == lock()


def load_make_lock() -> Any:
    spec = importlib.util.spec_from_file_location("make_lock", DOCKER / "make_lock.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The index's file list for cffi 2.1.1, cp311 (PEP 691 JSON simple API of the public index,
# 2026-12-01), with made-up hashes: one per platform, so that the test can tell which it took.
CFFI_FILES = [
    "cffi-2.1.1-cp311-cp311-macosx_11_0_arm64.whl",
    "cffi-2.1.1-cp311-cp311-manylinux1_i686.manylinux2014_i686.manylinux_2_17_i686"
    ".manylinux_2_5_i686.whl",
    "cffi-2.1.1-cp311-cp311-manylinux2014_aarch64.manylinux_2_17_aarch64.whl",
    "cffi-2.1.1-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    "cffi-2.1.1-cp311-cp311-musllinux_1_2_x86_64.whl",
    "cffi-2.1.1-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    "cffi-2.1.0-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    "cffi-2.1.1.tar.gz",
    "pydantic-0.18-py36+-none-any.whl",  # an old name that today's rules reject: skipped
]


def fake_index(monkeypatch: pytest.MonkeyPatch, make_lock: Any, names: list[str]) -> None:
    import io
    import json

    files = [{"filename": n, "hashes": {"sha256": f"{i:064x}"}} for i, n in enumerate(names)]

    def urlopen(request: Any, timeout: float) -> io.BytesIO:
        assert request.get_header("Accept") == "application/vnd.pypi.simple.v1+json"
        assert request.full_url == "https://index.invalid/simple/cffi/"
        return io.BytesIO(json.dumps({"files": files}).encode())

    monkeypatch.setattr(make_lock.urllib.request, "urlopen", urlopen)


def test_make_lock_hashes_the_cp311_glibc_wheels_for_x86_64_and_aarch64_only(monkeypatch):
    make_lock = load_make_lock()
    fake_index(monkeypatch, make_lock, CFFI_FILES)
    got = make_lock.wheel_hashes("https://index.invalid/simple", "cffi", "2.1.1")
    assert got == [f"{2:064x}", f"{3:064x}"]  # the aarch64 and the x86_64 manylinux wheel
    pure = make_lock.target_tags("aarch64") & make_lock.target_tags("x86_64")
    assert any(t.interpreter == "py3" and t.platform == "any" for t in pure)


def test_make_lock_refuses_a_pin_without_a_wheel_for_one_target(monkeypatch):
    make_lock = load_make_lock()
    fake_index(monkeypatch, make_lock, [n for n in CFFI_FILES if "aarch64" not in n])
    with pytest.raises(SystemExit, match="no cp311 wheel for aarch64"):
        make_lock.wheel_hashes("https://index.invalid/simple", "cffi", "2.1.1")


def test_every_runtime_dependency_of_pyproject_is_pinned_in_the_lock_and_satisfies_it():
    pins = lock()
    for text in PROJECT["dependencies"]:
        req = Requirement(text)
        key = canonicalize_name(req.name)
        assert key in pins, (
            f"pyproject dependency {text!r} is not pinned in docker/requirements.lock"
        )
        assert Version(pins[key]) in req.specifier, (
            f"{req.name}=={pins[key]} does not satisfy {text!r}"
        )
    assert canonicalize_name(PROJECT["name"]) not in pins, "the lock must not pin raysweep itself"
    assert not (TEST_ONLY & set(pins)), f"test-only tools in the lock: {TEST_ONLY & set(pins)}"


def unmet_requirements(pins: dict[str, str], roots: list[str]) -> tuple[int, list[str]]:
    """(packages checked, requirements not pinned or not satisfied by their pin).

    Every requirement of a pinned package (with the extras the roots ask for) must be pinned
    too. Checked against the installed metadata of each pinned package whose installed version
    is the pinned one (the development venv, which the locks were generated from).
    """
    extras: dict[str, set[str]] = {}
    for text in roots:
        req = Requirement(text)
        extras.setdefault(canonicalize_name(req.name), set()).update(req.extras)
    checked, missing = 0, []
    for key, version in pins.items():
        try:
            dist = metadata.distribution(key)
        except metadata.PackageNotFoundError:
            continue
        if dist.version != version:
            continue
        checked += 1
        for text in dist.requires or []:
            req = Requirement(text)
            wanted = ["", *sorted(extras.get(key, set()))]
            env = default_environment()
            if req.marker and not any(req.marker.evaluate({**env, "extra": e}) for e in wanted):
                continue
            dep = canonicalize_name(req.name)
            if dep not in pins or (req.specifier and Version(pins[dep]) not in req.specifier):
                missing.append(f"{key}=={version} needs {text} (lock: {pins.get(dep)})")
    return checked, missing


def test_the_lock_is_closed_under_the_requirements_of_what_it_pins():
    """Every requirement of a pinned package (with the extras pyproject asks for) is pinned too."""
    pins = lock()
    checked, missing = unmet_requirements(pins, PROJECT["dependencies"])
    assert checked >= len(pins) // 2, (
        "the venv no longer matches the lock: regenerate it (docker/make_lock.py)"
    )
    assert not missing, "\n".join(missing)


# ---- the root lock (constraints.txt) and the image's lock derived from it ---------------------
def root_lock() -> dict[str, dict[str, str]]:
    """Section -> (canonical name -> version) of constraints.txt."""
    sections: dict[str, dict[str, str]] = load_make_lock().read_sections(ROOT_LOCK)
    return sections


def root_pins() -> dict[str, str]:
    return {name: v for pins in root_lock().values() for name, v in pins.items()}


def test_every_pin_of_the_image_lock_is_the_root_locks_pin_and_nothing_else():
    """Issue 27 point 5: one lock. docker/requirements.lock is constraints.txt's [runtime]
    section with hashes: the same packages at the same versions."""
    sections = root_lock()
    assert list(sections) == ["runtime", "test"], list(sections)
    runtime, test = sections["runtime"], sections["test"]
    assert not set(runtime) & set(test), f"pinned in both sections: {set(runtime) & set(test)}"
    pinned = root_pins()
    image = lock()
    differ = [
        f"{name}: docker/requirements.lock pins {version}, constraints.txt "
        + (f"pins {pinned[name]}" if name in pinned else "does not pin it")
        for name, version in sorted(image.items())
        if pinned.get(name) != version
    ]
    assert not differ, (
        "docker/requirements.lock disagrees with the root lock; regenerate it from "
        "constraints.txt (docker/make_lock.py):\n" + "\n".join(differ)
    )
    assert set(image) == set(runtime), (
        f"constraints.txt's [runtime] pins missing from the image: {set(runtime) - set(image)}; "
        f"image pins outside [runtime]: {set(image) - set(runtime)}"
    )


def test_make_lock_writes_the_image_lock_from_the_root_lock(monkeypatch, capsys):
    """docker/make_lock.py without --pins reads constraints.txt: with the index answering the
    hashes already in docker/requirements.lock, it writes that file byte for byte."""
    make_lock = load_make_lock()
    entries = lock_entries()

    def wheel_hashes(index: str, name: str, version: str) -> list[str]:
        assert index == "https://index.invalid/simple"
        assert entries[name][0] == version, name
        return [option.removeprefix("--hash=sha256:") for option in entries[name][1]]

    monkeypatch.setattr(make_lock, "wheel_hashes", wheel_hashes)
    make_lock.main(["--index-url", "https://index.invalid/simple"])
    assert capsys.readouterr().out == (DOCKER / "requirements.lock").read_text()


def test_the_root_lock_is_pip_constraints_pinning_the_dependencies_and_the_test_tools():
    """Bare ``name==version`` lines (pip refuses extras and the like in a constraints file),
    satisfying pyproject's dependencies and test extra, without raysweep itself."""
    for line in ROOT_LOCK.read_text().splitlines():
        if line and not line.startswith("#"):
            assert re.fullmatch(r"[a-z0-9][a-z0-9._-]*==[0-9][0-9A-Za-z.+!-]*", line), line
    pins = root_pins()
    for text in PROJECT["dependencies"] + PROJECT["optional-dependencies"]["test"]:
        req = Requirement(text)
        key = canonicalize_name(req.name)
        assert key in pins, f"pyproject requirement {text!r} is not pinned in constraints.txt"
        assert Version(pins[key]) in req.specifier, f"{key}=={pins[key]} does not satisfy {text!r}"
    assert canonicalize_name(PROJECT["name"]) not in pins, "the lock must not pin raysweep itself"
    assert "pip" in root_lock()["test"], "scripts/test upgrades pip to the lock's pip"
    for name in ("numpy", "numba", "llvmlite", "pandas", "pyarrow", "scipy", "ray"):
        assert name in root_lock()["runtime"], f"{name} is not a pinned runtime dependency"
    header = ROOT_LOCK.read_text().split("\n\n", 1)[0]
    assert "Why a constraints file" in header, "the lock's header says why it is constraints"


def test_the_root_lock_is_closed_under_the_requirements_of_what_it_pins():
    pins = root_pins()
    roots = PROJECT["dependencies"] + PROJECT["optional-dependencies"]["test"]
    checked, missing = unmet_requirements(pins, roots)
    assert checked >= len(pins) // 2, (
        "the venv no longer matches constraints.txt: reinstall (RAYSWEEP_REINSTALL=1 "
        "scripts/test) or regenerate it (docker/make_lock.py --root)"
    )
    assert not missing, "\n".join(missing)


def test_make_lock_root_mode_writes_constraints_txt_from_the_pinned_venv(capsys):
    """``make_lock.py --root`` in a venv installed from constraints.txt writes it unchanged."""
    drift = []
    for name, version in root_pins().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = "not installed"
        if installed != version:
            drift.append(f"{name} {installed} (lock {version})")
    if drift:
        pytest.skip(f"this venv is not the pinned install: {', '.join(drift[:5])}")
    load_make_lock().main(["--root"])
    assert capsys.readouterr().out == ROOT_LOCK.read_text()


# ---- compose ----------------------------------------------------------------------------------------
def test_compose_services_share_image_token_network_and_agree_with_the_entrypoint():
    doc = compose()
    services = doc["services"]
    modes = entrypoint_modes()
    secret_name = "ray_auth_token"
    assert doc["secrets"][secret_name]["file"], "the token is a file-based compose secret"
    assert (
        not (DOCKER / "secrets" / secret_name).exists()
        or "secrets/" in (DOCKER / ".gitignore").read_text()
    )
    networks = set()
    for name, service in services.items():
        assert compose_default(service["image"]) == image_name(), name
        assert service["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}, name
        assert (
            DOCKER / service["build"]["context"] / service["build"]["dockerfile"]
        ).resolve() == DOCKER / "Dockerfile"
        assert service["command"][0] in modes, (
            f"{name}: unknown entrypoint mode {service['command']}"
        )
        assert secret_name in service["secrets"], name
        env = service["environment"]
        assert env["RAY_AUTH_MODE"] == "token", name
        assert env["RAY_AUTH_TOKEN_PATH"] == f"/run/secrets/{secret_name}", name
        assert "network_mode" not in service, f"{name}: use the private network, not network_mode"
        networks.add(tuple(service["networks"]))
        if name != "ray-head":
            assert "ports" not in service, f"{name} must not publish ports"
    assert (
        len(networks) == 1
        and doc["networks"][networks.pop()[0]].get("driver", "bridge") == "bridge"
    )
    # The Dockerfile's defaults are the compose ones.
    env = dockerfile_env()
    assert (
        env["RAY_AUTH_MODE"] == "token"
        and env["RAY_AUTH_TOKEN_PATH"] == f"/run/secrets/{secret_name}"
    )


def test_compose_ports_addresses_and_dashboard():
    services = compose()["services"]
    defaults = entrypoint_defaults()
    head = services["ray-head"]
    assert head["command"] == ["head"] and services["worker"]["command"] == ["worker"]
    port = head["environment"].get("RAY_PORT", defaults["RAY_PORT"])
    assert port == defaults["RAY_PORT"] == "6379"
    address = f"ray-head:{port}"
    assert defaults["RAY_HEAD_ADDRESS"] == "ray-head:${RAY_PORT:-6379}"
    assert services["worker"]["environment"]["RAY_HEAD_ADDRESS"] == address
    assert services["driver"]["environment"]["RAY_ADDRESS"] == address
    assert services["driver"]["environment"]["DRIVER_START_NODE"] == "1"
    assert head["environment"]["RAY_NUM_CPUS"] == "0"
    # The dashboard is published on the host's loopback only, at the port the head serves.
    dashboard = head["environment"].get("RAY_DASHBOARD_PORT", defaults["RAY_DASHBOARD_PORT"])
    assert head["ports"] == [f"127.0.0.1:{dashboard}:{dashboard}"]
    assert defaults["RAY_DASHBOARD_HOST"] == "127.0.0.1", (
        "the entrypoint's own default stays on loopback"
    )
    # Every port the entrypoint pins is documented by EXPOSE.
    exposed = exposed_ports()
    for name, value in defaults.items():
        if name.endswith("_PORT") and value:
            assert int(value) in exposed, f"{name}={value} is not in the Dockerfile's EXPOSE"
    assert {int(defaults["RAY_MIN_WORKER_PORT"]), int(defaults["RAY_MAX_WORKER_PORT"])} <= exposed


def docker_bytes(value: str) -> int:
    """Docker's sizes (``4g``, ``512m``, ``4gb``): binary multiples."""
    match = re.fullmatch(r"(\d+)([bkmg]?)b?", value.strip().lower())
    assert match, f"not a Docker size: {value!r}"
    return int(match.group(1)) * 1024 ** "bkmg".index(match.group(2) or "b")


def k8s_bytes(value: str) -> int:
    """Kubernetes quantities with binary suffixes (``8Gi``, ``512Mi``)."""
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti)?", value)
    assert match, f"use a binary suffix: {value!r}"
    return int(match.group(1)) * 1024 ** (["", "Ki", "Mi", "Gi", "Ti"].index(match.group(2) or ""))


def test_compose_limits_every_container_and_tells_ray_the_same_cpus():
    """``--scale worker=N`` runs N x WORKER_CPUS tasks at once, not N x every CPU of the host."""
    services = compose()["services"]
    for name, service in services.items():
        assert "cpus" in service and "mem_limit" in service, f"{name}: no CPU or memory limit"
        assert float(compose_default(str(service["cpus"]))) > 0, name
        assert docker_bytes(compose_default(service["mem_limit"])) > 0, name
    worker = services["worker"]
    cpus = worker["environment"]["RAY_NUM_CPUS"]
    assert cpus == worker["cpus"] == "${WORKER_CPUS:-2}", (
        "the worker's Ray CPUs are its container's CPU limit, WORKER_CPUS, with a default"
    )
    assert services["ray-head"]["environment"]["RAY_NUM_CPUS"] == "0"
    # The defaults with one worker fit a 4-core, 8 GB laptop.
    total_cpus = sum(float(compose_default(str(s["cpus"]))) for s in services.values())
    total_memory = sum(docker_bytes(compose_default(s["mem_limit"])) for s in services.values())
    assert total_cpus <= 4 and total_memory <= 8 * 1024**3, (total_cpus, total_memory)
    runbook = (REPO / "docs" / "how-to" / "cluster.md").read_text()
    for variable in re.findall(r"\$\{([A-Z_]+)(?::-|-)", (DOCKER / "compose.yaml").read_text()):
        if variable.endswith(("_CPUS", "_MEMORY")):
            assert f"`{variable}`" in runbook, (
                f"docs/how-to/cluster.md does not document {variable}"
            )


def test_the_object_store_is_a_quarter_of_memory_and_fits_in_dev_shm_everywhere():
    """Ray 2.60's default (30% of memory, capped at 10 GB whatever /dev/shm holds) lands on disk
    when /dev/shm is smaller: every node sets it explicitly and /dev/shm holds it."""
    assert entrypoint_defaults()["RAY_OBJECT_STORE_MEMORY"] == "auto"
    for name, service in compose()["services"].items():
        memory = docker_bytes(compose_default(service["mem_limit"]))
        shm = docker_bytes(compose_default(service["shm_size"]))
        assert service["shm_size"] == service["mem_limit"], f"{name}: /dev/shm = the memory limit"
        store = memory // 4  # the entrypoint's RAY_OBJECT_STORE_MEMORY=auto
        assert store <= shm * 95 // 100, name
        assert "RAY_OBJECT_STORE_MEMORY" not in service["environment"], f"{name}: auto"
    spec = kuberay()["RayJob"]["spec"]["rayClusterSpec"]
    groups = {"head": spec["headGroupSpec"]} | {g["groupName"]: g for g in spec["workerGroupSpecs"]}
    for name, group in groups.items():
        pod = group["template"]["spec"]
        container = pod["containers"][0]
        memory = k8s_bytes(container["resources"]["limits"]["memory"])
        store = int(group["rayStartParams"]["object-store-memory"])
        assert store == memory // 4, f"{name}: object store = a quarter of the memory limit"
        mount = next(m for m in container["volumeMounts"] if m["mountPath"] == "/dev/shm")
        volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        assert volume["emptyDir"]["medium"] == "Memory", name
        shm = k8s_bytes(volume["emptyDir"]["sizeLimit"])
        assert store <= shm * 95 // 100 and shm <= memory, name


def object_store(*setup: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The entrypoint's object_store_bytes after the bash lines in setup (it is sourced)."""
    script = 'source "$0" && ' + " && ".join([*setup, "object_store_bytes"])
    return subprocess.run(
        ["bash", "-c", script, str(DOCKER / "entrypoint")],
        env={**os.environ, "RAYSWEEP_PYTHON": sys.executable, **env},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_entrypoint_sizes_the_object_store_from_the_container_memory_and_dev_shm(tmp_path):
    gib = 1024**3
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "memory.max").write_text(f"{4 * gib}\n")
    v1 = tmp_path / "v1"
    (v1 / "memory").mkdir(parents=True)
    (v1 / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # unlimited
    unlimited = tmp_path / "max"
    unlimited.mkdir()
    (unlimited / "memory.max").write_text("max\n")
    total = next(
        int(line.split()[1]) * 1024
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    big_shm = f"shm_available() {{ echo {64 * gib}; }}"

    # cgroup v2 limit: a quarter of it.
    result = object_store(f"cgroup_root={v2}", big_shm)
    assert result.returncode == 0 and result.stdout == f"{gib}\n", result.stderr
    assert not result.stderr
    # No limit (v1's huge number, v2's "max"): a quarter of the machine's memory.
    for root in (v1, unlimited):
        result = object_store(f"cgroup_root={root}", big_shm)
        assert result.stdout == f"{total // 4}\n", result.stderr
    # /dev/shm smaller than a quarter of memory: capped at 95% of it, with a warning.
    result = object_store(f"cgroup_root={v2}", f"shm_available() {{ echo {gib // 2}; }}")
    assert result.stdout == f"{gib // 2 // 100 * 95}\n"
    assert "give the container a larger /dev/shm" in result.stderr
    # Docker's default 64 MB /dev/shm: below Ray's minimum store, so Ray decides (on disk).
    result = object_store(f"cgroup_root={v2}", f"shm_available() {{ echo {64 * 1024**2}; }}")
    assert result.returncode == 0 and result.stdout == ""
    assert "puts it on disk" in result.stderr
    # A number is passed on; the empty string leaves it to Ray.
    assert object_store(RAY_OBJECT_STORE_MEMORY="123456789").stdout == "123456789\n"
    assert object_store(RAY_OBJECT_STORE_MEMORY="").stdout == ""
    # node_flags passes it to every `ray start`.
    script = f'source "$0" && cgroup_root={v2} && {big_shm} && node_flags && echo "${{flags[*]}}"'
    flags = subprocess.run(
        ["bash", "-c", script, str(DOCKER / "entrypoint")],
        env={**os.environ, "RAYSWEEP_PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    assert f"--object-store-memory {gib}" in flags


def test_compose_raises_the_open_file_limit_and_checks_the_head_every_30_seconds():
    doc = compose()
    for name, service in doc["services"].items():
        nofile = service["ulimits"]["nofile"]
        assert nofile["soft"] >= 65536 and nofile["hard"] >= nofile["soft"], name
    check = doc["services"]["ray-head"]["healthcheck"]
    seconds = {k: int(str(v).removesuffix("s")) for k, v in check.items() if k != "test"}
    assert seconds["interval"] >= 30, "a check costs a Python start with Ray's client"
    assert seconds["start_interval"] <= 5 and seconds["start_period"] >= 60


def test_the_run_folder_is_one_path_on_a_named_volume_in_compose_dockerfile_entrypoint_and_kuberay():
    doc = compose()
    driver = doc["services"]["driver"]
    run_dir = driver["environment"]["RUN_DIR"]
    assert run_dir == entrypoint_defaults()["RUN_DIR"] == dockerfile_env()["RUN_DIR"]
    volume, mount = next(
        (v.split(":")[0], v.split(":")[1]) for v in driver["volumes"] if isinstance(v, str)
    )
    assert volume in doc["volumes"], "the run folder is on a named volume"
    assert run_dir.startswith(mount.rstrip("/") + "/")
    assert (
        dockerfile_env()["SPEC"]
        == entrypoint_defaults()["SPEC"]
        == compose_default(driver["environment"]["SPEC"])
    )
    spec_in_repo = REPO / entrypoint_defaults()["SPEC"].removeprefix("/app/")
    assert spec_in_repo.is_file(), "the default SPEC is copied into the image from the repository"

    pvc = kuberay()["PersistentVolumeClaim"]
    head = ray_pods()["head"]
    container = head["containers"][0]
    assert env_of(container)["RUN_DIR"] == run_dir
    claims = {
        v["name"]: v["persistentVolumeClaim"]["claimName"]
        for v in head["volumes"]
        if "persistentVolumeClaim" in v
    }
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert claims[mounts[mount]] == pvc["metadata"]["name"]


def test_the_default_spec_loads():
    from sweep import load_spec

    assert load_spec(REPO / entrypoint_defaults()["SPEC"].removeprefix("/app/")).name


# ---- KubeRay ----------------------------------------------------------------------------------------
def test_rayjob_runs_the_entrypoint_driver_and_retries_on_a_new_cluster():
    spec = kuberay()["RayJob"]["spec"]
    entrypoint = spec["entrypoint"].split()
    assert entrypoint == ["/app/docker/entrypoint", "driver"]
    assert instructions("ENTRYPOINT") == [f'["{entrypoint[0]}"]']
    assert spec["backoffLimit"] >= 1, "a failed driver is retried (and resumes)"
    assert spec["shutdownAfterJobFinishes"] is True and spec["submissionMode"] == "K8sJobMode"
    assert "entrypointNumCpus" not in spec, (
        "the head offers no CPUs; the driver must not ask for any"
    )
    assert spec["rayClusterSpec"]["rayVersion"] == lock()["ray"]
    head = spec["rayClusterSpec"]["headGroupSpec"]
    assert head["rayStartParams"]["num-cpus"] == "0"
    assert "RAY_ADDRESS" not in env_of(head["template"]["spec"]["containers"][0]), (
        "the job supervisor sets it"
    )


def test_rayjob_pods_share_image_and_token_with_compose():
    spec = kuberay()["RayJob"]["spec"]
    secret = spec["rayClusterSpec"]["authOptions"]["secretName"]
    assert spec["rayClusterSpec"]["authOptions"]["mode"] == "token"
    token_path = compose()["services"]["ray-head"]["environment"]["RAY_AUTH_TOKEN_PATH"]
    for name, pod in ray_pods().items():
        container = pod["containers"][0]
        assert container["image"] == image_name(), name
        env = env_of(container)
        assert env["RAY_AUTH_MODE"] == "token" and env["RAY_AUTH_TOKEN_PATH"] == token_path, name
        mount = next(m for m in container["volumeMounts"] if m["mountPath"] == token_path)
        volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        assert volume["secret"]["secretName"] == secret, name
        assert mount["subPath"] == "auth_token", f"{name}: KubeRay's Secret key is auth_token"
        assert (
            pod["securityContext"]["runAsUser"] != 0 and pod["securityContext"]["runAsNonRoot"]
        ), name
        assert pod.get("automountServiceAccountToken") is False, name


def test_rayjob_ports_match_the_entrypoint_and_workers_tolerate_spot():
    spec = kuberay()["RayJob"]["spec"]["rayClusterSpec"]
    defaults = entrypoint_defaults()
    params = {
        "port": "RAY_PORT",
        "node-manager-port": "RAY_NODE_MANAGER_PORT",
        "object-manager-port": "RAY_OBJECT_MANAGER_PORT",
        "min-worker-port": "RAY_MIN_WORKER_PORT",
        "max-worker-port": "RAY_MAX_WORKER_PORT",
        "metrics-export-port": "RAY_METRICS_EXPORT_PORT",
        "runtime-env-agent-port": "RAY_RUNTIME_ENV_AGENT_PORT",
        "dashboard-agent-grpc-port": "RAY_DASHBOARD_AGENT_GRPC_PORT",
    }
    groups = [spec["headGroupSpec"], *spec["workerGroupSpecs"]]
    for group in groups:
        for param, value in group["rayStartParams"].items():
            if param in params:
                assert value == defaults[params[param]], (
                    f"{param}={value} vs entrypoint {params[param]}"
                )
    head_ports = {
        p["name"]: p["containerPort"]
        for p in spec["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"]
    }
    assert head_ports["gcs-server"] == int(defaults["RAY_PORT"])
    assert head_ports["dashboard"] == int(defaults["RAY_DASHBOARD_PORT"])
    assert head_ports["client"] == int(defaults["RAY_CLIENT_SERVER_PORT"])
    for group in spec["workerGroupSpecs"]:
        pod = group["template"]["spec"]
        assert pod.get("nodeSelector") and pod.get("tolerations"), (
            "worker pods are meant for spot capacity"
        )
    assert not spec["headGroupSpec"]["template"]["spec"].get("tolerations"), (
        "the head stays on on-demand nodes"
    )


def test_rayjob_head_stops_the_driver_before_an_eviction_kills_it():
    """Eviction's SIGTERM goes to KubeRay's PID 1, not to the driver: a preStop hook does it."""
    head = kuberay()["RayJob"]["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    hook = head["containers"][0]["lifecycle"]["preStop"]["exec"]["command"]
    assert hook == ["/app/docker/entrypoint", "stop-driver"]
    assert "stop-driver" in entrypoint_modes()
    wait = int(entrypoint_defaults()["STOP_DRIVER_TIMEOUT"])
    assert head["terminationGracePeriodSeconds"] > wait, "the grace period covers the hook"
    assert wait >= int(compose()["services"]["driver"]["stop_grace_period"].removesuffix("s"))


def test_kuberay_needs_v1_6_and_offers_no_fallback_that_cannot_work():
    """KubeRay <= 1.5 probes run wget (not in the image) and, without authOptions, the operator
    cannot read the job status: dropping authOptions is no fallback."""
    spec = kuberay()["RayJob"]["spec"]["rayClusterSpec"]
    assert spec["authOptions"] == {"mode": "token", "secretName": "raysweep-ray-auth"}
    texts = {
        "rayjob.yaml": (DOCKER / "kuberay" / "rayjob.yaml").read_text(),
        "cluster.md": (REPO / "docs" / "how-to" / "cluster.md").read_text(),
    }
    for name, text in texts.items():
        flat = " ".join(text.split())
        assert "v1.6 or newer" in flat, name
        assert "not supported" in flat and "wget" in flat, f"{name}: say why older ones fail"
        assert not re.search(r"\bdrop `?authOptions\b", flat), (
            f"{name} still suggests dropping authOptions on an older operator"
        )


def admits(affinity: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a required node affinity admits a node with these labels (Kubernetes rules:
    terms are ORed, expressions ANDed; NotIn and DoesNotExist match an absent key)."""
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]

    def matches(e: dict[str, Any]) -> bool:
        key, op, values = e["key"], e["operator"], e.get("values", [])
        return {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]

    return any(all(matches(e) for e in t["matchExpressions"]) for t in terms)


def test_rayjob_head_is_kept_off_spot_nodes_on_gke_eks_and_aks():
    spec = kuberay()["RayJob"]["spec"]["rayClusterSpec"]
    head = spec["headGroupSpec"]["template"]["spec"]
    assert "affinity" in head, "the head needs a required node affinity, not luck with taints"
    assert not head.get("tolerations"), "the head tolerates no spot taint"
    spot_nodes = [
        {"cloud.google.com/gke-spot": "true"},
        {"cloud.google.com/gke-preemptible": "true"},
        {"eks.amazonaws.com/capacityType": "SPOT"},
        {"karpenter.sh/capacity-type": "spot"},
        {"kubernetes.azure.com/scalesetpriority": "spot"},
    ]
    # Every worker group's spot pool (its nodeSelector and its tolerated taints) is refused.
    for group in spec["workerGroupSpecs"]:
        pod = group["template"]["spec"]
        spot_nodes.append(dict(pod["nodeSelector"]))
        spot_nodes += [{t["key"]: t["value"]} for t in pod["tolerations"] if "value" in t]
    for labels in spot_nodes:
        assert not admits(head["affinity"], labels), f"the head may land on a node {labels}"
    on_demand = [
        {},
        {"cloud.google.com/gke-nodepool": "default-pool"},
        {"eks.amazonaws.com/capacityType": "ON_DEMAND"},
        {"karpenter.sh/capacity-type": "on-demand"},
        {"kubernetes.azure.com/scalesetpriority": "regular"},
    ]
    for labels in on_demand:
        assert admits(head["affinity"], labels), f"the head cannot land on an on-demand {labels}"


@pytest.mark.parametrize(
    "path",
    [
        "docker/Dockerfile",
        "docker/compose.yaml",
        "docker/kuberay/rayjob.yaml",
        "docker/kuberay/pvc.yaml",
        "docs/how-to/cluster.md",
    ],
)
def test_the_runbook_and_files_exist(path):
    assert (REPO / path).is_file()


def test_the_inspect_pod_reads_the_same_run_folder_with_the_same_image():
    docs = kuberay()
    pod = docs["Pod"]["spec"]
    container = pod["containers"][0]
    assert container["image"] == image_name()
    claim = next(v for v in pod["volumes"] if "persistentVolumeClaim" in v)
    assert (
        claim["persistentVolumeClaim"]["claimName"]
        == docs["PersistentVolumeClaim"]["metadata"]["name"]
    )
    mount = next(m for m in container["volumeMounts"] if m["name"] == claim["name"])
    assert entrypoint_defaults()["RUN_DIR"].startswith(mount["mountPath"] + "/")
    assert pod["securityContext"]["runAsUser"] == ray_pods()["head"]["securityContext"]["runAsUser"]


def test_the_rayjob_reads_its_spec_from_the_configmap_which_is_a_spec_that_loads(tmp_path):
    from sweep import load_spec

    config_map = kuberay()["ConfigMap"]
    assert config_map["metadata"]["name"] == "raysweep-spec"
    text = config_map["data"]["sweep.toml"]
    assert text == (REPO / "examples" / "momentum.toml").read_text()
    (tmp_path / "sweep.toml").write_text(text)
    assert load_spec(tmp_path / "sweep.toml").name
    head = ray_pods()["head"]
    container = head["containers"][0]
    spec_path = Path(env_of(container)["SPEC"])
    mount = next(m for m in container["volumeMounts"] if m["name"] == "spec")
    assert mount["readOnly"] and spec_path.parent == Path(mount["mountPath"])
    volume = next(v for v in head["volumes"] if v["name"] == "spec")
    assert volume["configMap"]["name"] == "raysweep-spec"
    assert spec_path.name in config_map["data"]


def test_every_pod_names_the_same_image_pull_secret():
    pods = {**ray_pods(), "inspect": kuberay()["Pod"]["spec"]}
    for name, pod in pods.items():
        assert pod.get("imagePullSecrets") == [{"name": "raysweep-pull"}], name
    runbook = (REPO / "docs" / "how-to" / "cluster.md").read_text()
    assert "kubectl create secret docker-registry raysweep-pull" in runbook


def test_rayjob_workers_fit_an_8_vcpu_node_and_tell_ray_their_cpu_limit():
    """A pod's CPU request must fit the node's allocatable CPU, below its vCPU count."""
    for name, pod in ray_pods().items():
        if name.startswith("worker:"):
            resources = pod["containers"][0]["resources"]
            assert resources["requests"]["cpu"] == resources["limits"]["cpu"], name
            assert float(resources["limits"]["cpu"]) <= 7, f"{name}: Pending on 8-vCPU nodes"
