"""How a sweep runs: the run settings, declared once.

Each field of :class:`RunSettings` is one setting of :func:`sweep.run_sweep`: its name, type
and default, and, annotated on its type, how it shows on the command line (:class:`Flag`: the
option's name, its help, the values it takes). Everything else is derived from it:

- the options of ``sweep run`` and ``sweep resume``
  (:func:`sweep.cli._settings_options.settings_options` turns every field with a flag into a
  typer option, with its help, default and choices);
- the keywords of :func:`sweep.run_sweep`, :func:`sweep.run` and :func:`sweep.resume`
  (:class:`RunOptions`: the fields as a ``TypedDict``, so a type checker checks the keywords;
  a test keeps its names and types those of the fields).

Adding a setting is one field here (and its line in :class:`RunOptions`), then its use.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal, TypedDict

from sweep.errors import RunFolderError, SweepError
from sweep.executors import (
    ADDRESS_ENVVARS,
    EXECUTOR_CHOICES,
    Executor,
    address_forms,
    local_cluster_kind,
    title_of,
)
from sweep.plan._planner import PlannerSettings
from sweep.store._table_hash import TABLE_HASH_VERSIONS, hash_version

OnError = Literal["record", "raise"]
#: The commands that take the run settings as options.
COMMANDS = ("run", "resume")


@dataclass(frozen=True)
class Flag:
    """How a run setting shows on the command line (an option of ``sweep run``/``resume``).

    Attributes
    ----------
    name : str
        The option, e.g. ``--batch-size``.
    help : str
        Its help text (``--help`` and the CLI reference).
    short : str or None
        A one-letter alias, e.g. ``-q``.
    envvars : tuple of str
        Environment variables read, in order, when the option is not given.
    choices : tuple of str
        The values the option takes (shown and checked); empty: any value of the field's type.
    minimum : int or None
        The smallest integer the option takes.
    negates : bool
        The option is a switch that turns the (boolean) setting off: ``--quiet`` is
        ``progress=False``.
    parse : callable or None
        Turns the option's text into the setting (the option is then text, its default
        ``text_default``), e.g. ``'auto'`` or a number for the batch size.
    text_default : str or None
        The option's default text when ``parse`` is given.
    commands : tuple of str
        The commands that take it: both, or ``("run",)`` for a new folder's setting.
    metavar : str or None
        What the help shows for the value (default: the choices, or the type), e.g. a word
        where a long list of choices would squeeze the help's columns at 80 characters.
    """

    name: str
    help: str
    short: str | None = None
    envvars: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    negates: bool = False
    parse: Callable[[str], Any] | None = None
    text_default: str | None = None
    commands: tuple[str, ...] = COMMANDS
    metavar: str | None = None


def flags(settings_type: type[RunSettings]) -> dict[str, Flag]:
    """The command-line form of each field of ``settings_type`` that has one, in field order.

    A field has one when its type is annotated with a :class:`Flag`
    (``name: Annotated[type, Flag(...)] = default``); the others are Python only.
    """
    hints = typing.get_type_hints(settings_type, include_extras=True)
    found = {}
    for item in fields(settings_type):
        marks = [m for m in getattr(hints[item.name], "__metadata__", ()) if isinstance(m, Flag)]
        if marks:
            found[item.name] = marks[0]
    return found


def batch_size_from_text(text: str) -> int | None:
    """``--batch-size``: None for ``auto`` (the planner chooses), else a positive integer."""
    if text == "auto":
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise SweepError(f"--batch-size: expected 'auto' or a positive integer, got {text!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """How :func:`run_sweep` runs a sweep (each field is also a keyword of it).

    Attributes
    ----------
    executor : str or Executor
        Where batches run: a name of :data:`sweep.executors.EXECUTOR_CHOICES` or an executor
        object. ``auto`` (the default): the cluster at ``address`` when one is given, else
        in-process unless a local cluster is predicted to finish first
        (:func:`sweep.plan._auto.choose_executor`; the choice is recorded in the session).
    batch_size : int or None
        Fixed configs per task; None: chosen by the planner.
    on_error : {"record", "raise"}
        A config that raises is recorded with ``status = "error"``, or the sweep stops at
        the first such config (:class:`sweep.errors.ConfigFailedError`) without writing
        its batch.
    progress : bool
        Show a progress bar on a terminal.
    address, workers : optional
        The address of a cluster to join, and the CPU cap of a local one (cluster engines
        only).
    allow_environment_change : bool
        Continue a run whose parts were computed with other library versions (python,
        numpy, numba, llvmlite, pandas, pyarrow, scipy, raysweep) than this process has,
        once a sample of its finished configs re-computed here matches bit for bit; without
        it such a run is refused (:mod:`sweep.runner._environment_check`).
    table_hash_version : str or None
        The table hash a *new* run folder carries: ``raysweep-table-v2`` (the default) or
        ``raysweep-table-v1`` (``v1``/``v2`` accepted), e.g. to compare with a hash published
        by an older raysweep. An existing folder keeps its own; naming another is refused.
    planner : PlannerSettings
        Targets of the batch-size planner (Python only).
    """

    executor: Annotated[
        str | Executor,
        Flag(
            "--executor",
            f"Where batches run: {', '.join(EXECUTOR_CHOICES)}. auto: the cluster --address "
            "names, else in-process unless a local "
            f"{title_of(local_cluster_kind())} cluster is predicted to finish first (the "
            "choice is recorded).",
            choices=EXECUTOR_CHOICES,
            metavar="NAME",
        ),
    ] = "auto"
    address: Annotated[
        str | None,
        Flag("--address", f"Cluster to join: {address_forms()}.", envvars=ADDRESS_ENVVARS),
    ] = None
    workers: Annotated[
        int | None,
        Flag("--workers", "Cap on the CPUs of a local cluster.", minimum=1, metavar="N"),
    ] = None
    batch_size: Annotated[
        int | None,
        Flag(
            "--batch-size",
            "'auto' (amortization law) or configs per task.",
            parse=batch_size_from_text,
            text_default="auto",
        ),
    ] = None
    on_error: Annotated[
        OnError,
        Flag(
            "--on-error",
            "record: keep going; raise: stop at the first failing config.",
            choices=typing.get_args(OnError),
        ),
    ] = "record"
    progress: Annotated[bool, Flag("--quiet", "No progress bar.", short="-q", negates=True)] = True
    allow_environment_change: Annotated[
        bool,
        Flag(
            "--allow-environment-change",
            "Continue a run whose parts were computed with other library versions (numpy, "
            "numba, ...) once 16 of its finished configs re-computed here match bit for bit.",
        ),
    ] = False
    table_hash_version: Annotated[
        str | None,
        Flag(
            "--table-hash",
            "The table hash a new run folder carries: v2 (the default; combined from the "
            "parts) or v1 (the whole-table hash of raysweep 0.2.0 and before, to compare with "
            "a hash it published). An existing folder keeps its own.",
            choices=tuple(v.removeprefix("raysweep-table-") for v in TABLE_HASH_VERSIONS),
            commands=("run",),
        ),
    ] = None
    planner: PlannerSettings = field(default_factory=PlannerSettings)

    def check(self) -> None:
        """Refuse (:class:`RunFolderError`) a batch size, error mode or hash version unknown."""
        if self.batch_size is not None and self.batch_size < 1:
            raise RunFolderError(
                f"batch_size: expected a positive integer or None, got {self.batch_size}"
            )
        if self.on_error not in ("record", "raise"):
            raise RunFolderError(f"on_error: expected 'record' or 'raise', got {self.on_error!r}")
        if self.table_hash_version is not None:
            try:
                hash_version(self.table_hash_version)
            except ValueError as exc:
                raise RunFolderError(str(exc)) from exc


class RunOptions(TypedDict, total=False):
    """The fields of :class:`RunSettings` as keywords (of :func:`run_sweep`, ``sweep.run``...).

    A type checker cannot derive a ``TypedDict`` from a dataclass, so this lists the fields
    again; ``tests/sweep/test_run_settings.py`` fails unless its names and types are theirs.
    """

    executor: str | Executor
    address: str | None
    workers: int | None
    batch_size: int | None
    on_error: OnError
    progress: bool
    allow_environment_change: bool
    table_hash_version: str | None
    planner: PlannerSettings
