"""A neutral document model, so Markdown and HTML render the same content."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Heading:
    """A section heading (level 1 to 3)."""

    level: int
    text: str


@dataclass(frozen=True)
class Paragraph:
    """Plain text; ``style`` is ``""``, ``"note"``, ``"good"``, ``"bad"`` or ``"neutral"``."""

    text: str
    style: str = ""


@dataclass(frozen=True)
class KeyValues:
    """A two-column table of labels and values."""

    rows: list[tuple[str, str]]


@dataclass(frozen=True)
class Table:
    """A table with a header row."""

    header: list[str]
    rows: list[list[str]]
    caption: str = ""


@dataclass(frozen=True)
class Figure:
    """An embedded figure, by name (see ``Report.figures``)."""

    name: str
    caption: str


@dataclass(frozen=True)
class Code:
    """Preformatted text; with a ``summary`` HTML folds it away."""

    text: str
    language: str = ""
    summary: str = ""


@dataclass(frozen=True)
class Bullets:
    """A bulleted list."""

    items: list[str] = field(default_factory=list)


Block = Heading | Paragraph | KeyValues | Table | Figure | Code | Bullets


def num(value: Any, digits: int = 4) -> str:
    """A number for humans: ints with thousands separators, floats to ``digits`` figures."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:
            return "–"
        if abs(value) < 1e-100:  # a fit's zero arrives as a denormal
            return "0"
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-3):
            return f"{value:.{digits}g}"
        return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:.{digits}g}"
    return str(value)


def seconds(value: float | None) -> str:
    """A duration: ms below one second, s above."""
    if value is None:
        return "–"
    if abs(value) < 1.0:
        return f"{value * 1e3:.3g} ms"
    return f"{value:,.2f} s"


def pct(value: float | None) -> str:
    """A share as a percentage."""
    return "–" if value is None else f"{100.0 * value:.1f}%"
