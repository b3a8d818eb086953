"""A small JSON Schema validator for tool arguments, compiled once per schema.

It covers what tool input schemas use in practice: ``type`` (with lists of types),
``properties``, ``required``, ``additionalProperties``, ``items``, ``enum``, ``const``,
``minimum``/``maximum`` (and exclusive forms), ``minLength``/``maxLength``, ``pattern``,
``minItems``/``maxItems``, ``anyOf``/``oneOf``/``allOf``/``not``, ``if``/``then``/``else`` and
local ``$ref`` into ``$defs``/``definitions`` (by JSON pointer or ``$anchor``).  Keywords it
does not know are ignored, so a schema is never refused for using them.  Schemas are kept
verbatim for ``tools/list``; this module only reads them.

:func:`compile_schema` turns a schema into a function ``check(instance) -> message | None``
once, so a tool call pays only for the checks its schema asks for.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any, str], "str | None"]

_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
    "number": lambda v: type(v) is int or type(v) is float,
}
MAX_DEPTH = 64


def validate(instance: Any, schema: Any) -> str | None:
    """Return a message describing the first violation, or ``None`` when ``instance`` fits."""
    return compile_schema(schema)(instance)


def compile_schema(schema: Any) -> Callable[[Any], str | None]:
    """Compile ``schema`` into ``check(instance) -> message | None``."""
    compiler = _Compiler(schema)
    check = compiler.compile(schema, 0)
    return lambda instance: check(instance, "arguments")


def _ok(_v: Any, _path: str) -> str | None:
    return None


def _is_number(v: Any) -> bool:
    return type(v) is int or type(v) is float


class _Compiler:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}

    def resolve(self, ref: str) -> Any:
        if ref.startswith("#/"):
            node = self.root
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(node, dict) or part not in node:
                    return {}
                node = node[part]
            return node
        if ref.startswith("#") and len(ref) > 1:
            found = _find_anchor(self.root, ref[1:])
            return {} if found is None else found
        return self.root if ref == "#" else {}

    def ref(self, ref: str, depth: int) -> Check:
        if ref not in self.refs:
            # Recursive schemas: point at a slot filled once the target is compiled.
            slot: list[Check] = [_ok]
            self.refs[ref] = lambda v, p: slot[0](v, p)
            slot[0] = self.compile(self.resolve(ref), depth + 1)
        return self.refs[ref]

    def compile(self, s: Any, depth: int) -> Check:
        if s is False:
            return lambda v, p: f"{p} is not allowed"
        if not isinstance(s, dict) or depth > MAX_DEPTH:
            return _ok
        checks: list[Check] = []
        if isinstance(s.get("$ref"), str):
            checks.append(self.ref(s["$ref"], depth))
        if "type" in s:
            types = s["type"] if isinstance(s["type"], list) else [s["type"]]
            tests = [_TYPES.get(t, lambda _v: True) for t in types if isinstance(t, str)]
            label = " or ".join(map(str, types))
            checks.append(lambda v, p: None if any(t(v) for t in tests)
                          else f"{p} must be of type {label}")
        if "enum" in s and isinstance(s["enum"], list):
            enum = s["enum"]
            checks.append(lambda v, p: None if v in enum else f"{p} must be one of {enum}")
        if "const" in s:
            const = s["const"]
            checks.append(lambda v, p: None if v == const else f"{p} must be {const!r}")
        checks.extend(self.numeric(s))
        checks.extend(self.string(s))
        obj = self.object(s, depth)
        if obj is not None:
            checks.append(obj)
        arr = self.array(s, depth)
        if arr is not None:
            checks.append(arr)
        checks.extend(self.combinators(s, depth))
        if not checks:
            return _ok
        if len(checks) == 1:
            return checks[0]

        def all_checks(v: Any, p: str) -> str | None:
            for check in checks:
                err = check(v, p)
                if err is not None:
                    return err
            return None
        return all_checks

    @staticmethod
    def numeric(s: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        for key, word in (("minimum", ">="), ("maximum", "<="),
                          ("exclusiveMinimum", ">"), ("exclusiveMaximum", "<")):
            bound = s.get(key)
            if _is_number(bound):
                out.append(_bound_check(_BOUND_FAILS[word], bound, word))
        return out

    @staticmethod
    def string(s: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        lo, hi = s.get("minLength"), s.get("maxLength")
        if isinstance(lo, int):
            out.append(lambda v, p: f"{p} must be at least {lo} characters"
                       if type(v) is str and len(v) < lo else None)
        if isinstance(hi, int):
            out.append(lambda v, p: f"{p} must be at most {hi} characters"
                       if type(v) is str and len(v) > hi else None)
        if isinstance(s.get("pattern"), str):
            try:
                rx = re.compile(s["pattern"])
            except re.error:
                return out
            out.append(lambda v, p: f"{p} must match {rx.pattern}"
                       if type(v) is str and not rx.search(v) else None)
        return out

    def object(self, s: dict[str, Any], depth: int) -> Check | None:
        required = [r for r in s.get("required", ()) if isinstance(r, str)] \
            if isinstance(s.get("required"), list) else []
        raw_props = s.get("properties")
        props = {k: self.compile(v, depth + 1) for k, v in raw_props.items()} \
            if isinstance(raw_props, dict) else {}
        extra_schema = s.get("additionalProperties", True)
        extra: Check | None = None
        if extra_schema is False:
            extra = lambda v, p: f"{p} is not an allowed property"  # noqa: E731
        elif isinstance(extra_schema, dict):
            extra = self.compile(extra_schema, depth + 1)
        if not required and not props and extra is None:
            return None

        def check_object(v: Any, p: str) -> str | None:
            if type(v) is not dict:
                return None
            for name in required:
                if name not in v:
                    return f"{p}.{name} is required"
            for name, value in v.items():
                sub = props.get(name)
                if sub is None:
                    sub = extra
                    if sub is None:
                        continue
                err = sub(value, f"{p}.{name}")
                if err is not None:
                    return err
            return None
        return check_object

    def array(self, s: dict[str, Any], depth: int) -> Check | None:
        lo, hi = s.get("minItems"), s.get("maxItems")
        items = self.compile(s["items"], depth + 1) if isinstance(s.get("items"), dict) else None
        if lo is None and hi is None and items is None:
            return None

        def check_array(v: Any, p: str) -> str | None:
            if type(v) is not list:
                return None
            if isinstance(lo, int) and len(v) < lo:
                return f"{p} must have at least {lo} items"
            if isinstance(hi, int) and len(v) > hi:
                return f"{p} must have at most {hi} items"
            if items is not None:
                for i, item in enumerate(v):
                    err = items(item, f"{p}[{i}]")
                    if err is not None:
                        return err
            return None
        return check_array

    def combinators(self, s: dict[str, Any], depth: int) -> list[Check]:
        out: list[Check] = []

        def subs(key: str) -> list[Check]:
            value = s.get(key)
            return [self.compile(x, depth + 1) for x in value] if isinstance(value, list) else []

        all_of, any_of, one_of = subs("allOf"), subs("anyOf"), subs("oneOf")
        out.extend(all_of)
        if any_of:
            out.append(lambda v, p: None if any(c(v, p) is None for c in any_of)
                       else f"{p} does not match any allowed schema")
        if one_of:
            out.append(lambda v, p: None if sum(c(v, p) is None for c in one_of) == 1
                       else f"{p} must match exactly one allowed schema")
        if "not" in s:
            negated = self.compile(s["not"], depth + 1)
            out.append(lambda v, p: f"{p} matches a forbidden schema"
                       if negated(v, p) is None else None)
        if "if" in s:
            cond = self.compile(s["if"], depth + 1)
            then = self.compile(s["then"], depth + 1) if "then" in s else _ok
            other = self.compile(s["else"], depth + 1) if "else" in s else _ok
            out.append(lambda v, p: then(v, p) if cond(v, p) is None else other(v, p))
        return out


_BOUND_FAILS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": lambda v, b: bool(v < b), "<=": lambda v, b: bool(v > b),
    ">": lambda v, b: bool(v <= b), "<": lambda v, b: bool(v >= b),
}


def _bound_check(fails: Callable[[Any, Any], bool], bound: Any, word: str) -> Check:
    def check(v: Any, p: str) -> str | None:
        return f"{p} must be {word} {bound}" if _is_number(v) and fails(v, bound) else None
    return check


def _find_anchor(node: Any, anchor: str) -> Any:
    if isinstance(node, dict):
        if node.get("$anchor") == anchor:
            return node
        for v in node.values():
            found = _find_anchor(v, anchor)
            if found is not None:
                return found
    elif isinstance(node, list):
        for v in node:
            found = _find_anchor(v, anchor)
            if found is not None:
                return found
    return None
