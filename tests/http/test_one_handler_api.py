"""One handler API for both eras: ``ctx.sample()``, ``ctx.elicit()`` and ``ctx.list_roots()``
in a tool written once, driven by the official Python SDK client in a legacy session
(server-to-client requests) and at 2026-07-28 (input-required rounds); and, where neither
is possible, an error that says why and a ``client_supports`` that tells the truth.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError as ClientMCPError
from mcp_http import LEGACY, MODERN, modern_meta, running

from tornado_mcp import Context, InputRequired, Server
from tornado_mcp.server.input import ElicitationSchemaError, elicitation

STEP = 10.0
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}},
             "required": ["name"]}

pytestmark = [pytest.mark.timeout(90),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def build() -> tuple[Server, list[str]]:
    server = Server("one-api")
    runs: list[str] = []

    @server.tool()
    async def interview(topic: str, ctx: Context) -> str:
        """Ask the user's name, sample a line about the topic, list the roots."""
        runs.append(topic)
        form = await ctx.elicit("Your name?", NAME_FORM)
        name = form["content"]["name"] if form.get("action") == "accept" else "anonymous"
        sampled = await ctx.sample(
            [{"role": "user", "content": {"type": "text", "text": f"One line on {topic}"}}], 50)
        roots = await ctx.list_roots()
        uris = ",".join(r["uri"] for r in roots.get("roots", []))
        return f"{name} / {sampled['content']['text']} / {uris}"

    @server.tool()
    def supports(ctx: Context) -> str:
        return ",".join(k for k in ("sampling", "elicitation", "roots")
                        if ctx.client_supports(k))

    @server.tool()
    async def sample_once(ctx: Context) -> str:
        reply = await ctx.sample([{"role": "user",
                                   "content": {"type": "text", "text": "hi"}}], 10)
        return str(reply["content"]["text"])

    @server.tool()
    async def endless(ctx: Context) -> str:
        for _ in range(100):
            await ctx.elicit("Again?", {"type": "object",
                                        "properties": {"ok": {"type": "boolean"}}})
        return "never"

    @server.tool()
    async def bad_form(ctx: Context) -> str:
        await ctx.elicit("Book?", {"type": "object"})
        return "never"

    return server, runs


async def elicit_cb(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def sample_cb(context: Any, params: Any) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", model="m",
                                     content=types.TextContent(type="text", text="tornadoes spin"))


async def roots_cb(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///work")])


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_one_tool_samples_elicits_and_lists_roots_in_both_eras(mode: str) -> None:
    server, runs = build()
    async with running(server) as srv:
        with anyio.fail_after(4 * STEP):
            async with Client(srv.url, mode=mode, read_timeout_seconds=STEP,  # type: ignore[arg-type]
                              elicitation_callback=elicit_cb, sampling_callback=sample_cb,
                              list_roots_callback=roots_cb) as client:
                assert client.protocol_version == (LEGACY if mode == "legacy" else MODERN)
                assert text_of(await client.call_tool("supports", {})) == \
                    "sampling,elicitation,roots"
                result = await client.call_tool("interview", {"topic": "weather"})
                assert not result.is_error, result
                assert text_of(result) == "Ada / tornadoes spin / file:///work"
    # Legacy: one run with three server-to-client requests.  2026-07-28: the tool is
    # re-run from the start once per input round (three rounds, four runs).
    assert len(runs) == (1 if mode == "legacy" else 4)


async def test_modern_rounds_carry_earlier_answers_and_are_deterministic() -> None:
    server, _ = build()
    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    async with running(server) as srv:
        params: dict[str, Any] = {"name": "interview", "arguments": {"topic": "x"},
                                  "_meta": modern_meta(caps)}
        first = (await srv.modern("tools/call", params)).json["result"]
        assert first["resultType"] == "input_required"
        assert list(first["inputRequests"]) == ["elicitation-0"]
        assert first["inputRequests"]["elicitation-0"]["method"] == "elicitation/create"
        again = (await srv.modern("tools/call", params)).json["result"]
        assert list(again["inputRequests"]) == ["elicitation-0"]
        second = (await srv.modern("tools/call", {
            **params, "requestState": first["requestState"],
            "inputResponses": {"elicitation-0": {"action": "accept",
                                                 "content": {"name": "Bo"}}}})).json["result"]
        assert list(second["inputRequests"]) == ["sampling-1"]
        # Only the latest answer travels back; the earlier one is in the sealed state.
        third = (await srv.modern("tools/call", {
            **params, "requestState": second["requestState"],
            "inputResponses": {"sampling-1": {"role": "assistant", "model": "m",
                                              "content": {"type": "text", "text": "t"}}}}
        )).json["result"]
        assert list(third["inputRequests"]) == ["roots-2"]
        done = (await srv.modern("tools/call", {
            **params, "requestState": third["requestState"],
            "inputResponses": {"roots-2": {"roots": []}}})).json["result"]
        assert done["resultType"] == "complete"
        assert done["content"][0]["text"] == "Bo / t / "


async def test_modern_input_rounds_are_bounded_with_a_clear_error() -> None:
    server, _ = build()
    async with running(server) as srv:
        params: dict[str, Any] = {"name": "endless", "arguments": {},
                                  "_meta": modern_meta({"elicitation": {}})}
        state: str | None = None
        answer: dict[str, Any] = {}
        for _ in range(20):
            p = dict(params, inputResponses=answer) if state else params
            if state:
                p["requestState"] = state
            r = await srv.modern("tools/call", p)
            body = r.json
            if "error" in body:
                break
            result = body["result"]
            state = result["requestState"]
            answer = {k: {"action": "accept", "content": {"ok": True}}
                      for k in result["inputRequests"]}
        else:
            pytest.fail("the input rounds never ended")
        assert "input rounds" in body["error"]["message"]


async def test_modern_sample_without_the_capability_names_it() -> None:
    server, _ = build()
    async with running(server) as srv:
        r = await srv.modern("tools/call", {"name": "sample_once", "arguments": {}})
        assert r.status == 400
        assert r.json["error"]["code"] == -32021
        assert r.json["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


async def test_stateless_legacy_says_stateless_mode_is_why_sampling_is_unavailable() -> None:
    server, _ = build()
    async with running(server, stateless=True) as srv:
        init = await srv.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                               "params": {"protocolVersion": LEGACY,
                                          "capabilities": {"sampling": {}},
                                          "clientInfo": {"name": "c", "version": "1"}}})
        assert init.status == 200
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "sample_once", "arguments": {}}}
        r = await srv.post(call, version=LEGACY)
        error = r.messages[-1]["error"]
        assert "stateless" in error["message"]
        assert "capability" not in error["message"]
        supports = await srv.post({**call, "params": {"name": "supports", "arguments": {}}},
                                  version=LEGACY)
        assert supports.messages[-1]["result"]["content"][0]["text"] == ""


