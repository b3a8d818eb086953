"""Readers that stop reading: detected by their progress, not by the server's queue alone.

A client that stops reading a quiet stream leaves nothing pending in the server: what was
sent sits in the kernel's send buffer.  These tests use a client with a small receive
buffer that reads nothing, and check that its stream is dropped after
``stream_stall_timeout`` and its slot goes to the next client, while a slow client that
keeps reading keeps its stream.
"""

from __future__ import annotations

import asyncio
import json
import socket

from mcp_http import MODERN, TIMEOUT, modern_meta, running, wait_until

from tornado_mcp import Server


def build() -> Server:
    server = Server("stalled", version="1.0")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


def stalled_listen_request(port: int) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": "stalled", "method": "subscriptions/listen",
                       "params": {"notifications": {"toolsListChanged": True},
                                  "_meta": modern_meta()}}).encode()
    head = "\r\n".join([
        "POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Content-Length: {len(body)}",
        "Content-Type: application/json", "Accept: application/json, text/event-stream",
        f"MCP-Protocol-Version: {MODERN}", "Mcp-Method: subscriptions/listen"])
    return (head + "\r\n\r\n").encode() + body


async def test_a_listener_that_stops_reading_loses_its_slot_to_the_next() -> None:
    """A peer that reads nothing while the kernel holds what was sent to it is dropped
    after ``stream_stall_timeout``, though no write of the server's is pending."""
    pad = "x" * 2000
    async with running(build(), max_listen_subscriptions=1, stream_stall_timeout=1.0,
                       max_stream_queue=100_000) as srv:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(loop.sock_connect(sock, ("127.0.0.1", srv.port)), TIMEOUT)
            await loop.sock_sendall(sock, stalled_listen_request(srv.port))
            # From here on this client reads nothing.
            await wait_until(lambda: len(srv.transport.listen_index) == 1)
            # Far less than a kernel send buffer: it all leaves the server's queue.
            for i in range(40):
                srv.transport.publish("notifications/tools/list_changed", {"n": i, "p": pad})
            refused = await srv.listen({"toolsListChanged": True}, request_id="refused")
            await refused.wait_closed()
            assert refused.status == 503
            await wait_until(lambda: len(srv.transport.listen_index) == 0, timeout=5.0)
            assert srv.transport.snapshot().refusals["stream_stall_timeout"] == 1
            stream = await srv.listen({"toolsListChanged": True}, request_id="next")
            try:
                assert stream.status == 200
                assert len(srv.transport.listen_index) == 1
            finally:
                stream.close()
        finally:
            sock.close()


async def test_a_slow_reader_that_keeps_reading_keeps_its_stream() -> None:
    async with running(build(), stream_stall_timeout=0.3) as srv:
        stream = await srv.listen({"toolsListChanged": True})
        try:
            for i in range(8):
                srv.transport.publish("notifications/tools/list_changed",
                                      {"n": i, "p": "x" * 20_000})
                await asyncio.sleep(0.1)  # the pace of the load, not a wait for an event
            await stream.wait_for(lambda s: len(s.messages) >= 2)
            assert len(srv.transport.listen_index) == 1
            assert srv.transport.snapshot().refusals["stream_stall_timeout"] == 0
        finally:
            stream.close()
