"""A JSON Schema for a marshmallow ``Schema``, so it can type a tool parameter.

    class Address(marshmallow.Schema):
        street = fields.String(required=True, validate=validate.Length(max=200))
        kind = fields.String(validate=validate.OneOf(["home", "work"]))

    @server.tool()
    def ship(to: Address) -> str: ...

The parameter's schema lists the fields (by ``data_key`` when set), the required ones,
``Length``/``Range``/``OneOf``/``Regexp``/``Equal`` as keywords and ``metadata["description"]``
as the description; ``unknown=RAISE`` (marshmallow's default) becomes
``additionalProperties: false``.  The tool receives what ``Schema().load()`` returns, and a
``ValidationError`` from ``load`` is reported as invalid arguments, so rules the JSON
Schema cannot express (custom validators, ``validates_schema``) still hold.
"""

from __future__ import annotations

from typing import Any

import marshmallow
from marshmallow import fields, validate

_PLAIN: list[tuple[type[fields.Field[Any]], dict[str, Any]]] = [
    (fields.Boolean, {"type": "boolean"}),
    (fields.Integer, {"type": "integer"}),
    (fields.Number, {"type": "number"}),
    (fields.Email, {"type": "string", "format": "email"}),
    (fields.Url, {"type": "string", "format": "uri"}),
    (fields.UUID, {"type": "string", "format": "uuid"}),
    (fields.DateTime, {"type": "string", "format": "date-time"}),
    (fields.Date, {"type": "string", "format": "date"}),
    (fields.Time, {"type": "string", "format": "time"}),
    (fields.String, {"type": "string"}),
]


def schema_instance(t: Any) -> marshmallow.Schema:
    """An instance of ``t`` (a ``Schema`` class or instance)."""
    return t if isinstance(t, marshmallow.Schema) else t()


def marshmallow_schema(t: Any) -> dict[str, Any]:
    """The JSON Schema for the marshmallow schema ``t`` (class or instance)."""
    ms = schema_instance(t)
    props: dict[str, Any] = {}
    required: list[str] = []
    for name, field in ms.load_fields.items():
        key = field.data_key or name
        props[key] = field_schema(field)
        if field.required:
            required.append(key)
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    if ms.unknown == marshmallow.RAISE:
        out["additionalProperties"] = False
    return out


def field_schema(field: fields.Field[Any]) -> dict[str, Any]:
    """The JSON Schema for one marshmallow field."""
    out = _base(field)
    for rule in field.validators:
        out.update(_rule(rule, out.get("type")))
    description = field.metadata.get("description")
    if isinstance(description, str):
        out["description"] = description
    if field.allow_none and "type" in out:
        out["type"] = [out["type"], "null"]
    elif field.allow_none:
        out = {"anyOf": [out, {"type": "null"}]}
    return out


def _base(field: fields.Field[Any]) -> dict[str, Any]:
    if isinstance(field, fields.Nested):
        nested = field.nested
        inner = marshmallow_schema(nested() if callable(nested) and not isinstance(
            nested, type) else nested)
        return {"type": "array", "items": inner} if field.many else inner
    if isinstance(field, fields.List):
        return {"type": "array", "items": field_schema(field.inner)}
    if isinstance(field, fields.Tuple):
        items = [field_schema(f) for f in field.tuple_fields]
        return {"type": "array", "prefixItems": items, "minItems": len(items),
                "maxItems": len(items)}
    if isinstance(field, fields.Enum):
        values = [m.value if field.by_value else m.name for m in field.enum]
        return {"enum": values}
    if isinstance(field, fields.Mapping):
        value = field.value_field
        return {"type": "object",
                **({"additionalProperties": field_schema(value)} if value else {})}
    for cls, schema in _PLAIN:
        if isinstance(field, cls):
            return dict(schema)
    return {}


def _rule(rule: Any, kind: Any) -> dict[str, Any]:
    if isinstance(rule, validate.Length):
        lo, hi = ("minItems", "maxItems") if kind == "array" else ("minLength", "maxLength")
        if rule.equal is not None:
            return {lo: rule.equal, hi: rule.equal}
        return {k: v for k, v in ((lo, rule.min), (hi, rule.max)) if v is not None}
    if isinstance(rule, validate.Range):
        out: dict[str, Any] = {}
        if rule.min is not None:
            out["minimum" if rule.min_inclusive else "exclusiveMinimum"] = rule.min
        if rule.max is not None:
            out["maximum" if rule.max_inclusive else "exclusiveMaximum"] = rule.max
        return out
    if isinstance(rule, validate.OneOf):
        return {"enum": list(rule.choices)}
    if isinstance(rule, validate.Equal):
        return {"const": rule.comparable}
    if isinstance(rule, validate.Regexp):
        pattern = str(rule.regex.pattern)  # re.match: anchored at the start only
        return {"pattern": pattern if pattern.startswith("^") else f"^(?:{pattern})"}
    return {}
