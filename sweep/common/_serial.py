"""The one serialisation of the engine's frozen records: to JSON, and the way back.

One rule each way, for report.json, the run record (``manifest.json``), ``sweep status``,
``sweep verify`` and ``sweep plan --json``. :func:`to_json` writes a dataclass as a JSON
object whose keys are its fields in declaration order; :func:`from_json` reads such an object
back into the typed record, guided by the field annotations. A field's ``metadata`` may say:

``omit_none``
    leave the key out while the value is None (keys a record has only in some cases);
``flatten``
    write the nested record's keys into the parent object (and read them from it);
``skip``
    not part of the JSON (the field's default is used when reading).

A field with ``init=False`` (a constant such as a format name) is written but not read.

A union of records (``Available | Unavailable``) is read as the first member whose required
keys are present and whose ``Literal`` fields (``available``) match.

A record that derives from :class:`JSONRecord` gets the rule as methods: ``record.to_json()``
(strict JSON: NaN and infinities as null, ready for ``json.dumps``) and
``Record.from_json(doc)``. A record that defines its own ``to_json`` / ``from_json`` (a format
that needs it; each says why in a comment) is written and read with those.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, Literal, Self, TypeVar, Union, get_args, get_origin

import numpy as np

from sweep.common._jsonable import JSONObject, to_jsonable
from sweep.errors import SweepError

T = TypeVar("T")

#: Field metadata: the key is left out while the value is None.
OMIT_NONE: Mapping[str, bool] = {"omit_none": True}
#: Field metadata: the nested record's keys go into the parent object (left out when None).
FLATTENED: Mapping[str, bool] = {"flatten": True, "omit_none": True}
#: Field metadata: not part of the JSON.
SKIPPED: Mapping[str, bool] = {"skip": True}
_OMIT, _FLATTEN, _SKIP = "omit_none", "flatten", "skip"


class RecordFormatError(SweepError):
    """A JSON document that does not match the typed record it is read as (naming where)."""


def _hand_written(cls: type, name: str) -> bool:
    """Whether ``cls`` has its own ``to_json`` / ``from_json`` (not :class:`JSONRecord`'s)."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass is not JSONRecord
    return False


class JSONRecord:
    """Base of a frozen record serialised by this module's rule, as methods.

    ``to_json()`` is :func:`to_json` with non-finite floats written as null (strict JSON);
    ``from_json(doc)`` is :func:`from_json` (a null ``float`` field reads as NaN).
    """

    __slots__ = ()

    def to_json(self) -> JSONObject:
        """The record's JSON object (strict: NaN and infinities as null)."""
        doc = to_jsonable(to_json(self))
        if not isinstance(doc, dict):  # pragma: no cover - a dataclass is written as an object
            raise TypeError(f"{type(self).__name__} is not written as a JSON object")
        return doc

    @classmethod
    def from_json(cls, doc: Any, where: str | None = None) -> Self:
        """Read the record from its JSON object (:class:`RecordFormatError` naming where)."""
        return from_json(cls, doc, cls.__name__ if where is None else where)


def to_json(value: Any) -> Any:
    """The JSON form of a value (floats as they are: NaN is written as null when dumped).

    Parameters
    ----------
    value : object
        A dataclass (written by its own ``to_json`` where it has one), a mapping, a tuple or
        list, a numpy array or scalar, or a plain JSON value.

    Returns
    -------
    object
        Built from dict, list, str, int, float, bool and None.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if _hand_written(type(value), "to_json"):
            return to_json(typing.cast(Any, value).to_json())
        out: dict[str, object] = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if f.metadata.get(_SKIP) or (item is None and f.metadata.get(_OMIT)):
                continue
            if f.metadata.get(_FLATTEN):
                out.update(to_json(item))
            else:
                out[f.name] = to_json(item)
        return out
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


@cache
def _hints(cls: Any) -> dict[str, object]:
    return typing.get_type_hints(cls)


def _required(cls: Any) -> list[dataclasses.Field[Any]]:
    return [
        f
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
        and not f.metadata.get(_SKIP)
        and f.init
    ]


def _accepts(cls: Any, doc: Any) -> bool:
    """Whether ``doc`` can be read as ``cls``: its required keys and its Literal values."""
    if not isinstance(doc, Mapping):
        return False
    if _hand_written(cls, "from_json"):
        return True
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        if f.metadata.get(_FLATTEN):
            continue
        literal = get_origin(hints[f.name]) is Literal
        if literal and f.name in doc and doc[f.name] not in get_args(hints[f.name]):
            return False
    return all(f.name in doc or f.metadata.get(_FLATTEN) for f in _required(cls))


def _read_record(cls: Any, doc: Any, where: str) -> Any:
    if _hand_written(cls, "from_json"):
        return cls.from_json(doc)
    if not isinstance(doc, Mapping):
        raise RecordFormatError(f"{where}: expected a JSON object, got {type(doc).__name__}")
    hints = _hints(cls)
    kwargs: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        if f.metadata.get(_SKIP) or not f.init:
            continue
        tp = hints[f.name]
        if f.metadata.get(_FLATTEN):
            member = next(a for a in get_args(tp) if a is not type(None))
            kwargs[f.name] = (
                _read_record(member, doc, f"{where}.{f.name}") if _accepts(member, doc) else None
            )
        elif f.name in doc:
            kwargs[f.name] = _read(tp, doc[f.name], f"{where}.{f.name}")
        elif f in _required(cls):
            raise RecordFormatError(f"{where}: missing key {f.name!r}")
    return cls(**kwargs)


def _read_union(args: tuple[Any, ...], value: Any, where: str) -> Any:
    if value is None and type(None) in args:
        return None
    members = [a for a in args if a is not type(None)]
    if len(members) == 1:
        return _read(members[0], value, where)
    records: list[Any] = [m for m in members if dataclasses.is_dataclass(m)]
    if records:
        for m in records:
            if _accepts(m, value):
                return _read_record(m, value, where)
        names = " | ".join(m.__name__ for m in records)
        raise RecordFormatError(f"{where}: the object matches none of {names}")
    for m in members:  # plain values (a parameter may be int, float, str or bool)
        if isinstance(value, m) and not (m is int and isinstance(value, bool)):
            return value
    return _read(members[0], value, where)


def _read_array(tp: Any, value: Any, where: str) -> Any:
    if not isinstance(value, list | tuple):
        raise RecordFormatError(f"{where}: expected a JSON array, got {type(value).__name__}")
    args = get_args(tp)
    if get_origin(tp) is tuple and args and args[-1] is not Ellipsis:
        if len(args) != len(value):
            raise RecordFormatError(f"{where}: expected {len(args)} items, got {len(value)}")
        return tuple(
            _read(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value, strict=True))
        )
    item = args[0] if args else Any
    out = [_read(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    return tuple(out) if get_origin(tp) is tuple else out


def _read_object(tp: Any, value: Any, where: str) -> Any:
    if not isinstance(value, Mapping):
        raise RecordFormatError(f"{where}: expected a JSON object, got {type(value).__name__}")
    item = get_args(tp)[1] if get_args(tp) else Any
    return {str(k): _read(item, v, f"{where}.{k}") for k, v in value.items()}


def _read_plain(tp: Any, value: Any, where: str) -> Any:
    if tp is float and (value is None or isinstance(value, int | float)):
        return math.nan if value is None else float(value)
    if tp is type(None) and value is None:
        return None
    if tp in (int, str, bool) and isinstance(value, tp):
        return value
    raise RecordFormatError(f"{where}: expected {getattr(tp, '__name__', tp)}, got {value!r}")


def _read(tp: Any, value: Any, where: str) -> Any:
    """Read ``value`` as annotation ``tp``."""
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin is Union or origin is types.UnionType:
        return _read_union(get_args(tp), value, where)
    if origin is Literal:
        if value not in get_args(tp):
            raise RecordFormatError(f"{where}: expected one of {get_args(tp)}, got {value!r}")
        return value
    if dataclasses.is_dataclass(tp):
        return _read_record(tp, value, where)
    if origin is tuple or origin is list:
        return _read_array(tp, value, where)
    if origin is dict or origin is Mapping or tp is dict:
        return _read_object(tp, value, where)
    return _read_plain(tp, value, where)


def from_json(cls: type[T], doc: Any, where: str = "report.json") -> T:
    """Read a JSON object (as :func:`to_json` writes it) back into the record ``cls``.

    Parameters
    ----------
    cls : type
        A record dataclass (or a union member chosen by the caller).
    doc : object
        The parsed JSON.
    where : str
        Named in errors (``report.json.multiple_testing.pbo``).

    Returns
    -------
    cls
        The record; a null read as a ``float`` field is NaN (report.json writes NaN as null).

    Raises
    ------
    RecordFormatError
        When a key is missing or a value has the wrong JSON type (naming where).
    """
    return typing.cast(T, _read(cls, doc, where))
