"""``Transport.close()``: new requests are refused at once, requests in flight get
``shutdown_grace`` seconds to finish, then streams end, sessions go, what is left is
cancelled and answered, and nothing (handlers, stalled writes, draining refusals) is left
behind.
"""

from __future__ import annotations

import asyncio

from mcp_http import (
    LEGACY,
    TIMEOUT,
    Stream,
    init_msg,
    post_stream,
    probe_server,
    raw_request,
    rpc,
    running,
    unread_socket,
    wait_until,
)

from tornado_mcp import Server


async def test_close_ends_get_streams_and_drops_every_session() -> None:
    server, probe = probe_server()
    async with running(server, shutdown_grace=0.2) as srv:
        a, b = await srv.initialize(), await srv.initialize()
        ga, gb = await srv.get_stream(a), await srv.get_stream(b)
        p = await post_stream(srv, rpc("tools/call", {"name": "block"}, "z"), a)
        await asyncio.wait_for(probe.started.wait(), TIMEOUT)
        await asyncio.wait_for(srv.transport.close(), TIMEOUT)
        await ga.wait_closed()
        await gb.wait_closed()
        await asyncio.wait_for(probe.cancelled.wait(), TIMEOUT)
        await p.wait_closed()
        assert len(srv.transport.sessions) == 0
        snap = srv.transport.snapshot()
        assert snap.totals.sessions == 0 and snap.totals.get_streams == 0
        assert snap.totals.in_flight == 0
        after = await srv.post(init_msg())
        assert after.status == 503 and len(srv.transport.sessions) == 0
        assert after.headers["Retry-After"] == "5"


async def test_a_modern_request_still_running_after_the_grace_is_answered_503() -> None:
    server, probe = probe_server()
    async with running(server, shutdown_grace=0.2) as srv:
        task = asyncio.ensure_future(
            srv.modern("tools/call", {"name": "block", "arguments": {}}, request_id=5))
        await asyncio.wait_for(probe.started.wait(), TIMEOUT)
        await srv.transport.close()
        r = await task
        assert r.status == 503 and r.headers["Retry-After"] == "5"
        assert r.json == {"jsonrpc": "2.0", "id": 5, "error": {
            "code": -32603, "message": "Service unavailable: shutting down"}}
        await asyncio.wait_for(probe.cancelled.wait(), TIMEOUT)


async def test_close_aborts_streams_that_did_not_drain() -> None:
    """A GET stream whose peer reads nothing cannot be drained: close() aborts it after its
    timeout rather than leaving the channel, its handler and its timer behind."""
    async with running(Server("x"), stream_stall_timeout=None,
                       sse_keepalive_interval=None) as srv:
        t = srv.transport
        sid = await srv.initialize()
        sock = unread_socket(srv.port, (
            f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
            f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: {LEGACY}\r\n\r\n").encode(), 4096)
        try:
            await wait_until(lambda: t.sessions.get(sid) is not None
                             and t.sessions.get(sid).get_channel is not None)  # type: ignore[union-attr]
            session = t.sessions.get(sid)
            assert session is not None and session.get_channel is not None
            channel = session.get_channel
            for _ in range(40):  # the peer reads nothing: fill both socket buffers
                session.send_notification("notifications/message",
                                          {"level": "info", "data": "x" * 1_000_000})
                await asyncio.sleep(0.01)
            assert channel._flushing
            await t.close(timeout=0.5)
            await asyncio.sleep(0.2)
            assert channel.closed and not t._handlers
        finally:
            sock.close()


async def test_close_ends_the_drain_of_a_refused_upload() -> None:
    """A refused upload drains for up to 2 s after its 413; close() does not wait for that,
    it ends the drain and leaves no task behind."""
    async with running(Server("x"), max_request_bytes=1024) as srv:
        head = ["POST /mcp HTTP/1.1", "Content-Type: application/json",
                "Accept: application/json, text/event-stream", "Content-Length: 100000"]
        upload: Stream = await raw_request(srv.port, head, [b" " * 4096])
        try:
            await asyncio.wait_for(upload.started.wait(), 5)
            assert upload.status == 413
            await wait_until(lambda: srv.transport.lingering == 1, timeout=5)
            await asyncio.wait_for(srv.transport.close(), 1.5)  # well under the 2 s drain
            assert srv.transport.lingering == 0
        finally:
            upload.close()
