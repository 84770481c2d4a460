"""A part-audit task body that kills its own worker the first time (Ray retries it).

Importable by Ray workers (the repository root is on their path): the marker file says
whether the kill already happened, so the retry runs the real body.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from sweep.store._part_audit import PartAudit, audit_parts


def audit_or_die_once(
    location: str, names: list[str], rehash: bool, marker: str
) -> list[PartAudit]:
    """:func:`audit_parts`, after a SIGKILL of this worker process on the first call."""
    flag = Path(marker)
    try:
        with flag.open("x") as fh:  # exactly one task of the run creates it
            fh.write(str(os.getpid()))
    except FileExistsError:
        return audit_parts(location, names, rehash)
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")
