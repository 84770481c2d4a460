"""The canonical row order from 128-bit id keys is the order of the id strings."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.store._table_hash import canonical_order, canonical_order_of_keys, config_id_keys

HEX_IDS = st.text(alphabet="0123456789abcdef", min_size=32, max_size=32)


@settings(max_examples=200, deadline=None)
@given(
    pool=st.lists(HEX_IDS, min_size=1, max_size=12, unique=True),
    picks=st.lists(st.integers(0, 11), min_size=0, max_size=60),
    cut=st.integers(0, 60),
)
def test_keys_sort_as_the_strings_repeats_kept_once(pool, picks, cut):
    # Ids from a small pool: repeats (a batch written twice) and shared prefixes happen.
    ids = [pool[k % len(pool)] for k in picks]
    chunked = pa.chunked_array([pa.array(ids[:cut], pa.string()), pa.array(ids[cut:], pa.string())])
    keys = config_id_keys(chunked)
    assert keys is not None and keys.shape == (len(ids), 2)
    expect = canonical_order(chunked).to_numpy()
    np.testing.assert_array_equal(canonical_order_of_keys(keys), expect)


def test_keys_are_the_ids_values_and_ids_not_written_here_have_none():
    ids = ["0" * 31 + "1", "f" * 32, "0123456789abcdef" + "fedcba9876543210"]
    keys = config_id_keys(pa.array(ids))
    assert keys is not None
    assert [(int(h) << 64) | int(lo) for h, lo in keys] == [int(i, 16) for i in ids]
    sliced = config_id_keys(pa.array(["a" * 32, *ids]).slice(1))  # an offset into the buffers
    np.testing.assert_array_equal(sliced, keys)
    for foreign in (["A" * 32], ["g" * 32], ["a" * 31], ["a" * 33], [None], ["é" * 16]):
        assert config_id_keys(pa.array(foreign, pa.string())) is None, foreign
    assert config_id_keys(pa.array([1, 2])) is None
