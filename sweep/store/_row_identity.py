"""Which config each grid position holds: a part's ``config_id`` column checked row by row.

A row's ``config_id`` is a function of its ``grid_index``: the id
(:func:`sweep.spec._config_identity.config_id`, the one definition) of the config the
run's grid holds at that position, under the strategy name and version the run recorded.
A manifest that lists its grid's values (:meth:`sweep.spec._grid.Grid.describe`) lets a
part's check recompute the id of every row it holds (:class:`GridIdentity`), in the task
that reads the part.

That check is what keeps the comparison of parts small: once every good part's ids are
the ones their positions name, two good parts hold the same ``config_id`` only where they
hold the same ``grid_index``, which their ranges show (:func:`sweep.store._repeats.overlaps`).
No pass over every id of the run is needed in the driver. A folder whose manifest does not
list the values (written before they were recorded, or a grid of more than
:data:`sweep.spec._grid.MAX_DESCRIBED_VALUES` values) has no :class:`GridIdentity`; its ids
are compared across parts by fingerprints instead (:func:`sweep.store._repeats.repeated_ids`).
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from sweep.common._recent_objects import RecentObjects
from sweep.errors import RunFolderError, SweepError
from sweep.spec._config_identity import ConfigIdTable
from sweep.spec._grid import Grid
from sweep.store._record import Manifest


class GridIdentity:
    """The config id at every position of a run's grid.

    Every axis value is encoded once, when it is built (a :class:`ConfigIdTable`); a
    position then costs a gather per axis and one sha256.

    Parameters
    ----------
    strategy, version : str
        The strategy name and version the run recorded (its identity).
    grid : Grid
        The run's whole grid (costs and defaults as one-value axes), rebuilt from the
        manifest.
    """

    def __init__(self, strategy: str, version: str, grid: Grid) -> None:
        self.grid = grid
        self._table = ConfigIdTable(strategy, version, {a.name: a.values for a in grid.axes})

    def ids_at(self, index: NDArray[np.int64]) -> pa.Array:
        """The config ids of the grid positions ``index`` (32 hex digits each)."""
        return pa.array(self._table.ids(self.grid.codes_at(index)), pa.string())

    def misplaced(self, index: NDArray[np.int64], ids: pa.Array) -> NDArray[np.intp]:
        """Rows whose ``config_id`` is not the id of the config at their ``grid_index``.

        Parameters
        ----------
        index : ndarray of int64
            The rows' grid positions (inside the grid).
        ids : pyarrow.Array
            The rows' ``config_id`` values (a null never matches).

        Returns
        -------
        ndarray of intp
            The rows that do not match, in order (empty for a part whose rows are all where
            they claim to be).
        """
        differ = pc.fill_null(pc.not_equal(ids, self.ids_at(index)), True)
        return np.flatnonzero(differ.to_numpy(zero_copy_only=False))


def grid_identity(manifest: Manifest, folder: str) -> GridIdentity | None:
    """The :class:`GridIdentity` of a run folder, or None when its manifest cannot give one.

    Parameters
    ----------
    manifest : Manifest
        The folder's manifest (already checked to agree with itself).
    folder : str
        ``run folder '<location>'``, for the message.

    Returns
    -------
    GridIdentity or None
        None when the manifest records no strategy or does not list its grid's values.

    Raises
    ------
    RunFolderError
        The listed grid is not a valid grid (never, for a manifest that agrees with its
        spec: :func:`sweep.store._run_store.recorded_spec` checks that first).
    """
    strategy = manifest.run_key.strategy
    if strategy is None:
        return None
    if manifest in _RECENT:
        return _RECENT[manifest]
    description = json.dumps(manifest.grid.to_json(), sort_keys=True)
    try:
        identity = _rebuilt(strategy.name, strategy.version, description)
    except SweepError as exc:
        raise RunFolderError(f"{folder}: manifest.json's grid is not a valid grid: {exc}") from exc
    _RECENT[manifest] = identity
    return identity


#: The identity of the last manifests this process read (the store parses the same bytes
#: into the same object, ``_run_store._parsed_manifest``): its grid's JSON (the key of
#: :func:`_rebuilt`) costs 63 ms to write for a grid of 100,000 values, per group of parts.
_RECENT: RecentObjects[Manifest, GridIdentity | None] = RecentObjects(4)


@functools.lru_cache(maxsize=4)
def _rebuilt(strategy: str, version: str, description: str) -> GridIdentity | None:
    """One rebuilt grid per worker process and folder.

    A grid with constraints counts its valid configs once per 65,536 product positions when
    first indexed; every group of parts a worker checks shares that count.
    """
    grid = Grid.from_description(json.loads(description))
    return None if grid is None else GridIdentity(strategy, version, grid)
