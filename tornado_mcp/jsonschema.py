"""A small JSON Schema validator for tool arguments.

It covers what tool input schemas use in practice: ``type`` (with lists of types),
``properties``, ``required``, ``additionalProperties``, ``items``, ``enum``, ``const``,
``minimum``/``maximum`` (and exclusive forms), ``minLength``/``maxLength``, ``pattern``,
``minItems``/``maxItems``, ``anyOf``/``oneOf``/``allOf``/``not``, ``if``/``then``/``else`` and
local ``$ref`` into ``$defs``/``definitions`` (by JSON pointer or ``$anchor``).  Keywords it
does not know are ignored, so a schema is never refused for using them.  Schemas are kept
verbatim for ``tools/list``; this module only reads them.
"""

from __future__ import annotations

import re
from typing import Any

_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}


def validate(instance: Any, schema: Any) -> str | None:
    """Return a message describing the first violation, or ``None`` when ``instance`` fits."""
    return _Validator(schema).check(instance, schema, "arguments")


class _Validator:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.depth = 0

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
            return self.find_anchor(self.root, ref[1:]) or {}
        return self.root if ref == "#" else {}

    def find_anchor(self, node: Any, anchor: str) -> Any:
        if isinstance(node, dict):
            if node.get("$anchor") == anchor:
                return node
            for v in node.values():
                found = self.find_anchor(v, anchor)
                if found is not None:
                    return found
        elif isinstance(node, list):
            for v in node:
                found = self.find_anchor(v, anchor)
                if found is not None:
                    return found
        return None

    def check(self, v: Any, s: Any, path: str) -> str | None:
        if s is True or not isinstance(s, dict):
            return None if s is not False else f"{path} is not allowed"
        self.depth += 1
        try:
            if self.depth > 64:
                return None
            if "$ref" in s:
                err = self.check(v, self.resolve(s["$ref"]), path)
                if err:
                    return err
            t = s.get("type")
            if t is not None:
                types = t if isinstance(t, list) else [t]
                if not any(_TYPES.get(x, lambda _v: True)(v) for x in types):
                    return f"{path} must be of type {' or '.join(map(str, types))}"
            if "enum" in s and v not in s["enum"]:
                return f"{path} must be one of {s['enum']}"
            if "const" in s and v != s["const"]:
                return f"{path} must be {s['const']!r}"
            if isinstance(v, int | float) and not isinstance(v, bool):
                if "minimum" in s and v < s["minimum"]:
                    return f"{path} must be >= {s['minimum']}"
                if "maximum" in s and v > s["maximum"]:
                    return f"{path} must be <= {s['maximum']}"
                em, eM = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
                if isinstance(em, int | float) and not isinstance(em, bool) and v <= em:
                    return f"{path} must be > {em}"
                if isinstance(eM, int | float) and not isinstance(eM, bool) and v >= eM:
                    return f"{path} must be < {eM}"
            if isinstance(v, str):
                if "minLength" in s and len(v) < s["minLength"]:
                    return f"{path} must be at least {s['minLength']} characters"
                if "maxLength" in s and len(v) > s["maxLength"]:
                    return f"{path} must be at most {s['maxLength']} characters"
                if "pattern" in s:
                    try:
                        if not re.search(s["pattern"], v):
                            return f"{path} must match {s['pattern']}"
                    except re.error:
                        pass
            if isinstance(v, dict):
                err = self.check_object(v, s, path)
                if err:
                    return err
            if isinstance(v, list):
                if "minItems" in s and len(v) < s["minItems"]:
                    return f"{path} must have at least {s['minItems']} items"
                if "maxItems" in s and len(v) > s["maxItems"]:
                    return f"{path} must have at most {s['maxItems']} items"
                items = s.get("items")
                if isinstance(items, dict):
                    for i, item in enumerate(v):
                        err = self.check(item, items, f"{path}[{i}]")
                        if err:
                            return err
            for sub in s.get("allOf", ()):
                err = self.check(v, sub, path)
                if err:
                    return err
            if "anyOf" in s and all(self.check(v, sub, path) for sub in s["anyOf"]):
                return f"{path} does not match any allowed schema"
            if "oneOf" in s and sum(self.check(v, sub, path) is None for sub in s["oneOf"]) != 1:
                return f"{path} must match exactly one allowed schema"
            if "not" in s and self.check(v, s["not"], path) is None:
                return f"{path} matches a forbidden schema"
            if "if" in s:
                branch = s.get("then") if self.check(v, s["if"], path) is None else s.get("else")
                if branch is not None:
                    err = self.check(v, branch, path)
                    if err:
                        return err
            return None
        finally:
            self.depth -= 1

    def check_object(self, v: dict[str, Any], s: dict[str, Any], path: str) -> str | None:
        for name in s.get("required", ()):
            if name not in v:
                return f"{path}.{name} is required"
        props = s.get("properties") or {}
        for name, value in v.items():
            if name in props:
                err = self.check(value, props[name], f"{path}.{name}")
                if err:
                    return err
            else:
                extra = s.get("additionalProperties", True)
                if extra is False:
                    return f"{path}.{name} is not an allowed property"
                if isinstance(extra, dict):
                    err = self.check(value, extra, f"{path}.{name}")
                    if err:
                        return err
        return None
