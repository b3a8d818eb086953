"""Defects found by a second-read review of the library, each pinned by a test.

Every test here failed against the code as it was reviewed, and passes since the fix.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from typing import Any

import pytest
from mcp_http import (
    LEGACY,
    modern_header_lines,
    modern_meta,
    raw_exchange,
    running,
    wait_until,
)

from tornado_mcp import Context, Server


def rpc(method: str, params: dict[str, Any] | None = None, request_id: Any = 1) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def review_server() -> Server:
    server = Server("review")
    started = asyncio.Event()

    @server.tool()
    async def chatty(ctx: Context) -> str:
        ctx.info("hello from the tool")
        ctx.report_progress(1, 2)
        return "done"

    @server.tool()
    async def quiet() -> str:
        return "ok"

    @server.tool()
    async def block(ctx: Context) -> str:
        started.set()
        await asyncio.sleep(30)
        return "late"

    server.started = started  # type: ignore[attr-defined]
    return server


def buffered(t: Any) -> int:
    return sum(sum(len(c) for c in h._chunks) for h in t._handlers)


# -- 1. HIGH: an upload dropped mid-body leaks its handler and every byte it buffered ---------

async def test_disconnect_mid_body_frees_handler_and_body() -> None:
    async with running(Server("x")) as srv:
        t = srv.transport
        for _ in range(3):
            _reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
            writer.write(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Content-Type: application/json\r\n"
                         b"Accept: application/json, text/event-stream\r\n"
                         b"Content-Length: 4000000\r\n\r\n" + b" " * 1_000_000)
            await writer.drain()
            await wait_until(lambda: buffered(t) >= 1_000_000, timeout=5)
            writer.close()  # leave mid-upload
            await wait_until(lambda: not t._handlers, timeout=5)
            assert buffered(t) == 0


# -- 2. MEDIUM-HIGH: resource template matching is quadratic (blocks the IOLoop) -------------

def test_uri_template_match_is_not_quadratic() -> None:
    from tornado_mcp.uritemplate import UriTemplate

    cases = [("users://{org}.{user}", "users://" + "a." * 20_000 + "/"),
             ("file:///{+dir}/{+name}.txt", "file:///" + "a/" * 20_000 + "x")]
    for template, uri in cases:
        tpl = UriTemplate(template)
        start = time.perf_counter()
        tpl.match(uri)
        assert time.perf_counter() - start < 0.5, template


# -- 3. MEDIUM: subscriptions/listen ids are neither validated nor bounded ----------------------

async def test_listen_subscription_id_is_bounded() -> None:
    async with running(Server("x")) as srv:
        stream = await srv.listen({}, request_id="i" * 1_000_000)
        try:
            if stream.status == 200:
                await stream.wait_messages(1)
            held = sum(len(s._sid) for s in srv.transport.hub)
            assert held <= srv.transport.options.max_resource_subscription_bytes, held
        finally:
            stream.close()


@pytest.mark.parametrize("bad_id", [None, {"a": 1}, True, 1.5])
async def test_listen_invalid_id_is_400(bad_id: Any) -> None:
    async with running(Server("x")) as srv:
        body = json.dumps({"jsonrpc": "2.0", "id": bad_id, "method": "subscriptions/listen",
                           "params": {"notifications": {}, "_meta": modern_meta()}}).encode()
        r = await raw_exchange(srv.port, "POST", body,
                               modern_header_lines("subscriptions/listen"))
        assert r.status == 400
        assert r.json["error"]["code"] == -32600


# -- 4. MEDIUM: a 2025-03-26 batch whose handler logs/reports progress is corrupted -------------

async def test_batch_with_logging_tool_answers_a_json_array() -> None:
    async with running(review_server()) as srv:
        sid = await srv.initialize("2025-03-26")
        batch = [rpc("tools/call", {"name": "chatty", "arguments": {},
                                    "_meta": {"progressToken": "p"}}, "a"),
                 rpc("tools/call", {"name": "quiet", "arguments": {}}, "b")]
        r = await srv.post(batch, session=sid, version="2025-03-26")
        assert r.status == 200
        assert r.content_type.startswith("application/json"), (r.content_type, r.body)
        assert [m["id"] for m in json.loads(r.body)] == ["a", "b"]


# -- 5. MEDIUM (default install, no orjson): the stdlib JSON fallback is not equivalent ---------

_FALLBACK = r"""
import sys
sys.modules["orjson"] = None
from tornado_mcp import jsonio
assert jsonio._orjson is None
bad = []
for body in (b"[NaN]", b'{"a":Infinity}', '{"a":1}'.encode("utf-16")):
    try:
        jsonio.loads(body)
        bad.append(body)
    except jsonio.JSONDecodeError:
        pass
try:
    out = jsonio.dumps({"x": float("nan")})
    bad.append(out)
except ValueError:
    pass
