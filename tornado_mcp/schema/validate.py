"""JSON Schema validation for tool arguments and results: the ``jsonschema`` library's
``Draft202012Validator`` as the rule, a proven fast path for simple schemas.

A tool's input schema is the contract between a model and the code that acts for it, so
this module fails closed:

* :func:`check_schema` runs when a tool is declared.  It refuses a schema the metaschema
  rejects, a ``$schema`` dialect it does not know, and a ``$ref`` that points nowhere (a
  *dangling* reference).  Remote references are never fetched: only the schema itself and
  the official metaschemas can be referred to.
* :func:`compile_schema` returns ``check(instance) -> message | None``, built once per
  schema.  Schemas written only in the keywords :mod:`tornado_mcp.schema.fastpath` implements
  are first checked by its compiled predicate; when that predicate says "valid" the answer
  is final (it is tested to agree with the library on the whole official test suite), and
  anything else goes to the library, which also writes the message.

Messages name the offending value by its path from ``arguments`` and the rule it broke,
and are at most :data:`MAX_ERROR_CHARS` characters however large the value::

    check = compile_schema({"type": "object", "properties": {"n": {"type": "integer"}}})
    check({"n": 1})        # None
    check({"n": "one"})    # 'arguments.n must be of type integer'

Draft 2020-12 is the default dialect; a schema whose ``$schema`` names draft-07, 2019-09,
draft-06 or draft-04 is validated by that draft's rules.
"""

from __future__ import annotations

import itertools
import json
import typing
from typing import TYPE_CHECKING, Any

from .fastpath import compile_fast
from .library import load as load_library

if TYPE_CHECKING:
    import referencing
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator as LibraryValidator

#: Longest message :func:`compile_schema`'s checks return.
MAX_ERROR_CHARS = 300
#: Longest piece of a value (a property name, an enum) quoted in a message.
MAX_QUOTE_CHARS = 60
#: How many of the library's errors are weighed to pick the one reported.
_ERRORS_WEIGHED = 16


class InvalidSchema(ValueError):
    """A schema that cannot be a contract: malformed, of an unknown dialect, or dangling."""


def dialect_of(schema: Any) -> type[LibraryValidator]:
    """The validator class for ``schema``'s ``$schema`` (2020-12 when absent)."""
    library = load_library()
    declared = schema.get("$schema") if isinstance(schema, dict) else None
    if declared is None:
        return library.default
    if not isinstance(declared, str):
        raise InvalidSchema("$schema must be a string")
    found = library.dialects.get(declared.rstrip("#"))
    if found is None:
        raise InvalidSchema(f"unsupported $schema {_quote(declared)}")
    return found


def check_schema(schema: Any) -> type[LibraryValidator]:
    """Refuse ``schema`` unless it is valid for its dialect and every ``$ref`` resolves.

    Returns the validator class to use.  Raises :class:`InvalidSchema`.
    """
    if not isinstance(schema, dict | bool):
        raise InvalidSchema("a schema must be a JSON object or a boolean")
    cls = dialect_of(schema)
    library = load_library()
    try:
        cls.check_schema(typing.cast(Any, schema))
    except library.exceptions.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(root)"
        raise InvalidSchema(f"invalid schema at {where}: {_clip(exc.message)}") from None
    if isinstance(schema, dict):
        default = library.specification_with(cls.META_SCHEMA["$schema"])
        resource = library.referencing.Resource.from_contents(
            schema, default_specification=default)
        registry = library.metaschemas.with_resource(resource.id() or "", resource).crawl()
        _check_refs(resource, registry.resolver(base_uri=resource.id() or ""),
                    library.unresolvable)
    return cls


def _check_refs(resource: referencing.Resource[Any], resolver: Any,
                unresolvable: type[Exception]) -> None:
    contents = resource.contents
    if isinstance(contents, dict):
        ref = contents.get("$ref")
        if isinstance(ref, str):
            try:
                resolver.lookup(ref)
            except unresolvable:
                raise InvalidSchema(f"$ref {_quote(ref)} does not resolve") from None
    for sub in resource.subresources():
        _check_refs(sub, resolver.in_subresource(sub), unresolvable)


