"""The synthetic panel's open, high, low and volume (``[data] ohlcv = true``): consistent with
the closes, drawn from their own seed, and off by default (nothing existing changes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sweep import load_spec, panel_fingerprint, resolve, spec_from_dict, synthetic_panel
from sweep.errors import SpecError
from tests.helpers import small_spec_dict

ROOT = Path(__file__).resolve().parents[2]
#: The default panel's fingerprint, and the main job's spec hash, before ``ohlcv`` existed.
DEFAULT_FINGERPRINT = "2b32c6209d171cb14b283b1f36abe58d79bf460b96a5c57031eb1b606fdab392"
MAIN_SPEC_HASH = "ca9b1491f7ac8610eb87410447455ae593010a15a2f5f10ee069887cb6d0cab2"


def test_the_default_panel_and_the_main_spec_are_unchanged() -> None:
    default = synthetic_panel()
    assert default.fields == {}
    assert panel_fingerprint(default) == DEFAULT_FINGERPRINT
    spec = load_spec(ROOT / "examples" / "momentum.toml")
    assert "ohlcv" not in spec.to_dict()["data"]
    assert spec.spec_hash == MAIN_SPEC_HASH


def test_closes_are_the_same_bits_with_the_other_fields() -> None:
    plain = synthetic_panel(seed=11, years=2)
    full = synthetic_panel(seed=11, years=2, ohlcv=True)
    assert np.array_equal(plain.close, full.close) and np.array_equal(plain.dates, full.dates)
    assert sorted(full.fields) == ["high", "low", "open", "volume"]
    assert panel_fingerprint(full) != panel_fingerprint(plain)
    again = synthetic_panel(seed=11, years=2, ohlcv=True)
    assert panel_fingerprint(again) == panel_fingerprint(full)
    other = synthetic_panel(seed=12, years=2, ohlcv=True)
    assert not np.array_equal(other.fields["high"], full.fields["high"])


def test_the_fields_are_consistent_with_the_closes() -> None:
    panel = synthetic_panel(seed=5, years=3, ohlcv=True)
    close = panel.close
    opens, high, low, volume = (panel.fields[k] for k in ("open", "high", "low", "volume"))
    assert (high >= np.maximum(opens, close)).all()
    assert (low <= np.minimum(opens, close)).all() and (low > 0).all()
    assert (high > low).all()
    gap = np.abs(opens[1:] / close[:-1] - 1)  # an overnight gap from the previous close
    assert gap.max() < 0.05 and gap.mean() < 0.005 and (gap > 0).mean() > 0.99
    assert (volume > 0).all() and np.array_equal(volume, np.rint(volume))
    # The range widens with the move: wider on the days of the largest absolute returns.
    move = np.abs(np.diff(close, axis=0) / close[:-1])
    spread = (high - low)[1:] / close[1:]
    big = move > np.quantile(move, 0.9, axis=0)
    assert (spread[big].mean() > 1.5 * spread[~big].mean()).all()


def test_the_spec_option_is_omitted_at_its_default() -> None:
    plain = spec_from_dict(small_spec_dict())
    explicit = spec_from_dict(
        small_spec_dict(data={"source": "synthetic", "years": 4, "ohlcv": False})
    )
    assert explicit.spec_hash == plain.spec_hash and "ohlcv" not in explicit.to_dict()["data"]
    full = spec_from_dict(small_spec_dict(data={"source": "synthetic", "years": 4, "ohlcv": True}))
    assert full.data.ohlcv and full.to_dict()["data"]["ohlcv"] is True
    assert full.spec_hash != plain.spec_hash
    assert spec_from_dict(full.to_dict()).spec_hash == full.spec_hash
    sweep = resolve(full)
    assert sorted(sweep.panel.fields) == ["high", "low", "open", "volume"]
    assert sweep.fingerprint == panel_fingerprint(synthetic_panel(years=4, ohlcv=True))
    assert "with open, high, low and volume" in sweep.data_origin.description
    # The same panel handed over from Python is recognised as the spec's own data.
    assert resolve(full, synthetic_panel(years=4, ohlcv=True)).spec.data == full.data


def test_ohlcv_needs_the_synthetic_source(tmp_path: Path) -> None:
    doc = small_spec_dict(data={"path": str(tmp_path / "p.csv"), "ohlcv": True})
    with pytest.raises(SpecError, match=r"data.ohlcv: .*expected source = 'synthetic'"):
        spec_from_dict(doc)
    with pytest.raises(SpecError, match=r"data.ohlcv: Input should be a valid boolean"):
        spec_from_dict(small_spec_dict(data={"source": "synthetic", "ohlcv": "yes"}))
    with pytest.raises(SpecError, match=r"data.ohcv: unknown key 'ohcv'. Did you mean 'ohlcv'"):
        spec_from_dict(small_spec_dict(data={"source": "synthetic", "ohcv": True}))
