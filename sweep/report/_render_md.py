"""Markdown rendering of the report's blocks (figures linked as ``figures/<name>.png``).

Text is escaped as in report.html: ``&``, ``<`` and ``>`` become entities, so a spec name,
a path or a strategy's error message can never become HTML a Markdown viewer runs. Code
blocks are fenced with more backticks than any run inside them, so they cannot be closed
early by the text they show.
"""

from __future__ import annotations

import html
import re

from sweep.report._blocks import Block, Bullets, Code, Figure, Heading, KeyValues, Paragraph, Table

FIGURE_DIR = "figures"
_PREFIX = {"note": "> ", "good": "> **✔** ", "bad": "> **✘** ", "neutral": "> "}


def _text(text: str) -> str:
    """Plain text for Markdown: HTML special characters as entities."""
    return html.escape(text, quote=False)


def _cell(text: str) -> str:
    return _text(text).replace("|", "\\|").replace("\n", " ")


def _fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in ``text`` (at least three)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |"]
    lines.append("|" + "|".join("---" for _ in header) + "|")
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def render_markdown(blocks: list[Block]) -> str:
    """Render blocks as GitHub-flavoured Markdown.

    Parameters
    ----------
    blocks : list of Block
        The report's content.

    Returns
    -------
    str
        Markdown; figures are images in ``figures/`` next to ``report.md``.
    """
    out: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            out.append("#" * block.level + " " + _text(block.text))
        elif isinstance(block, Paragraph):
            out.append(_PREFIX.get(block.style, "") + _text(block.text))
        elif isinstance(block, KeyValues):
            out += _table(["", ""], [[k, v] for k, v in block.rows])
        elif isinstance(block, Table):
            if block.caption:
                out.append(f"*{_text(block.caption)}*")
                out.append("")
            out += _table(block.header, block.rows)
        elif isinstance(block, Figure):
            caption = _text(block.caption)
            alt = caption.replace("[", "\\[").replace("]", "\\]")
            out.append(f"![{alt}]({FIGURE_DIR}/{block.name}.png)")
            out.append("")
            out.append(f"*{caption}*")
        elif isinstance(block, Code):
            if block.summary:
                out.append(f"<details><summary>{_text(block.summary)}</summary>")
                out.append("")
            fence = _fence(block.text)
            out += [f"{fence}{block.language}", block.text, fence]
            if block.summary:
                out.append("")
                out.append("</details>")
        elif isinstance(block, Bullets):
            out += [f"- {_text(item)}" for item in block.items]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
