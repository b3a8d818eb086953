"""What a server offers: tools, resources, resource templates and prompts.

Each is a small record built from a function and the metadata clients see.  The
function's signature supplies what the metadata leaves out: a tool's input schema, a
prompt's arguments, and whether the handler wants the request :class:`Context`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..protocol.uritemplate import UriTemplate
from .contract import HandlerSpec, ToolContract

__all__ = ["Prompt", "PromptArgument", "Resource", "ResourceTemplate", "Tool"]


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
    """One argument of a prompt, as ``prompts/list`` describes it: its name, whether it is
    required, and an optional title and description."""

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
