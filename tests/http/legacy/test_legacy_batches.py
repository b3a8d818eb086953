"""JSON-RPC batches: accepted on a 2025-03-26 session only, answered with one JSON array."""

from __future__ import annotations

import json

import pytest
from mcp_http import (
    assert_refused,
    error_of,
    example_server,
    init_msg,
    rpc,
    running,
)

from tornado_mcp import Context, Server


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_batch_is_refused_after_2025_03_26(version: str) -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize(version)
        r = await srv.post([rpc("ping", request_id=1), rpc("ping", request_id=2)],
                           session=sid, version=version)
        assert_refused(r, 400, -32600, "single request object")


async def test_batch_of_requests_on_a_2025_03_26_session_gets_an_array() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize("2025-03-26")
        batch = [rpc("ping", request_id="a"),
                 {"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": 1, "progress": 1}},
                 rpc("tools/call", {"name": "echo", "arguments": {"text": "hi"}}, "b")]
        r = await srv.post(batch, session=sid, version="2025-03-26")
        assert r.status == 200 and r.content_type.startswith("application/json")
        body = r.json
        assert isinstance(body, list) and [m["id"] for m in body] == ["a", "b"]
        assert body[0]["result"] == {}
        assert body[1]["result"]["content"][0]["text"] == "hi"


async def test_batch_of_notifications_on_a_2025_03_26_session_is_202() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize("2025-03-26")
        batch = [{"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}]
        r = await srv.post(batch, session=sid, version="2025-03-26")
        assert r.status == 202 and r.body == b""


async def test_batched_initialize_is_refused() -> None:
    async with running(example_server()) as srv:
        r = await srv.post([init_msg()])
        assert r.status == 400 and error_of(r)["code"] == -32600
        assert len(srv.transport.sessions) == 0


def logging_server() -> Server:
    server = Server("batches")

    @server.tool()
    async def chatty(ctx: Context) -> str:
        ctx.info("hello from the tool")
        ctx.report_progress(1, 2)
        return "done"

    @server.tool()
    async def quiet() -> str:
        return "ok"

    return server


async def test_batch_with_a_tool_that_logs_and_reports_progress_answers_a_json_array() -> None:
    """Notifications a batched handler emits do not turn the reply into a stream: the
    answer is still one JSON array of the responses."""
    async with running(logging_server()) as srv:
        sid = await srv.initialize("2025-03-26")
        batch = [rpc("tools/call", {"name": "chatty", "arguments": {},
                                    "_meta": {"progressToken": "p"}}, "a"),
                 rpc("tools/call", {"name": "quiet", "arguments": {}}, "b")]
        r = await srv.post(batch, session=sid, version="2025-03-26")
        assert r.status == 200
        assert r.content_type.startswith("application/json"), (r.content_type, r.body)
        assert [m["id"] for m in json.loads(r.body)] == ["a", "b"]
