"""A part's footer checked whole, against its run and its rows: the one place.

A part's parquet footer (its schema metadata) carries, beside the run binding, what the
worker computed with the rows (:func:`sweep.engine._evaluate.evaluate_batch`):

``raysweep.null_summary``
    the null summary (:mod:`sweep.store._null_summary`), when the run bootstraps: the
    replications and top-k of the run's ``[metrics]``, ``n_configs`` at most the part's
    configs that succeeded, and top lists naming only those configs (each at most once per
    replication; -1 with ``-inf`` pads the rest);
``raysweep.fold_summary``
    the fold summary (:mod:`sweep.store._fold_summary`), when the run has validation folds
    and some config of the part succeeded: one value and one index per fold, each index a
    config of the part that succeeded, or -1 (``-inf``) where none has a value;
``raysweep.environment``
    the environment record (:mod:`sweep.store._part_environment`; absent from parts
    written before it existed);
``raysweep.table_v2``
    the part's share of the v2 table hash (:mod:`sweep.store._row_set_hash`; absent from
    v1 folders).

:func:`check_footer` decodes each (the decoders refuse what no writer writes) and checks it
against the run (:class:`FooterExpectations`, from the manifest) and the part's rows. The
part check (:meth:`sweep.store._run_store.RunStore.check_part`, which ``verify``,
``status``, ``resume``'s survey and the audits all use) calls it, so a part whose footer is
malformed or does not fit it is a bad part with a one-line reason, and every reader after
the check decodes what passed without further checks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from stats._data_snooping import NO_CONFIG
from sweep.errors import RunFolderError, SpecError
from sweep.spec._models import SweepSpec
from sweep.spec._validation_spec import fold_plan
from sweep.store._fold_summary import FOLDS_KEY, decode_folds
from sweep.store._null_summary import SUMMARY_KEY, decode_summary
from sweep.store._part_environment import ENVIRONMENT_KEY, decode_environment
from sweep.store._row_set_hash import DIGEST_KEY, decode_digest

#: The rows of a part whose status is ``ok`` (a mask over its rows), read on demand.
OkRows = Callable[[], NDArray[np.bool_]]


@dataclass(frozen=True)
class FooterExpectations:
    """What a part's footer must hold in one run (from its manifest).

    Attributes
    ----------
    reps : int
        Bootstrap replications of the run (``metrics.bootstrap_reps``): a part carries a
        null summary of this many exactly when it is not 0.
    top_k : int
        Entries of each replication's top list (``metrics.stepm_top_k``).
    folds : int or None
        Validation folds of the run: a part carries a fold summary of this many entries
        when some config of it succeeded, none when 0. None when the manifest does not say
        how many (no data shape recorded): a fold summary is then checked in all but its
        length and presence.
    """

    reps: int
    top_k: int
    folds: int | None

    @classmethod
    def of(cls, spec: SweepSpec, data: Mapping[str, object]) -> FooterExpectations:
        """The expectations of a run: its spec and its manifest's data description."""
        metrics = spec.metrics
        return cls(metrics.bootstrap_reps, metrics.stepm_top_k, _fold_count(spec, data))


def _fold_count(spec: SweepSpec, data: Mapping[str, object]) -> int | None:
    """Folds of the spec's ``[validation]`` on the recorded data (None: cannot be known)."""
    validation = spec.validation
    if validation is None or (validation.walk_forward is None and validation.cpcv is None):
        return 0
    periods = data.get("n_periods")
    if not isinstance(periods, int) or isinstance(periods, bool) or periods < 2:
        return None
    try:
        plan = fold_plan(validation, periods - 1, spec.metrics.periods_per_year)
    except SpecError:
        return None
    return 0 if plan is None else len(plan.folds)


