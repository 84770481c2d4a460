"""Where a sweep's data and strategy came from, as the run folder records it.

A run folder must say honestly what it was run on, so that ``resume`` and ``report`` can
find the same data and code again, or say exactly what they need:

* the data: the spec's synthetic panel, a file or folder (path or URI), or a panel held in
  memory (a DataFrame or a :class:`~strategies.Panel` handed over from Python). An
  in-memory panel is kept in the run folder (:data:`PANEL_COPY`, written atomically and
  checked against the recorded fingerprint when read), so the command line can reopen it;
* the strategy: a built-in name, an import path (``package.module:Name``) that imports the
  same object, or an object with no importable identity (defined in ``__main__``, a
  notebook or a function), which only Python can hand back (``sweep.resume(...,
  strategy=obj)``).

Both are frozen records serialised in ``manifest.json``'s ``provenance`` object, by the
engine's one rule (:mod:`sweep.common._serial`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from strategies import Strategy, strategy_import_path
from sweep.common._serial import JSONRecord

#: The run-folder path of the kept copy of an in-memory panel.
PANEL_COPY = "data/panel.parquet"

DataKind = Literal["synthetic", "file", "memory"]


@dataclass(frozen=True)
class DataOrigin(JSONRecord):
    """Where the panel came from.

    Attributes
    ----------
    kind : {"synthetic", "file", "memory"}
        The spec's synthetic panel, a file or folder, or a panel handed over in memory.
    location : str or None
        The file, folder or URI (``kind = "file"``).
    description : str
        One line for people: ``"in-memory DataFrame"``, ``"file s3://bucket/p.parquet"``.
    copy : str or None
        The run-folder path of the kept copy of an in-memory panel (:data:`PANEL_COPY`).
    """

    kind: DataKind
    location: str | None
    description: str
    copy: str | None = None


@dataclass(frozen=True)
class StrategyOrigin(JSONRecord):
    """How the strategy can be found again.

    Attributes
    ----------
    name : str
        The strategy's declared name.
    version : str
        Its declared version.
    import_path : str or None
        A built-in name or ``package.module:Name`` that gives the same strategy; None when it
        has no importable identity.
    defined_in : str
        ``module:qualified name`` of the object's class (or of the object itself), for
        messages (``__main__:MyStrategy``).
    """

    name: str
    version: str
    import_path: str | None
    defined_in: str

    @property
    def importable(self) -> bool:
        """Whether the command line can import the strategy (given ``--allow-import``)."""
        return self.import_path is not None


@dataclass(frozen=True)
class Provenance(JSONRecord):
    """``manifest.json``'s ``provenance``: where the data and the strategy came from."""

    data: DataOrigin
    strategy: StrategyOrigin

    @property
    def needs_python(self) -> bool:
        """Whether only Python can reopen the folder (the strategy cannot be imported)."""
        return not self.strategy.importable


def _defined_in(obj: Any) -> list[tuple[str, str]]:
    """Candidate ``(module, qualified name)`` pairs: the object's own, then its class's."""
    pairs: list[tuple[str, str]] = []
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and not isinstance(obj, type):
        pairs.append((module, qualname))
    cls = obj if isinstance(obj, type) else type(obj)
    pairs.append((cls.__module__, cls.__qualname__))
    return pairs


def strategy_origin(strategy: Strategy) -> StrategyOrigin:
    """Find how a strategy object can be imported again (its built-in name or path).

    Parameters
    ----------
    strategy : Strategy
        The object.

    Returns
    -------
    StrategyOrigin
        ``import_path`` is the built-in name when the object is a built-in's instance, else
        the first of the object's own ``module:qualname`` and its class's that imports it
        (the class when instantiating it without arguments gives an equal strategy), else
        None: a strategy defined in ``__main__``, a notebook or inside a function.
    """
    defined_in = ":".join(_defined_in(strategy)[0])
    path = strategy_import_path(strategy)
    return StrategyOrigin(strategy.name, strategy.version, path, defined_in)