async def test_json_response_mode_client_supports_is_false_and_sample_says_why() -> None:
    server, _ = build()
    async with running(server, json_response=True) as srv:
        sid = await srv.initialize(capabilities={"sampling": {}, "roots": {}})
        supports = await srv.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                   "params": {"name": "supports", "arguments": {}}},
                                  session=sid, headers={"Accept": "application/json"})
        assert supports.json["result"]["content"][0]["text"] == ""
        r = await srv.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                            "params": {"name": "sample_once", "arguments": {}}},
                           session=sid, headers={"Accept": "application/json"})
        assert "JSON response mode does not support" in r.json["error"]["message"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_elicitation_schema_without_properties_is_a_clear_error(
        mode: str, caplog: pytest.LogCaptureFixture) -> None:
    """The developer reads why in the server log; the client gets one error, at once."""
    server, _ = build()
    async with running(server) as srv:
        with anyio.fail_after(2 * STEP):
            async with Client(srv.url, mode=mode, read_timeout_seconds=STEP,  # type: ignore[arg-type]
                              elicitation_callback=elicit_cb) as client:
                with pytest.raises(ClientMCPError) as err:
                    await client.call_tool("bad_form", {})
                assert err.value.error.code == -32603
    logged = [r for r in caplog.records if r.exc_info
              and isinstance(r.exc_info[1], ElicitationSchemaError)]
    assert logged and '"properties" is required' in str(logged[0].exc_info[1])


@pytest.mark.parametrize("schema", [
    {"type": "object"},
    {"type": "object", "properties": {"address": {"type": "object", "properties": {}}}},
    {"type": "array", "properties": {}},
    {"type": "object", "properties": {"n": {"type": "string"}}, "required": ["m"]},
])
def test_elicitation_schemas_are_checked_when_built(schema: dict[str, Any]) -> None:
    with pytest.raises(ElicitationSchemaError):
        elicitation("?", schema)


def test_spec_shaped_elicitation_schemas_are_accepted() -> None:
    elicitation("?", {"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1, "default": "x"},
        "age": {"type": "integer", "minimum": 0},
        "ok": {"type": "boolean"},
        "colour": {"type": "string", "enum": ["red", "blue"]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
    }, "required": ["name"]})


def input_required_server() -> Server:
    server = Server("asks")

    @server.tool()
    async def ask_by_result(ctx: Context) -> Any:
        if "answer" in ctx.input_responses:
            return "answered"
        return InputRequired({"answer": elicitation("Name?", {
            "type": "object", "properties": {"name": {"type": "string"}}})})

    return server


@pytest.mark.parametrize(("options", "mode"), [({"json_response": True}, "json_response"),
                                               ({"stateless": True}, "stateless")])
async def test_input_required_where_no_question_can_flow_names_the_mode(
        options: dict[str, Any], mode: str) -> None:
    """A client that declared elicitation is not told it lacks it: the error names the
    mode, with a code of its own (-32031, ``data.mode``)."""
    async with running(input_required_server(), **options) as srv:
        sid = None if options.get("stateless") else \
            await srv.initialize(capabilities={"elicitation": {}})
        r = await srv.post({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                            "params": {"name": "ask_by_result", "arguments": {}}},
                           session=sid, headers={"Accept": "application/json, text/event-stream"})
        body = r.messages[-1] if r.messages else r.json
        assert body["id"] == 7
        assert body["error"]["code"] == -32031
        assert body["error"]["data"] == {"mode": mode}
        assert "capability" not in body["error"]["message"].lower()
