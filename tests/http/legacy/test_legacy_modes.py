"""The ``stateless`` and ``json_response`` transport modes in the legacy era."""

from __future__ import annotations

from mcp_http import (
    ALL_CAPS,
    LEGACY,
    assert_refused,
    example_server,
    final,
    init_msg,
    probe_server,
    rpc,
    running,
)

# -- stateless and json_response modes ------------------------------------------------------------

async def test_stateless_mode_has_no_sessions_and_refuses_get_and_delete() -> None:
    async with running(example_server(), stateless=True) as srv:
        r = await srv.post(init_msg())
        assert r.status == 200 and "Mcp-Session-Id" not in r.headers
        assert r.json["result"]["protocolVersion"] == LEGACY
        call = await srv.post(rpc("tools/call", {"name": "echo", "arguments": {"text": "x"}}),
                              version=LEGACY)
        assert final(call)["result"]["content"][0]["text"] == "x"
        assert "Mcp-Session-Id" not in call.headers
        assert len(srv.transport.sessions) == 0
        g = await srv.request("GET", None, {"Accept": "text/event-stream"})
        assert_refused(g, 405, -32600, "Method not allowed")
        d = await srv.request("DELETE", None, {"Mcp-Session-Id": "whatever"})
        assert_refused(d, 405, -32600, "Method not allowed")


async def test_json_response_mode_replies_json_and_drops_request_notifications() -> None:
    async with running(example_server(), json_response=True) as srv:
        sid = await srv.initialize()
        g = await srv.get_stream(sid)
        r = await srv.post(rpc("tools/call", {"name": "test_tool_with_progress",
                                              "_meta": {"progressToken": "tok"}}), session=sid)
        assert r.status == 200 and r.content_type.startswith("application/json")
        assert r.json["id"] == 1 and r.json["result"]["content"][0]["text"] == "tok"
        log = await srv.post(rpc("tools/call", {"name": "test_tool_with_logging"}, 2),
                             session=sid)
        assert set(log.json) == {"jsonrpc", "id", "result"}
        # A broadcast still reaches the GET stream, and it is the only thing there.
        srv.server.notify_tools_list_changed()
        await g.wait_messages(1)
        assert [m["method"] for m in g.messages] == ["notifications/tools/list_changed"]
        g.close()


async def test_json_response_mode_refuses_server_to_client_requests() -> None:
    server, _ = probe_server()
    async with running(server, json_response=True) as srv:
        sid = await srv.initialize(capabilities=ALL_CAPS)
        r = await srv.post(rpc("tools/call", {"name": "ask", "arguments": {"kind": "roots"}}),
                           session=sid)
        assert r.status == 200 and r.content_type.startswith("application/json")
        assert "JSON response mode does not support" in r.json["error"]["message"]
