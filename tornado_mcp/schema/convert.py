"""Between JSON values and the Python values a typed tool works with.

:func:`converter_for` compiles, once per parameter, a function that turns an argument
already validated against the parameter's schema into the annotated type: a dataclass
instance (recursively), an ``Enum`` member, a ``set``/``tuple``, a ``datetime``, what a
marshmallow schema's ``load`` returns, a validated pydantic model.  Parameters of plain
JSON types get no converter at all (``None``), so they cost nothing per call.

:func:`to_json` goes the other way for results: dataclasses, ``TypedDict``\\ s, enums,
pydantic models, sets, tuples and dates become JSON values.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import typing
import uuid
from collections import abc
from collections.abc import Callable
from typing import Any

from ..protocol.field_errors import first_error
from .from_types import (
    SchemaBuilder,
    is_enum,
    is_marshmallow_schema,
    is_pydantic_model,
    strip_annotated,
    union_arms,
)

Converter = Callable[[Any], Any]


class ConversionError(ValueError):
    """An argument the schema accepted but its type refused (a marshmallow or pydantic rule,
    a malformed date): ``path`` names it below the argument."""

    def __init__(self, message: str, path: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


_PARSERS: dict[Any, Converter] = {
    datetime.datetime: datetime.datetime.fromisoformat,
    datetime.date: datetime.date.fromisoformat,
    datetime.time: datetime.time.fromisoformat,
    uuid.UUID: uuid.UUID,
}


def converter_for(ann: Any) -> Converter | None:
    """A function from validated JSON to ``ann``'s type, or ``None`` when JSON already is."""
    ann, _meta = strip_annotated(ann)
    if isinstance(ann, typing.NewType):
        return converter_for(ann.__supertype__)
    try:
        parser = _PARSERS.get(ann)
    except TypeError:
        parser = None
    if parser is not None:
        return _parsing(parser)
    arms = union_arms(ann)
    if arms is not None:
        return _union(arms)
    if is_enum(ann):
        return _parsing(ann)
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin in (list, tuple, set, frozenset, abc.Sequence, abc.Set, abc.MutableSequence,
                  abc.Iterable, abc.Collection):
        return _sequence(origin, args)
    if origin in (dict, abc.Mapping, abc.MutableMapping) and len(args) == 2:
        inner = converter_for(args[1])
        if inner is None:
            return None
        return lambda v: {k: _at(k, inner, x) for k, x in v.items()}
    if dataclasses.is_dataclass(ann) and isinstance(ann, type):
        return _dataclass(ann)
    if typing.is_typeddict(ann):
        return _typeddict(ann)
    if is_pydantic_model(ann):
        return _pydantic(ann)
    if is_marshmallow_schema(ann):
        return _marshmallow(ann)
    return None


def _at(step: str | int, convert: Converter, value: Any) -> Any:
    try:
        return convert(value)
    except ConversionError as exc:
        raise ConversionError(exc.message, (step, *exc.path)) from None


def _parsing(parse: Converter) -> Converter:
    def convert(value: Any) -> Any:
        try:
            return parse(value)
        except (ValueError, TypeError) as exc:
            raise ConversionError(str(exc)[:200]) from None
    return convert


def _union(arms: tuple[Any, ...]) -> Converter | None:
    from .validate import compile_schema
    real = [a for a in arms if a is not type(None) and a is not None]
    converters = [converter_for(a) for a in real]
    if all(c is None for c in converters):
        return None
    tests = [compile_schema(SchemaBuilder().build(a)) for a in real]

    def convert(value: Any) -> Any:
        if value is None:
            return None
        for test, conv in zip(tests, converters, strict=True):
            if test(value) is None:
                return value if conv is None else conv(value)
        return value
    return convert


