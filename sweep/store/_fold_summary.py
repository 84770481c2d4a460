"""A part's fold summary: each validation fold's in-sample best among the part's configs.

Stored in the part's parquet schema metadata under :data:`FOLDS_KEY` (so the part's sha256
name covers it, like the null summary), merged exactly by the report (larger value wins,
smaller grid index on ties: :func:`stats.merge_fold_summaries`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa

from stats import FoldSummary, merge_fold_summaries
from sweep.errors import RunFolderError
from sweep.store._footer_json import brief, footer_json, is_int

#: Schema-metadata key of the fold summary in a part.
FOLDS_KEY = b"raysweep.fold_summary"
#: The largest grid index (int64).
_MAX_INDEX = (1 << 63) - 1


def encode_folds(summary: FoldSummary) -> bytes:
    """Serialise a fold summary (deterministic: values as exact hex floats)."""
    doc = {
        "value": [float(v).hex() for v in summary.value],
        "index": [int(i) for i in summary.index],
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def decode_folds(blob: bytes) -> FoldSummary:
    """Read a fold summary written by :func:`encode_folds`.

    Exactly what the writer writes is accepted: an object with the keys ``value`` and
    ``index``, lists of one length; each value an exact hex float that is not NaN, each index
    a grid index (an int64 >= 0), or -1 with the value ``-inf`` where no config has a value
    in the fold (:func:`stats.summarize_folds`). Whether it fits its part (one entry per
    validation fold, indices of its rows) is :func:`sweep.store._part_footer.check_footer`'s.

    Raises
    ------
    RunFolderError
        ``fold summary: ...``, naming what is malformed (never a raw decoding error).
    """
    doc = footer_json(blob, "fold summary")
    if not isinstance(doc, dict) or set(doc) != {"value", "index"}:
        found = sorted(doc) if isinstance(doc, dict) else brief(doc)
        raise RunFolderError(
            f"fold summary: expected an object with the keys 'index' and 'value', got {found}"
        )
    values, index = doc["value"], doc["index"]
    if not isinstance(values, list) or not isinstance(index, list) or len(values) != len(index):
        raise RunFolderError(
            "fold summary: expected 'value' and 'index' lists of one length, got "
            + " and ".join(
                f"{len(v)} entries" if isinstance(v, list) else brief(v) for v in (values, index)
            )
        )
    value_out = np.empty(len(values), dtype=np.float64)
    index_out = np.empty(len(index), dtype=np.int64)
    for k, (v, i) in enumerate(zip(values, index, strict=True)):
        value_out[k] = _fold_value(k, v)
        if not is_int(i) or not -1 <= i <= _MAX_INDEX:
            raise RunFolderError(
                f"fold summary: fold {k}: expected a grid_index (an int64 >= 0) or -1, "
                f"got {brief(i)}"
            )
        if i == -1 and value_out[k] != -math.inf:
            raise RunFolderError(
                f"fold summary: fold {k}: grid_index -1 (no config) with the value "
                f"{float(value_out[k])!r}; expected -inf"
            )
        index_out[k] = i
    return FoldSummary(value_out, index_out)


def _fold_value(k: int, value: object) -> float:
    """One fold's value: an exact hex float (:meth:`float.hex`), not NaN."""
    if not isinstance(value, str):
        raise RunFolderError(f"fold summary: fold {k}: expected a hex float, got {brief(value)}")
    try:
        number = float.fromhex(value)
    except (ValueError, OverflowError) as exc:
        raise RunFolderError(
            f"fold summary: fold {k}: expected a hex float, got {brief(value)}"
        ) from exc
    if math.isnan(number):
        raise RunFolderError(f"fold summary: fold {k}: the value is NaN (no writer stores one)")
    return number


def folds_of(schema: pa.Schema) -> FoldSummary | None:
    """The fold summary a part's schema carries, or None.

    None: the run has no validation folds, or no config of the part succeeded.
    """
    blob = (schema.metadata or {}).get(FOLDS_KEY)
    return None if blob is None else decode_folds(blob)


def with_folds(table: pa.Table, summary: FoldSummary | None) -> pa.Table:
    """Attach a fold summary to a part's table (beside its other metadata)."""
    if summary is None:
        return table
    return table.replace_schema_metadata(
        {**(table.schema.metadata or {}), FOLDS_KEY: encode_folds(summary)}
    )


def merged_folds(schemas: Iterable[pa.Schema]) -> FoldSummary | None:
    """Merge the fold summaries of parts; None if none has one (no ``[validation]``).

    A good part without one is a part none of whose configs succeeded (the part check,
    :func:`sweep.store._part_footer.check_footer`, refuses any other): it has no best
    config to offer, and the others' merge stands.
    """
    return merge_found([folds_of(s) for s in schemas])


def merge_found(found: Sequence[FoldSummary | None]) -> FoldSummary | None:
    """Merge fold summaries (of parts, or of groups of parts); None where there are none.

    A None (a part, or a group of parts, none of whose configs succeeded) is left out.
    """
    present = [f for f in found if f is not None]
    return merge_fold_summaries(present) if present else None


def folds_digest(summary: FoldSummary) -> str:
    """sha256 of a merged fold summary: the same sweep gives the same digest, however run."""
    return hashlib.sha256(encode_folds(summary)).hexdigest()
