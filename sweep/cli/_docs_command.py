"""The ``sweep`` command line as a click command, for the documentation's CLI reference.

``docs/reference/cli.md`` renders every command, option and help text from this object with
mkdocs-click, so the reference is generated from the typer app, never copied by hand.
"""

from __future__ import annotations

import typer

from sweep.cli._app import app

#: The typer app converted to the click group it runs as.
command = typer.main.get_command(app)
