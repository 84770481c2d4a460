"""A part's fold summary: each validation fold's in-sample best among the part's configs.

Stored in the part's parquet schema metadata under :data:`FOLDS_KEY` (so the part's sha256
name covers it, like the null summary), merged exactly by the report (larger value wins,
smaller grid index on ties: :func:`stats.merge_fold_summaries`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa

from stats import FoldSummary, merge_fold_summaries

#: Schema-metadata key of the fold summary in a part.
FOLDS_KEY = b"raysweep.fold_summary"


def encode_folds(summary: FoldSummary) -> bytes:
    """Serialise a fold summary (deterministic: values as exact hex floats)."""
    doc = {
        "value": [float(v).hex() for v in summary.value],
        "index": [int(i) for i in summary.index],
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def decode_folds(blob: bytes) -> FoldSummary:
    """Read a fold summary written by :func:`encode_folds`."""
    doc = json.loads(blob)
    return FoldSummary(
        np.array([float.fromhex(v) for v in doc["value"]], dtype=np.float64),
        np.array(doc["index"], dtype=np.int64),
    )


def with_folds(table: pa.Table, summary: FoldSummary | None) -> pa.Table:
    """Attach a fold summary to a part's table (beside its other metadata)."""
    if summary is None:
        return table
    return table.replace_schema_metadata(
        {**(table.schema.metadata or {}), FOLDS_KEY: encode_folds(summary)}
    )


def merged_folds(schemas: Iterable[pa.Schema]) -> FoldSummary | None:
    """Merge the fold summaries of parts; None if a part has none (no ``[validation]``)."""
    found = [(s.metadata or {}).get(FOLDS_KEY) for s in schemas]
    return merge_found([None if b is None else decode_folds(b) for b in found])


def merge_found(found: Sequence[FoldSummary | None]) -> FoldSummary | None:
    """Merge fold summaries (of parts, or of groups of parts); None if any is None or none."""
    if not found or any(f is None for f in found):
        return None
    return merge_fold_summaries([f for f in found if f is not None])


def folds_digest(summary: FoldSummary) -> str:
    """sha256 of a merged fold summary: the same sweep gives the same digest, however run."""
    return hashlib.sha256(encode_folds(summary)).hexdigest()
