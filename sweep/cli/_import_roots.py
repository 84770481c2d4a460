"""Where the command line imports a strategy module from (``module:Name`` in a spec).

``sweep run SPEC``, ``sweep check-strategy SPEC`` and ``sweep plan SPEC`` import the module a
spec names from the folders given with ``--app-dir`` (in order), then the spec's folder, then
the working folder, then the rest of ``sys.path``: an ``ema.py`` beside ``ema.toml`` is found
wherever the command is run from, as uvicorn's and gunicorn's ``--app-dir`` and pytest's
rootdir do. The folders are put at the front of ``sys.path`` and of ``PYTHONPATH`` (so the
workers of a local Ray cluster the command starts, which inherit its environment, import the
module too) for the command, and both are restored after it. A module that is found nowhere
is refused before anything runs, naming the folders searched.

Commands that open a run folder (``resume``, ``report``, ``reproduce``, ``results``) add no
folder of their own: they import a strategy that is not built in only when it is allowed
(``--allow-import``, see :mod:`sweep.store._trust`), and ``--app-dir`` there only says where
such an allowed module lives; a folder inside the run folder is refused.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from strategies import BUILTINS
from sweep.common._fs import is_uri
from sweep.errors import StrategySpecError, SweepError


@dataclass(frozen=True)
class ImportRoot:
    """A folder a strategy module is imported from, and what put it there (for messages).

    Attributes
    ----------
    folder : Path
        The folder, absolute and resolved.
    label : str
        What it is: ``"--app-dir"``, ``"the spec's folder"``, ``"the working folder"`` (two
        joined by ``" and "`` when they are the same folder).
    """

    folder: Path
    label: str

    def describe(self) -> str:
        """``label folder``, e.g. ``the spec's folder /home/me/ema``."""
        return f"{self.label} {self.folder}"


def _app_dir(given: Path) -> Path:
    """An ``--app-dir`` folder, absolute and resolved; refused unless it is a folder."""
    if not given.is_dir():
        what = "not a folder" if given.exists() else "no such folder"
        raise SweepError(f"--app-dir: expected a folder, got {str(given)!r} ({what})")
    return given.resolve()


def _merged(found: Sequence[tuple[Path, str]]) -> tuple[ImportRoot, ...]:
    """One root per folder, in first-seen order; the labels of a repeated folder joined."""
    labels: dict[Path, list[str]] = {}
    for folder, label in found:
        names = labels.setdefault(folder, [])
        if label not in names:
            names.append(label)
    return tuple(ImportRoot(folder, " and ".join(names)) for folder, names in labels.items())


def spec_roots(spec: Path, app_dirs: Sequence[Path] | None) -> tuple[ImportRoot, ...]:
    """The folders ``sweep run SPEC`` imports a strategy module from, first to last.

    Parameters
    ----------
    spec : Path
        The spec file.
    app_dirs : sequence of Path, optional
        The ``--app-dir`` folders, in the order given.

    Returns
    -------
    tuple of ImportRoot
        The ``--app-dir`` folders, the spec's folder, the working folder (each once).

    Raises
    ------
    SweepError
        An ``--app-dir`` that is not a folder.
    """
    found = [(_app_dir(d), "--app-dir") for d in app_dirs or ()]
    found.append((spec.resolve().parent, "the spec's folder"))
    found.append((Path.cwd().resolve(), "the working folder"))
    return _merged(found)


def allowed_roots(app_dirs: Sequence[Path] | None, run_dir: str) -> tuple[ImportRoot, ...]:
    """The ``--app-dir`` folders of a command that opens ``run_dir``; none inside it.

    Parameters
    ----------
    app_dirs : sequence of Path, optional
        The ``--app-dir`` folders, in the order given.
    run_dir : str
        The run folder (a path or a URI).

    Returns
    -------
    tuple of ImportRoot
        The folders, each once. They only say where an allowed module lives: what may be
        imported is still decided by ``--allow-import`` (:func:`sweep.store._trust.check_trusted`).

    Raises
    ------
    SweepError
        An ``--app-dir`` that is not a folder, or that is the run folder or inside it
        (opening a run folder never imports code from it).
    """
    roots = _merged([(_app_dir(d), "--app-dir") for d in app_dirs or ()])
    if not roots or is_uri(run_dir):
        return roots
    run = Path(run_dir).resolve()
    for root in roots:
        if root.folder == run or run in root.folder.parents:
            raise SweepError(
                f"--app-dir: expected a folder outside the run folder {run_dir!r} (opening a "
                f"run folder never imports code from inside it), got {str(root.folder)!r}"
            )
    return roots


@contextlib.contextmanager
def importing_from(roots: Sequence[ImportRoot]) -> Iterator[None]:
    """Put ``roots`` at the front of ``sys.path`` and ``PYTHONPATH`` in this block.

    ``PYTHONPATH`` reaches the workers of a local Ray cluster started in the block (they
    inherit the environment); a cluster joined with ``--address`` imports the module as its
    nodes are set up. Both are restored when the block ends.
    """
    folders = [str(r.folder) for r in roots]
    saved_path = list(sys.path)
    saved_env = os.environ.get("PYTHONPATH")
    sys.path[:0] = folders
    others = [e for e in (saved_env or "").split(os.pathsep) if e and e not in folders]
    if folders:
        os.environ["PYTHONPATH"] = os.pathsep.join([*folders, *others])
    try:
        yield
    finally:
        sys.path[:] = saved_path
        if saved_env is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved_env


def _searched(roots: Sequence[ImportRoot]) -> str:
    return ", ".join([r.describe() for r in roots] + ["and the rest of sys.path"])


def check_importable(strategy: str, roots: Sequence[ImportRoot]) -> None:
    """Refuse a spec's strategy module that no folder holds, naming the folders searched.

    Only the module's top-level package is looked up (nothing is imported); a module that
    exists but fails to import is reported when it is imported, as before.

    Parameters
    ----------
    strategy : str
        The spec's ``strategy.name``: a built-in name or ``package.module:Name``.
    roots : sequence of ImportRoot
        The folders put in front of ``sys.path`` (see :func:`importing_from`).

    Raises
    ------
    StrategySpecError
        The module's top-level package is on no folder searched (exit 2).
    """
    if strategy in BUILTINS or ":" not in strategy:
        return  # a built-in, or a name the registry refuses with its own message
    module = strategy.partition(":")[0]
    top = module.split(".")[0]
    if not top.isidentifier() or top in sys.modules:
        return
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):  # the registry's import reports what is wrong
        return
    if found is not None:
        return
    raise StrategySpecError(
        f"strategy.name: cannot import module {module!r}: No module named {top!r} (looked in "
        f"{_searched(roots)}); add --app-dir DIR for a module in another folder, or set "
        "PYTHONPATH"
    )
