import numpy as np
import pandas as pd
import pytest

from sweep import load_panel, make_panel, panel_fingerprint, synthetic_panel
from sweep.errors import DataError


def test_synthetic_panel_is_deterministic_and_realistic():
    a, b = synthetic_panel(), synthetic_panel()
    assert panel_fingerprint(a) == panel_fingerprint(b)
    assert a.close.shape == (25 * 261, 3)
    r = np.diff(np.log(a.close), axis=0)
    vol = r.std(axis=0) * np.sqrt(252)
    assert ((vol > 0.03) & (vol < 0.4)).all()
    corr = np.corrcoef(r.T)
    assert abs(corr[0, 1]) > 0.1  # correlated assets
    sq = r[:, 0] ** 2
    assert np.corrcoef(sq[1:], sq[:-1])[0, 1] > 0.05  # volatility clustering
    assert panel_fingerprint(synthetic_panel(seed=1)) != panel_fingerprint(a)


def _frame(n=60):
    dates = pd.bdate_range("2020-01-01", periods=n)
    return pd.DataFrame({"date": dates, "AAA": np.linspace(10, 20, n), "BBB": np.linspace(5, 6, n)})


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_load_round_trip_and_fingerprint(tmp_path, suffix):
    df = _frame()
    path = tmp_path / f"prices{suffix}"
    df.to_csv(path, index=False) if suffix == ".csv" else df.to_parquet(path, index=False)
    panel = load_panel(path)
    assert panel.assets == ("AAA", "BBB")
    np.testing.assert_array_equal(panel.close, df[["AAA", "BBB"]].to_numpy())
    direct = make_panel(df["date"], ["AAA", "BBB"], df[["AAA", "BBB"]].to_numpy())
    assert panel_fingerprint(panel) == panel_fingerprint(direct)
    changed = df.copy()
    changed.loc[30, "BBB"] = np.nextafter(changed.loc[30, "BBB"], 99)
    other = make_panel(changed["date"], ["AAA", "BBB"], changed[["AAA", "BBB"]].to_numpy())
    assert panel_fingerprint(other) != panel_fingerprint(panel)


def test_ohlc_columns_are_read(tmp_path):
    df = _frame()
    df["AAA:open"] = df["AAA"] * 0.99
    df["BBB:open"] = df["BBB"] * 1.01
    df.to_csv(tmp_path / "p.csv", index=False)
    panel = load_panel(tmp_path / "p.csv")
    assert panel.assets == ("AAA", "BBB") and set(panel.fields) == {"open"}


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: d.assign(BBB=d["BBB"].where(d.index != 17, np.nan)),
            "line 19 (2020-01-24), column 'BBB': the close is missing inside the listed span",
        ),
        (
            lambda d: d.assign(AAA=d["AAA"].where(d.index != 3, -1.0)),
            "line 5 (2020-01-06), column 'AAA': '-1.0' is not positive",
        ),
        (
            lambda d: d.assign(AAA=d["AAA"].where(d.index != 5, np.inf)),
            "column 'AAA': 'inf' is not finite",
        ),
        (lambda d: d.iloc[[1, 0, *range(2, 60)]], "sorted and unique"),
        (lambda d: pd.concat([d.iloc[:10], d.iloc[9:]]), "repeats"),
        (lambda d: d.iloc[:10], "at least 30 dates"),
    ],
)
def test_bad_panels_name_the_first_bad_cell(tmp_path, mutate, message):
    mutate(_frame()).to_csv(tmp_path / "p.csv", index=False)
    with pytest.raises(DataError) as info:
        load_panel(tmp_path / "p.csv")
    assert message in str(info.value)


def test_missing_file_and_bad_suffix(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        load_panel(tmp_path / "nope.csv")
    (tmp_path / "x.txt").write_text("a")
    with pytest.raises(DataError, match=r"\.parquet, \.csv or \.csv\.gz"):
        load_panel(tmp_path / "x.txt")
