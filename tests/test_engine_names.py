"""Only the backends name an engine: nothing outside ``sweep/executors`` says Ray or Dask.

An engine named in code outside the backends' package (an import, a string compared or
printed, a name such as ``on_ray``) is behaviour that a new engine would have to change
there too. Prose (docstrings, comments) may name engines; code may not. Record keys that
runs written before this rule carry on disk are the only exceptions, listed here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINE = re.compile(r"(?<![a-z])(ray|dask)(?![a-z])", re.IGNORECASE)
#: The engines' top-level packages (Dask's scheduler is ``distributed``).
ENGINE_PACKAGES = {"ray", "dask", "distributed"}
#: Keys of records written on disk before the backends' seam (run folders, bench files,
#: report.json): renaming them would change old folders' meaning and the report's bytes.
ON_DISK_KEYS = {"ray_seconds", "ray_workers", "ray_version"}
#: Distributions whose versions every run records (sweep.common._environment.LIBRARIES): a
#: library's name, not a choice of engine; adding or renaming one changes the report's bytes.
RECORDED_LIBRARIES = {("sweep/common/_environment.py", "ray")}
PACKAGES = ("sweep", "strategies", "stats")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _words(node: ast.AST, docs: set[int]) -> list[str]:
    """The names and texts a node of code carries (a docstring carries none)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if _engine_module(a.name)]
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        return [a.name for a in node.names] + ([module] if _engine_module(module) else [])
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
        return [node.name]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
        return [node.value]
    return []


def _engine_module(module: str) -> bool:
    return module.split(".")[0] in ENGINE_PACKAGES or bool(ENGINE.search(module))


def engine_names(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every place the code (not its prose) names an engine."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    return [
        (getattr(node, "lineno", 0), word[:80])
        for node in ast.walk(tree)
        for word in _words(node, docs)
        if word not in ON_DISK_KEYS and ENGINE.search(word.replace("_", " "))
    ]


def test_no_module_outside_the_backends_names_an_engine():
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if relative.parts[:2] == ("sweep", "executors"):
                continue
            hits = [
                (line, text)
                for line, text in engine_names(path.read_text())
                if (str(relative), text) not in RECORDED_LIBRARIES
            ]
            if hits:
                found[str(relative)] = hits
    assert not found, "engines named outside sweep/executors:\n" + "\n".join(
        f"  {where}:{line}: {text!r}" for where, hits in found.items() for line, text in hits
    )


def test_the_check_sees_code_and_not_prose():
    code = '"""Runs on Ray."""\nimport ray\nx = "dask"\non_ray = 1\nf(ray_workers=2)\n'
    assert sorted(text for _, text in engine_names(code)) == ["dask", "on_ray", "ray"]