def check_footer(
    metadata: Mapping[bytes, bytes] | None,
    index: NDArray[np.int64],
    ok: OkRows,
    expect: FooterExpectations,
) -> None:
    """Check every footer field a reader trusts (see the module docstring).

    Parameters
    ----------
    metadata : mapping of bytes to bytes, or None
        The part's schema metadata, footer-only keys included.
    index : ndarray of int64
        The part's ``grid_index`` column (checked already: in the grid, no repeats).
    ok : callable
        Returns the mask of the rows whose status is ``ok`` (called only when needed).
    expect : FooterExpectations
        The run's.

    Raises
    ------
    RunFolderError
        One line naming the field and what is wrong with it.
    """
    meta = metadata or {}
    succeeded: list[NDArray[np.int64]] = []

    def held() -> NDArray[np.int64]:
        """The grid indices of the part's configs that succeeded, sorted."""
        if not succeeded:
            succeeded.append(np.sort(index[np.asarray(ok(), dtype=bool)]))
        return succeeded[0]

    _check_null(meta.get(SUMMARY_KEY), index, held, expect)
    _check_folds(meta.get(FOLDS_KEY), index, held, expect)
    if (environment := meta.get(ENVIRONMENT_KEY)) is not None:
        decode_environment(environment)
    if (digest := meta.get(DIGEST_KEY)) is not None:
        decode_digest(digest)


def _not_held(
    what: str, found: NDArray[np.int64], index: NDArray[np.int64], held: NDArray[np.int64]
) -> None:
    """Refuse ``found`` (grid indices a summary names) unless all are configs that succeeded."""
    outside = found[~np.isin(found, held)]
    if outside.size:
        first = int(outside[0])
        failed = bool(np.isin(first, index))
        why = "a config of the part that failed" if failed else "not a row of the part"
        raise RunFolderError(f"{what} names grid_index {first}, {why}")


def _check_null(
    blob: bytes | None,
    index: NDArray[np.int64],
    held: Callable[[], NDArray[np.int64]],
    expect: FooterExpectations,
) -> None:
    if blob is None:
        if expect.reps:
            raise RunFolderError(
                f"no null summary, but the run draws {expect.reps} bootstrap replications"
            )
        return
    if not expect.reps:
        raise RunFolderError("a null summary, but the run draws no bootstrap replications")
    summary = decode_summary(blob)
    if summary.reps != expect.reps:
        raise RunFolderError(
            f"null summary: {summary.reps} replications, the run draws {expect.reps}"
        )
    if summary.top_k != expect.top_k:
        raise RunFolderError(
            f"null summary: keeps the top {summary.top_k}, the run keeps {expect.top_k}"
        )
    ok_index = held()
    if summary.n_configs > ok_index.size:
        raise RunFolderError(
            f"null summary: counts {summary.n_configs} configs, the part holds {ok_index.size} "
            "that succeeded"
        )
    real = summary.top_index != NO_CONFIG
    if np.any(summary.top_value[~real] != -np.inf):
        raise RunFolderError("null summary: a pad of a top list (grid_index -1) is not -inf")
    listed = int(real.sum(axis=1).max(initial=0))
    if listed > summary.n_configs:
        raise RunFolderError(
            f"null summary: a top list names {listed} configs, more than the "
            f"{summary.n_configs} it counts"
        )
    _not_held("null summary: a top list", summary.top_index[real], index, ok_index)
    k = summary.top_k
    distinct = np.where(real, summary.top_index, NO_CONFIG - 1 - np.arange(k))  # pads differ
    ordered = np.sort(distinct, axis=1)
    twice = ordered[:, 1:] == ordered[:, :-1]
    if twice.any():
        rep, col = (int(v[0]) for v in np.nonzero(twice))
        raise RunFolderError(
            f"null summary: replication {rep} lists grid_index {int(ordered[rep, col])} twice"
        )


def _check_folds(
    blob: bytes | None,
    index: NDArray[np.int64],
    held: Callable[[], NDArray[np.int64]],
    expect: FooterExpectations,
) -> None:
    if expect.folds == 0:
        if blob is not None:
            raise RunFolderError("a fold summary, but the run has no validation folds")
        return
    if blob is None:
        if expect.folds is not None and held().size:
            raise RunFolderError(
                f"no fold summary, but the run has {expect.folds} validation folds and "
                f"{held().size} of the part's configs succeeded"
            )
        return
    summary = decode_folds(blob)
    if expect.folds is not None and summary.index.size != expect.folds:
        raise RunFolderError(
            f"fold summary: {summary.index.size} folds, the run has {expect.folds} validation folds"
        )
    if not held().size:
        raise RunFolderError("a fold summary, but none of the part's configs succeeded")
    _not_held("fold summary", summary.index[summary.index != NO_CONFIG], index, held())
