"""Task bodies that kill their own worker the first time (Ray retries them).

Importable by Ray workers (the repository root is on their path): the marker file says
whether the kill already happened, so the retry runs the real body.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sweep.executors._part_tasks import returns_chunk
from sweep.report._load import PartsRead, ReadPlan, read_part_group
from sweep.store._part_audit import PartAudit, audit_parts


def _die_once(marker: str) -> None:
    """SIGKILL this worker process unless ``marker`` exists (then create it first)."""
    try:
        with Path(marker).open("x") as fh:  # exactly one task of the run creates it
            fh.write(str(os.getpid()))
    except FileExistsError:
        return
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


def audit_or_die_once(
    location: str, names: list[str], rehash: bool, marker: str
) -> list[PartAudit]:
    """:func:`audit_parts`, after a SIGKILL of this worker process on the first call."""
    _die_once(marker)
    return audit_parts(location, names, rehash)


def returns_or_die_once(*args: Any) -> NDArray[np.float64]:
    """:func:`returns_chunk` of ``args`` but the last (the marker), after a SIGKILL of this
    worker process on the first call."""
    *chunk, marker = args
    _die_once(marker)
    return returns_chunk(*chunk)


def read_or_die_once(location: str, names: list[str], plan: ReadPlan, marker: str) -> PartsRead:
    """:func:`read_part_group`, after a SIGKILL of this worker process on the first call."""
    _die_once(marker)
    return read_part_group(location, names, plan)
