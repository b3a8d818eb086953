"""Each member of Tornado that ``tornado_mcp/transport/seams.py`` lists, checked on the
installed Tornado (``./dev test`` runs this on 6.4, 6.5 and 6.6): it exists, and does what
the endpoint relies on."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
import tornado
import tornado.httpserver
import tornado.netutil
import tornado.web
from http_wire import WireConn, request_bytes
from mcp_http import MODERN, TIMEOUT, modern_meta, running, wait_until

from tornado_mcp import Server
from tornado_mcp.transport import seams

pytestmark = pytest.mark.timeout(60)


class Probe(tornado.web.RequestHandler):
    """Reads the seams off a live request."""

    seen: dict[str, Any] = {}

    def get(self) -> None:
        connection = self.request.connection
        Probe.seen = {"limit": seams.body_limit(connection),
                      "socket": seams.socket_of(connection)}
        self.finish("ok")


async def serve(app: tornado.web.Application,
                **kwargs: Any) -> tuple[tornado.httpserver.HTTPServer, int]:
    http = tornado.httpserver.HTTPServer(app, **kwargs)
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
    http.add_sockets(sockets)
    return http, sockets[0].getsockname()[1]


def test_no_private_name_is_listed() -> None:
    assert seams.PRIVATE_NAMES == ()
    assert tornado.version_info >= (6, 4)


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({}, 100 * 1024 * 1024),  # max_buffer_size's default
    ({"max_body_size": 1024}, 1024),
    ({"max_buffer_size": 4096}, 4096),
])
async def test_the_http_servers_body_limit_is_read(kwargs: dict[str, Any],
                                                   expected: int) -> None:
    http, port = await serve(tornado.web.Application([("/probe", Probe)]), **kwargs)
    try:
        conn = await WireConn.open(port)
        try:
            await conn.send(request_bytes("GET", port, [], b"", target="/probe"))
            assert (await conn.read_reply()).status == 200
        finally:
            conn.close()
        assert Probe.seen["limit"] == expected
        assert isinstance(Probe.seen["socket"], socket.socket)
    finally:
        http.stop()
        await http.close_all_connections()


async def test_the_smaller_body_limit_wins() -> None:
    """An HTTP server's ``max_body_size`` below ``max_request_bytes`` is the endpoint's
    limit too, answered with its own 413 (never raised to the endpoint's)."""
    async with running(Server("limits"), http_options={"max_body_size": 1024}) as srv:
        conn = await WireConn.open(srv.port)
        try:
            reply = await conn.exchange("POST", [("Content-Type", "application/json"),
                                                 ("Accept", "application/json")], b"x" * 2000)
            assert reply.status == 413
            assert reply.json["error"]["message"] == \
                "Payload too large: request body exceeds 1024 bytes"
        finally:
            conn.close()


async def test_detach_hands_over_a_stream_whose_writes_still_complete() -> None:
    """A refusal's lingering close: the response written through the connection, then the
    stream taken (``detach``, during ``headers_received``) and closed once sent."""
    async with running(Server("linger"), max_request_bytes=100) as srv:
        conn = await WireConn.open(srv.port)
        try:
            head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
                    "Content-Type: application/json\r\nAccept: application/json\r\n"
                    "Content-Length: 1000000\r\n\r\n").encode()
            await conn.send(head + b"x" * 1000)
            reply = await conn.read_reply()
            assert reply.status == 413 and reply.closes
            assert await conn.at_eof(TIMEOUT)
        finally:
            conn.close()
        await wait_until(lambda: srv.transport.lingering == 0)


async def test_the_fast_path_learns_that_its_client_left_while_it_answers() -> None:
    """``set_close_callback``: a listen stream on the fast path ends when its client
    closes the connection, and the endpoint lets go of it; ``close()`` is what drops a
    stalled or cut-off peer (tests/reliability/test_stalled_readers.py, test_body_deadline.py)."""
    async with running(Server("close"), fast=True) as srv:
        conn = await WireConn.open(srv.port)
        body = json.dumps({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
                           "params": {"notifications": {"toolsListChanged": True},
                                      "_meta": modern_meta()}}).encode()
        await conn.send(request_bytes("POST", srv.port, [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", MODERN), ("Mcp-Method", "subscriptions/listen")], body))
        await wait_until(lambda: len(srv.transport.listen_index) == 1)
        conn.close()
        await wait_until(lambda: len(srv.transport.listen_index) == 0
                         and srv.transport.in_progress == 0)
