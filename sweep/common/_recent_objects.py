"""What was computed for the last few objects, found again by the object's identity.

A run folder's manifest is parsed once per process for the same bytes
(``sweep.store._run_store._parsed_manifest``), and every group of parts a worker checks
opens the folder again: what is derived from the manifest alone (its agreement with its
spec, the config id at every grid position) is kept here per manifest object, so it is
derived once per process, not once per group. The objects are kept alive while listed, so
an id is never reused for another object while its value is held.
"""

from __future__ import annotations

import collections
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class RecentObjects(Generic[K, V]):
    """A value per object, for the last ``size`` objects stored (oldest dropped first).

    Parameters
    ----------
    size : int
        How many objects are kept.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._held: collections.OrderedDict[int, tuple[K, V]] = collections.OrderedDict()

    def __contains__(self, key: K) -> bool:
        held = self._held.get(id(key))
        return held is not None and held[0] is key

    def __getitem__(self, key: K) -> V:
        held = self._held.get(id(key))
        if held is None or held[0] is not key:
            raise KeyError(key)
        return held[1]

    def __setitem__(self, key: K, value: V) -> None:
        self._held[id(key)] = (key, value)
        while len(self._held) > self._size:
            self._held.popitem(last=False)
