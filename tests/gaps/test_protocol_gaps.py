"""The last protocol gaps, over real HTTP: ``Allow`` on every 405, stateless ``DELETE``,
``notifications/cancelled`` in JSON-response mode, the roots ``list_changed`` hook,
declared extensions, and ``notifications/elicitation/complete``.
"""

from __future__ import annotations

import asyncio

import pytest
from mcp_http import (
    LEGACY,
    MODERN,
    modern_meta,
    post_stream,
    probe_server,
    raw_exchange,
    rpc,
    running,
    wait_until,
)

from tornado_mcp import Context, Server, Session


@pytest.mark.parametrize("method", ["PUT", "PATCH", "OPTIONS", "TRACE"])
async def test_every_405_names_the_allowed_methods(method: str) -> None:
    async with running(probe_server()[0]) as srv:
        r = await raw_exchange(srv.port, method, b"", [])
        assert r.status == 405
        assert r.header("Allow") == "GET, POST, DELETE"
        assert r.json["error"] == {"code": -32600, "message": "Method not allowed"}


async def test_stateless_get_and_delete_are_405_allowing_post_only() -> None:
    async with running(probe_server()[0], stateless=True) as srv:
        for method in ("GET", "DELETE"):
            r = await raw_exchange(srv.port, method, b"", [
                ("Accept", "text/event-stream"), ("Mcp-Session-Id", "any"),
                ("MCP-Protocol-Version", LEGACY)])
            assert r.status == 405, method
            assert r.header("Allow") == "POST"
            assert r.json["error"] == {"code": -32600, "message": "Method not allowed"}


async def test_modern_only_endpoint_allows_post_only() -> None:
    async with running(probe_server()[0], protocol_versions=[MODERN]) as srv:
        r = await raw_exchange(srv.port, "GET", b"", [("MCP-Protocol-Version", MODERN)])
        assert r.status == 405 and r.header("Allow") == "POST"
        r = await raw_exchange(srv.port, "PUT", b"", [])
        assert r.status == 405 and r.header("Allow") == "POST"


async def test_json_response_mode_cancellation_stops_the_handler_and_sends_no_result() -> None:
    server, probe = probe_server()
    async with running(server, json_response=True) as srv:
        sid = await srv.initialize()
        call = asyncio.ensure_future(srv.post(rpc("tools/call", {"name": "block",
                                                                 "arguments": {}}, 5),
                                              session=sid))
        await asyncio.wait_for(probe.started.wait(), 10)
        cancel = await srv.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                 "params": {"requestId": 5, "reason": "user"}}, session=sid)
        assert cancel.status == 202
        await asyncio.wait_for(probe.cancelled.wait(), 10)
        r = await asyncio.wait_for(call, 10)
        assert r.status == 202 and r.body == b""  # stopped, and no response for it
        session = next(iter(srv.transport.sessions))
        assert not session.in_flight


async def test_roots_list_changed_runs_the_hook_with_the_session() -> None:
    server, _ = probe_server()
    seen: list[Session] = []
    changed = asyncio.Event()

    @server.on_roots_list_changed
    async def roots_changed(session: Session) -> None:
        seen.append(session)
        changed.set()

    async with running(server) as srv:
        sid = await srv.initialize()
        r = await srv.post({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
                           session=sid)
        assert r.status == 202
        await asyncio.wait_for(changed.wait(), 10)
        assert [s.id for s in seen] == [sid]


async def test_a_failing_roots_hook_is_logged_and_changes_nothing(
        caplog: pytest.LogCaptureFixture) -> None:
    server, _ = probe_server()

    @server.on_roots_list_changed
    def roots_changed(session: Session) -> None:
        raise RuntimeError("hook failed")

    async with running(server) as srv:
        sid = await srv.initialize()
        r = await srv.post({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
                           session=sid)
        assert r.status == 202
        await wait_until(lambda: "the roots/list_changed hook raised" in caplog.text)
        assert (await srv.post(rpc("ping"), session=sid)).status == 200


async def test_declared_extensions_are_in_the_capabilities_of_both_eras() -> None:
    server = Server("extensions")
    server.declare_extension("com.example/audit", {"level": "full"})
    server.declare_extension("com.example/other")
    expected = {"com.example/audit": {"level": "full"}, "com.example/other": {}}
    async with running(server) as srv:
        r = await srv.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
        assert r.messages[-1]["result"]["capabilities"]["extensions"] == expected
        d = await srv.modern("server/discover", meta=modern_meta())
        assert d.json["result"]["capabilities"]["extensions"] == expected
    assert "extensions" not in Server("plain").capabilities


async def test_elicitation_complete_helper_notifies_the_client() -> None:
    server, _ = probe_server()

    async def finish_elicitation(ctx: Context) -> str:
        assert ctx.elicitation_complete("elicit-42")
        return "notified"

    server.add_tool(finish_elicitation, "finish_elicitation", description="notifies")
    async with running(server) as srv:
        sid = await srv.initialize()
        s = await post_stream(srv, rpc("tools/call", {"name": "finish_elicitation",
                                                      "arguments": {}}, 3), sid)
        await s.wait_closed()
        assert s.messages[0] == {"jsonrpc": "2.0",
                                 "method": "notifications/elicitation/complete",
                                 "params": {"elicitationId": "elicit-42"}}
        assert s.messages[1]["result"]["content"][0]["text"] == "notified"
