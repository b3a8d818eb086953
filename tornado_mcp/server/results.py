"""Shaping what handlers return into MCP results, and the content-block helpers.

A tool may return a string (one text block), a content block or a list of them, a full
result dict (with ``content`` and/or ``structuredContent``), ``None``, or data.  Data from
a tool with an ``outputSchema`` (declared, or derived from its return annotation) becomes
``structuredContent``, validated against the schema, with its JSON text mirrored in a text
block for clients that predate structured output (that shaping checks the tool's contract,
so it is :func:`tornado_mcp.server.contract.tool_result`)::

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b
    # -> {"content": [{"type": "text", "text": "{\\"result\\": 3}"}],
    #     "structuredContent": {"result": 3}}
"""

from __future__ import annotations

import base64
from typing import Any

from ..protocol import jsonio
from ..schema.convert import to_json


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


def resource_link(uri: str, name: str, *, title: str | None = None,
                  description: str | None = None, mime_type: str | None = None,
                  size: int | None = None,
                  annotations: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``resource_link`` content block: a pointer the client may read later, e.g.
    ``resource_link("file:///reports/q3.pdf", "q3.pdf", mime_type="application/pdf")``."""
    block: dict[str, Any] = {"type": "resource_link", "uri": uri, "name": name}
    for key, value in (("title", title), ("description", description),
                       ("mimeType", mime_type), ("size", size),
                       ("annotations", annotations)):
        if value is not None:
            block[key] = value
    return block


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode()


def plain_tool_result(raw: Any) -> dict[str, Any]:
    """The result for a tool without an ``outputSchema``."""
    if isinstance(raw, dict) and ("content" in raw or "structuredContent" in raw):
        result = dict(raw)
        result.setdefault("content", [])
        return result
    if raw is None:
        return {"content": []}
    if isinstance(raw, str):
        return {"content": [text(raw)]}
    if isinstance(raw, dict) and "type" in raw:
        return {"content": [raw]}
    if isinstance(raw, list) and all(isinstance(b, dict) and "type" in b for b in raw):
        return {"content": raw}
    if type(raw) not in (dict, list, int, float, bool):
        raw = to_json(raw)  # a dataclass, an enum, a model...
    return {"content": [text(jsonio.dumps_str(raw))],
            "structuredContent": raw if isinstance(raw, dict) else {"result": raw}}


def contents_result(uri: str, raw: Any, mime_type: str | None) -> dict[str, Any]:
    """The ``resources/read`` result for what a resource handler returned."""
    def one(item: Any) -> dict[str, Any]:
        if isinstance(item, dict):
            return {"uri": uri, **item}
        entry: dict[str, Any] = {"uri": uri}
        if mime_type:
            entry["mimeType"] = mime_type
        if isinstance(item, bytes | bytearray):
            entry["blob"] = base64.b64encode(bytes(item)).decode()
        else:
            entry["text"] = str(item)
        return entry
    if isinstance(raw, dict) and "contents" in raw:
        return dict(raw)
    items = raw if isinstance(raw, list) else [raw]
    return {"contents": [one(i) for i in items]}


def prompt_result(raw: Any, description: str | None) -> dict[str, Any]:
    """The ``prompts/get`` result for what a prompt handler returned."""
    if isinstance(raw, dict) and "messages" in raw:
        return {str(k): v for k, v in raw.items()}
    items = raw if isinstance(raw, list) else [raw]
    messages = []
    for item in items:
        if isinstance(item, str):
            messages.append({"role": "user", "content": text(item)})
        elif isinstance(item, dict) and "role" in item:
            messages.append(item)
        elif isinstance(item, dict):
            messages.append({"role": "user", "content": item})
    result: dict[str, Any] = {"messages": messages}
    if description:
        result["description"] = description
    return result
