"""Markdown rendering of the report's blocks (figures linked as ``figures/<name>.png``)."""

from __future__ import annotations

from sweep.report._blocks import Block, Bullets, Code, Figure, Heading, KeyValues, Paragraph, Table

FIGURE_DIR = "figures"
_PREFIX = {"note": "> ", "good": "> **✔** ", "bad": "> **✘** ", "neutral": "> "}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


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
            out.append("#" * block.level + " " + block.text)
        elif isinstance(block, Paragraph):
            out.append(_PREFIX.get(block.style, "") + block.text)
        elif isinstance(block, KeyValues):
            out += _table(["", ""], [[k, v] for k, v in block.rows])
        elif isinstance(block, Table):
            if block.caption:
                out.append(f"*{block.caption}*")
                out.append("")
            out += _table(block.header, block.rows)
        elif isinstance(block, Figure):
            out.append(f"![{block.caption}]({FIGURE_DIR}/{block.name}.png)")
            out.append("")
            out.append(f"*{block.caption}*")
        elif isinstance(block, Code):
            if block.summary:
                out.append(f"<details><summary>{block.summary}</summary>")
                out.append("")
            out += [f"```{block.language}", block.text, "```"]
            if block.summary:
                out.append("")
                out.append("</details>")
        elif isinstance(block, Bullets):
            out += [f"- {item}" for item in block.items]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
