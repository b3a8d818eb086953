"""The request schemas: marshmallow defines them; the compiled fast path must agree.

``schemas.load`` answers plainly well-formed input through a checker compiled from each
schema's own field declarations, and everything else through marshmallow. These tests hold
the two to the same results: identical output where the fast path answers, and
marshmallow's errors everywhere else.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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
    (schemas.SET_LEVEL_PARAMS, {}),
    (schemas.SET_LEVEL_PARAMS, {"other": 1}),
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


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=2),
    max_leaves=4)


def field_keys(schema: Schema) -> list[str]:
    return [f.data_key or name for name, f in schema.fields.items()]


def nested_values(schema: Schema) -> st.SearchStrategy[Any]:
    """Objects for a nested schema: its own keys (sometimes) with any values."""
    return st.dictionaries(st.sampled_from(field_keys(schema)), st.text(max_size=3)
                           | st.integers() | st.none(), max_size=4)


ALL_SCHEMAS = [schemas.ENVELOPE, schemas.TOOL_CALL_PARAMS, schemas.INITIALIZE_PARAMS,
               schemas.URI_PARAMS, schemas.PROMPT_GET_PARAMS, schemas.CURSOR_PARAMS,
               schemas.SUBSCRIPTION_FILTER, schemas.COMPLETE_PARAMS, schemas.SET_LEVEL_PARAMS]


def test_every_request_schema_is_held_to_marshmallow() -> None:
    """The property test below covers every schema the module defines."""
    defined = {id(v) for v in vars(schemas).values() if isinstance(v, Schema)}
    assert defined == {id(s) for s in ALL_SCHEMAS}


@pytest.mark.parametrize("schema", ALL_SCHEMAS)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_loaders_agree_with_marshmallow(schema: Schema, data: st.DataObject) -> None:
    """Any mix of the schema's own keys (and strangers) with any JSON values: where the
    generated loader answers, marshmallow answers the same; elsewhere it defers."""
    values = JSON_VALUES
    for field in schema.fields.values():
        nested = getattr(field, "schema", None)
        if isinstance(nested, Schema):
            values = values | nested_values(nested)
    keys = st.sampled_from([*field_keys(schema), "x-other"])
    doc = data.draw(st.dictionaries(keys, values, max_size=6))
    loader = schemas._compiled(schema)
    fast = loader(doc) if loader is not None else None
    if fast is not None:
        assert fast == marshmallow_result(schema, doc)
    elif loader is not None:  # deferred: load() gives marshmallow's answer, error or not
        try:
            got: dict[str, Any] | str = load(schema, doc, "params")
        except MCPError:
            got = "error"
        assert got == marshmallow_result(schema, doc)
