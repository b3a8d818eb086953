"""``body_timeout``, the endpoint's own bound on a body's arrival, kept without Tornado's
per-request timer: a body complete within the bound is served, one still trickling past
it is cut off with nothing of it retained (logged as Tornado logs its own), and an
``HTTPServer``'s own ``body_timeout`` keeps bounding the application's routes, the
endpoint's included, as Tornado does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import pytest
import tornado.web
from http_wire import WireConn
from mcp_http import MODERN, TIMEOUT, Running, modern_meta, running, wait_until

from tornado_mcp import Server, Transport

BOUND = 1.0  # seconds: the body_timeout in these tests
#: How late a cut-off may come: a quarter of the bound (the sweep's pace), plus scheduling
#: slack on a loaded machine.
LATE = BOUND / 4 + 1.0


def build() -> Server:
    server = Server("deadline", version="1.0")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    return server


class Plain(tornado.web.RequestHandler):
    """A route of the host application that reads its body the usual way."""

    def post(self) -> None:
        self.finish(self.request.body)


def host_routes(t: Transport) -> list[Any]:
    return [(r"/plain", Plain)]


def echo_request(port: int) -> tuple[bytes, bytes]:
    """The head and the body of a 2026-07-28 ``tools/call echo``."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {"text": "hi"},
                                  "_meta": modern_meta()}}).encode()
    head = "\r\n".join([
        "POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Content-Length: {len(body)}",
        "Content-Type: application/json", "Accept: application/json, text/event-stream",
        f"MCP-Protocol-Version: {MODERN}", "Mcp-Method: tools/call", "Mcp-Name: echo"])
    return (head + "\r\n\r\n").encode(), body


async def trickle(conn: WireConn, drip: bytes, until: asyncio.Future[bool]) -> float:
    """Send ``drip`` every 0.1 s until ``until`` is done; the seconds that took."""
    start = time.monotonic()
    while not until.done():
        if time.monotonic() - start > TIMEOUT:
            raise AssertionError("the server kept a trickling body past the test's deadline")
        try:
            await conn.send(drip)
        except ConnectionError:
            break
        await asyncio.wait([until], timeout=0.1)
    assert await asyncio.wait_for(until, TIMEOUT)
    return time.monotonic() - start


def handlers(srv: Running) -> list[Any]:
    return list(srv.transport._handlers)


async def test_a_body_completed_within_the_body_timeout_is_served() -> None:
    async with running(build(), body_timeout=BOUND) as srv:
        conn = await WireConn.open(srv.port)
        try:
            head, body = echo_request(srv.port)
            start = time.monotonic()
            await conn.send(head + body[:10])
            await wait_until(lambda: len(srv.transport.bodies) == 1)
            await asyncio.sleep(BOUND * 0.6)  # the client's own pace, inside the bound
            await conn.send(body[10:])
            reply = await conn.read_reply()
            assert time.monotonic() - start < BOUND
            assert reply.status == 200
            assert reply.json["result"]["content"][0]["text"] == "hi"
            assert len(srv.transport.bodies) == 0
            # The connection stays usable for the next request.
            await conn.send(head + body)
            assert (await conn.read_reply()).status == 200
        finally:
            conn.close()


async def test_a_body_trickling_past_the_body_timeout_is_cut_off_and_forgotten(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with running(build(), body_timeout=BOUND) as srv:
        conn = await WireConn.open(srv.port)
        head, _ = echo_request(srv.port)
        head = head.replace(b"Content-Length: ", b"Content-Length: 1000")  # never complete
        await conn.send(head)
        closed = asyncio.ensure_future(conn.at_eof(TIMEOUT))
        try:
            took = await trickle(conn, b" " * 10, closed)
        finally:
            closed.cancel()
            conn.close()
        assert BOUND * 0.9 <= took < BOUND + LATE
        await wait_until(lambda: srv.transport.in_progress == 0)
        assert srv.transport.buffered_body_bytes == 0
        assert len(srv.transport.bodies) == 0
        lines = [r.getMessage() for r in caplog.records]
        assert any(line.startswith("Timeout reading body from 127.0.0.1 (POST /mcp)")
                   for line in lines), lines
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
        # The endpoint serves the next client as before.
        fresh = await WireConn.open(srv.port)
        try:
            head, body = echo_request(srv.port)
            await fresh.send(head + body)
            assert (await fresh.read_reply()).status == 200
        finally:
            fresh.close()


async def test_a_body_that_stops_arriving_is_cut_off_at_the_body_timeout() -> None:
    async with running(build(), body_timeout=BOUND) as srv:
        conn = await WireConn.open(srv.port)
        try:
            head, body = echo_request(srv.port)
            start = time.monotonic()
            await conn.send(head + body[:-1])  # one byte short, then nothing
            assert await conn.at_eof(TIMEOUT)
            took = time.monotonic() - start
            assert BOUND * 0.9 <= took < BOUND + LATE
            await wait_until(lambda: srv.transport.in_progress == 0)
            assert len(srv.transport.bodies) == 0
        finally:
            conn.close()


async def test_without_a_body_timeout_the_endpoint_sets_no_deadline() -> None:
    async with running(build()) as srv:
        conn = await WireConn.open(srv.port)
        try:
            head, body = echo_request(srv.port)
            await conn.send(head + body[:10])
            await wait_until(lambda: srv.transport.in_progress == 1)
            assert len(srv.transport.bodies) == 0
            await conn.send(body[10:])
            assert (await conn.read_reply()).status == 200
        finally:
            conn.close()


async def test_the_http_servers_own_body_timeout_bounds_the_endpoint_too() -> None:
    """An application's ``HTTPServer(body_timeout=...)`` is Tornado's, for every route: the
    endpoint never raises or lifts it."""
    async with running(build(), http_options={"body_timeout": BOUND}) as srv:
        conn = await WireConn.open(srv.port)
        try:
            head, body = echo_request(srv.port)
            start = time.monotonic()
            await conn.send(head + body[:-1])
            assert await conn.at_eof(TIMEOUT)
            assert BOUND * 0.9 <= time.monotonic() - start < BOUND + LATE
            assert len(srv.transport.bodies) == 0  # not the endpoint's sweep: Tornado's
        finally:
            conn.close()


async def test_other_routes_keep_tornados_body_timeout() -> None:
    async with running(build(), extra_routes=host_routes,
                       http_options={"body_timeout": BOUND}) as srv:
        conn = await WireConn.open(srv.port)
        head = (f"POST /plain HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
                "Content-Length: 1000\r\n\r\n").encode()
        await conn.send(head)
        closed = asyncio.ensure_future(conn.at_eof(TIMEOUT))
        try:
            took = await trickle(conn, b"x" * 10, closed)
        finally:
            closed.cancel()
            conn.close()
        assert BOUND * 0.9 <= took < BOUND + LATE
