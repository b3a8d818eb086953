"""JSON Schemas from Python type hints: what a tool's signature promises, as a contract.

:class:`SchemaBuilder` turns an annotation into a draft 2020-12 schema:

=================================  ====================================================
annotation                         schema
=================================  ====================================================
``str`` ``int`` ``float`` ``bool``  ``string``, ``integer``, ``number``, ``boolean``
``None`` / ``T | None``            ``null`` / ``T`` or ``null``
``Literal["a", "b"]``              ``{"enum": ["a", "b"]}``
an ``Enum``                        ``{"enum": [member values]}``
``list[T]``, ``tuple[T, ...]``     ``array`` of ``T`` (``set[T]`` adds ``uniqueItems``)
``tuple[A, B]``                    ``prefixItems``, exactly two items
``dict[str, T]``                   ``object`` whose values are ``T``
a dataclass, a ``TypedDict``       ``object`` with its fields; no others allowed
a marshmallow ``Schema``           ``object`` from its fields (``required``, validators)
a pydantic model                   its ``model_json_schema()`` (when pydantic is present)
``datetime``, ``date``, ``UUID``   ``string`` with ``format``
``Annotated[T, ...]``              ``T`` plus a description (a ``str``), keywords (a dict
                                   or :class:`Arg`), ``annotated_types`` constraints or a
                                   pydantic ``Field``
=================================  ====================================================

Classes that refer to themselves become ``$defs`` entries reached by ``$ref``.  An
annotation with no faithful schema raises :class:`TypeError` when the tool is declared.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import types
import typing
import uuid
from collections import abc
from typing import Any

from .docstrings import param_docs

_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"}, int: {"type": "integer"}, float: {"type": "number"},
    bool: {"type": "boolean"}, type(None): {"type": "null"}, None: {"type": "null"},
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.date: {"type": "string", "format": "date"},
    datetime.time: {"type": "string", "format": "time"},
    uuid.UUID: {"type": "string", "format": "uuid"},
}
_ARRAYS = (list, tuple, set, frozenset, abc.Sequence, abc.Set, abc.MutableSequence,
           abc.Iterable, abc.Collection)
_MAPPINGS = (dict, abc.Mapping, abc.MutableMapping)
_SNAKE = {"min_length": "minLength", "max_length": "maxLength", "min_items": "minItems",
          "max_items": "maxItems", "exclusive_minimum": "exclusiveMinimum",
          "exclusive_maximum": "exclusiveMaximum", "multiple_of": "multipleOf",
          "unique_items": "uniqueItems", "min_properties": "minProperties",
          "max_properties": "maxProperties", "gt": "exclusiveMinimum",
          "ge": "minimum", "lt": "exclusiveMaximum", "le": "maximum"}
_LENGTHS = {"minLength": ("minItems", "minProperties"), "maxLength": ("maxItems", "maxProperties")}


class Arg:
    """Describe and constrain a parameter: ``Annotated[int, Arg("Days ahead", minimum=1)]``.

    Keywords are JSON Schema keywords, in their own spelling (``maxLength``) or in snake
    case (``max_length``; ``ge``/``gt``/``le``/``lt`` for the bounds).  ``min_length`` and
    ``max_length`` bound a string's characters, a list's items or an object's properties.
    """

    def __init__(self, description: str | None = None, **keywords: Any) -> None:
        self.description = description
        self.keywords = {_SNAKE.get(k, k): v for k, v in keywords.items()}

    def __repr__(self) -> str:
        return f"Arg({self.description!r}, **{self.keywords!r})"


def is_pydantic_model(t: Any) -> bool:
    return isinstance(t, type) and hasattr(t, "model_json_schema") \
        and hasattr(t, "model_validate")


def is_marshmallow_schema(t: Any) -> bool:
    try:
        import marshmallow
    except ImportError:  # pragma: no cover - marshmallow is a dependency
        return False
    return (isinstance(t, type) and issubclass(t, marshmallow.Schema)) \
        or isinstance(t, marshmallow.Schema)


def is_enum(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, enum.Enum)


def strip_annotated(ann: Any) -> tuple[Any, tuple[Any, ...]]:
    """``(T, metadata)`` for ``Annotated[T, *metadata]``, ``(ann, ())`` otherwise."""
    if typing.get_origin(ann) is typing.Annotated:
        base, *meta = typing.get_args(ann)
        return base, tuple(meta)
    return ann, ()


def union_arms(ann: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(ann) in (typing.Union, types.UnionType):
        return typing.get_args(ann)
    return None


class SchemaBuilder:
    """Builds schemas for one root (a tool's input or output), collecting ``$defs``."""

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        self._names: dict[Any, str] = {}
        self._building: list[Any] = []
        self._recursive: set[Any] = set()

    def root(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` with the collected ``$defs`` attached."""
        if self.defs:
            schema = {**schema, "$defs": {**schema.get("$defs", {}), **self.defs}}
        return schema

    def build(self, ann: Any) -> dict[str, Any]:
        """The schema for ``ann``; :class:`TypeError` when it has no faithful one."""
        if ann is Any or ann is object:
            return {}
        base, meta = strip_annotated(ann)
        if meta:
            return apply_metadata(self.build(base), meta)
        if isinstance(ann, typing.NewType):
            return self.build(ann.__supertype__)
        scalar = _scalar(ann)
        if scalar is not None:
            return scalar
        arms = union_arms(ann)
        if arms is not None:
            return self._union(arms)
        origin = typing.get_origin(ann)
        if origin is typing.Literal:
            values = list(typing.get_args(ann))
            return {"enum": [v.value if isinstance(v, enum.Enum) else v for v in values]}
        if is_enum(ann):
            return self._enum(ann)
        if origin in _ARRAYS or ann in _ARRAYS:
            return self._array(origin or ann, typing.get_args(ann))
        if origin in _MAPPINGS or ann in _MAPPINGS:
            args = typing.get_args(ann)
            if args and args[0] is not str:
                raise TypeError(f"{ann!r}: JSON object keys are strings")
            value = self.build(args[1]) if len(args) == 2 else {}
            return {"type": "object", **({"additionalProperties": value} if value else {})}
        if dataclasses.is_dataclass(ann) and isinstance(ann, type):
            return self._named(ann, self._dataclass)
        if typing.is_typeddict(ann):
            return self._named(ann, self._typeddict)
        if is_pydantic_model(ann):
            return self._pydantic(ann)
        if is_marshmallow_schema(ann):
            from .from_marshmallow import marshmallow_schema
            return marshmallow_schema(ann)
        if isinstance(ann, str):
            raise TypeError(f"cannot resolve the annotation {ann!r} (a class defined inside "
                            "a function? define it at module level)")
        raise TypeError(f"no JSON Schema for {ann!r}")

    def _union(self, arms: tuple[Any, ...]) -> dict[str, Any]:
        nullable = any(a is type(None) or a is None for a in arms)
        schemas = [self.build(a) for a in arms if a is not type(None) and a is not None]
        if len(schemas) == 1 and nullable:
            only = schemas[0]
            if set(only) == {"type"} or (isinstance(only.get("type"), str)
                                         and "enum" not in only and "const" not in only):
                return {**only, "type": [only["type"], "null"]}
            return {"anyOf": [only, {"type": "null"}]}
        if nullable:
            schemas.append({"type": "null"})
        return {"anyOf": schemas}

    @staticmethod
    def _enum(cls: type[enum.Enum]) -> dict[str, Any]:
        values = [m.value for m in cls]
        schema: dict[str, Any] = {"enum": values}
        for json_type, py in (("string", str), ("integer", int)):
            if values and all(type(v) is py for v in values):
                schema = {"type": json_type, **schema}
        if cls.__doc__ and cls.__doc__ != enum.Enum.__doc__ \
                and not cls.__doc__.startswith("An enumeration"):
            schema["description"] = " ".join(cls.__doc__.split())
        return schema

    def _array(self, origin: Any, args: tuple[Any, ...]) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "array"}
        if origin is tuple and args and (len(args) != 2 or args[1] is not Ellipsis):
            if args == ((),):
                return {"type": "array", "maxItems": 0}
            return {"type": "array", "prefixItems": [self.build(a) for a in args],
                    "minItems": len(args), "maxItems": len(args)}
        if args:
            items = self.build(args[0])
            if items:
                schema["items"] = items
        if origin in (set, frozenset, abc.Set):
            schema["uniqueItems"] = True
        return schema

    def _named(self, cls: Any, make: Any) -> dict[str, Any]:
        name = self._names.get(cls)
        if name is None:
            name = cls.__name__
            while name in self._names.values():
                name += "_"
            self._names[cls] = name
        if cls in self._building:
            self._recursive.add(cls)
            return {"$ref": f"#/$defs/{name}"}
        self._building.append(cls)
        try:
            schema: dict[str, Any] = make(cls)
        finally:
            self._building.pop()
        if cls in self._recursive:
            self.defs[name] = schema
            return {"$ref": f"#/$defs/{name}"}
        return schema

    def _fields(self, cls: Any, fields: list[tuple[str, Any, bool, Any]]) -> dict[str, Any]:
        docs = param_docs(cls.__doc__)
        props: dict[str, Any] = {}
        required: list[str] = []
        for name, ann, is_required, default in fields:
            props[name] = self.build(ann)
            if name in docs and "description" not in props[name]:
                props[name]["description"] = docs[name]
            if is_required:
                required.append(name)
            else:
                add_default(props[name], default)
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        return schema

    def _dataclass(self, cls: Any) -> dict[str, Any]:
        hints = typing.get_type_hints(cls, include_extras=True)
        rows = []
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            ann = hints.get(f.name, Any)
            if "description" in f.metadata:
                ann = typing.Annotated[ann, str(f.metadata["description"])]
            missing = f.default is dataclasses.MISSING \
                and f.default_factory is dataclasses.MISSING
            rows.append((f.name, ann, missing, f.default))
        return self._fields(cls, rows)

    def _typeddict(self, cls: Any) -> dict[str, Any]:
        hints = typing.get_type_hints(cls, include_extras=True)
        rows = [(name, _unwrap_required(ann), _td_required(cls, name, ann),
                 dataclasses.MISSING) for name, ann in hints.items()]
        return self._fields(cls, rows)

    def _pydantic(self, cls: Any) -> dict[str, Any]:
        schema: dict[str, Any] = cls.model_json_schema(ref_template="#/$defs/{model}")
        for name, sub in schema.pop("$defs", {}).items():
            self.defs.setdefault(name, sub)
        return schema


def _scalar(ann: Any) -> dict[str, Any] | None:
    try:
        found = _SCALARS.get(ann)
    except TypeError:  # unhashable
        return None
    return dict(found) if found is not None and not is_enum(ann) else None


_TD_QUALIFIERS = tuple(q for q in (getattr(typing, n, None) for n in
                                   ("Required", "NotRequired", "ReadOnly")) if q is not None)


def _td_required(cls: Any, name: str, ann: Any) -> bool:
    # Read the qualifier itself: under ``from __future__ import annotations`` Python 3.11
    # leaves ``__required_keys__`` blind to ``NotRequired``.
    origin = typing.get_origin(ann)
    if origin is typing.NotRequired:
        return False
    if origin is typing.Required:
        return True
    return name in cls.__required_keys__


def _unwrap_required(ann: Any) -> Any:
    origin = typing.get_origin(ann)
    if origin in _TD_QUALIFIERS:
        return typing.get_args(ann)[0]
    return ann


def add_default(schema: dict[str, Any], default: Any) -> None:
    """Record a JSON-representable default in ``schema`` (``None`` defaults are left out)."""
    if default is None or default is dataclasses.MISSING:
        return
    if isinstance(default, enum.Enum):
        default = default.value
    if isinstance(default, str | int | float | bool):
        schema["default"] = default


def apply_metadata(schema: dict[str, Any], meta: tuple[Any, ...]) -> dict[str, Any]:
    """Merge ``Annotated`` metadata into ``schema``: descriptions and constraints."""
    schema = dict(schema)
    for item in meta:
        if isinstance(item, str):
            schema["description"] = item
        elif isinstance(item, Arg):
            if item.description:
                schema["description"] = item.description
            _constrain(schema, item.keywords)
        elif isinstance(item, dict):
            _constrain(schema, item)
        else:
            _constrain(schema, _duck_constraints(item))
            description = getattr(item, "description", None)
            if isinstance(description, str) and description:
                schema["description"] = description
            for sub in getattr(item, "metadata", None) or ():
                schema = apply_metadata(schema, (sub,))
    return schema


def _duck_constraints(item: Any) -> dict[str, Any]:
    """Constraints of ``annotated_types`` objects (``Ge(1)``, ``MaxLen(5)``...)."""
    out: dict[str, Any] = {}
    for attr in ("gt", "ge", "lt", "le", "min_length", "max_length", "multiple_of"):
        value = getattr(item, attr, None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[_SNAKE[attr]] = value
    pattern = getattr(item, "pattern", None)
    if isinstance(pattern, str):
        out["pattern"] = pattern
    return out


def _constrain(schema: dict[str, Any], keywords: dict[str, Any]) -> None:
    kind = schema.get("type")
    for key, value in keywords.items():
        if key in _LENGTHS and kind in ("array", "object"):
            key = _LENGTHS[key][0 if kind == "array" else 1]
        schema[key] = value
