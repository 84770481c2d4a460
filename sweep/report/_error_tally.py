"""Failed configs by error message, in a bounded state that folds as the parts are read.

A message can name its config (a parameter's value in the text), so a sweep of 10^8 configs
can fail with 10^8 distinct messages: the tally keeps exact counts of at most
:data:`ERROR_MESSAGES_KEPT` messages and counts the failed configs of every other message
in :attr:`ErrorTally.others`. Which messages are kept does not depend on the order or the
grouping of the parts: those with the smallest keys ``(sha256 prefix of the message, the
message)``, a bottom-k of the distinct messages, as the report's samples of configs are.
With no more distinct messages than that (every folder the report has met), every
message is kept with its exact count and nothing is counted as other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

#: Distinct error messages a tally counts exactly at most.
ERROR_MESSAGES_KEPT = 1_000

#: What a failed config without a message counts under.
NO_MESSAGE = "(no message)"

#: A message's place in the order that chooses which are kept.
_Key = tuple[int, str]


def _key(message: str) -> _Key:
    """The message's key: the first 8 bytes of its sha256 (the same in every process)."""
    digest = hashlib.sha256(message.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big"), message


class ErrorTally:
    """Exact counts of the failed configs of at most ``kept`` error messages, the rest counted.

    Parameters
    ----------
    kept : int
        Distinct messages counted exactly at most (:data:`ERROR_MESSAGES_KEPT`).

    Attributes
    ----------
    others : int
        Failed configs whose message is not kept (0 while at most ``kept`` are distinct).
    """

    def __init__(self, kept: int = ERROR_MESSAGES_KEPT) -> None:
        self._kept = max(int(kept), 1)
        self._counts: dict[str, int] = {}
        self._bound: _Key | None = None  # messages with a larger key can no longer be kept
        self.others = 0

    def add(self, counts: Iterable[tuple[str | None, int]]) -> None:
        """Take failed configs as ``(message, configs)`` pairs (None: no message)."""
        for message, n in counts:
            text = NO_MESSAGE if message is None else str(message)
            if self._bound is not None and text not in self._counts and _key(text) > self._bound:
                self.others += int(n)
                continue
            self._counts[text] = self._counts.get(text, 0) + int(n)
        if len(self._counts) > 2 * self._kept:  # cut back only when twice as many gathered
            self._cut()

    def merge(self, other: ErrorTally) -> None:
        """Take what ``other`` counted (the same tally as one given both, in any order)."""
        self.others += other.others
        if other._bound is not None:
            self._bound = other._bound if self._bound is None else min(self._bound, other._bound)
        self.add(other._counts.items())

    def _cut(self) -> None:
        """Keep the ``kept`` messages with the smallest keys; count the others' configs."""
        keys = sorted(
            _key(m) for m in self._counts if self._bound is None or _key(m) <= self._bound
        )
        keep = keys[: self._kept]
        if len(keys) > self._kept:  # ``kept`` messages at or below its key: a valid bound
            self._bound = keep[-1]
        held = {m for _, m in keep}
        self.others += sum(n for m, n in self._counts.items() if m not in held)
        self._counts = {m: self._counts[m] for m in sorted(held)}

    def result(self) -> tuple[dict[str, int], int]:
        """The kept messages with their exact counts, and the failed configs of the others."""
        if len(self._counts) > self._kept or self._bound is not None:
            self._cut()
        return dict(self._counts), self.others
