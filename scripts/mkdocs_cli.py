"""mkdocs hook: the CLI reference page's commands, generated from the typer app at build time.

``docs/reference/cli.md`` holds the marker ``<!-- cli-reference -->``; this hook replaces
it with typer's own Markdown for every command, argument and option
(``typer.cli.get_docs_for_click``, what ``typer ... utils docs`` writes), so the page can
never drift from ``sweep COMMAND --help``. Headings are moved one level down to sit under
the page's own.
"""

from __future__ import annotations

import re
from typing import Any

MARKER = "<!-- cli-reference -->"


def cli_markdown() -> str:
    """Every ``sweep`` command as Markdown, headings from level 3."""
    import typer
    import typer.cli

    from sweep.cli._app import app

    command = typer.main.get_command(app)
    text = typer.cli.get_docs_for_click(
        obj=command, ctx=typer.models.Context(command), name="sweep", title="sweep"
    )
    text = text.split("\n", 1)[1]  # the title: the page has its own
    text = re.sub(r"^(#+) ", lambda m: "#" + m.group(1) + " ", text, flags=re.M)
    return "\n".join(_escaped(line) for line in text.splitlines())


def _escaped(line: str) -> str:
    """A help text's ``<`` outside inline code as an entity (``runs/<spec name>`` is text)."""
    parts = line.split("`")
    return "`".join(p.replace("<", "&lt;") if i % 2 == 0 else p for i, p in enumerate(parts))


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Fill the marker of the CLI reference page."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, cli_markdown())
