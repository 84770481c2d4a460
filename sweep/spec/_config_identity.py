"""Config identity and per-config seeds: the one place these rules are defined.

``config_id`` is the first 16 bytes (32 hex digits) of the sha256 of a canonical JSON
encoding of ``{"params": ..., "strategy": name, "version": version}`` with sorted keys, no
whitespace, and every parameter value tagged with its type and written exactly:

* ``int``  -> ``"i:<decimal>"``
* ``float``-> ``"f:<float.hex()>"`` (exact binary value; ``-0.0`` and ``0.0`` differ)
* ``bool`` -> ``"b:true"`` / ``"b:false"``
* ``str``  -> ``"s:<text>"``

The seed of a config is ``SeedSequence(entropy=root_seed, spawn_key=<the four big-endian
uint32 words of config_id>)``; its child :data:`STRATEGY_STREAM` feeds the strategy (if it is
random). Nothing about batches, tasks or ordering enters either rule.

Resampling is the one deliberate exception to per-config streams: the block-bootstrap draws
are COMMON to all configs (joint resampling, which the sweep-wide tests need), drawn from
``SeedSequence(entropy=root_seed, spawn_key=(RESAMPLE_TAG, n_obs, block_length, method))``
(:func:`resample_seed`), never from a config.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sweep.common._sha256_rows import sha256_of_pieces

#: Index of the strategy's child seed sequence spawned from a config's seed.
STRATEGY_STREAM = 0
#: First spawn-key word of the sweep's shared resampling seed (ASCII "RESM").
RESAMPLE_TAG = 0x5245534D
#: Spawn-key word of each block-bootstrap method in :func:`resample_seed`.
RESAMPLE_METHODS = {"circular": 0, "stationary": 1}


def resample_seed(
    root_seed: int, n_obs: int, block_length: int, method: str
) -> np.random.SeedSequence:
    """Return the seed of the block-bootstrap draws shared by every config of a sweep.

    Parameters
    ----------
    root_seed : int
        The sweep's root seed.
    n_obs : int
        Periods of every return series.
    block_length : int
        Block length (circular) or mean block length (stationary).
    method : {"circular", "stationary"}
        Block scheme.

    Returns
    -------
    numpy.random.SeedSequence
        ``SeedSequence(entropy=root_seed, spawn_key=(RESAMPLE_TAG, n_obs, block_length,
        RESAMPLE_METHODS[method]))``: reserved for resampling, independent of every config.
    """
    key = (RESAMPLE_TAG, n_obs, block_length, RESAMPLE_METHODS[method])
    return np.random.SeedSequence(entropy=root_seed, spawn_key=key)


def _tag(value: object) -> str:
    if isinstance(value, bool | np.bool_):
        return "b:true" if value else "b:false"
    if isinstance(value, int | np.integer):
        return f"i:{int(value)}"
    if isinstance(value, float | np.floating):
        return f"f:{float(value).hex()}"
    if isinstance(value, str):
        return f"s:{value}"
    raise TypeError(f"parameter value {value!r}: expected int, float, bool or str")


def _pieces(strategy: str, version: str, names: Sequence[str]) -> tuple[bytes, list[bytes], bytes]:
    """The fixed pieces of a config's canonical bytes: head, each name's key, tail.

    ``names`` are the parameter names in sorted order. A config's bytes are
    ``head + b",".join(key + value) + tail``, each value the JSON of its type tag
    (``json.dumps(_tag(value))``): what ``json.dumps`` of ``{"params": {name: tag},
    "strategy": strategy, "version": version}`` with ``sort_keys=True,
    separators=(",", ":"), ensure_ascii=False`` writes, as UTF-8 (THE definition).
    """
    keys = [(json.dumps(n, ensure_ascii=False) + ":").encode() for n in names]
    head = b'{"params":{'
    tail = (
        '},"strategy":'
        + json.dumps(strategy, ensure_ascii=False)
        + ',"version":'
        + json.dumps(version, ensure_ascii=False)
        + "}"
    ).encode()
    return head, keys, tail


def _encoder(strategy: str, version: str, names: Sequence[str]) -> Callable[[Sequence[str]], bytes]:
    """The canonical bytes of a config as a function of its encoded values (see :func:`_pieces`)."""
    head, keys, tail = _pieces(strategy, version, names)

    def encode(values: Sequence[str]) -> bytes:
        body = b",".join(k + v.encode() for k, v in zip(keys, values, strict=True))
        return head + body + tail

    return encode


def _encoded(values: Iterable[object]) -> Iterator[str]:
    return (json.dumps(_tag(v), ensure_ascii=False) for v in values)


def canonical_config_bytes(strategy: str, version: str, params: Mapping[str, object]) -> bytes:
    """Return the canonical byte encoding that :func:`config_id` hashes.

    Parameters
    ----------
    strategy : str
        Strategy name.
    version : str
        Strategy version.
    params : mapping of str to int, float, bool or str
        One config's parameter values.

    Returns
    -------
    bytes
        UTF-8 JSON with sorted keys and type-tagged exact values (see the module docstring).
    """
    names = sorted(params)
    return _encoder(strategy, version, names)(list(_encoded(params[n] for n in names)))


def config_id(strategy: str, version: str, params: Mapping[str, object]) -> str:
    """Return the identity of one config: 32 hex digits of a sha256.

    Parameters
    ----------
    strategy : str
        Strategy name.
    version : str
        Strategy version.
    params : mapping of str to int, float, bool or str
        One config's parameter values.

    Returns
    -------
    str
        Lower-case hex, 32 characters (128 bits).
    """
    digest = hashlib.sha256(canonical_config_bytes(strategy, version, params)).digest()
    return digest[:16].hex()


def config_seed(root_seed: int, config_id_hex: str) -> np.random.SeedSequence:
    """Return the seed sequence of one config.

    Parameters
    ----------
    root_seed : int
        The sweep's root seed (non-negative).
    config_id_hex : str
        The config's id from :func:`config_id`.

    Returns
    -------
    numpy.random.SeedSequence
        ``SeedSequence(entropy=root_seed, spawn_key=words(config_id))``; its child
        :data:`STRATEGY_STREAM` feeds a random strategy.
    """
    return np.random.SeedSequence(entropy=root_seed, spawn_key=_words(config_id_hex))


def _words(config_id_hex: str) -> tuple[int, ...]:
    """The big-endian 32-bit words of a config id (its spawn key)."""
    return tuple(int(config_id_hex[i : i + 8], 16) for i in range(0, len(config_id_hex), 8))


def config_stream(root_seed: int, config_id_hex: str, stream: int) -> np.random.SeedSequence:
    """Return child ``stream`` of a config's seed sequence without spawning its siblings.

    Parameters
    ----------
    root_seed : int
        The sweep's root seed.
    config_id_hex : str
        The config's id.
    stream : int
        The child's index (:data:`STRATEGY_STREAM` for the strategy).

    Returns
    -------
    numpy.random.SeedSequence
        Identical to ``config_seed(root_seed, config_id_hex).spawn(2)[stream]`` (a spawned
        child's spawn key is its parent's plus its index), built in one step.
    """
    return np.random.SeedSequence(entropy=root_seed, spawn_key=(*_words(config_id_hex), stream))


def _distinct(
    values: Sequence[object] | NDArray[Any],
) -> tuple[Sequence[object] | NDArray[Any], NDArray[np.intp]]:
    """A column as its distinct values and each row's position among them.

    A numeric numpy column is reduced to its distinct *bit patterns* (so ``-0.0`` and
    ``0.0``, or two NaN payloads, stay apart exactly as :func:`_tag` keeps them); any other
    sequence is kept as it is, one value per row.
    """
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf" and values.ndim == 1:
        column = values
        if column.dtype.kind == "f":
            column = column.astype(np.float64, copy=False)
            keys = column.view(np.int64)
        else:
            keys = column
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        return column[first], inverse.reshape(-1)
    return values, np.arange(len(values), dtype=np.intp)


class ConfigIdTable:
    """Config ids of configs whose parameter values come from fixed lists (a grid's axes).

    Every listed value is tag-encoded (:func:`_tag`, wrapped in the fixed pieces of
    :func:`_pieces`) once, when the table is built; a config then costs one gather per
    parameter, one byte join and one sha256 (:meth:`ids`). The bytes hashed are exactly
    :func:`canonical_config_bytes` of the config, so the ids are :func:`config_id`'s.

    Parameters
    ----------
    strategy : str
        Strategy name.
    version : str
        Strategy version.
    values : mapping of str to sequence or ndarray
        Each parameter's possible values.
    """

    def __init__(
        self, strategy: str, version: str, values: Mapping[str, Sequence[object] | NDArray[Any]]
    ) -> None:
        self._names = sorted(values)
        head, keys, tail = _pieces(strategy, version, self._names)
        last = len(self._names) - 1
        #: Every name's pieces (``,`` or the head, its key, a value, the tail after the
        #: last) in one byte table; a config's bytes are one piece of each name, in order.
        self._start: dict[str, NDArray[np.int64]] = {}
        self._length: dict[str, NDArray[np.int64]] = {}
        table: list[bytes] = []
        at = 0
        for i, (key, name) in enumerate(zip(keys, self._names, strict=True)):
            before, after = (head if i == 0 else b",") + key, tail if i == last else b""
            pieces = [before + text.encode() + after for text in _encoded(values[name])]
            lengths = np.array([len(p) for p in pieces], dtype=np.int64)
            self._start[name] = at + np.cumsum(lengths) - lengths
            self._length[name] = lengths
            table += pieces
            at += int(lengths.sum())
        self._table = np.frombuffer(b"".join(table), dtype=np.uint8)

    def ids(self, codes: Mapping[str, NDArray[np.integer]]) -> list[str]:
        """The ids of the configs that take value ``codes[name][k]`` of each parameter.

        Parameters
        ----------
        codes : mapping of str to ndarray of int
            Aligned positions in each parameter's values, one array per parameter.

        Returns
        -------
        list of str
            One id (32 hex digits) per config.
        """
        if not self._names:
            return []
        starts = np.stack([self._start[name][codes[name]] for name in self._names])
        lengths = np.stack([self._length[name][codes[name]] for name in self._names])
        digests = sha256_of_pieces(self._table, starts, lengths)
        text = np.ascontiguousarray(digests[:, :16]).tobytes().hex()
        return [text[k : k + 32] for k in range(0, len(text), 32)]


def config_ids(
    strategy: str, version: str, params: Mapping[str, Sequence[object] | NDArray[Any]]
) -> list[str]:
    """Return the ids of many configs at once (the same values as :func:`config_id`).

    Parameters
    ----------
    strategy : str
        Strategy name.
    version : str
        Strategy version.
    params : mapping of str to sequence or ndarray
        Aligned parameter values, one sequence (or 1-D array) per parameter.

    Returns
    -------
    list of str
        One id per config.

    Notes
    -----
    Vectorised: each column's distinct values are tag-encoded once (a
    :class:`ConfigIdTable` of them), and a config costs one byte join and one sha256. The
    bytes hashed are exactly :func:`canonical_config_bytes` of the config.
    """
    distinct = {name: _distinct(column) for name, column in params.items()}
    table = ConfigIdTable(strategy, version, {name: d[0] for name, d in distinct.items()})
    return table.ids({name: d[1] for name, d in distinct.items()})
