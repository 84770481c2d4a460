"""Long-format files, folders of per-asset files, DataFrames, and S3 (issue 14, points 3-4).

Every bad input names the file, the row or line and what was expected. S3 runs against
moto's server on loopback (``tests/conftest.py::s3_server``), through pyarrow's S3 client.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.fs as pafs
import pytest

from sweep import (
    load_panel,
    make_panel,
    panel_fingerprint,
    panel_from_frame,
    resolve,
    run_sweep,
    spec_from_dict,
)
from sweep.errors import DataError
from tests.helpers import small_spec_dict

N = 40
DATES = pd.bdate_range("2020-01-01", periods=N)


def _long() -> pd.DataFrame:
    rows = []
    for i, d in enumerate(DATES):
        rows.append({"date": d.strftime("%Y-%m-%d"), "asset": "AAA", "close": 10 + 0.25 * i})
        rows.append({"date": d.strftime("%Y-%m-%d"), "asset": "BBB", "close": 5 + 0.01 * i})
    return pd.DataFrame(rows)


def _expected() -> str:
    close = np.column_stack([10 + 0.25 * np.arange(N), 5 + 0.01 * np.arange(N)])
    return panel_fingerprint(make_panel(DATES, ["AAA", "BBB"], close))


def _error(path: Path, **kwargs: str) -> str:
    with pytest.raises(DataError) as info:
        load_panel(path, **kwargs)
    return str(info.value)


def test_long_csv_and_parquet_in_any_row_order_equal_the_wide_panel(tmp_path):
    frame = _long().sample(frac=1.0, random_state=3)
    frame.to_csv(tmp_path / "l.csv", index=False)
    frame.to_parquet(tmp_path / "l.parquet", index=False)
    assert panel_fingerprint(load_panel(tmp_path / "l.csv")) == _expected()
    assert panel_fingerprint(load_panel(tmp_path / "l.parquet")) == _expected()
    with_ohlcv = _long().assign(open=lambda d: d["close"], volume=100.0)
    with_ohlcv.to_csv(tmp_path / "o.csv.gz", index=False)
    panel = load_panel(tmp_path / "o.csv.gz")
    assert set(panel.fields) == {"open", "volume"}


def test_a_duplicate_date_and_asset_names_both_lines(tmp_path):
    frame = _long()
    frame = pd.concat([frame.iloc[:7], frame.iloc[[4]], frame.iloc[7:]], ignore_index=True)
    frame.to_csv(tmp_path / "l.csv", index=False)
    message = _error(tmp_path / "l.csv")
    assert "l.csv: line 6 and line 9 both give asset 'AAA' on 2020-01-03" in message, message
    assert "one row per date and asset" in message


def test_long_format_column_errors_suggest_the_right_name(tmp_path):
    _long().rename(columns={"close": "Close"}).to_csv(tmp_path / "l.csv", index=False)
    message = _error(tmp_path / "l.csv")
    assert "missing column 'close'" in message and "'Close'" in message, message
    _long().assign(vol=1.0).to_csv(tmp_path / "v.csv", index=False)
    message = _error(tmp_path / "v.csv")
    assert "unknown column 'vol'" in message and "volume" in message, message


def test_long_format_bad_cells_and_gaps_name_their_rows(tmp_path):
    frame = _long().astype({"close": object})
    frame.loc[11, "close"] = "abc"
    frame.to_csv(tmp_path / "l.csv", index=False)
    message = _error(tmp_path / "l.csv")
    assert "l.csv: line 13 (2020-01-08), column 'close': 'abc' is not a number" in message
    gap = _long().drop(index=21)  # BBB on 2020-01-15 has no row, inside its span
    gap.to_csv(tmp_path / "g.csv", index=False)
    message = _error(tmp_path / "g.csv")
    assert "no row for asset 'BBB' on 2020-01-15" in message, message
    assert "listed span of asset 'BBB' (2020-01-01 to 2020-02-25" in message
    empty = _long().astype({"close": object})
    empty.loc[21, "close"] = ""
    empty.to_csv(tmp_path / "e.csv", index=False)
    message = _error(tmp_path / "e.csv")
    assert (
        "e.csv: line 23 (2020-01-15), asset 'BBB', column 'close': the close is missing" in message
    )
    filled = load_panel(tmp_path / "g.csv", fill="ffill")
    assert filled.close[10, 1] == filled.close[9, 1] and filled.live is None


def test_an_explicit_layout_wins_and_a_bad_one_is_named(tmp_path):
    _long().to_csv(tmp_path / "l.csv", index=False)
    message = _error(tmp_path / "l.csv", layout="wide")
    assert "column 'asset'" in message, message
    message = _error(tmp_path / "l.csv", layout="lng")
    assert "data.layout: expected one of" in message and "'long'" in message


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "prices"
    folder.mkdir()
    frame = _long()
    for asset, rows in frame.groupby("asset"):
        rows.drop(columns="asset").to_csv(folder / f"{asset}.csv", index=False)
    return folder


def test_a_folder_of_per_asset_files_equals_the_wide_panel(tmp_path):
    folder = _folder(tmp_path)
    (folder / "README.txt").write_text("not a price file")
    assert panel_fingerprint(load_panel(folder)) == _expected()
    bbb = pd.read_csv(folder / "BBB.csv")
    bbb.to_parquet(folder / "BBB.parquet", index=False)
    (folder / "BBB.csv").unlink()
    assert panel_fingerprint(load_panel(folder)) == _expected()


def test_per_asset_file_errors_name_the_file(tmp_path):
    folder = _folder(tmp_path)
    aaa = pd.read_csv(folder / "AAA.csv", dtype=str)
    aaa.loc[4, "close"] = "-3"
    aaa.to_csv(folder / "AAA.csv", index=False)
    message = _error(folder)
    assert "AAA.csv: line 6 (2020-01-07), column 'close': '-3' is not positive" in message
    aaa.loc[4, "close"] = "11"
    aaa.drop(index=7).to_csv(folder / "AAA.csv", index=False)
    message = _error(folder)
    assert "AAA.csv: no row for 2020-01-10: the close is missing" in message, message
    pd.read_csv(folder / "BBB.csv").assign(open=1.0).to_csv(folder / "BBB.csv", index=False)
    aaa.to_csv(folder / "AAA.csv", index=False)
    assert "the files give different fields" in _error(folder)
    (folder / "AAA.csv").write_text("date,close\n")
    (folder / "AAA.parquet").write_bytes(b"")
    assert "two files give asset 'AAA'" in _error(folder)


def test_dataframes_wide_multiindex_and_long_give_one_panel():
    close = pd.DataFrame(
        {"AAA": 10 + 0.25 * np.arange(N), "BBB": 5 + 0.01 * np.arange(N)}, index=DATES
    )
    assert panel_fingerprint(panel_from_frame(close)) == _expected()
    two_level = pd.concat({"Close": close}, axis=1)  # (field, asset), as yfinance returns
    assert panel_fingerprint(panel_from_frame(two_level)) == _expected()
    long = close.stack().rename("close").rename_axis(["date", "asset"]).to_frame()
    assert panel_fingerprint(panel_from_frame(long)) == _expected()
    bad = close.copy()
    bad.iloc[12, 1] = -1.0
    with pytest.raises(DataError, match=r"DataFrame: row 12 \(2020-01-17\), column 'BBB'"):
        panel_from_frame(bad)
    with pytest.raises(DataError, match="expected a pandas DataFrame"):
        panel_from_frame(close.to_numpy())  # type: ignore[arg-type]


def _s3(server: str) -> pafs.S3FileSystem:
    return pafs.S3FileSystem(endpoint_override=server, scheme="http", region="us-east-1")


def test_panels_load_from_s3_and_a_sweep_runs_on_them(s3_server, tmp_path):
    fs = _s3(s3_server)
    query = f"?endpoint_override={s3_server}&scheme=http&region=us-east-1"
    prefix = f"sweeps/data/{tmp_path.name}"
    _long().to_parquet(tmp_path / "l.parquet", index=False)
    fs.create_dir(prefix)
    with fs.open_output_stream(f"{prefix}/long.parquet") as out:
        out.write((tmp_path / "l.parquet").read_bytes())
    for asset, rows in _long().groupby("asset"):
        with fs.open_output_stream(f"{prefix}/per_asset/{asset}.csv") as out:
            out.write(rows.drop(columns="asset").to_csv(index=False).encode())
    from_file = load_panel(f"s3://{prefix}/long.parquet{query}")
    from_folder = load_panel(f"s3://{prefix}/per_asset{query}")
    assert panel_fingerprint(from_file) == panel_fingerprint(from_folder) == _expected()
    missing = _error(Path(f"s3://{prefix}/nope.parquet{query}"))
    assert "does not exist" in missing
    doc = small_spec_dict(
        data={"path": f"s3://{prefix}/long.parquet{query}"},
        grid={"lookback": [3, 5], "band": [0.0]},
        metrics={"bootstrap_reps": 0, "pbo_blocks": 2},
    )
    sweep = resolve(spec_from_dict(doc, base_dir=tmp_path))
    assert sweep.data_origin.kind == "file" and sweep.spec.data.path.startswith("s3://")
    summary = run_sweep(sweep, tmp_path / "run", progress=False)
    assert summary.table_hash is not None
