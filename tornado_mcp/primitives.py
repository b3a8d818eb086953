"""What a server offers: tools, resources, resource templates and prompts.

Each is a small record built from a function and the metadata clients see.  The
function's signature supplies what the metadata leaves out: a tool's input schema, a
prompt's arguments, and whether the handler wants the request :class:`Context`.
"""

from __future__ import annotations

import base64
import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .context import Context
from .jsonschema import compile_schema
from .offloop import call_handler
from .uritemplate import UriTemplate

Handler = Callable[..., Any]

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean",
                               list: "array", dict: "object"}


#: Result types that are never awaitable: skip the (slower) general check for them.
_PLAIN = frozenset({str, dict, list, bytes, int, float, bool, type(None)})


@dataclass
class HandlerSpec:
    """A user function and how to call it."""

    fn: Handler
    ctx_param: str | None
    params: list[inspect.Parameter]
    accepts_kwargs: bool

    @classmethod
    def of(cls, fn: Handler) -> HandlerSpec:
        sig = inspect.signature(fn)
        try:
            hints = typing.get_type_hints(fn)
        except Exception:  # unresolvable forward references: fall back to names
            hints = {}
        ctx_param = None
        params: list[inspect.Parameter] = []
        accepts_kwargs = False
        for p in sig.parameters.values():
            if p.kind is p.VAR_KEYWORD:
                accepts_kwargs = True
                continue
            if p.kind is p.VAR_POSITIONAL:
                continue
            ann = hints.get(p.name, p.annotation)
            if ann is Context or (isinstance(ann, str) and ann.split(".")[-1] == "Context") \
                    or (ann is inspect.Parameter.empty and p.name in ("ctx", "context")):
                ctx_param = p.name
                continue
            params.append(p)
        return cls(fn, ctx_param, params, accepts_kwargs)

    async def call(self, ctx: Context, kwargs: dict[str, Any]) -> Any:
        if self.ctx_param is not None:
            kwargs = {**kwargs, self.ctx_param: ctx}
        result = call_handler(self.fn, kwargs)  # a plain def: in the transport's pool
        if type(result) is types.CoroutineType or (
                type(result) not in _PLAIN and inspect.isawaitable(result)):
            result = await result
        return result

    def input_schema(self) -> dict[str, Any]:
        """A JSON Schema for the function's parameters (for tools declared without one)."""
        try:
            hints = typing.get_type_hints(self.fn)
        except Exception:
            hints = {}
        props: dict[str, Any] = {}
        required = []
        for p in self.params:
            props[p.name] = _schema_for(hints.get(p.name))
            if p.default is inspect.Parameter.empty:
                required.append(p.name)
            elif p.default is not None and isinstance(p.default, str | int | float | bool):
                props[p.name]["default"] = p.default
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        return schema


def _schema_for(ann: Any) -> dict[str, Any]:
    if ann is None or ann is Any:
        return {}
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        return _schema_for(args[0]) if len(args) == 1 else {}
    if origin is typing.Literal:
        return {"enum": list(typing.get_args(ann))}
    if origin in (list, tuple, set, frozenset):
        item_types = typing.get_args(ann)
        return {"type": "array", **({"items": _schema_for(item_types[0])} if item_types else {})}
    if origin is dict:
        return {"type": "object"}
    t = _JSON_TYPES.get(ann)
    return {"type": t} if t else {}


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@dataclass
class Tool:
    name: str
    handler: HandlerSpec
    input_schema: dict[str, Any]
    title: str | None = None
    description: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    #: ``Mcp-Param-<Name>`` headers: lower-cased header name -> property path.
    header_params: dict[str, tuple[str, ...]] = field(default_factory=dict)

    validate: Callable[[Any], str | None] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.header_params = _header_params(self.input_schema)
        self.validate = compile_schema(self.input_schema)

    def describe(self) -> dict[str, Any]:
        return _drop_none({
            "name": self.name, "title": self.title, "description": self.description,
            "inputSchema": self.input_schema, "outputSchema": self.output_schema,
            "annotations": self.annotations, "icons": self.icons, "_meta": self.meta,
        })


def _header_params(schema: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    found: dict[str, tuple[str, ...]] = {}

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            return
        props = node.get("properties")
        if not isinstance(props, dict):
            return
        for name, sub in props.items():
            if not isinstance(sub, dict):
                continue
            header = sub.get("x-mcp-header")
            if isinstance(header, str) and header:
                found[header.lower()] = (*path, name)
            walk(sub, (*path, name))

    walk(schema, ())
    return found


@dataclass
class Resource:
    uri: str
    name: str
    handler: HandlerSpec
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    icons: list[dict[str, Any]] | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None

    def describe(self) -> dict[str, Any]:
        return _drop_none({
            "uri": self.uri, "name": self.name, "title": self.title,
            "description": self.description, "mimeType": self.mime_type, "size": self.size,
            "icons": self.icons, "annotations": self.annotations, "_meta": self.meta,
        })


@dataclass
class ResourceTemplate:
    uri_template: str
    name: str
    handler: HandlerSpec
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    icons: list[dict[str, Any]] | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None
    template: UriTemplate = field(init=False)

    def __post_init__(self) -> None:
        self.template = UriTemplate(self.uri_template)

    def describe(self) -> dict[str, Any]:
        return _drop_none({
            "uriTemplate": self.uri_template, "name": self.name, "title": self.title,
            "description": self.description, "mimeType": self.mime_type, "icons": self.icons,
            "annotations": self.annotations, "_meta": self.meta,
        })


@dataclass
class PromptArgument:
    name: str
    description: str | None = None
    required: bool = False
    title: str | None = None

    def describe(self) -> dict[str, Any]:
        return _drop_none({"name": self.name, "title": self.title,
                           "description": self.description,
                           "required": self.required or None})


@dataclass
class Prompt:
    name: str
    handler: HandlerSpec
    arguments: list[PromptArgument]
    title: str | None = None
    description: str | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None

    def describe(self) -> dict[str, Any]:
        d = _drop_none({"name": self.name, "title": self.title,
                        "description": self.description, "icons": self.icons,
                        "_meta": self.meta})
        if self.arguments:
            d["arguments"] = [a.describe() for a in self.arguments]
        return d


# -- result shaping ---------------------------------------------------------------------

def text(value: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": value}


def image(data: bytes | str, mime_type: str) -> dict[str, Any]:
    """An image content block (``data`` as bytes or already base64)."""
    return {"type": "image", "data": _b64(data), "mimeType": mime_type}


def audio(data: bytes | str, mime_type: str) -> dict[str, Any]:
    """An audio content block (``data`` as bytes or already base64)."""
    return {"type": "audio", "data": _b64(data), "mimeType": mime_type}


def embedded_resource(uri: str, text_value: str | None = None, blob: bytes | None = None,
                      mime_type: str | None = None) -> dict[str, Any]:
    """An embedded resource content block."""
    res: dict[str, Any] = {"uri": uri}
    if mime_type:
        res["mimeType"] = mime_type
    if blob is not None:
        res["blob"] = _b64(blob)
    else:
        res["text"] = text_value or ""
    return {"type": "resource", "resource": res}


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode()