print(bad)
sys.exit(1 if bad else 0)
"""


def test_stdlib_json_fallback_rejects_non_json() -> None:
    proc = subprocess.run([sys.executable, "-c", _FALLBACK], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_header_match_with_huge_integer_argument() -> None:
    from tornado_mcp.transport import _header_matches

    assert _header_matches("1", 10**400) is False


# -- 6. LOW-MEDIUM: close() leaves a stalled stream (and its handler and timer) behind ----------

async def test_close_aborts_streams_that_did_not_drain() -> None:
    async with running(Server("x"), stream_stall_timeout=None,
                       sse_keepalive_interval=None) as srv:
        t = srv.transport
        sid = await srv.initialize()
        sock = socket.create_connection(("127.0.0.1", srv.port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            sock.sendall((f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream"
                          f"\r\nMcp-Session-Id: {sid}\r\nMCP-Protocol-Version: {LEGACY}\r\n\r\n"
                          ).encode())
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


# -- 7. LOW: header-keyed caches retain client bytes outside every bound ------------------------

async def test_header_caches_do_not_retain_large_client_values() -> None:
    async with running(Server("x")) as srv:
        for i in range(40):
            r = await raw_exchange(srv.port, "POST", b"{}", [
                ("Origin", "http://" + "a" * 30_000 + str(i)),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream")])
            assert r.status == 403
        held = sum(len(h or "") + len(o or "") for h, o in srv.transport._rebinding_cache)
        assert held < 64 * 1024, held


# -- 8. LOW: a 2026-07-28 request in flight at close() gets 202 and no JSON-RPC response --------

async def test_modern_request_in_flight_at_close_gets_an_error() -> None:
    server = review_server()
    async with running(server) as srv:
        task = asyncio.ensure_future(srv.modern("tools/call", {"name": "block", "arguments": {}}))
        await asyncio.wait_for(server.started.wait(), 5)  # type: ignore[attr-defined]
        await srv.transport.close()
        r = await task
        assert r.status != 202
        assert r.messages and "error" in r.messages[-1]


async def test_close_leaves_no_lingering_refusal_behind() -> None:
    """A refused upload drains for up to 2 s after its 413; close() does not wait for that,
    it ends the drain (issue 2: close() leaves no task)."""
    async with running(Server("x"), max_request_bytes=1024) as srv:
        reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
        writer.write(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Accept: application/json, text/event-stream\r\n"
                     b"Content-Length: 100000\r\n\r\n" + b" " * 4096)
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 5)
        assert b" 413 " in status
        await wait_until(lambda: len(srv.transport._lingering) == 1, timeout=5)
        await asyncio.wait_for(srv.transport.close(), 1.5)  # well under the 2 s drain
        assert not srv.transport._lingering
        writer.close()


# -- the bounds these fixes introduced, exactly at and one over -------------------------------

async def test_listen_id_of_256_characters_is_accepted_and_257_refused() -> None:
    from tornado_mcp.transport import MAX_LISTEN_ID_LENGTH

    async with running(Server("x")) as srv:
        at = await srv.listen({}, request_id="i" * MAX_LISTEN_ID_LENGTH)
        try:
            acked = await at.wait_messages(1)
            assert acked[0]["method"] == "notifications/subscriptions/acknowledged"
            assert len(srv.transport.hub) == 1
        finally:
            at.close()
        await wait_until(lambda: len(srv.transport.hub) == 0)
        over = await srv.modern("subscriptions/listen", {"notifications": {}},
                                request_id="i" * (MAX_LISTEN_ID_LENGTH + 1))
        assert over.status == 400
        assert over.json["error"]["code"] == -32600
        assert f"{MAX_LISTEN_ID_LENGTH} characters" in over.json["error"]["message"]
        assert len(srv.transport.hub) == 0  # nothing retained for the refusal


def test_template_matches_a_uri_of_2048_characters_and_not_2049() -> None:
    from tornado_mcp.uritemplate import MAX_URI_LENGTH, UriTemplate

    tpl = UriTemplate("test://r/{n}")
    prefix = "test://r/"
    at = prefix + "x" * (MAX_URI_LENGTH - len(prefix))
    assert len(at) == MAX_URI_LENGTH
    assert tpl.match(at) == {"n": "x" * (MAX_URI_LENGTH - len(prefix))}
    assert tpl.match(at + "x") is None


async def test_stream_queue_holds_exactly_max_stream_queue_frames() -> None:
    """max_stream_queue frames may wait behind a pending write; one more disconnects.

    The handler is a stand-in whose flush never completes (a peer that reads nothing), so
    the count is exact; the behaviour over real sockets is in test_listen.py.
    """
    from tornado_mcp.sse import SSEChannel

    loop = asyncio.get_running_loop()
    pending: asyncio.Future[None] = loop.create_future()

    class StuckPeer:
        class request:  # mirrors RequestHandler.request
            connection = None

        def set_header(self, name: str, value: str) -> None: ...
        def write(self, data: bytes) -> None: ...
        def flush(self) -> asyncio.Future[None]:
            return pending
        def finish(self) -> None: ...

    overflows: list[str] = []
    channel = SSEChannel(StuckPeer(), lambda: 3, on_overflow=overflows.append)
    assert channel.send(b"first")  # written; its flush never completes
    for i in range(3):
        assert channel.send(f"q{i}".encode()), i  # queued: at the bound
    assert channel.queue_depth == 3 and not channel.closed and overflows == []
    assert not channel.send(b"one too many")
    assert overflows == ["max_stream_queue"] and channel.closed
    assert channel.queue_depth == 0  # nothing retained once refused
    pending.cancel()
