"""Hostile price files (issue 12, point 13): every message names the file line and the cell.

Line numbers are those an editor shows: the header is line 1, blank lines count.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sweep import load_panel, make_panel, panel_fingerprint
from sweep.errors import DataError
from tests.helpers import small_spec_dict, write_spec

N = 40
DATES = [str(d.date()) for d in pd.bdate_range("2020-01-01", periods=N)]


def _lines(header: str = "date,AAA,BBB") -> list[str]:
    """A valid file as text lines: the header, then one line per date."""
    rows = [f"{d},{10 + 0.25 * i},{5 + 0.01 * i}" for i, d in enumerate(DATES)]
    return [header, *rows]


def _write(tmp_path: Path, lines: list[str], name: str = "p.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _set_cell(lines: list[str], line: int, column: int, text: str) -> list[str]:
    """Replace the cell at editor line ``line`` (1-based), column ``column`` (0-based)."""
    out = list(lines)
    cells = out[line - 1].split(",")
    cells[column] = text
    out[line - 1] = ",".join(cells)
    return out


def _error(path: Path) -> str:
    with pytest.raises(DataError) as info:
        load_panel(path)
    return str(info.value)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("abc", "'abc' is not a number"),
        ("1,5", "is not a number"),
        ("", "the close is missing inside the listed span of asset 'BBB'"),
        ("NA", "'NA' is not a number"),
        ("nan", "'nan' is not finite"),
        ("inf", "'inf' is not finite"),
        ("-1.0", "'-1.0' is not positive"),
        ("0", "'0' is not positive"),
    ],
)
def test_a_bad_price_names_its_file_line_column_date_and_text(tmp_path, text, reason):
    lines = _set_cell(_lines(), 19, 2, text)
    if text == "1,5":  # a quoted cell holding a comma
        lines = _set_cell(_lines(), 19, 2, '"1,5"')
    message = _error(_write(tmp_path, lines))
    assert "p.csv: line 19 (2020-01-24), column 'BBB'" in message, message
    assert reason in message, message


def test_line_numbers_count_the_header_and_blank_lines(tmp_path):
    lines = _lines()
    lines = [lines[0], "", *lines[1:11], "", *lines[11:]]
    # data row 17 is now on editor line 21
    assert lines[20].startswith(DATES[17])
    message = _error(_write(tmp_path, _set_cell(lines, 21, 1, "x")))
    assert "line 21 (2020-01-24), column 'AAA': 'x' is not a number" in message


def test_unsorted_and_repeated_dates_name_file_lines(tmp_path):
    lines = _lines()
    swapped = [lines[0], *lines[1:5], lines[6], lines[5], *lines[7:]]
    message = _error(_write(tmp_path, swapped))
    assert "line 7 (2020-01-07) is earlier than line 6 (2020-01-08)" in message, message
    repeated = [*lines[:11], lines[10], *lines[11:]]
    message = _error(_write(tmp_path, repeated))
    assert "line 12 (2020-01-14) repeats the date of line 11" in message, message


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("yesterday", "'yesterday' is not a date"),
        ("2020-02-30", "'2020-02-30' is not a date"),
        ("", "is empty"),
    ],
)
def test_an_unparseable_date_names_its_line_and_text(tmp_path, text, reason):
    message = _error(_write(tmp_path, _set_cell(_lines(), 7, 0, text)))
    assert "p.csv: line 7, column 'date'" in message, message
    assert reason in message, message


def test_a_file_without_a_date_column_is_not_read_as_1970(tmp_path):
    lines = [",".join(line.split(",")[1:]) for line in _lines()]
    message = _error(_write(tmp_path, lines))
    assert "line 2, column 'AAA'" in message and "'10.0' is a number, not a date" in message
    assert "no 'date' column" in message


@pytest.mark.parametrize("text", ["20200101", "1577836800000000000"])
def test_integer_dates_are_refused(tmp_path, text):
    lines = _set_cell(_lines(), 2, 0, text)
    message = _error(_write(tmp_path, lines))
    assert f"line 2, column 'date': '{text}' is a number, not a date" in message, message
    assert "2020-01-31" in message


def test_a_directory_is_not_reported_missing(tmp_path):
    (tmp_path / "prices.csv").mkdir()
    message = _error(tmp_path / "prices.csv")
    assert "is a directory" in message and "does not exist" not in message


def test_duplicate_column_names_are_refused(tmp_path):
    lines = [f"{line},{line.split(',')[1]}" for line in _lines()]
    lines[0] = "date,AAA,BBB,AAA"
    message = _error(_write(tmp_path, lines))
    assert "column 'AAA' appears more than once in the header" in message, message
    assert "columns 2 and 4" in message and "AAA.1" not in message
    frame = pd.DataFrame({"date": pd.bdate_range("2020-01-01", periods=N)})
    frame["AAA"], frame["BBB"] = np.linspace(1, 2, N), np.linspace(2, 3, N)
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.append_column("AAA", pa.array(np.linspace(3, 4, N)))
    pq.write_table(table, tmp_path / "p.parquet")
    message = _error(tmp_path / "p.parquet")
    assert "column 'AAA' appears more than once" in message and "columns 2 and 4" in message


@pytest.mark.parametrize(
    ("header", "column"),
    [("date,,BBB", "column 2 of 3"), ("date,AAA,BBB,", "column 4 of 4"), (",AAA,BBB", None)],
)
def test_an_empty_column_name_is_named_by_position(tmp_path, header, column):
    """Issue 28, point 12: not "column 'Unnamed: 1': unknown field ' 1'" (pandas' name)."""
    lines = _lines(header)
    if header.endswith(","):
        lines = [lines[0], *(f"{line}," for line in lines[1:])]
    path = _write(tmp_path, lines)
    if column is None:  # an unnamed first column is the dates, as pandas writes an index
        assert load_panel(path).assets == ("AAA", "BBB")
        return
    message = _error(path)
    assert f"{path}: the header has an empty column name at {column}" in message, message
    assert "Unnamed" not in message and "unknown field" not in message
    proc = _run_cli(tmp_path, {"path": "p.csv"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"empty column name at {column}" in proc.stderr


def test_the_same_close_twice_is_refused(tmp_path):
    lines = [f"{line},{line.split(',')[1]}" for line in _lines()]
    lines[0] = "date,AAA,BBB,AAA:close"
    message = _error(_write(tmp_path, lines))
    assert "'AAA' and 'AAA:close'" in message and "close of asset 'AAA'" in message


def test_an_ohlc_field_must_cover_every_asset(tmp_path):
    lines = [f"{line},{line.split(',')[1]}" for line in _lines()]
    lines[0] = "date,AAA,BBB,AAA:open"
    message = _error(_write(tmp_path, lines))
    assert "'AAA:open'" in message and "'BBB:open'" in message, message
    assert "every asset or none" in message
    lines[0] = "date,AAA,BBB,CCC:open"
    message = _error(_write(tmp_path, lines))
    assert "column 'CCC:open'" in message and "no close column 'CCC'" in message, message


def _parquet(tmp_path: Path, frame: pd.DataFrame) -> Path:
    path = tmp_path / "p.parquet"
    frame.to_parquet(path, index=False)
    return path


def test_parquet_cells_name_their_row(tmp_path):
    frame = pd.DataFrame({"date": DATES, "AAA": [str(10 + i) for i in range(N)]})
    frame.loc[17, "AAA"] = "abc"
    message = _error(_parquet(tmp_path, frame))
    assert "row 17 (2020-01-24), column 'AAA': 'abc' is not a number" in message, message
    numbers = pd.DataFrame({"date": np.arange(N, dtype=np.int64), "AAA": np.ones(N)})
    message = _error(_parquet(tmp_path, numbers))
    assert "row 0, column 'date': 0 is a number, not a date" in message, message


def test_valid_files_load_as_before(tmp_path):
    lines = _lines()
    panel = load_panel(_write(tmp_path, [lines[0], "", *lines[1:], ""]))
    frame = pd.DataFrame([line.split(",") for line in lines[1:]], columns=["date", "AAA", "BBB"])
    direct = make_panel(
        pd.to_datetime(frame["date"]), ["AAA", "BBB"], frame[["AAA", "BBB"]].astype(float)
    )
    assert panel_fingerprint(panel) == panel_fingerprint(direct)
    ohlc = [f"{line},{line.split(',')[1]},{line.split(',')[2]}" for line in lines]
    ohlc[0] = "date,AAA,BBB,AAA:open,BBB:open"
    assert set(load_panel(_write(tmp_path, ohlc, "o.csv")).fields) == {"open"}


def test_make_panel_refuses_numbers_as_dates_and_names_a_bad_row():
    close = np.ones((N, 1))
    with pytest.raises(DataError, match="row 0: 0 is a number, not a date"):
        make_panel(np.arange(N), ["A"], close)
    dates = list(DATES)
    dates[4] = "soon"
    with pytest.raises(DataError, match="row 4: 'soon' is not a date"):
        make_panel(dates, ["A"], close)


def test_cli_names_the_line_of_a_bad_cell(tmp_path):
    data = _write(tmp_path, _set_cell(_lines(), 19, 2, "abc"))
    doc = small_spec_dict(data={"path": str(data)}, grid={"lookback": [5], "band": [0.0]})
    doc["metrics"] = {**doc["metrics"], "pbo_blocks": 2, "block_length": 5}
    spec = write_spec(tmp_path / "s.toml", doc)
    proc = subprocess.run(
        [sys.executable, "-m", "sweep", "run", str(spec), "-q"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert "line 19 (2020-01-24), column 'BBB': 'abc' is not a number" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.csv", "s.toml"]


def _run_cli(tmp_path: Path, data: dict[str, str]) -> subprocess.CompletedProcess[str]:
    doc = small_spec_dict(data=data, grid={"lookback": [5], "band": [0.0]})
    doc["metrics"] = {**doc["metrics"], "pbo_blocks": 2, "block_length": 5}
    spec = write_spec(tmp_path / "s.toml", doc)
    return subprocess.run(
        [sys.executable, "-m", "sweep", "run", str(spec), "-q"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )


def test_cli_names_a_gap_a_duplicate_row_and_fills_on_request(tmp_path):
    lines = _set_cell(_lines(), 19, 2, "")  # BBB has no price inside its listed span
    _write(tmp_path, lines)
    proc = _run_cli(tmp_path, {"path": "p.csv"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "line 19 (2020-01-24), column 'BBB': the close is missing inside" in proc.stderr
    assert 'fill = "ffill"' in proc.stderr
    proc = _run_cli(tmp_path, {"path": "p.csv", "fill": "ffill"})
    assert proc.returncode == 0, proc.stderr
    long = ["date,asset,close"] + [f"{d},AAA,{10 + i}" for i, d in enumerate(DATES)]
    long.insert(9, long[4])
    _write(tmp_path, long, "long.csv")
    proc = _run_cli(tmp_path, {"path": "long.csv"})
    assert proc.returncode == 2, proc.stderr
    assert "long.csv: line 5 and line 10 both give asset 'AAA' on 2020-01-06" in proc.stderr


def test_leading_and_trailing_missing_prices_are_listings_not_errors(tmp_path):
    lines = _lines()
    for line in range(2, 7):  # AAA listed from line 7
        lines = _set_cell(lines, line, 1, "")
    for line in range(35, 42):  # BBB delisted after line 34
        lines = _set_cell(lines, line, 2, "")
    panel = load_panel(_write(tmp_path, lines))
    assert panel.has_listings
    assert panel.live_mask[:, 0].tolist() == [False] * 5 + [True] * (N - 5)
    assert panel.live_mask[:, 1].tolist() == [True] * 33 + [False] * (N - 33)
    assert (panel.close[:5, 0] == panel.close[5, 0]).all()
    assert (panel.close[33:, 1] == panel.close[32, 1]).all()
