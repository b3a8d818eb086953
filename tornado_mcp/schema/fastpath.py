"""A compiled, fail-closed fast path for the simple JSON Schemas most tools declare.

:func:`compile_fast` turns a draft 2020-12 schema into ``valid(instance) -> bool`` when
*every* keyword in it, at every level, is one this module implements (``FAST_KEYWORDS``)
or only annotates (``ANNOTATIONS``, and ``x-`` extensions); for any other schema it
returns ``None`` and the caller uses the ``jsonschema`` library alone.

The predicate is sound in one direction by construction and tested in both: ``True`` is
final, ``False`` only means "ask the library" (which then gives the verdict and the
message).  ``tests/schema/test_json_schema_suite.py`` checks that on every case of the official
JSON-Schema-Test-Suite whose schema this module compiles, its verdict equals the
library's.  The rules follow the library's exactly: booleans are not numbers, ``1.0`` is
an integer, string length counts code points, ``enum``/``const`` compare as JSON (``1``
equals ``1.0``, ``true`` does not equal ``1``), and every keyword ignores values of the
types it does not apply to.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sized
from typing import Any

Predicate = Callable[[Any], bool]

FAST_KEYWORDS = frozenset({
    "type", "enum", "const", "properties", "required", "additionalProperties", "items",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
    "minItems", "maxItems", "minProperties", "maxProperties", "pattern",
})
#: Keywords that never change a verdict (``format`` asserts nothing in 2020-12 by default).
ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
    "writeOnly", "format", "contentMediaType", "contentEncoding",
})
_DIALECT = "https://json-schema.org/draft/2020-12/schema"

_TYPE_TESTS: dict[str, Predicate] = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "number": lambda v: type(v) is int or type(v) is float,
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
}


def _true(_v: Any) -> bool:
    return True


def _false(_v: Any) -> bool:
    return False


def compile_fast(schema: Any) -> Predicate | None:
    """``valid(instance)`` for a schema within the fast path's keywords, else ``None``."""
    if isinstance(schema, dict) and "$schema" in schema:
        if str(schema["$schema"]).rstrip("#") != _DIALECT:
            return None
        schema = {k: v for k, v in schema.items() if k != "$schema"}
    try:
        return _compile(schema)
    except _NotFast:
        return None


class _NotFast(Exception):
    pass


def _is_number(v: Any) -> bool:
    return (type(v) is int or type(v) is float) and type(v) is not bool


def _compile(s: Any) -> Predicate:
    if s is True:
        return _true
    if s is False:
        return _false
    if not isinstance(s, dict):
        raise _NotFast
    for key in s:
        if key not in FAST_KEYWORDS and key not in ANNOTATIONS and not key.startswith("x-"):
            raise _NotFast
    checks: list[Predicate] = []
    if "type" in s:
        checks.append(_type(s["type"]))
    if "enum" in s:
        checks.append(_enum(s["enum"]))
    if "const" in s:
        const = s["const"]
        checks.append(lambda v: json_equal(v, const))
    checks.extend(_numeric(s))
    checks.extend(_string(s))
    checks.extend(_object(s))
    checks.extend(_array(s))
    if not checks:
        return _true
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)
    return lambda v: all(c(v) for c in checks)


def _type(t: Any) -> Predicate:
    names = t if isinstance(t, list) else [t]
    tests = [_TYPE_TESTS[n] for n in names]
    if len(tests) == 1:
        return tests[0]
    return lambda v: any(test(v) for test in tests)


def _enum(values: list[Any]) -> Predicate:
    if all(type(x) is str for x in values):
        strings = frozenset(values)
        return lambda v: type(v) is str and v in strings
    return lambda v: any(json_equal(v, x) for x in values)


def _numeric(s: dict[str, Any]) -> list[Predicate]:
    out: list[Predicate] = []
    lo, hi = s.get("minimum"), s.get("maximum")
    xlo, xhi = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
    if lo is not None:
        out.append(lambda v: not _is_number(v) or v >= lo)
    if hi is not None:
        out.append(lambda v: not _is_number(v) or v <= hi)
    if xlo is not None:
        out.append(lambda v: not _is_number(v) or v > xlo)
    if xhi is not None:
        out.append(lambda v: not _is_number(v) or v < xhi)
    return out


def _sized(s: dict[str, Any], kind: type[Sized], min_key: str,
           max_key: str) -> list[Predicate]:
    """The ``min_key``/``max_key`` length bounds of a ``kind`` (other types pass)."""
    out: list[Predicate] = []
    lo, hi = s.get(min_key), s.get(max_key)
    if lo is not None:
        def long_enough(v: Any) -> bool:
            return type(v) is not kind or len(v) >= lo
        out.append(long_enough)
    if hi is not None:
        def short_enough(v: Any) -> bool:
            return type(v) is not kind or len(v) <= hi
        out.append(short_enough)
    return out


def _string(s: dict[str, Any]) -> list[Predicate]:
    out = _sized(s, str, "minLength", "maxLength")
    if "pattern" in s:
        try:
            search = re.compile(s["pattern"]).search
        except re.error:
            raise _NotFast from None
        out.append(lambda v: type(v) is not str or search(v) is not None)
    return out


def _object(s: dict[str, Any]) -> list[Predicate]:
    out = _sized(s, dict, "minProperties", "maxProperties")
    required = tuple(s.get("required", ()))
    props = {k: _compile(sub) for k, sub in s.get("properties", {}).items()}
    extra = _compile(s["additionalProperties"]) if "additionalProperties" in s else None
    if extra is _true:
        extra = None
    if not required and not props and extra is None:
        return out
    lookup = props.get

    def check_object(v: Any) -> bool:
        if type(v) is not dict:
            return True
        for name in required:
            if name not in v:
                return False
        for name, value in v.items():
            sub = lookup(name, extra)
            if sub is not None and not sub(value):
                return False
        return True
    out.append(check_object)
    return out


def _array(s: dict[str, Any]) -> list[Predicate]:
    out = _sized(s, list, "minItems", "maxItems")
    if "items" in s:
        items = _compile(s["items"])
        if items is not _true:
            out.append(lambda v: type(v) is not list or all(items(x) for x in v))
    return out


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema means it: ``1 == 1.0``, ``true != 1``, recursively."""
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is str or tb is str:
        return bool(a == b)
    if ta is bool or tb is bool:
        return False
    if ta is list and tb is list:
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if ta is dict and tb is dict:
        return len(a) == len(b) and all(k in b and json_equal(x, b[k]) for k, x in a.items())
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return bool(ta is tb and a == b) if ta not in (list, dict) and tb not in (list, dict) \
        else False
