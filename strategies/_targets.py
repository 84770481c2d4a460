"""The target weights both books trade to: the listing mask, long-only, the leverage cap.

Compiled helpers shared by the close book (:mod:`strategies._accounting`) and the bar book
(:mod:`strategies._bar_fills`), so the two apply the book's rules with the same arithmetic.
"""

from __future__ import annotations

import numba


@numba.njit(cache=True, nogil=True, inline="always")
def _held(weight, tradable, long_only):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """A target weight after the listing mask and the long-only rule."""
    if not tradable or (long_only and weight < 0.0):
        return 0.0
    return weight


@numba.njit(cache=True, nogil=True, inline="always")
def _gross_scale(weights, tradable, t, long_only, max_gross):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """The factor that brings row ``t``'s gross exposure down to ``max_gross`` (1: under it)."""
    gross = 0.0
    for a in range(weights.shape[1]):
        gross += abs(_held(weights[t, a], tradable[t, a], long_only))
    return max_gross / gross if gross > max_gross else 1.0
