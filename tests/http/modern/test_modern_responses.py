"""2026-07-28 responses: JSON when nothing is emitted before the result, SSE with progress or
logs, and cancellation by closing the response.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from mcp_http import (
    TIMEOUT,
    Running,
    modern_body,
    modern_header_lines,
    modern_meta,
    raw_request,
    running,
    tool_text,
    wait_until,
)

from tornado_mcp import Context, Server

pytestmark = pytest.mark.timeout(60)

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


# -- cancellation by closing the response ---------------------------------------------------------

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


@pytest.mark.parametrize("with_token", [False, True], ids=["json-pending", "sse-open"])
async def test_closing_the_response_cancels_the_handler(with_token: bool) -> None:
    b = Blocking()
    async with running(b.server) as srv:
        meta = modern_meta(progressToken="p") if with_token else modern_meta()
        body = modern_body("tools/call", {"name": "wait_forever", "arguments": {}}, meta=meta)
        head = ["POST /mcp HTTP/1.1", f"Content-Length: {len(body)}",
                *(f"{k}: {v}" for k, v in modern_header_lines("tools/call", "wait_forever"))]
        response = await raw_request(srv.port, head, [body])
        await asyncio.wait_for(b.started.wait(), TIMEOUT)
        if with_token:  # the progress frame is already on its way: read it first
            await response.wait_messages(1)
            assert response.status == 200
        # Half-close: the server sees the end of the connection, we can still read.
        response.writer.write_eof()
        t0 = time.monotonic()
        await asyncio.wait_for(b.cancelled.wait(), 5.0)
        assert time.monotonic() - t0 < 2.0
        await response.wait_closed()
        # Nothing more was written for the request: no status line when none had been
        # sent, and no final response after the progress frame.
        if with_token:
            assert response.messages == [{
                "jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": "p", "progress": 1, "total": 2,
                           "message": "started"}}]
        else:
            assert (response.status, response.raw) == (0, b"")
        assert not b.finished
        await wait_until(lambda: srv.transport.in_progress == 0)
