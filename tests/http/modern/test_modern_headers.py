"""The 2026-07-28 routing headers (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``,
``Mcp-Param-*``): they must agree with the body, or the request is refused with -32020.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from mcp_http import (
    LEGACY,
    MODERN,
    Running,
    error_of,
    modern_body,
    modern_meta,
    raw_exchange,
    running,
)

from tornado_mcp import Server
from tornado_mcp.transport.headers import value_matches

pytestmark = pytest.mark.timeout(60)

NON_ASCII_URI = "test://docs/résumé-日本"


def b64(value: str) -> str:
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode() + "?="


# -- routing headers: -32020 ----------------------------------------------------------------------

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


def test_a_header_never_matches_a_huge_integer_argument() -> None:
    assert value_matches("1", 10**400) is False
