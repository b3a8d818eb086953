"""What a server offers: tools, resources, resource templates and prompts.

Each is a small record built from a function and the metadata clients see.  The
function's signature supplies what the metadata leaves out: a tool's input schema, a
prompt's arguments, and whether the handler wants the request :class:`Context`.
"""

from __future__ import annotations

import asyncio
import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..protocol.uritemplate import UriTemplate
from .context import Context
from .contract import ToolContract, input_schema_for
from .results import audio, embedded_resource, image, resource_link, text
from .sync_handlers import call_handler

Handler = Callable[..., Any]

__all__ = ["Handler", "HandlerSpec", "Prompt", "PromptArgument", "Resource",
           "ResourceTemplate", "Tool", "audio", "embedded_resource", "image",
           "resource_link", "text"]


#: Result types that are never awaitable: skip the (slower) general check for them.
_PLAIN = frozenset({str, dict, list, bytes, int, float, bool, type(None)})


@dataclass
class HandlerSpec:
    """A user function and how to call it."""

    fn: Handler
    ctx_param: str | None
    params: list[inspect.Parameter]
    accepts_kwargs: bool
    #: Resolved annotations (``Annotated`` kept), by parameter name and ``"return"``.
    hints: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, fn: Handler) -> HandlerSpec:
        sig = inspect.signature(fn)
        hints = _hints(fn)
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
        return cls(fn, ctx_param, params, accepts_kwargs, hints)

    async def call(self, ctx: Context, kwargs: dict[str, Any]) -> Any:
        if self.ctx_param is not None:
            kwargs = {**kwargs, self.ctx_param: ctx}
        result = call_handler(self.fn, kwargs)  # a plain def: in the transport's pool
        kind = type(result)
        if kind is types.CoroutineType or kind is asyncio.Future or (  # the pool's future
                kind not in _PLAIN and inspect.isawaitable(result)):
            result = await result
        return result

    def input_schema(self) -> dict[str, Any]:
        """A JSON Schema for the function's parameters (for tools declared without one)."""
        return input_schema_for(self)


def _hints(fn: Handler) -> dict[str, Any]:
    """``fn``'s resolved annotations.  One that cannot be resolved (a class local to a
    function, under ``from __future__ import annotations``) is kept as its string, which
    a tool's schema builder then refuses by name."""
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:
        pass
    out: dict[str, Any] = {}
    globalns = getattr(fn, "__globals__", {})
    for name, ann in getattr(fn, "__annotations__", {}).items():
        try:
            out[name] = typing.get_type_hints(
                _Probe(ann), globalns=globalns, include_extras=True)["x"]
        except Exception:
            out[name] = ann
    return out


class _Probe:
    """An object whose only annotation is ``x``, for resolving one annotation."""

    def __init__(self, ann: Any) -> None:
        self.__annotations__ = {"x": ann}


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@dataclass
class Tool:
    name: str
    handler: HandlerSpec
    #: ``None`` derives it from the signature; always a dict once the tool is built.
    input_schema: dict[str, Any] | None
    title: str | None = None
    description: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    #: ``Mcp-Param-<Name>`` headers: lower-cased header name -> property path.
    header_params: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: ``True``/``False`` forces/prevents an ``outputSchema`` from the return annotation.
    structured_output: bool | None = None

    contract: ToolContract = field(init=False, repr=False)
    validate: Callable[[Any], str | None] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """Check the schemas and build the contract: a bad schema or an untranslatable
        parameter type fails here, when the tool is declared."""
        self.contract = ToolContract(self.name, self.handler, self.input_schema,
                                     self.output_schema, self.structured_output)
        self.input_schema = self.contract.input_schema
        self.output_schema = self.contract.output_schema
        self.header_params = _header_params(self.input_schema)
        self.validate = self.contract.check

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
