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

Both are frozen records serialised in ``manifest.json``'s ``provenance`` object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from strategies import Strategy, strategy_import_path

#: The run-folder path of the kept copy of an in-memory panel.
PANEL_COPY = "data/panel.parquet"

DataKind = Literal["synthetic", "file", "memory"]


@dataclass(frozen=True)
class DataOrigin:
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

    def to_json(self) -> dict[str, Any]:
        """``{"kind", "location", "description", "copy"}``."""
        return {
            "kind": self.kind,
            "location": self.location,
            "description": self.description,
            "copy": self.copy,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> DataOrigin:
        """Read a recorded data origin (an unknown kind reads as ``memory``)."""
        kind = doc.get("kind")
        return cls(
            kind=kind if kind in ("synthetic", "file", "memory") else "memory",
            location=_text(doc.get("location")),
            description=str(doc.get("description", "")),
            copy=_text(doc.get("copy")),
        )


@dataclass(frozen=True)
class StrategyOrigin:
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

    def to_json(self) -> dict[str, Any]:
        """``{"name", "version", "import_path", "defined_in"}``."""
        return {
            "name": self.name,
            "version": self.version,
            "import_path": self.import_path,
            "defined_in": self.defined_in,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> StrategyOrigin:
        """Read a recorded strategy origin."""
        return cls(
            name=str(doc.get("name", "")),
            version=str(doc.get("version", "")),
            import_path=_text(doc.get("import_path")),
            defined_in=str(doc.get("defined_in", "")),
        )


@dataclass(frozen=True)
class Provenance:
    """``manifest.json``'s ``provenance``: where the data and the strategy came from."""

    data: DataOrigin
    strategy: StrategyOrigin

    @property
    def needs_python(self) -> bool:
        """Whether only Python can reopen the folder (the strategy cannot be imported)."""
        return not self.strategy.importable

    def to_json(self) -> dict[str, Any]:
        """``{"data": ..., "strategy": ...}``."""
        return {"data": self.data.to_json(), "strategy": self.strategy.to_json()}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Provenance:
        """Read a recorded provenance object."""
        data, strategy = doc.get("data"), doc.get("strategy")
        return cls(
            DataOrigin.from_json(data if isinstance(data, Mapping) else {}),
            StrategyOrigin.from_json(strategy if isinstance(strategy, Mapping) else {}),
        )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


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
