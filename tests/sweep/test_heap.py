"""glibc's thresholds are raised once per evaluating process, and nowhere else."""

from __future__ import annotations

import os

import pytest

from sweep.engine import _heap


def _on_glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError):
        return False


@pytest.mark.skipif(not _on_glibc(), reason="glibc only")
def test_thresholds_are_set_once_on_glibc(monkeypatch):
    monkeypatch.setitem(_heap._state, "applied", False)
    assert _heap.retain_freed_memory() is True
    assert _heap._state["applied"] is True
    assert _heap.retain_freed_memory() is True  # the second call changes nothing


def test_nothing_is_set_where_the_c_library_is_not_glibc(monkeypatch):
    monkeypatch.setitem(_heap._state, "applied", False)
    monkeypatch.setattr(_heap, "_glibc", lambda: False)
    assert _heap.retain_freed_memory() is False
    assert _heap._state["applied"] is False
