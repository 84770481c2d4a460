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

import numpy as np

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


def _encoder(strategy: str, version: str, names: Sequence[str]) -> Callable[[Sequence[str]], bytes]:
    """The canonical bytes of a config as a function of its encoded values (THE definition).

    ``names`` are the parameter names in sorted order; the returned function takes each
    one's value as the JSON of its type tag (``json.dumps(_tag(value))``), in that order, and
    returns UTF-8 JSON with sorted keys and no whitespace: what ``json.dumps`` of
    ``{"params": {name: tag}, "strategy": strategy, "version": version}`` with
    ``sort_keys=True, separators=(",", ":"), ensure_ascii=False`` writes. The name and
    strategy pieces are encoded once, so many configs cost one join each.
    """
    keys = [json.dumps(n, ensure_ascii=False) + ":" for n in names]
    head = '{"params":{'
    tail = (
        '},"strategy":'
        + json.dumps(strategy, ensure_ascii=False)
        + ',"version":'
        + json.dumps(version, ensure_ascii=False)
        + "}"
    )

    def encode(values: Sequence[str]) -> bytes:
        return (head + ",".join(k + v for k, v in zip(keys, values, strict=True)) + tail).encode()

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


def config_ids(strategy: str, version: str, params: Mapping[str, Sequence[object]]) -> list[str]:
    """Return the ids of many configs at once (the same values as :func:`config_id`).

    Parameters
    ----------
    strategy : str
        Strategy name.
    version : str
        Strategy version.
    params : mapping of str to sequence
        Aligned parameter values, one sequence per parameter.

    Returns
    -------
    list of str
        One id per config; the canonical bytes are assembled from pre-encoded pieces.
    """
    names = sorted(params)
    encode = _encoder(strategy, version, names)
    columns = [list(_encoded(params[n])) for n in names]
    return [
        hashlib.sha256(encode(values)).digest()[:16].hex() for values in zip(*columns, strict=True)
    ]
