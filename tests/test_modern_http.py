"""Protocol 2026-07-28 on the dual-era endpoint (issue 3), over real HTTP.

Era routing per request, the ``_meta`` envelope, the routing-header checks (-32020), the
status ladder (400 / 404), result stamping (``resultType``, ``serverInfo``, cache hints),
``server/discover``, JSON versus SSE responses, cancellation by closing the response, and
input-required results with sealed request state.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp_http import (
    LEGACY,
    MODERN,
    TIMEOUT,
    Reply,
    Running,
    conformance_server,
    modern_body,
    modern_header_lines,
    modern_meta,
    raw_exchange,
    running,
)

from tornado_mcp import Context, InputRequired, RequestStateCodec, Server, elicitation

SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
CONFORMANCE_INFO = {"name": "tornado-mcp-conformance", "version": "0.1.0"}
NON_ASCII_URI = "test://docs/résumé-日本"

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def srv() -> AsyncIterator[Running]:
    async with running(conformance_server()) as s:
        yield s


def b64(value: str) -> str:
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode() + "?="


def error_of(reply: Reply) -> dict[str, Any]:
    body = reply.json
    assert "error" in body, body
    err: dict[str, Any] = body["error"]
    return err


def result_of(reply: Reply) -> dict[str, Any]:
    assert reply.status == 200, (reply.status, reply.body)
    final = reply.messages[-1]
    assert "result" in final, final
    result: dict[str, Any] = final["result"]
    return result


def tool_text(result: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in result["content"])


async def post_modern_raw(srv: Running, body: bytes,
                          headers: dict[str, str] | None = None) -> Reply:
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "MCP-Protocol-Version": MODERN}
    h.update(headers or {})
    return await srv.request("POST", body, h)


# -- era routing ------------------------------------------------------------------------------

async def test_modern_header_without_session_is_served_statelessly(srv: Running) -> None:
    r = await srv.modern("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert r.status == 200
    assert r.content_type.startswith("application/json")
    assert "Mcp-Session-Id" not in r.headers
    result = result_of(r)
    assert result["resultType"] == "complete"
    assert tool_text(result) == "hi"
    assert len(srv.transport.sessions) == 0


async def test_plain_initialize_with_modern_header_stays_legacy(srv: Running) -> None:
    r = await srv.post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"protocolVersion": MODERN, "capabilities": {},
                                   "clientInfo": {"name": "c", "version": "1"}}},
                       version=MODERN)
    assert r.status == 200, r.body
    assert r.headers.get("Mcp-Session-Id")
    result = r.json["result"]
    assert result["protocolVersion"] == "2025-11-25"  # counter-offered: a handshake version
    assert "resultType" not in result
    assert len(srv.transport.sessions) == 1


async def test_initialize_carrying_the_envelope_goes_modern_and_is_removed(srv: Running) -> None:
    r = await srv.modern("initialize", {"protocolVersion": MODERN, "capabilities": {},
                                        "clientInfo": {"name": "c", "version": "1"}})
    assert r.status == 404
    assert error_of(r)["code"] == -32601
    assert len(srv.transport.sessions) == 0


async def test_session_with_modern_header_stays_legacy(srv: Running) -> None:
    sid = await srv.initialize()
    r = await srv.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session=sid,
                       version=MODERN)
    assert r.status == 200
    assert r.content_type.startswith("text/event-stream")
    result = result_of(r)
    assert result["tools"]
    assert "resultType" not in result and "ttlMs" not in result
    # ...and a modern envelope on that session is refused as a lifecycle confusion.
    r2 = await srv.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
                         "params": {"_meta": modern_meta()}}, session=sid, version=MODERN)
    assert r2.status == 400
    assert error_of(r2)["code"] == -32600
    assert "legacy lifecycle" in error_of(r2)["message"]


@pytest.mark.parametrize("with_session", [False, True])
async def test_unknown_version_goes_modern_and_gets_32022(srv: Running,
                                                          with_session: bool) -> None:
    headers = {"MCP-Protocol-Version": "2027-01-01", "Mcp-Method": "tools/list"}
    if with_session:
        headers["Mcp-Session-Id"] = await srv.initialize()
    r = await post_modern_raw(srv, modern_body("tools/list", request_id=42), headers)
    assert r.status == 400
    err = error_of(r)
    assert err["code"] == -32022
    assert err["data"] == {"supported": [MODERN], "requested": "2027-01-01"}
    assert r.json["id"] == 42


async def test_unknown_version_on_get_and_delete_is_405(srv: Running) -> None:
    sid = await srv.initialize()
    for method in ("GET", "DELETE"):
        r = await srv.request(method, None, {"Accept": "text/event-stream",
                                             "Mcp-Session-Id": sid,
                                             "MCP-Protocol-Version": "1999-01-01"})
        assert r.status == 405, method
    assert srv.transport.sessions.get(sid) is not None


async def test_legacy_post_with_envelope_but_no_modern_header_is_32020(srv: Running) -> None:
    sid = await srv.initialize()
    r = await srv.post({"jsonrpc": "2.0", "id": 5, "method": "tools/list",
                        "params": {"_meta": modern_meta()}}, session=sid)
    assert r.status == 400
    assert error_of(r)["code"] == -32020


# -- protocol_versions: modern only ---------------------------------------------------------

async def test_modern_only_endpoint() -> None:
    async with running(conformance_server(), protocol_versions=[MODERN]) as srv:
        for method in ("GET", "DELETE"):
            r = await srv.request(method, None, {"Accept": "text/event-stream",
                                                 "Mcp-Session-Id": "whatever"})
            assert r.status == 405, method
        # Mcp-Session-Id is ignored: never looked up, never minted or echoed.
        r = await srv.modern("tools/list", headers={"Mcp-Session-Id": "no-such-session"})
        assert r.status == 200, r.body
        assert "Mcp-Session-Id" not in r.headers
        assert result_of(r)["resultType"] == "complete"
        # A legacy initialize is refused with 400 naming the supported versions.
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": LEGACY, "capabilities": {},
                           "clientInfo": {"name": "c", "version": "1"}}}
        no_header = await srv.post(init)
        assert no_header.status == 400
        assert error_of(no_header)["code"] == -32022
        assert error_of(no_header)["data"]["supported"] == [MODERN]
        legacy_header = await srv.post(init, version=LEGACY)
        assert legacy_header.status == 400
        assert error_of(legacy_header)["code"] == -32022
        assert error_of(legacy_header)["data"] == {"supported": [MODERN],
                                                   "requested": LEGACY}
        for reply in (no_header, legacy_header):
            assert "Mcp-Session-Id" not in reply.headers
        assert len(srv.transport.sessions) == 0
        # server/discover still works and names only the modern version.
        d = await srv.modern("server/discover")
        assert result_of(d)["supportedVersions"] == [MODERN]


async def test_legacy_only_endpoint_refuses_the_modern_header() -> None:
    async with running(conformance_server(), protocol_versions=[LEGACY]) as srv:
        r = await srv.modern("tools/list")
        assert r.status == 400
        assert error_of(r)["code"] in (-32600, -32022)  # a client falls back to initialize
        assert "Mcp-Session-Id" not in r.headers
        assert len(srv.transport.sessions) == 0
        legacy_discover = await srv.post({"jsonrpc": "2.0", "id": 1,
                                          "method": "server/discover"})
        assert result_of(legacy_discover)["capabilities"]["tools"]
        sid = await srv.initialize()
        ok = await srv.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session=sid)
        assert ok.status == 200 and result_of(ok)["tools"]


async def test_legacy_only_discover_advertises_no_modern_version() -> None:
    async with running(conformance_server(), protocol_versions=[LEGACY]) as srv:
        r = await srv.post({"jsonrpc": "2.0", "id": 1, "method": "server/discover"})
        assert result_of(r)["supportedVersions"] == []


# -- the _meta envelope -----------------------------------------------------------------------

@pytest.mark.parametrize("meta", [
    None,  # no _meta at all
    {"io.modelcontextprotocol/protocolVersion": MODERN},  # no clientCapabilities
    {"io.modelcontextprotocol/clientCapabilities": {}},  # no protocolVersion
    {"io.modelcontextprotocol/protocolVersion": MODERN,
     "io.modelcontextprotocol/clientCapabilities": ["sampling"]},  # not an object
    {"io.modelcontextprotocol/protocolVersion": MODERN,
     "io.modelcontextprotocol/clientCapabilities": {},
     "io.modelcontextprotocol/clientInfo": {"name": "no-version"}},  # malformed clientInfo
], ids=["missing", "no-capabilities", "no-version", "capabilities-list", "bad-client-info"])
async def test_invalid_envelope_is_400_32602(srv: Running, meta: dict[str, Any] | None) -> None:
    params: dict[str, Any] = {} if meta is None else {"_meta": meta}
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list",
                       "params": params}).encode()
    r = await post_modern_raw(srv, body, {"Mcp-Method": "tools/list"})
    assert r.status == 400, r.body
    assert error_of(r)["code"] == -32602
    assert r.json["id"] == 9


async def test_envelope_without_params_at_all_is_400_32602(srv: Running) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).encode()
    r = await post_modern_raw(srv, body, {"Mcp-Method": "tools/list"})
    assert r.status == 400
    assert error_of(r)["code"] == -32602


async def test_client_info_is_optional(srv: Running) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}
    r = await srv.modern("tools/call", {"name": "echo", "arguments": {"text": "x"}}, meta=meta)
    assert r.status == 200
    assert tool_text(result_of(r)) == "x"


# -- routing headers: -32020 --------------------------------------------------------------------

async def raw_call(srv: Running, lines: list[tuple[str, str]], method: str = "tools/call",
                   params: dict[str, Any] | None = None, request_id: Any = 1) -> Any:
    if params is None:
        params = {"name": "echo", "arguments": {"text": "hi"}}
    return await raw_exchange(srv.port, "POST", modern_body(method, params, request_id), lines)


def base_lines(method: str = "tools/call") -> list[tuple[str, str]]:
    return [("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", MODERN)]


async def test_protocol_version_header_must_match_envelope(srv: Running) -> None:
    meta = modern_meta()
    meta["io.modelcontextprotocol/protocolVersion"] = LEGACY
    r = await srv.modern("tools/list", meta=meta, request_id=7)
    assert r.status == 400
    assert error_of(r)["code"] == -32020
    assert r.json["id"] == 7


async def test_missing_protocol_version_header_with_envelope_on_sessionless_post(
        srv: Running) -> None:
    # No version header: the legacy path, which refuses the modern envelope with -32020.
    r = await srv.request("POST", modern_body("tools/list"), {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "Mcp-Method": "tools/list"})
    assert r.status == 400
    assert error_of(r)["code"] == -32020


@pytest.mark.parametrize("mcp_method", [None, "", "tools/list", "TOOLS/CALL", "Tools/Call"],
                         ids=["missing", "empty", "other-method", "upper", "mixed"])
async def test_mcp_method_header_missing_or_mismatched(srv: Running,
                                                       mcp_method: str | None) -> None:
    lines = [*base_lines(), ("Mcp-Name", "echo")]
    if mcp_method is not None:
        lines.append(("Mcp-Method", mcp_method))
    r = await raw_call(srv, lines, request_id=11)
    assert r.status == 400, r.body
    assert r.json["error"]["code"] == -32020
    assert "Mcp-Method" in r.json["error"]["message"]
    assert r.json["id"] == 11


async def test_body_method_disagreeing_with_header(srv: Running) -> None:
    r = await raw_call(srv, [*base_lines(), ("Mcp-Method", "prompts/list")],
                       method="tools/list", params={})
    assert r.status == 400
    assert r.json["error"]["code"] == -32020
    # Same header, body agreeing: fine.
    ok = await raw_call(srv, [*base_lines(), ("Mcp-Method", "prompts/list")],
                        method="prompts/list", params={})
    assert ok.status == 200, ok.body


async def test_header_names_in_odd_case_are_accepted(srv: Running) -> None:
    lines = [("content-type", "application/json"),
             ("ACCEPT", "application/json, text/event-stream"),
             ("mcp-protocol-version", MODERN), ("mcp-method", "tools/call"),
             ("MCP-NAME", "echo")]
    r = await raw_call(srv, lines)
    assert r.status == 200, r.body
    assert r.json["result"]["content"][0]["text"] == "hi"


async def test_whitespace_around_header_values_is_trimmed(srv: Running) -> None:
    lines = [*base_lines(), ("Mcp-Method", "   tools/call  "), ("Mcp-Name", "\techo  ")]
    r = await raw_call(srv, lines)
    assert r.status == 200, r.body


@pytest.mark.parametrize("dup", ["Mcp-Method", "mcp-name", "MCP-Protocol-Version"])
async def test_duplicated_routing_header_is_32020(srv: Running, dup: str) -> None:
    values = {"mcp-method": "tools/call", "mcp-name": "echo",
              "mcp-protocol-version": MODERN}
    lines = [("Content-Type", "application/json"),
             ("Accept", "application/json, text/event-stream"),
             ("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"),
             ("Mcp-Name", "echo"), (dup, values[dup.lower()])]  # same value, twice
    r = await raw_call(srv, lines)
    assert r.status == 400, r.body
    assert r.json["error"]["code"] == -32020
    assert "duplicated" in r.json["error"]["message"]


@pytest.mark.parametrize(("method", "params"), [
    ("tools/call", {"name": "echo", "arguments": {"text": "x"}}),
    ("prompts/get", {"name": "test_simple_prompt"}),
    ("resources/read", {"uri": "test://static-text"}),
])
async def test_mcp_name_required_and_matched(srv: Running, method: str,
                                             params: dict[str, Any]) -> None:
    name = params.get("name") or params["uri"]
    lines = [*base_lines(), ("Mcp-Method", method)]
    missing = await raw_call(srv, lines, method, params)
    assert missing.status == 400 and missing.json["error"]["code"] == -32020
    assert "Mcp-Name" in missing.json["error"]["message"]
    wrong = await raw_call(srv, [*lines, ("Mcp-Name", name + "x")], method, params)
    assert wrong.status == 400 and wrong.json["error"]["code"] == -32020
    upper = await raw_call(srv, [*lines, ("Mcp-Name", name.upper())], method, params)
    assert upper.status == 400 and upper.json["error"]["code"] == -32020
    ok = await raw_call(srv, [*lines, ("Mcp-Name", name)], method, params)
    assert ok.status == 200, ok.body
    assert ok.json["result"]["resultType"] == "complete"
    encoded = await raw_call(srv, [*lines, ("Mcp-Name", b64(name))], method, params)
    assert encoded.status == 200, encoded.body


async def test_base64_mcp_name_with_non_ascii_uri() -> None:
    server = Server("unicode")

    @server.resource(NON_ASCII_URI, "resume")
    def resume() -> str:
        return "contents"

    async with running(server) as srv:
        lines = [*base_lines(), ("Mcp-Method", "resources/read")]
        params = {"uri": NON_ASCII_URI}
        ok = await raw_call(srv, [*lines, ("Mcp-Name", b64(NON_ASCII_URI))],
                            "resources/read", params)
        assert ok.status == 200, ok.body
        assert ok.json["result"]["contents"][0]["text"] == "contents"
        assert ok.json["result"]["contents"][0]["uri"] == NON_ASCII_URI
        other = await raw_call(srv, [*lines, ("Mcp-Name", b64("test://docs/resume"))],
                               "resources/read", params)
        assert other.status == 400
        assert other.json["error"]["code"] == -32020


@pytest.mark.parametrize("value", ["=?base64?not base64!?=", "=?base64?YQ?=",
                                   "=?base64?" + base64.b64encode(b"\xff\xfe").decode() + "?="],
                         ids=["bad-chars", "bad-padding", "not-utf8"])
async def test_invalid_base64_header_is_32020(srv: Running, value: str) -> None:
    r = await raw_call(srv, [*base_lines(), ("Mcp-Method", "tools/call"), ("Mcp-Name", value)])
    assert r.status == 400, r.body
    assert r.json["error"]["code"] == -32020


class TestMcpParamHeader:
    PARAMS = {"name": "test_x_mcp_header", "arguments": {"region": "eu-west-1"}}

    def lines(self) -> list[tuple[str, str]]:
        return [*base_lines(), ("Mcp-Method", "tools/call"), ("Mcp-Name", "test_x_mcp_header")]

    async def test_matching_value(self, srv: Running) -> None:
        r = await raw_call(srv, [*self.lines(), ("Mcp-Param-Region", "eu-west-1")],
                           params=self.PARAMS)
        assert r.status == 200, r.body
        assert r.json["result"]["content"][0]["text"] == "Region: eu-west-1"

    async def test_odd_case_name(self, srv: Running) -> None:
        r = await raw_call(srv, [*self.lines(), ("mcp-param-REGION", "eu-west-1")],
                           params=self.PARAMS)
        assert r.status == 200, r.body

    async def test_mismatch(self, srv: Running) -> None:
        r = await raw_call(srv, [*self.lines(), ("Mcp-Param-Region", "us-east-1")],
                           params=self.PARAMS)
        assert r.status == 400
        assert r.json["error"]["code"] == -32020
        assert "mcp-param-region" in r.json["error"]["message"].lower()

    async def test_missing_while_argument_present(self, srv: Running) -> None:
        r = await raw_call(srv, self.lines(), params=self.PARAMS)
        assert r.status == 400
        assert r.json["error"]["code"] == -32020
        assert "mcp-param-region" in r.json["error"]["message"].lower()

    async def test_base64_form(self, srv: Running) -> None:
        params = {"name": "test_x_mcp_header", "arguments": {"region": "Zürich "}}
        r = await raw_call(srv, [*self.lines(), ("Mcp-Param-Region", b64("Zürich "))],
                           params=params)
        assert r.status == 200, r.body
        assert r.json["result"]["content"][0]["text"] == "Region: Zürich "
        bad = await raw_call(srv, [*self.lines(), ("Mcp-Param-Region", b64("Zurich"))],
                             params=params)
        assert bad.status == 400 and bad.json["error"]["code"] == -32020

    async def test_duplicated(self, srv: Running) -> None:
        r = await raw_call(srv, [*self.lines(), ("Mcp-Param-Region", "eu-west-1"),
                                 ("Mcp-Param-Region", "eu-west-1")], params=self.PARAMS)
        assert r.status == 400 and r.json["error"]["code"] == -32020


# -- capabilities and methods ------------------------------------------------------------------

async def test_missing_client_capability_is_400_32021(srv: Running) -> None:
    r = await srv.modern("tools/call", {"name": "test_missing_capability", "arguments": {}},
                         request_id="cap-1")
    assert r.status == 400
    err = error_of(r)
    assert err["code"] == -32021
    assert err["data"]["requiredCapabilities"] == {"sampling": {}}
    assert r.json["id"] == "cap-1"
    ok = await srv.modern("tools/call", {"name": "test_missing_capability", "arguments": {}},
                          meta=modern_meta({"sampling": {}}))
    assert ok.status == 200
    assert "declared sampling" in tool_text(result_of(ok))


async def test_require_client_capability_with_a_nested_path() -> None:
    server = Server("nested")

    @server.tool()
    def needs_form(ctx: Context) -> str:
        ctx.require_client_capability("elicitation", "form")
        return "ok"

    async with running(server) as srv:
        r = await srv.modern("tools/call", {"name": "needs_form", "arguments": {}},
                             meta=modern_meta({"elicitation": {}}))
        assert r.status == 400
        assert error_of(r)["data"]["requiredCapabilities"] == {"elicitation": {"form": {}}}
        ok = await srv.modern("tools/call", {"name": "needs_form", "arguments": {}},
                              meta=modern_meta({"elicitation": {"form": {}}}))
        assert ok.status == 200


@pytest.mark.parametrize("method", ["no/such/method", "initialize", "ping", "logging/setLevel",
                                    "resources/subscribe", "resources/unsubscribe"])
async def test_unknown_and_removed_methods_are_404_32601(srv: Running, method: str) -> None:
    r = await srv.modern(method, {"uri": "test://static-text", "level": "info"},
                         request_id=314)
    assert r.status == 404, r.body
    assert r.content_type.startswith("application/json")
    assert error_of(r)["code"] == -32601
    assert r.json["id"] == 314


async def test_methods_behind_unadvertised_capabilities_are_404() -> None:
    server = Server("tools-only")

    @server.tool()
    def only() -> str:
        return "ok"

    async with running(server) as srv:
        for method, params in (("prompts/list", {}), ("prompts/get", {"name": "p"}),
                               ("resources/list", {}), ("resources/read", {"uri": "x://y"}),
                               ("resources/templates/list", {}),
                               ("completion/complete",
                                {"ref": {"type": "ref/prompt", "name": "p"},
                                 "argument": {"name": "a", "value": ""}})):
            r = await srv.modern(method, params, request_id=method)
            assert r.status == 404, (method, r.body)
            assert error_of(r)["code"] == -32601
            assert r.json["id"] == method
        assert (await srv.modern("tools/list")).status == 200


async def test_unknown_tool_is_400_32602(srv: Running) -> None:
    r = await srv.modern("tools/call", {"name": "nope", "arguments": {}})
    assert r.status == 400
    assert error_of(r)["code"] == -32602


async def test_handler_crash_is_200_32603_without_leaking() -> None:
    server = Server("crash")

    @server.method("x/crash")
    def crash(params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("secret detail")

    async with running(server) as srv:
        r = await srv.modern("x/crash")
        assert r.status == 200  # -32603 is not on the 400 ladder
        assert error_of(r)["code"] == -32603
        assert "secret" not in r.body.decode()


# -- result stamping -------------------------------------------------------------------------

STAMPED_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("server/discover", {}),
    ("tools/list", {}),
    ("tools/call", {"name": "echo", "arguments": {"text": "x"}}),
    ("prompts/list", {}),
    ("prompts/get", {"name": "test_simple_prompt"}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "test://static-text"}),
    ("resources/read", {"uri": "test://template/7/data"}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                             "argument": {"name": "arg1", "value": "pa"}}),
]
CACHEABLE = {"server/discover", "tools/list", "prompts/list", "resources/list",
             "resources/templates/list", "resources/read"}


@pytest.mark.parametrize(("method", "params"), STAMPED_CALLS,
                         ids=[f"{m}-{i}" for i, (m, _) in enumerate(STAMPED_CALLS)])
async def test_every_result_is_stamped(srv: Running, method: str,
                                       params: dict[str, Any]) -> None:
    result = result_of(await srv.modern(method, params))
    assert result["resultType"] == "complete"
    assert result["_meta"][SERVER_INFO_KEY] == CONFORMANCE_INFO
    assert "serverInfo" not in result
    if method in CACHEABLE:
        assert result["ttlMs"] == 0
        assert result["cacheScope"] == "private"
    else:
        assert "ttlMs" not in result and "cacheScope" not in result


async def test_custom_method_and_input_required_results_are_stamped(srv: Running) -> None:
    r = await srv.modern("tools/call", {"name": "test_input_required_result_elicitation",
                                        "arguments": {}},
                         meta=modern_meta({"elicitation": {}}))
    result = result_of(r)
    assert result["resultType"] == "input_required"
    assert result["_meta"][SERVER_INFO_KEY] == CONFORMANCE_INFO
    assert "ttlMs" not in result
    server = Server("custom")

    @server.method("x/empty")
    def empty(params: dict[str, Any]) -> None:
        return None

    async with running(server) as s2:
        assert result_of(await s2.modern("x/empty")) == {
            "resultType": "complete", "_meta": {SERVER_INFO_KEY: {"name": "custom",
                                                                  "version": "0.1.0"}}}


async def test_cache_hints_server_level_and_per_resource() -> None:
    server = Server("cachey", ttl_ms=60_000, cache_scope="public", instructions="hi")

    @server.tool()
    def t() -> str:
        return "t"

    @server.prompt()
    def p() -> str:
        return "p"

    @server.resource("test://default")
    def default() -> str:
        return "d"

    @server.resource("test://special", ttl_ms=5, cache_scope="private")
    def special() -> str:
        return "s"

    @server.resource("test://only-ttl", ttl_ms=1234)
    def only_ttl() -> str:
        return "o"

    @server.resource("test://tpl/{n}", ttl_ms=77, cache_scope="private")
    def tpl(n: str) -> str:
        return n

    async with running(server) as srv:
        for method in ("server/discover", "tools/list", "prompts/list", "resources/list",
                       "resources/templates/list"):
            result = result_of(await srv.modern(method))
            assert (result["ttlMs"], result["cacheScope"]) == (60_000, "public"), method
        expected = {"test://default": (60_000, "public"), "test://special": (5, "private"),
                    "test://only-ttl": (1234, "public"), "test://tpl/9": (77, "private")}
        for uri, hints in expected.items():
            result = result_of(await srv.modern("resources/read", {"uri": uri}))
            assert (result["ttlMs"], result["cacheScope"]) == hints, uri
        # Legacy results carry none of it.
        sid = await srv.initialize()
        legacy = await srv.post({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                                 "params": {"uri": "test://special"}}, session=sid)
        legacy_result = result_of(legacy)
        assert "ttlMs" not in legacy_result and "resultType" not in legacy_result


def test_cache_scope_is_validated() -> None:
    with pytest.raises(ValueError):
        Server("bad", cache_scope="shared")


async def test_resource_not_found_per_era(srv: Running) -> None:
    r = await srv.modern("resources/read", {"uri": "test://nowhere"}, request_id=3)
    assert r.status == 400
    err = error_of(r)
    assert err["code"] == -32602
    assert err["data"] == {"uri": "test://nowhere"}
    sid = await srv.initialize()
    legacy = await srv.post({"jsonrpc": "2.0", "id": 4, "method": "resources/read",
                             "params": {"uri": "test://nowhere"}}, session=sid)
    assert legacy.status == 200
    legacy_err = legacy.messages[-1]["error"]
    assert legacy_err["code"] == -32002
    assert legacy_err["data"] == {"uri": "test://nowhere"}


# -- server/discover ----------------------------------------------------------------------------

async def test_discover_on_the_modern_path(srv: Running) -> None:
    r = await srv.modern("server/discover", request_id="d-1")
    assert r.status == 200 and r.content_type.startswith("application/json")
    result = result_of(r)
    assert result["supportedVersions"] == [MODERN]
    assert result["instructions"] == "Conformance fixtures for tornado-mcp."
    caps = result["capabilities"]
    assert caps["tools"] == {"listChanged": True}
    assert caps["resources"] == {"listChanged": True, "subscribe": True}
    assert "serverInfo" not in result
    assert result["_meta"][SERVER_INFO_KEY] == CONFORMANCE_INFO
    assert len(srv.transport.sessions) == 0


@pytest.mark.parametrize("version", [None, LEGACY, "2025-03-26"])
async def test_discover_on_the_legacy_path_needs_no_session(srv: Running,
                                                            version: str | None) -> None:
    r = await srv.post({"jsonrpc": "2.0", "id": 1, "method": "server/discover"},
                       version=version)
    assert r.status == 200, r.body
    assert r.content_type.startswith("application/json")
    result = r.json["result"]
    assert result["supportedVersions"] == [MODERN]
    assert result["resultType"] == "complete"
    assert result["_meta"][SERVER_INFO_KEY] == CONFORMANCE_INFO
    assert "Mcp-Session-Id" not in r.headers
    assert len(srv.transport.sessions) == 0


async def test_discover_without_instructions_omits_them() -> None:
    async with running(Server("plain")) as srv:
        result = result_of(await srv.modern("server/discover"))
        assert "instructions" not in result
        assert result["capabilities"] == {"logging": {}}


# -- JSON versus SSE ------------------------------------------------------------------------------

def sse_lines(body: bytes) -> list[bytes]:
    return body.replace(b"\r\n", b"\n").split(b"\n")


async def test_json_when_nothing_is_emitted(srv: Running) -> None:
    for name in ("test_simple_text", "test_tool_with_progress", "test_tool_with_logging"):
        r = await srv.modern("tools/call", {"name": name, "arguments": {}})
        assert r.status == 200
        assert r.content_type.startswith("application/json"), name
        assert len(r.messages) == 1


async def test_sse_with_progress_only_with_a_token(srv: Running) -> None:
    r = await srv.modern("tools/call", {"name": "test_tool_with_progress", "arguments": {}},
                         meta=modern_meta(progressToken="tok-1"), request_id=8)
    assert r.status == 200
    assert r.content_type.startswith("text/event-stream")
    assert r.headers.get("X-Accel-Buffering") == "no"
    methods = [m.get("method") for m in r.messages]
    assert methods == ["notifications/progress"] * 3 + [None]
    assert [m["params"]["progress"] for m in r.messages[:3]] == [0, 50, 100]
    assert all(m["params"]["progressToken"] == "tok-1" for m in r.messages[:3])
    assert r.messages[-1]["id"] == 8
    assert tool_text(r.messages[-1]["result"]) == "tok-1"
    lines = sse_lines(r.body)
    assert not any(line.startswith(b"id:") for line in lines)
    assert not any(line.startswith(b"retry:") for line in lines)
    assert lines.count(b"event: message") == 4


async def test_sse_with_logs_only_with_a_log_level(srv: Running) -> None:
    r = await srv.modern("tools/call", {"name": "test_tool_with_logging", "arguments": {}},
                         meta=modern_meta(**{"io.modelcontextprotocol/logLevel": "info"}))
    assert r.content_type.startswith("text/event-stream")
    logs = [m for m in r.messages if m.get("method") == "notifications/message"]
    assert [m["params"]["data"] for m in logs] == ["Tool execution started",
                                                   "Tool processing data",
                                                   "Tool execution completed"]
    assert all(m["params"]["level"] == "info" for m in logs)
    assert not any(line.startswith(b"id:") for line in sse_lines(r.body))
    # A stricter level filters them all out: JSON again.
    quiet = await srv.modern("tools/call", {"name": "test_tool_with_logging", "arguments": {}},
                             meta=modern_meta(**{"io.modelcontextprotocol/logLevel": "error"}))
    assert quiet.content_type.startswith("application/json")


async def test_modern_logging_ignores_the_legacy_session_level(srv: Running) -> None:
    sid = await srv.initialize()
    set_level = await srv.post({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
                                "params": {"level": "debug"}}, session=sid)
    assert set_level.status == 200
    r = await srv.modern("tools/call", {"name": "test_logging_tool", "arguments": {}})
    assert r.content_type.startswith("application/json")


# -- cancellation by closing the response --------------------------------------------------------

class Blocking:
    """A server whose tools block until cancelled and record what they saw."""

    def __init__(self) -> None:
        self.server = Server("blocking")
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.finished = False

        @self.server.tool()
        async def wait_forever(ctx: Context) -> str:
            ctx.report_progress(1, 2, "started")
            self.started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
            self.finished = True
            return "never"


async def open_raw_post(srv: Running, body: bytes, method: str,
                        name: str | None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection("127.0.0.1", srv.port), TIMEOUT)
    lines = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{srv.port}",
             f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in modern_header_lines(method, name)]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    await writer.drain()
    return reader, writer


@pytest.mark.parametrize("with_token", [False, True], ids=["json-pending", "sse-open"])
async def test_closing_the_response_cancels_the_handler(with_token: bool) -> None:
    b = Blocking()
    async with running(b.server) as srv:
        meta = modern_meta(progressToken="p") if with_token else modern_meta()
        body = modern_body("tools/call", {"name": "wait_forever", "arguments": {}}, meta=meta)
        reader, writer = await open_raw_post(srv, body, "tools/call", "wait_forever")
        await asyncio.wait_for(b.started.wait(), TIMEOUT)
        received = b""
        if with_token:  # the progress frame is already on its way: read it first
            while b"notifications/progress" not in received:
                chunk = await asyncio.wait_for(reader.read(65536), TIMEOUT)
                assert chunk, received
                received += chunk
            assert received.startswith(b"HTTP/1.1 200")
        # Half-close: the server sees the end of the connection, we can still read.
        writer.write_eof()
        t0 = time.monotonic()
        await asyncio.wait_for(b.cancelled.wait(), 5.0)
        assert time.monotonic() - t0 < 2.0
        rest = await asyncio.wait_for(reader.read(), TIMEOUT)  # until EOF
        writer.close()
        # Nothing more was written for the request: no status line when none had been
        # sent, and no final response after the progress frame.
        assert rest == b"" or (with_token and b'"result"' not in rest and b'"error"' not in rest)
        assert not b.finished
        await asyncio.wait_for(_no_handlers_left(srv), TIMEOUT)


async def _no_handlers_left(srv: Running) -> None:
    while srv.transport._handlers:
        await asyncio.sleep(0.01)


# -- input-required results --------------------------------------------------------------------

async def call_tool(srv: Running, name: str, caps: dict[str, Any] | None = None,
                    **extra: Any) -> Reply:
    params: dict[str, Any] = {"name": name, "arguments": extra.pop("arguments", {})}
    params.update(extra)
    return await srv.modern("tools/call", params, meta=modern_meta(caps or {}))


async def test_elicitation_round_trip(srv: Running) -> None:
    caps = {"elicitation": {}}
    first = result_of(await call_tool(srv, "test_input_required_result_elicitation", caps))
    assert first["resultType"] == "input_required"
    req = first["inputRequests"]["user_name"]
    assert req["method"] == "elicitation/create"
    assert req["params"]["mode"] == "form"
    assert "content" not in first
    second = result_of(await call_tool(
        srv, "test_input_required_result_elicitation", caps,
        inputResponses={"user_name": {"action": "accept", "content": {"name": "Ada"}}}))
    assert second["resultType"] == "complete"
    assert tool_text(second) == "Hello, Ada!"


async def test_sampling_round_trip(srv: Running) -> None:
    caps = {"sampling": {}}
    first = result_of(await call_tool(srv, "test_input_required_result_sampling", caps))
    assert first["inputRequests"]["capital_question"]["method"] == "sampling/createMessage"
    second = result_of(await call_tool(
        srv, "test_input_required_result_sampling", caps,
        inputResponses={"capital_question": {"role": "assistant", "model": "m",
                                             "content": {"type": "text", "text": "Paris"}}}))
    assert tool_text(second) == "Sampling said: Paris"


async def test_roots_round_trip(srv: Running) -> None:
    caps = {"roots": {}}
    first = result_of(await call_tool(srv, "test_input_required_result_list_roots", caps))
    assert first["inputRequests"]["client_roots"]["method"] == "roots/list"
    second = result_of(await call_tool(
        srv, "test_input_required_result_list_roots", caps,
        inputResponses={"client_roots": {"roots": [{"uri": "file:///a"},
                                                   {"uri": "file:///b"}]}}))
    assert tool_text(second) == "Client roots: file:///a, file:///b"


async def test_prompt_and_resource_input_required(srv: Running) -> None:
    caps = {"elicitation": {}}
    r = await srv.modern("prompts/get", {"name": "test_input_required_result_prompt"},
                         meta=modern_meta(caps))
    first = result_of(r)
    assert first["resultType"] == "input_required"
    again = result_of(await srv.modern(
        "prompts/get", {"name": "test_input_required_result_prompt",
                        "inputResponses": {"user_context": {"action": "accept",
                                                            "content": {"context": "ctx!"}}}},
        meta=modern_meta(caps)))
    assert again["resultType"] == "complete"
    assert "ctx!" in json.dumps(again["messages"])


async def test_request_state_round_trip(srv: Running) -> None:
    caps = {"elicitation": {}}
    first = result_of(await call_tool(srv, "test_input_required_result_request_state", caps))
    state = first["requestState"]
    assert isinstance(state, str) and "request-state-nonce" not in state  # sealed, opaque
    answer = {"confirm": {"action": "accept", "content": {"ok": True}}}
    done = result_of(await call_tool(srv, "test_input_required_result_request_state", caps,
                                     inputResponses=answer, requestState=state))
    assert tool_text(done) == "state-ok: request-state-nonce"


def tamper(state: str) -> list[str]:
    body, mac = state.split(".", 1)
    flipped = body[:-1] + ("A" if body[-1] != "A" else "B")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["d"] = {"nonce": "forged"}
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    return [flipped + "." + mac, forged + "." + mac, body + "." + mac[:-2], "garbage",
            body]


async def test_tampered_request_state_is_refused(srv: Running) -> None:
    caps = {"elicitation": {}}
    name = "test_input_required_result_tampered_state"
    state = result_of(await call_tool(srv, name, caps))["requestState"]
    answer = {"confirm": {"action": "accept", "content": {"ok": True}}}
    for bad in tamper(state):
        r = await call_tool(srv, name, caps, inputResponses=answer, requestState=bad)
        assert r.status == 400, (bad, r.body)
        err = error_of(r)
        assert err["code"] == -32602
        assert "requestState" in err["message"]
    ok = await call_tool(srv, name, caps, inputResponses=answer, requestState=state)
    assert tool_text(result_of(ok)) == "state-ok"


async def test_request_state_is_bound_to_method_and_params(srv: Running) -> None:
    caps = {"elicitation": {}}
    answer = {"confirm": {"action": "accept", "content": {"ok": True}}}
    state = result_of(await call_tool(srv, "test_input_required_result_tampered_state",
                                      caps))["requestState"]
    replayed = await call_tool(srv, "test_input_required_result_request_state", caps,
                               inputResponses=answer, requestState=state)
    assert replayed.status == 400
    assert error_of(replayed)["code"] == -32602
    assert "another request" in error_of(replayed)["message"]


async def test_request_state_bound_to_arguments_and_expiry() -> None:
    key = b"k" * 32
    server = Server("stateful", request_state_key=key)

    @server.tool()
    def greet(who: str, ctx: Context) -> str | InputRequired:
        state = ctx.open_state()
        if state is None:
            return InputRequired({"ok": elicitation("ok?", {"type": "object", "properties": {}})},
                                 request_state=ctx.seal_state({"who": who}))
        return f"hi {state['who']}"

    async with running(server) as srv:
        caps = {"elicitation": {}}
        answer = {"ok": {"action": "accept", "content": {}}}
        first = result_of(await call_tool(srv, "greet", caps, arguments={"who": "ann"}))
        state = first["requestState"]
        good = await call_tool(srv, "greet", caps, arguments={"who": "ann"},
                               inputResponses=answer, requestState=state)
        assert tool_text(result_of(good)) == "hi ann"
        other_args = await call_tool(srv, "greet", caps, arguments={"who": "bob"},
                                     inputResponses=answer, requestState=state)
        assert other_args.status == 400 and error_of(other_args)["code"] == -32602
        # Expired: sealed with the server's key, bound correctly, but past its expiry.
        expired = RequestStateCodec(key, ttl=-5).seal(
            {"who": "ann"}, "tools/call", {"name": "greet", "arguments": {"who": "ann"}})
        late = await call_tool(srv, "greet", caps, arguments={"who": "ann"},
                               inputResponses=answer, requestState=expired)
        assert late.status == 400
        assert error_of(late)["code"] == -32602
        assert "expired" in error_of(late)["message"]
        # The same codec with a live expiry is accepted: the refusal above was the expiry.
        fresh = RequestStateCodec(key).seal(
            {"who": "ann"}, "tools/call", {"name": "greet", "arguments": {"who": "ann"}})
        ok = await call_tool(srv, "greet", caps, arguments={"who": "ann"},
                             inputResponses=answer, requestState=fresh)
        assert tool_text(result_of(ok)) == "hi ann"
        # Another server key cannot forge it.
        foreign = RequestStateCodec(b"x" * 32).seal(
            {"who": "ann"}, "tools/call", {"name": "greet", "arguments": {"who": "ann"}})
        forged = await call_tool(srv, "greet", caps, arguments={"who": "ann"},
                                 inputResponses=answer, requestState=foreign)
        assert forged.status == 400 and error_of(forged)["code"] == -32602


async def test_only_declared_capability_kinds_are_kept(srv: Running) -> None:
    name = "test_input_required_result_multiple_inputs"
    only_elicit = result_of(await call_tool(srv, name, {"elicitation": {}}))
    assert set(only_elicit["inputRequests"]) == {"user_name"}
    assert "requestState" in only_elicit
    two = result_of(await call_tool(srv, name, {"sampling": {}, "roots": {}}))
    assert set(two["inputRequests"]) == {"greeting", "client_roots"}
    everything = result_of(await call_tool(srv, name, {"elicitation": {}, "sampling": {},
                                                       "roots": {}}))
    assert set(everything["inputRequests"]) == {"user_name", "greeting", "client_roots"}
    # Nothing declared, but a requestState: the client may simply retry.
    none = result_of(await call_tool(srv, name, {}))
    assert none["resultType"] == "input_required"
    assert "inputRequests" not in none and "requestState" in none


async def test_input_required_without_the_capability_or_state_is_32021(srv: Running) -> None:
    r = await call_tool(srv, "test_input_required_result_elicitation", {})
    assert r.status == 400
    assert error_of(r)["code"] == -32021
    assert error_of(r)["data"]["requiredCapabilities"] == {"elicitation": {}}


@pytest.mark.parametrize("responses", [["x"], "x", 3, {"user_name": "accept"},
                                       {"user_name": [1]}],
                         ids=["list", "string", "number", "value-string", "value-list"])
async def test_input_responses_must_map_to_objects(srv: Running, responses: Any) -> None:
    r = await call_tool(srv, "test_input_required_result_elicitation", {"elicitation": {}},
                        inputResponses=responses)
    assert r.status == 400, r.body
    assert error_of(r)["code"] == -32602
    assert "inputResponses" in error_of(r)["message"]


# -- framing on the modern path ------------------------------------------------------------------

@pytest.mark.parametrize("body", [
    [{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}}],
    {"jsonrpc": "2.0", "id": 1, "result": {}},
    "tools/list",
], ids=["batch", "response", "string"])
async def test_modern_body_must_be_a_single_request(srv: Running, body: Any) -> None:
    r = await post_modern_raw(srv, json.dumps(body).encode(), {"Mcp-Method": "tools/list"})
    assert r.status == 400, r.body
    assert error_of(r)["code"] == -32600
    assert "single request object" in error_of(r)["message"]


async def test_modern_notification_is_accepted_with_202(srv: Running) -> None:
    body = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": 1, "_meta": modern_meta()}}).encode()
    r = await post_modern_raw(srv, body, {"Mcp-Method": "notifications/cancelled"})
    assert r.status == 202
    assert r.body == b""


async def test_modern_accept_and_content_type(srv: Running) -> None:
    only_json = await srv.modern("tools/list", headers={"Accept": "application/json"})
    assert only_json.status == 406
    text = await srv.modern("tools/list", headers={"Content-Type": "text/plain"})
    assert text.status == 415
    charset = await srv.modern("tools/list",
                               headers={"Content-Type": "application/json; charset=utf-8"})
    assert charset.status == 200


async def test_modern_request_notifications_are_bounded() -> None:
    server = Server("chatty")
    sent: list[bool] = []

    @server.tool()
    def chatty(ctx: Context) -> str:
        sent.extend(ctx.info(f"line {i}") for i in range(1005))
        return "done"

    async with running(server) as srv:
        r = await srv.modern("tools/call", {"name": "chatty", "arguments": {}},
                             meta=modern_meta(**{"io.modelcontextprotocol/logLevel": "info"}))
        assert r.content_type.startswith("text/event-stream")
        assert len(r.messages) == 1001  # 1000 notifications, then the response
        assert tool_text(r.messages[-1]["result"]) == "done"
        assert sent.count(False) == 5 and sent[:1000] == [True] * 1000


async def test_modern_request_over_max_request_bytes_is_413() -> None:
    async with running(conformance_server(), max_request_bytes=4096) as srv:
        r = await srv.modern("tools/call", {"name": "echo", "arguments": {"text": "q" * 5000}})
        assert r.status == 413
        assert error_of(r)["code"] == -32600
        assert srv.transport.snapshot().refusals["max_request_bytes"] == 1


async def test_legacy_only_server_tells_a_sessionless_modern_request_to_initialize() -> None:
    async with running(conformance_server(), protocol_versions=[LEGACY]) as srv:
        r = await srv.modern("tools/list", {})
        assert r.status == 400
        err = error_of(r)
        assert err["code"] == -32600
        assert "does not serve protocol 2026-07-28" in err["message"]
        assert "initialize" in err["message"]
