"""The request schemas: marshmallow defines them; the compiled fast path must agree.

``schemas.load`` answers plainly well-formed input through a checker compiled from each
schema's own field declarations, and everything else through marshmallow. These tests hold
the two to the same results: identical output where the fast path answers, and
marshmallow's errors everywhere else.
"""

from __future__ import annotations

from typing import Any

import pytest
from marshmallow import Schema

from tornado_mcp.protocol import shapes as schemas
from tornado_mcp.protocol.errors import MCPError
from tornado_mcp.protocol.shapes import load

V = "io.modelcontextprotocol/protocolVersion"
C = "io.modelcontextprotocol/clientCapabilities"
I = "io.modelcontextprotocol/clientInfo"  # noqa: E741
L = "io.modelcontextprotocol/logLevel"

CASES: list[tuple[Schema, dict[str, Any]]] = [
    (schemas.ENVELOPE, {V: "2026-07-28", C: {}}),
    (schemas.ENVELOPE, {V: "2026-07-28", C: {"sampling": {}}, I: {"name": "c", "version": "1"},
                        "progressToken": 7, "x-extra": [1]}),
    (schemas.ENVELOPE, {V: "2026-07-28", C: {}, L: "info"}),
    (schemas.ENVELOPE, {V: "2026-07-28", C: {}, L: "loud"}),
    (schemas.ENVELOPE, {V: "2026-07-28"}),
    (schemas.ENVELOPE, {C: {}}),
    (schemas.ENVELOPE, {V: 2026, C: {}}),
    (schemas.ENVELOPE, {V: "2026-07-28", C: []}),
    (schemas.ENVELOPE, {V: "2026-07-28", C: None}),
    (schemas.ENVELOPE, {V: "2026-07-28", C: {}, I: {"name": "c"}}),
    (schemas.ENVELOPE, {V: "2026-07-28", C: {}, I: {"name": "c", "version": 1}}),
    (schemas.ENVELOPE, {V: "2026-07-28", C: {}, I: "client"}),
    (schemas.TOOL_CALL_PARAMS, {"name": "echo", "arguments": {"text": "hi"}}),
    (schemas.TOOL_CALL_PARAMS, {"name": "echo"}),
    (schemas.TOOL_CALL_PARAMS, {"name": "echo", "arguments": None}),
    (schemas.TOOL_CALL_PARAMS, {"name": "echo", "arguments": []}),
    (schemas.TOOL_CALL_PARAMS, {"name": 3}),
    (schemas.TOOL_CALL_PARAMS, {}),
    (schemas.INITIALIZE_PARAMS, {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "c", "version": "1", "title": "C"}}),
    (schemas.INITIALIZE_PARAMS, {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "c", "version": "1", "title": 5}}),
    (schemas.INITIALIZE_PARAMS, {"protocolVersion": "2025-11-25", "capabilities": {}}),
    (schemas.SUBSCRIPTION_FILTER, {"toolsListChanged": True, "resourceSubscriptions": ["a"]}),
    (schemas.SUBSCRIPTION_FILTER, {"toolsListChanged": 1}),
    (schemas.SUBSCRIPTION_FILTER, {"resourceSubscriptions": ["a", None]}),
    (schemas.URI_PARAMS, {"uri": "test://x"}),
    (schemas.URI_PARAMS, {"uri": None}),
    (schemas.PROMPT_GET_PARAMS, {"name": "p", "arguments": {"a": "b"}}),
    (schemas.PROMPT_GET_PARAMS, {"name": "p", "arguments": {"a": 1}}),
    (schemas.SET_LEVEL_PARAMS, {"level": "debug"}),
    (schemas.SET_LEVEL_PARAMS, {"level": "verbose"}),
    (schemas.CURSOR_PARAMS, {"cursor": None}),
    (schemas.COMPLETE_PARAMS, {"ref": {}, "argument": {}, "context": {}}),
    (schemas.COMPLETE_PARAMS, {"ref": {}, "argument": "a"}),
]


def marshmallow_result(schema: Schema, data: dict[str, Any]) -> dict[str, Any] | str:
    from marshmallow import ValidationError
    try:
        out: dict[str, Any] = schema.load(data)
        return out
    except ValidationError:
        return "error"


@pytest.mark.parametrize(("schema", "data"), CASES)
def test_load_agrees_with_marshmallow(schema: Schema, data: dict[str, Any]) -> None:
    expected = marshmallow_result(schema, data)
    try:
        got: dict[str, Any] | str = load(schema, data, "params")
    except MCPError as exc:
        assert exc.code == -32602
        got = "error"
    assert got == expected


def test_fast_path_answers_the_common_requests_without_marshmallow(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Schema] = []
    real = Schema.load

    def spy(self: Schema, *args: Any, **kwargs: Any) -> Any:
        calls.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Schema, "load", spy)
    load(schemas.ENVELOPE, {V: "2026-07-28", C: {}}, "_meta")
    load(schemas.TOOL_CALL_PARAMS, {"name": "echo", "arguments": {}}, "tools/call")
    assert calls == []
    load(schemas.ENVELOPE, {V: "2026-07-28", C: {}, L: "info"}, "_meta")  # has a validator
    assert calls == [schemas.ENVELOPE]


def test_errors_name_the_field() -> None:
    with pytest.raises(MCPError) as info:
        load(schemas.ENVELOPE, {V: "2026-07-28"}, "_meta")
    assert "clientCapabilities" in info.value.message
