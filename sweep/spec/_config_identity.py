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


def _encoded_column(values: Sequence[object] | NDArray[Any]) -> list[bytes]:
    """Each value's JSON-encoded type tag as UTF-8 bytes, encoding every distinct value once.

    A numeric numpy column is reduced to its distinct *bit patterns* (so ``-0.0`` and
    ``0.0``, or two NaN payloads, stay apart exactly as :func:`_tag` keeps them), each is
    encoded by :func:`_tag` and the pieces are gathered back; any other sequence is encoded
    value by value. Either way a value's bytes are those of ``json.dumps(_tag(value))``.
    """
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf" and values.ndim == 1:
        column = values
        if column.dtype.kind == "f":
            column = column.astype(np.float64, copy=False)
            keys = column.view(np.int64)
        else:
            keys = column
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        pieces = [json.dumps(_tag(column[i].item()), ensure_ascii=False).encode() for i in first]
        return [pieces[k] for k in inverse.reshape(-1).tolist()]
    return [s.encode() for s in _encoded(values)]


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
    Vectorised: each column's distinct values are tag-encoded once
    (:func:`_encoded_column`), the fixed pieces of :func:`_encoder` (name keys, strategy,
    version) are encoded once, and a config costs one byte join and one sha256. The bytes
    hashed are exactly :func:`canonical_config_bytes` of the config.
    """
    names = sorted(params)
    head, keys, tail = _pieces(strategy, version, names)
    pairs = zip(keys, names, strict=True)
    columns = [[key + v for v in _encoded_column(params[n])] for key, n in pairs]
    sha = hashlib.sha256
    return [
        sha(head + b",".join(values) + tail).digest()[:16].hex()
        for values in zip(*columns, strict=True)
    ]