def _sequence(origin: Any, args: tuple[Any, ...]) -> Converter | None:
    make: Any = {tuple: tuple, set: set, frozenset: frozenset, abc.Set: frozenset}.get(origin)
    if origin is tuple and args and (len(args) != 2 or args[1] is not Ellipsis):
        parts = [converter_for(a) for a in args]
        return lambda v: tuple(x if c is None else _at(i, c, x)
                               for i, (c, x) in enumerate(zip(parts, v, strict=True)))
    inner = converter_for(args[0]) if args else None
    if inner is None:
        return None if make is None else make
    if make is None:
        return lambda v: [_at(i, inner, x) for i, x in enumerate(v)]
    return lambda v: make(_at(i, inner, x) for i, x in enumerate(v))


def _fields(hints: dict[str, Any], names: list[str]) -> dict[str, Converter]:
    out: dict[str, Converter] = {}
    for name in names:
        conv = converter_for(hints.get(name, Any))
        if conv is not None:
            out[name] = conv
    return out


#: Classes whose converter is being built, each with the slot its converter will fill:
#: a class that refers to itself gets a converter that reads the slot.
_building: dict[Any, list[Converter]] = {}


def _recursive(make: Callable[[Any], Converter | None]) -> Callable[[Any], Converter | None]:
    def build(cls: Any) -> Converter | None:
        pending = _building.get(cls)
        if pending is not None:
            return lambda v: pending[0](v)
        slot: list[Converter] = [_identity]
        _building[cls] = slot
        try:
            made = make(cls)
        finally:
            del _building[cls]
        slot[0] = made or _identity
        return made
    return build


def _identity(value: Any) -> Any:
    return value


@_recursive
def _dataclass(cls: Any) -> Converter | None:
    hints = typing.get_type_hints(cls, include_extras=True)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    inner = _fields(hints, names)

    def convert(v: dict[str, Any]) -> Any:
        kwargs = {k: (_at(k, inner[k], x) if k in inner else x) for k, x in v.items()}
        return cls(**kwargs)
    return convert


@_recursive
def _typeddict(cls: Any) -> Converter | None:
    hints = typing.get_type_hints(cls)
    inner = _fields(hints, list(hints))
    if not inner:
        return None
    return lambda v: {k: (_at(k, inner[k], x) if k in inner else x) for k, x in v.items()}


def _pydantic(cls: Any) -> Converter:
    def convert(value: Any) -> Any:
        try:
            return cls.model_validate(value)
        except ValueError as exc:  # pydantic.ValidationError is a ValueError
            errors = getattr(exc, "errors", None)
            first = errors()[0] if callable(errors) and errors() else None
            if first is not None:
                raise ConversionError(str(first.get("msg", "invalid")),
                                      tuple(first.get("loc", ()))) from None
            raise ConversionError(str(exc)[:200]) from None
    return convert


def _marshmallow(t: Any) -> Converter:
    import marshmallow

    from .from_marshmallow import schema_instance
    ms = schema_instance(t)

    def convert(value: Any) -> Any:
        try:
            return ms.load(value)
        except marshmallow.ValidationError as exc:
            path, message = first_error(exc.messages) or ((), "invalid")
            raise ConversionError(message[:200], path) from None
    return convert


# -- results ----------------------------------------------------------------------------

_JSON_SCALARS = (str, int, float, bool, type(None))


def to_json(value: Any) -> Any:
    """``value`` as plain JSON data; :class:`TypeError` for what has no JSON form."""
    t = type(value)
    if t in _JSON_SCALARS:
        return value
    if isinstance(value, enum.Enum):
        return to_json(value.value)
    if t is dict or isinstance(value, abc.Mapping):
        return {_key(k): to_json(x) for k, x in value.items()}
    if t is list or isinstance(value, list | tuple | set | frozenset):
        return [to_json(x) for x in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID | str):
        return str(value)
    if isinstance(value, int | float):
        return value
    raise TypeError(f"a {t.__name__} has no JSON form")


def _key(k: Any) -> str:
    if isinstance(k, enum.Enum):
        k = k.value
    if not isinstance(k, str):
        raise TypeError(f"JSON object keys are strings, not {type(k).__name__}")
    return k