class SchemaCheck:
    """``check(instance) -> message | None`` for one schema; build with :func:`compile_schema`.

    ``fast`` tells whether the compiled fast path serves this schema.
    """

    __slots__ = ("fast", "library", "path", "predicate")

    def __init__(self, schema: Any, path: str = "arguments") -> None:
        cls = check_schema(schema)
        library = load_library()
        self.library = cls(schema, registry=library.no_remote)
        self.predicate = compile_fast(schema) if cls is library.default else None
        self.fast = self.predicate is not None
        self.path = path

    def __call__(self, instance: Any) -> str | None:
        predicate = self.predicate
        if predicate is not None and predicate(instance):
            return None
        return self.explain(instance)

    def explain(self, instance: Any) -> str | None:
        """The library's verdict, as a bounded message (``None`` when valid)."""
        weighed = itertools.islice(self.library.iter_errors(instance), _ERRORS_WEIGHED)
        error = load_library().exceptions.best_match(weighed)
        if error is None:
            return None
        return _clip(describe(error, self.path), MAX_ERROR_CHARS)


def compile_schema(schema: Any, path: str = "arguments") -> SchemaCheck:
    """Check ``schema`` (raising :class:`InvalidSchema`) and compile its validator once."""
    return SchemaCheck(schema, path)


def validate(instance: Any, schema: Any) -> str | None:
    """Return a message describing why ``instance`` breaks ``schema``, or ``None``."""
    return compile_schema(schema)(instance)


# -- messages ---------------------------------------------------------------------------

def where(root: str, path: Any) -> str:
    """``arguments.items[2].name`` for the instance path ``("items", 2, "name")``."""
    parts = [root]
    for step in path:
        parts.append(f"[{step}]" if isinstance(step, int) else f".{_clip(str(step))}")
    return "".join(parts)


def describe(error: ValidationError, root: str = "arguments") -> str:
    """A short sentence for one library error: the value's path and the rule it broke."""
    at = where(root, error.absolute_path)
    rule, instance = str(error.validator), error.instance
    value: Any = error.validator_value
    schema: Any = error.schema
    if error.validator is None:  # a ``false`` subschema: the library omits its last step
        return f"{at} holds a value that is not allowed ({_clip(error.message, 80)})"
    if rule == "type":
        types = value if isinstance(value, list) else [value]
        return f"{at} must be of type {' or '.join(map(str, types))}"
    if rule == "required" and isinstance(instance, dict):
        missing = next((n for n in value if n not in instance), "?")
        return f"{where(root, [*error.absolute_path, missing])} is required"
    if rule == "additionalProperties" and value is False and isinstance(instance, dict):
        extra = next((k for k in instance if k not in schema.get("properties", {})), "?")
        return f"{where(root, [*error.absolute_path, extra])} is not an allowed property"
    if rule == "enum":
        return f"{at} must be one of {_quote(value)}"
    if rule == "const":
        return f"{at} must be {_quote(value)}"
    simple = _SIMPLE.get(rule)
    if simple is not None:
        return f"{at} {simple.format(value)}"
    if value is False and rule in ("items", "additionalProperties", "unevaluatedProperties",
                                   "unevaluatedItems"):
        return f"{at} has a value that {rule}: false forbids"
    return f"{at} breaks {rule}: {_clip(error.message, 120)}"


_SIMPLE = {
    "minLength": "must be at least {} characters", "maxLength": "must be at most {} characters",
    "minItems": "must have at least {} items", "maxItems": "must have at most {} items",
    "minProperties": "must have at least {} properties",
    "maxProperties": "must have at most {} properties",
    "minimum": "must be >= {}", "maximum": "must be <= {}",
    "exclusiveMinimum": "must be > {}", "exclusiveMaximum": "must be < {}",
    "multipleOf": "must be a multiple of {}", "pattern": "must match {}",
    "uniqueItems": "must not repeat items", "anyOf": "does not match any allowed schema",
    "oneOf": "must match exactly one allowed schema", "not": "matches a forbidden schema",
    "false": "is not allowed",
}


def _quote(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return _clip(text, MAX_QUOTE_CHARS)


def _clip(text: str, limit: int = MAX_QUOTE_CHARS) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
