"""``sweep results`` as a table a person reads: a few key columns, formatted, sized to fit.

The default view is the short config id, the grid parameters that vary and the key metrics
(:data:`KEY_METRICS`); ``--columns`` picks others and ``--all`` shows every column but the
PBO block sums. On a terminal, columns that do not fit its width are left out (named in a
note) instead of being cut to "…"; piped output is printed at its natural width (even when
``FORCE_COLOR`` or ``TTY_COMPATIBLE`` make rich treat the pipe as a terminal). Cells and
headers are plain text, never rich markup. Full precision stays in the csv, json and
parquet formats.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd
from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from sweep.errors import SweepError, close_matches

#: Metrics of the default view, in order.
KEY_METRICS = ("excess_sharpe_ann", "p_value", "total_return", "max_drawdown", "n_trades")
#: Column headers of the default view (two short lines each, so 80 columns hold them).
HEADERS = {
    "config_id": "config",
    "excess_sharpe_ann": "Sharpe\nexcess",
    "sharpe_ann": "Sharpe\n(ann.)",
    "p_value": "p-value",
    "total_return": "total\nreturn",
    "max_drawdown": "max\ndrawdown",
    "n_trades": "trades",
}
#: Characters of ``config_id`` shown (the full id is in csv/json/parquet).
SHORT_ID = 8
#: How each column's numbers are written.
PERCENT = frozenset({"total_return", "max_drawdown", "turnover"})
TWO_DECIMALS = frozenset({"excess_sharpe_ann", "sharpe_ann", "t_stat"})


def format_cell(column: str, value: Any) -> str:
    """One cell, written for reading (NaN and None as an empty cell)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if column == "config_id":
        return str(value)[:SHORT_ID]
    if isinstance(value, float):
        if column in PERCENT:
            return f"{value:.1%}"
        if column in TWO_DECIMALS:
            return f"{value:.2f}"
        if column == "p_value":
            return f"{value:.3f}"
        return f"{value:.4g}"
    return str(value)


def view_columns(
    frame: pd.DataFrame, params: Sequence[str], columns: Sequence[str] | None, show_all: bool
) -> list[str]:
    """The columns to show, in order.

    Parameters
    ----------
    frame : pandas.DataFrame
        The results.
    params : sequence of str
        The parameters shown by default (the grid axes with more than one value).
    columns : sequence of str, optional
        Exactly these (``--columns``); an unknown name is refused with a close match.
    show_all : bool
        Every column but the PBO block sums.
    """
    if show_all:
        return [c for c in frame.columns if not c.startswith("blk_")]
    if columns:
        for name in columns:
            if name not in frame.columns:
                raise SweepError(
                    f"--columns: unknown column {name!r}." + close_matches(name, frame.columns)
                )
        return list(columns)
    shown = ["config_id", *(p for p in params if p in frame.columns)]
    shown += [m for m in KEY_METRICS if m in frame.columns]
    if (frame["status"] != "ok").any():
        shown.append("status")
    return shown


def _table(frame: pd.DataFrame, columns: Sequence[str], rank: bool) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
    if rank:
        table.add_column("#", justify="right", no_wrap=True)
    for name in columns:
        numeric = pd.api.types.is_numeric_dtype(frame[name])
        table.add_column(
            Text(HEADERS.get(name, name)), justify="right" if numeric else "left", no_wrap=True
        )
    for k, row in enumerate(frame[list(columns)].itertuples(index=False), start=1):
        cells = [Text(format_cell(c, v)) for c, v in zip(columns, row, strict=True)]
        table.add_row(*([str(k)] if rank else []), *cells)
    return table


def results_table_view(
    frame: pd.DataFrame, columns: Sequence[str], console: Console, keep: int, fit: bool = True
) -> tuple[Table, list[str]]:
    """A rich table of ``columns`` that fits ``console`` (when asked to).

    Parameters
    ----------
    frame : pandas.DataFrame
        The rows to show, in order.
    columns : sequence of str
        From :func:`view_columns`.
    console : rich.console.Console
        Where it will print.
    keep : int
        The first ``keep`` columns are never left out.
    fit : bool
        Leave out trailing columns until the table fits ``console.width`` (for a terminal;
        pass False for a pipe or a file, where nothing is left out).

    Returns
    -------
    table : rich.table.Table
    hidden : list of str
        Columns left out because the terminal is too narrow.
    """
    shown: list[str] = list(columns)
    hidden: list[str] = []
    table = _table(frame, shown, rank=True)
    while fit and len(shown) > keep:
        width = Measurement.get(console, console.options.update_width(100_000), table).maximum
        if width <= console.width:
            break
        hidden.insert(0, shown.pop())
        table = _table(frame, shown, rank=True)
    return table, hidden
