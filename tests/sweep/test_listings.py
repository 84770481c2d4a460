"""Universes with listings and delistings (issue 14, point 3): the live mask, fills, gaps.

Oracles are plain-Python loops over dates written here from the rule's wording, and the
real S&P 500 sample (skfolio's wheel) masked to list and delist real series.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sweep import load_panel, make_panel, panel_fingerprint, panel_from_frame, synthetic_panel
from sweep.data._benchmark import benchmark_returns
from sweep.errors import DataError
from tests.helpers import listed_sp500, sp500_path

N = 60
DATES = pd.bdate_range("2021-01-04", periods=N)


def _loop_listing(close: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rule as a loop: live from first to last valid; nearest valid price outside."""
    n, m = close.shape
    live = np.zeros((n, m), dtype=bool)
    out = close.copy()
    for j in range(m):
        valid = [t for t in range(n) if not math.isnan(close[t, j])]
        first, last = valid[0], valid[-1]
        for t in range(n):
            live[t, j] = first <= t <= last
            if t < first:
                out[t, j] = close[first, j]
            elif t > last:
                out[t, j] = close[last, j]
    return out, live


def test_the_listing_rule_matches_a_loop_on_random_spans():
    rng = np.random.default_rng(5)
    for _ in range(25):
        m = int(rng.integers(1, 6))
        close = 50 + rng.random((N, m)) * 10
        for j in range(m):
            first = int(rng.integers(0, N // 2))
            last = int(rng.integers(first, N))
            close[:first, j] = np.nan
            close[last + 1 :, j] = np.nan
        panel = make_panel(DATES, [f"A{j}" for j in range(m)], close)
        expected_close, expected_live = _loop_listing(close)
        np.testing.assert_array_equal(panel.close, expected_close)
        np.testing.assert_array_equal(panel.live_mask, expected_live)
        assert panel.has_listings == (not expected_live.all())
        returns = panel.close[1:] / panel.close[:-1] - 1
        assert (returns[~expected_live[1:] & ~expected_live[:-1]] == 0).all()


def test_a_panel_without_missing_prices_is_unchanged():
    base = synthetic_panel(years=1)
    again = make_panel(base.dates, base.assets, base.close)
    assert again.live is None and panel_fingerprint(again) == panel_fingerprint(base)


def test_the_fingerprint_covers_the_mask():
    close = np.full((N, 2), 10.0)
    close[:5, 0] = np.nan
    listed = make_panel(DATES, ["A", "B"], close)
    complete = make_panel(DATES, ["A", "B"], np.full((N, 2), 10.0))
    assert np.array_equal(listed.close, complete.close)  # same prices after the back-fill
    assert panel_fingerprint(listed) != panel_fingerprint(complete)


def _csv(tmp_path: Path, frame: pd.DataFrame, name: str = "p.csv") -> Path:
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def _wide() -> pd.DataFrame:
    frame = pd.DataFrame({"date": DATES.strftime("%Y-%m-%d")})
    frame["AAA"] = np.linspace(10, 20, N)
    frame["BBB"] = np.linspace(5, 6, N)
    return frame


def test_a_gap_inside_the_live_span_names_the_cell_and_ffill_fills_it(tmp_path):
    frame = _wide()
    frame.loc[:9, "AAA"] = np.nan  # listed on row 10: fine
    frame.loc[30, "BBB"] = np.nan  # a gap: an error
    path = _csv(tmp_path, frame)
    with pytest.raises(DataError) as info:
        load_panel(path)
    message = str(info.value)
    assert "p.csv: line 32 (2021-02-15), column 'BBB'" in message, message
    assert "listed span of asset 'BBB' (2021-01-04 to 2021-03-26" in message, message
    assert 'fill = "ffill"' in message
    panel = load_panel(path, fill="ffill")
    assert panel.close[30, 1] == panel.close[29, 1]
    assert panel.live_mask[30, 1] and not panel.live_mask[9, 0] and panel.live_mask[10, 0]


def test_ffill_cannot_invent_an_open_before_the_first_close():
    close = np.full((N, 1), 10.0)
    opens = np.full((N, 1), 9.0)
    close[:3] = np.nan
    opens[:4] = np.nan  # missing on the first live date (row 3) too
    with pytest.raises(DataError, match=r"open is missing inside the listed span.*no earlier"):
        make_panel(DATES, ["A"], close, {"open": opens}, fill="ffill")


def test_volume_is_zero_where_not_listed():
    close = np.full((N, 1), 10.0)
    volume = np.full((N, 1), 1000.0)
    close[-5:] = np.nan
    volume[-5:] = np.nan
    panel = make_panel(DATES, ["A"], close, {"volume": volume})
    assert (panel.fields["volume"][-5:] == 0).all() and (panel.fields["volume"][:-5] == 1000).all()
    with pytest.raises(DataError, match=r"volume .* is -1\.0; volume must be finite and zero"):
        make_panel(DATES, ["A"], np.full((N, 1), 10.0), {"volume": np.full((N, 1), -1.0)})


def test_an_asset_without_any_price_is_refused():
    close = np.full((N, 2), 10.0)
    close[:, 1] = np.nan
    with pytest.raises(DataError, match="asset 'B' has no close price on any date"):
        make_panel(DATES, ["A", "B"], close)


def _loop_buy_and_hold(close: np.ndarray, live: np.ndarray) -> np.ndarray:
    """Equal capital over the live assets, rebalanced only where the live set changes."""
    n, m = close.shape
    value, shares = 1.0, {}
    out = []
    held_set: tuple[int, ...] | None = None
    for t in range(n):
        if t > 0:
            new_value = sum(shares[j] * close[t, j] for j in shares) if shares else value
            out.append(new_value / value - 1.0)
            value = new_value
        current = tuple(j for j in range(m) if live[t, j])
        if current != held_set:
            held_set = current
            shares = {j: value / len(current) / close[t, j] for j in current}
    return np.array(out)


def test_buy_and_hold_is_equal_weight_over_live_assets():
    rng = np.random.default_rng(9)
    close = 100 * np.exp(np.cumsum(rng.normal(0, 0.01, (N, 4)), axis=0))
    close[:12, 1] = np.nan  # listed late
    close[40:, 2] = np.nan  # delisted
    close[:20, 3] = np.nan
    close[50:, 3] = np.nan
    panel = make_panel(DATES, ["A", "B", "C", "D"], close)
    got = benchmark_returns("buy_and_hold", panel)
    want = _loop_buy_and_hold(panel.close, panel.live_mask)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)
    complete = make_panel(DATES, ["A"], np.linspace(1, 2, N)[:, None])
    np.testing.assert_allclose(
        benchmark_returns("buy_and_hold", complete),
        _loop_buy_and_hold(complete.close, complete.live_mask),
        rtol=0,
        atol=1e-15,
    )


def test_real_sp500_sample_with_masked_listings_in_three_layouts(tmp_path):
    raw = pd.read_csv(sp500_path(), index_col="Date", parse_dates=True)
    assert raw.shape == (8313, 20) and not raw.isna().any().any()
    masked = listed_sp500(raw)
    wide = masked.rename_axis("date").reset_index()
    wide.to_csv(tmp_path / "wide.csv", index=False)
    from_wide = load_panel(tmp_path / "wide.csv")
    long = (
        masked.rename_axis("date").reset_index().melt("date", var_name="asset", value_name="close")
    )
    long = long.dropna().sample(frac=1.0, random_state=1)  # no rows where not listed; any order
    long.to_parquet(tmp_path / "long.parquet", index=False)
    from_long = load_panel(tmp_path / "long.parquet")
    folder = tmp_path / "per_asset"
    folder.mkdir()
    for asset in masked.columns:
        series = masked[asset].dropna().rename("close").rename_axis("date").reset_index()
        series.to_csv(folder / f"{asset}.csv", index=False, date_format="%Y-%m-%d")
    from_folder = load_panel(folder)
    from_frame = panel_from_frame(masked)
    fingerprints = {panel_fingerprint(p) for p in (from_wide, from_long, from_folder, from_frame)}
    assert len(fingerprints) == 1
    panel = from_wide
    live = pd.DataFrame(panel.live_mask, index=raw.index, columns=list(panel.assets))
    assert live["AMD"].idxmax() == pd.Timestamp("2000-01-03")
    assert live["RRC"][::-1].idxmax() == pd.Timestamp("2015-12-31")
    assert not live.loc["2018-07-02", "GE"] and live.loc["2018-06-29", "GE"]
    assert live.drop(columns=["AMD", "RRC", "GE"]).all().all()
    np.testing.assert_array_equal(panel.close[:, 0], raw["AAPL"].to_numpy())
    close = pd.DataFrame(panel.close, index=raw.index, columns=list(panel.assets))
    assert (close.loc["2016-01-01":, "RRC"] == raw.loc["2015-12-31", "RRC"]).all()
    assert (close.loc[:"1999-12-31", "AMD"] == raw.loc["2000-01-03", "AMD"]).all()
