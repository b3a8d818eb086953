"""2026-07-28 request framing: one request per body, notifications, ``Accept`` and
``Content-Type``, the body-size bound, and a legacy-only server's answer.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp_http import (
    LEGACY,
    Running,
    error_of,
    example_server,
    modern_meta,
    post_modern_raw,
    running,
    tool_text,
)

from tornado_mcp import Context, Server

pytestmark = pytest.mark.timeout(60)

# -- framing on the modern path -------------------------------------------------------------------

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
    async with running(example_server(), max_request_bytes=4096) as srv:
        r = await srv.modern("tools/call", {"name": "echo", "arguments": {"text": "q" * 5000}})
        assert r.status == 413
        assert error_of(r)["code"] == -32600
        assert srv.transport.snapshot().refusals["max_request_bytes"] == 1


async def test_legacy_only_server_tells_a_sessionless_modern_request_to_initialize() -> None:
    async with running(example_server(), protocol_versions=[LEGACY]) as srv:
        r = await srv.modern("tools/list", {})
        assert r.status == 400
        err = error_of(r)
        assert err["code"] == -32600
        assert "does not serve protocol 2026-07-28" in err["message"]
        assert "initialize" in err["message"]
