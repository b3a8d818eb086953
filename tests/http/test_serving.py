"""How the library's own servers serve (``tornado_mcp.transport.serving``): a request
Tornado cannot parse is answered in a way the client can act on, on a connection kept
open, so nothing the client sent after it is lost; the access line names the JSON-RPC id."""

from __future__ import annotations

import json

import pytest
import tornado
from conftest import ServerFactory
from http_wire import WireConn, request_bytes
from mcp_http import MODERN, modern_body

pytestmark = pytest.mark.timeout(60)

HEADERS = [("Content-Type", "application/json"),
           ("Accept", "application/json, text/event-stream"),
           ("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/list")]


async def test_a_query_string_past_tornados_field_limit_is_answered_and_the_next_request_too(
        server_factory: ServerFactory) -> None:
    srv = server_factory(["examples/conformance_server.py", "--no-admin"])
    query = "&".join(f"f{i}=1" for i in range(1500))  # Tornado 6.5.8+ allows 1,000
    conn = await WireConn.open(srv.port)
    try:
        body = modern_body("tools/list")
        # Two requests sent back to back (pipelined), the first with the long query.
        await conn.send(request_bytes("POST", srv.port, HEADERS, body, target=f"/mcp?{query}")
                        + request_bytes("POST", srv.port, HEADERS, body))
        first = await conn.read_reply()
        if tornado.version_info >= (6, 5, 8):
            assert first.status == 400
            error = json.loads(first.body)["error"]
            assert error["code"] == -32600 and "query string" in error["message"]
        else:  # no limit: the endpoint ignores the query and answers
            assert first.status == 200
        assert not first.closes
        second = await conn.read_reply()  # not lost
        assert second.status == 200 and json.loads(second.body)["result"]["tools"]
    finally:
        conn.close()
