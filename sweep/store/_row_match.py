"""THE comparison of stored rows with the same configs evaluated again, by exact bytes.

Every column of a results row is compared by its bytes (floats by their IEEE-754 bit
pattern, so NaN equals NaN only with the same bits, and 0.0 differs from -0.0; nulls equal
only nulls). ``sweep reproduce``, the sample a resume re-computes
(:mod:`sweep.runner._environment_check`) and the report's recomputation of a sample of
configs (:mod:`sweep.report._row_check`) all compare with :func:`compare_rows`.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from sweep.errors import RunFolderError
from sweep.store._run_store import RunRecord


@dataclass(frozen=True)
class Mismatch:
    """One value that did not reproduce.

    Attributes
    ----------
    config_id : str or None
        The config (None for a part's null or fold summary).
    grid_index : int or None
        Its grid position.
    part : str
        The part the recorded value was read from.
    column : str
        The column (``null_summary.spa[3]`` for a summary's element).
    recorded, recomputed : str
        Both values, ``repr`` at full precision (a NaN with its bit pattern).
    """

    config_id: str | None
    grid_index: int | None
    part: str
    column: str
    recorded: str
    recomputed: str

    def describe(self) -> str:
        """One line: where, which column, both values."""
        where = (
            f"config {self.config_id} (grid index {self.grid_index}, {self.part})"
            if self.config_id is not None
            else f"{self.part}"
        )
        return (
            f"{where} column {self.column}: recorded {self.recorded}, recomputed {self.recomputed}"
        )


def recorded_rows(record: RunRecord, positions: NDArray[np.int64]) -> tuple[pa.Table, list[str]]:
    """The stored rows at grid ``positions`` (in that order), and the part of each row.

    A config stored twice (a repeated batch) is read from the first good part by name.
    """
    pieces: list[pa.Table] = []
    names: list[str] = []
    wanted = np.asarray(positions, dtype=np.int64)
    for name in record.good:
        idx = record.store.read_part_columns(name, ["grid_index"]).column(0).to_numpy()
        rows = np.flatnonzero(np.isin(idx, wanted))
        if rows.size:
            pieces.append(record.store.read_part_columns(name, None).take(rows))  # type: ignore[arg-type]
            names += [name] * int(rows.size)
    table = pa.concat_tables(pieces, promote_options="none")
    index = table.column("grid_index").to_numpy()
    first = {int(g): j for j, g in reversed(list(enumerate(index)))}
    missing = [int(p) for p in wanted if int(p) not in first]
    if missing:
        raise RunFolderError(f"grid positions {missing[:5]} are not in any good part")
    take = [first[int(p)] for p in wanted]
    return table.take(take), [names[j] for j in take]


def value_text(value: Any) -> str:
    """``repr`` at full precision; a NaN with its bit pattern."""
    if isinstance(value, float) and math.isnan(value):
        bits = struct.unpack("<Q", struct.pack("<d", value))[0]
        return f"nan (0x{bits:016x})"
    return repr(value)


def _differing(recorded: pa.ChunkedArray, recomputed: pa.ChunkedArray) -> NDArray[np.int64]:
    """Rows whose values differ by their exact bytes (nulls equal only nulls)."""
    a, b = recorded.combine_chunks(), recomputed.combine_chunks()
    kind = a.type
    if pa.types.is_floating(kind) and a.null_count == 0 and b.null_count == 0:
        bits_a = np.ascontiguousarray(a.to_numpy(zero_copy_only=False), dtype="<f8").view("<u8")
        bits_b = np.ascontiguousarray(b.to_numpy(zero_copy_only=False), dtype="<f8").view("<u8")
        return np.flatnonzero(bits_a != bits_b)
    if (pa.types.is_integer(kind) or pa.types.is_boolean(kind)) and not (
        a.null_count or b.null_count
    ):
        return np.flatnonzero(a.to_numpy(zero_copy_only=False) != b.to_numpy(zero_copy_only=False))
    left, right = a.to_pylist(), b.to_pylist()
    return np.array(
        [j for j, (x, y) in enumerate(zip(left, right, strict=True)) if not _same(x, y)],
        dtype=np.int64,
    )


def _same(x: Any, y: Any) -> bool:
    if isinstance(x, float) and isinstance(y, float):
        return struct.pack("<d", x) == struct.pack("<d", y)
    return type(x) is type(y) and x == y


def compare_rows(
    recorded: pa.Table, recomputed: pa.Table, parts: Sequence[str]
) -> tuple[list[Mismatch], NDArray[np.bool_]]:
    """Compare aligned rows over every column, by exact bytes.

    Parameters
    ----------
    recorded, recomputed : pyarrow.Table
        The stored rows and the same configs evaluated again, row for row.
    parts : sequence of str
        The part each recorded row came from (named in a mismatch).

    Returns
    -------
    mismatches : list of Mismatch
        One per differing (config, column), in row then column order.
    matched : ndarray of bool
        Per row, whether every column matched.
    """
    n = recorded.num_rows
    matched = np.ones(n, dtype=bool)
    if recomputed.num_rows != n or recomputed.column_names != recorded.column_names:
        return [
            Mismatch(
                None,
                None,
                parts[0] if parts else "-",
                "(columns)",
                f"{n} rows {recorded.column_names}",
                f"{recomputed.num_rows} rows {recomputed.column_names}",
            )
        ], np.zeros(n, dtype=bool)
    ids = recorded.column("config_id").to_pylist()
    index = recorded.column("grid_index").to_pylist()
    found: list[tuple[int, int, Mismatch]] = []
    for c, name in enumerate(recorded.column_names):
        a, b = recorded.column(name), recomputed.column(name)
        rows = (
            _differing(a, b)
            if a.type == b.type
            else np.arange(n, dtype=np.int64)  # another type: every value differs
        )
        for j in rows.tolist():
            matched[j] = False
            found.append(
                (
                    j,
                    c,
                    Mismatch(
                        ids[j],
                        index[j],
                        parts[j],
                        name,
                        value_text(a[j].as_py()),
                        value_text(b[j].as_py()),
                    ),
                )
            )
    found.sort(key=lambda t: (t[0], t[1]))
    return [m for _, _, m in found], matched
