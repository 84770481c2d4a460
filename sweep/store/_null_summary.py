"""A part's null summary: computed with its rows, stored inside the part, merged by the report.

Each part carries the :class:`stats.NullSummary` of its configs in the parquet schema metadata
under :data:`SUMMARY_KEY`, so the summary is written atomically with the rows and verified by
the part's sha256 name like every other byte of it (invariant 4); resume and ``verify`` cover
it for free. The encoding is base64 of a one-line JSON header followed by the little-endian
arrays in field order.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import json
from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from stats import NullSummary, merge_null_summaries
from sweep.errors import RunFolderError
from sweep.store._footer_json import brief, footer_json, is_int

#: Schema-metadata key of the summary in a part.
SUMMARY_KEY = b"raysweep.null_summary"
SUMMARY_FORMAT = 1
_FLOAT_FIELDS = ("reality_check", "spa", "null_sharpe", "top_value")
_HEADER_KEYS = ("format", "n_configs", "reps", "top_k")
#: The most bytes of the one-line JSON header (a writer's is about 60).
HEADER_MAX_BYTES = 1024


def _body(summary: NullSummary) -> bytes:
    return (
        b"".join(
            np.ascontiguousarray(getattr(summary, f), dtype="<f8").tobytes() for f in _FLOAT_FIELDS
        )
        + np.ascontiguousarray(summary.top_index, dtype="<i8").tobytes()
    )


def encode_summary(summary: NullSummary) -> bytes:
    """Serialise a summary (deterministic bytes)."""
    header = {
        "format": SUMMARY_FORMAT,
        "n_configs": summary.n_configs,
        "reps": summary.reps,
        "top_k": summary.top_k,
    }
    return base64.b64encode(json.dumps(header, sort_keys=True).encode() + b"\n" + _body(summary))


def summary_digest(summary: NullSummary) -> str:
    """sha256 of a merged summary's null maxima and top lists (the sweep-wide tests' input).

    The same sweep gives the same digest whatever its batching, executor or interruptions
    (invariant 2). The config count is left out: the table hash covers it.
    """
    head = f"{SUMMARY_FORMAT}:{summary.reps}:{summary.top_k}\n".encode()
    return hashlib.sha256(head + _body(summary)).hexdigest()


def decode_summary(blob: bytes) -> NullSummary:
    """Read a summary written by :func:`encode_summary`.

    Exactly what the writer writes is accepted: base64 of a one-line JSON header (the keys
    ``format``, ``n_configs``, ``reps`` and ``top_k``, integers >= 0, the format
    :data:`SUMMARY_FORMAT`), then the arrays, exactly ``8 * reps * (3 + 2 * top_k)`` bytes.
    Whether it fits its part and run (its replications, its top lists' indices) is
    :func:`sweep.store._part_footer.check_footer`'s.

    Raises
    ------
    RunFolderError
        ``null summary: ...``, naming what is malformed (never a raw decoding error).
    """
    try:
        raw = base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise RunFolderError(f"null summary: not base64: {exc}") from exc
    line, newline, body = raw.partition(b"\n")
    if not newline or len(line) > HEADER_MAX_BYTES:
        raise RunFolderError(
            f"null summary: expected a JSON header of at most {HEADER_MAX_BYTES} bytes ending "
            "in a newline, then the arrays"
        )
    header = footer_json(line, "null summary header")
    if not isinstance(header, dict) or sorted(header) != sorted(_HEADER_KEYS):
        found = sorted(header) if isinstance(header, dict) else brief(header)
        raise RunFolderError(
            f"null summary: expected a header with the keys {', '.join(_HEADER_KEYS)}, got {found}"
        )
    if header["format"] != SUMMARY_FORMAT or not is_int(header["format"]):
        raise RunFolderError(
            f"null summary: expected format {SUMMARY_FORMAT}, got {brief(header['format'])}"
        )
    for key in _HEADER_KEYS[1:]:
        if not is_int(header[key]) or header[key] < 0:
            raise RunFolderError(
                f"null summary: expected {key} an integer >= 0, got {brief(header[key])}"
            )
    reps, k = header["reps"], header["top_k"]
    sizes = [reps, reps, reps, reps * k]
    expected = 8 * (sum(sizes) + reps * k)
    if len(body) != expected:
        raise RunFolderError(
            f"null summary: expected {expected:,} bytes of arrays for reps={reps}, "
            f"top_k={k}, got {len(body):,} bytes"
        )
    arrays, offset = [], 0
    for size in sizes:
        arrays.append(np.frombuffer(body, dtype="<f8", count=size, offset=offset).copy())
        offset += 8 * size
    top_index = np.frombuffer(body, dtype="<i8", count=reps * k, offset=offset).copy()
    return NullSummary(
        n_configs=header["n_configs"],
        reality_check=arrays[0],
        spa=arrays[1],
        null_sharpe=arrays[2],
        top_value=arrays[3].reshape(reps, k),
        top_index=top_index.astype(np.int64).reshape(reps, k),
    )


def with_summary(table: pa.Table, summary: NullSummary | None) -> pa.Table:
    """Attach a summary to a part's table (kept beside any other schema metadata)."""
    if summary is None:
        return table
    meta = {**(table.schema.metadata or {}), SUMMARY_KEY: encode_summary(summary)}
    return table.replace_schema_metadata(meta)


def summary_of(schema: pa.Schema) -> NullSummary | None:
    """The summary a part's schema carries, or None (a sweep without bootstrap)."""
    blob = (schema.metadata or {}).get(SUMMARY_KEY)
    return None if blob is None else decode_summary(blob)


#: Parts' summaries decoded and merged at a time (the merge is exact in any grouping).
MERGE_GROUP = 64


def merged_summary(schemas: Iterable[pa.Schema]) -> NullSummary | None:
    """Merge the summaries of parts (by their schemas); None if any part has none.

    Decoded and merged :data:`MERGE_GROUP` parts at a time into the running merge (maxima
    of maxima and the top ``k`` of a union do not depend on the grouping), so the peak is
    one group, not every part's top lists at once.
    """
    merged: NullSummary | None = None
    seen = False
    remaining = iter(schemas)
    while group := list(itertools.islice(remaining, MERGE_GROUP)):
        found = [summary_of(schema) for schema in group]
        seen = True
        if any(s is None for s in found):
            return None
        merged = merge_null_summaries(
            [*([merged] if merged is not None else []), *(s for s in found if s is not None)]
        )
    return merged if seen else None
