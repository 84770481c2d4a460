"""The compiled sha256 of many rows gives hashlib's digests (the table hash's row digests)."""

from __future__ import annotations

import ctypes.util
import hashlib

import numpy as np
import pytest

from sweep.common import _sha256_rows
from sweep.common._sha256_rows import sha256_rows


def _rows() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    lengths = np.concatenate(([0, 1, 55, 56, 63, 64, 65, 0], rng.integers(0, 1500, 300)))
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    return rng.integers(0, 256, int(offsets[-1])).astype(np.uint8), offsets


def test_the_compiled_loop_is_used_where_libcrypto_is_found():
    if ctypes.util.find_library("crypto") is None:
        pytest.skip("no libcrypto on this machine: the hashlib fallback is the one in use")
    assert _sha256_rows.libcrypto_loaded()


@pytest.mark.parametrize("compiled", [True, False])
def test_each_row_s_digest_is_hashlib_s(compiled):
    buffer, offsets = _rows()
    got = sha256_rows(buffer, offsets, compiled=compiled)
    for i in range(offsets.shape[0] - 1):
        row = buffer[offsets[i] : offsets[i + 1]].tobytes()
        assert got[i].tobytes() == hashlib.sha256(row).digest()


def test_no_rows_and_bad_offsets():
    assert sha256_rows(np.zeros(0, np.uint8), np.zeros(1, np.int64)).shape == (0, 32)
    with pytest.raises(ValueError, match="offsets"):
        sha256_rows(np.zeros(4, np.uint8), np.array([0, 3, 2], dtype=np.int64))
    with pytest.raises(ValueError, match="offsets"):
        sha256_rows(np.zeros(4, np.uint8), np.array([0, 5], dtype=np.int64))


def test_rows_joined_from_pieces_hash_as_their_joined_bytes():
    table = np.frombuffer(b"head,a=1,a=22,b=x,b=,tail", dtype=np.uint8)
    starts = np.array([[0, 0, 5], [13, 17, 17], [21, 21, 21]], dtype=np.int64)
    lengths = np.array([[8, 9, 8], [4, 3, 0], [4, 4, 0]], dtype=np.int64)
    rows = [b"head,a=1,b=xtail", b"head,a=1,,b=tail", b"a=1,a=22"]
    got = _sha256_rows.sha256_of_pieces(table, starts, lengths)
    assert [d.tobytes() for d in got] == [hashlib.sha256(r).digest() for r in rows]
    with pytest.raises(ValueError, match="within the byte table"):
        _sha256_rows.sha256_of_pieces(table, starts + 20, lengths)
