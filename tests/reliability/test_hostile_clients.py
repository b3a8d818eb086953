"""Clients that make mistakes on keep-alive connections, and clients that stop reading.

Every test speaks raw HTTP/1.1 over a real socket, because what is checked is what
happens to the connection: after a refusal, a client's next request on the same
connection is answered, or the refusal said ``Connection: close`` and the server closed.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from typing import Any

import pytest
from http_wire import ConnectionEnded, WireConn, WireReply
from mcp_http import LEGACY, MODERN, modern_body, running, wait_until

from tornado_mcp import Server
from tornado_mcp.transport import serving

LIMIT = 4096

LEGACY_HEADERS = [("Content-Type", "application/json"),
                  ("Accept", "application/json, text/event-stream")]


def modern_headers(method: str, name: str | None = None) -> list[tuple[str, str]]:
    lines = [*LEGACY_HEADERS, ("MCP-Protocol-Version", MODERN), ("Mcp-Method", method)]
    if name is not None:
        lines.append(("Mcp-Name", name))
    return lines


def build() -> Server:
    server = Server("hostile", version="1.0")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


def initialize_body(request_id: Any = 1, pad: int = 0) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize",
                       "params": {"protocolVersion": LEGACY, "capabilities": {},
                                  "clientInfo": {"name": "x" * (pad + 1), "version": "1"}}}
                      ).encode()


LEGACY_LIST = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}).encode()
MODERN_LIST = modern_body("tools/list", request_id=7)
FOREIGN = ("Origin", "http://evil.example")

#: (name, method, header lines, body): each is refused, in one era or the other.
REFUSALS: list[tuple[str, str, list[tuple[str, str]], bytes, int]] = [
    ("legacy foreign origin", "POST", [*LEGACY_HEADERS, FOREIGN], initialize_body(), 403),
    ("modern foreign origin", "POST", [*modern_headers("tools/list"), FOREIGN],
     MODERN_LIST, 403),
    ("GET foreign origin", "GET", [("Accept", "text/event-stream"), FOREIGN], b"", 403),
    ("legacy foreign origin, large body", "POST", [*LEGACY_HEADERS, FOREIGN],
     initialize_body(pad=LIMIT - 300), 403),
    ("legacy too large", "POST", LEGACY_HEADERS, initialize_body(pad=LIMIT), 413),
    ("modern too large", "POST", modern_headers("tools/list"),
     modern_body("tools/list", {"pad": "x" * LIMIT}), 413),
    ("PUT", "PUT", LEGACY_HEADERS, LEGACY_LIST, 405),
    ("PATCH", "PATCH", modern_headers("tools/list"), MODERN_LIST, 405),
    ("OPTIONS", "OPTIONS", LEGACY_HEADERS, b"", 405),
    ("HEAD", "HEAD", LEGACY_HEADERS, b"", 405),
    ("unknown method", "BREW", LEGACY_HEADERS, LEGACY_LIST, 405),
    ("legacy wrong content type", "POST",
     [("Content-Type", "text/plain"), ("Accept", "application/json, text/event-stream")],
     initialize_body(), 415),
    ("modern wrong content type", "POST",
     [("Content-Type", "text/plain"), *modern_headers("tools/list")[1:]], MODERN_LIST, 415),
    ("legacy not acceptable", "POST",
     [("Content-Type", "application/json"), ("Accept", "text/html")], initialize_body(), 406),
    ("modern not acceptable", "POST",
     [("Content-Type", "application/json"), ("Accept", "text/html"),
      ("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/list")], MODERN_LIST, 406),
    ("legacy invalid JSON", "POST", LEGACY_HEADERS, b"{not json", 400),
    ("modern invalid JSON", "POST", modern_headers("tools/list"), b"{not json", 400),
    ("unknown protocol version", "POST",
     [*LEGACY_HEADERS, ("MCP-Protocol-Version", "1999-01-01")], LEGACY_LIST, 400),
    ("legacy missing session", "POST", LEGACY_HEADERS, LEGACY_LIST, 400),
    ("legacy unknown session", "POST",
     [*LEGACY_HEADERS, ("Mcp-Session-Id", "nope"), ("MCP-Protocol-Version", LEGACY)],
     LEGACY_LIST, 404),
    ("modern method header mismatch", "POST", modern_headers("prompts/list"), MODERN_LIST,
     400),
    ("GET without a session", "GET", [("Accept", "text/event-stream")], b"", 400),
    ("DELETE without a session", "DELETE", [], b"", 400),
]


async def assert_connection_honest(conn: WireConn, reply: WireReply) -> None:
    """After ``reply``: the connection serves the next request, or the reply said it
    would close and it did."""
    if reply.closes:
        assert await conn.at_eof(), "said Connection: close but kept the connection open"
        return
    try:
        follow = await conn.exchange("POST", modern_headers("tools/list"), MODERN_LIST)
    except ConnectionEnded:
        pytest.fail(f"the {reply.status} kept the connection open without "
                    "Connection: close, then the next request got no response")
    assert follow.status == 200, follow.body
    assert json.loads(follow.body)["result"]["tools"]


@pytest.mark.parametrize(("name", "method", "headers", "body", "status"), REFUSALS,
                         ids=[r[0] for r in REFUSALS])
async def test_a_refused_request_leaves_the_connection_honest(
        name: str, method: str, headers: list[tuple[str, str]], body: bytes,
        status: int) -> None:
    async with running(build(), max_request_bytes=LIMIT) as srv:
        conn = await WireConn.open(srv.port)
        try:
            reply = await conn.exchange(method, headers, body)
            assert reply.status == status, reply.body
            await assert_connection_honest(conn, reply)
        finally:
            conn.close()
        await wait_until(lambda: srv.transport.in_progress == 0)
        assert len(srv.transport.sessions) == 0


async def test_a_small_refused_body_is_discarded_and_the_connection_kept() -> None:
    """A refusal decided from the headers alone still reads a small body, so the client's
    pooled connection stays usable."""
    async with running(build(), max_request_bytes=LIMIT) as srv:
        conn = await WireConn.open(srv.port)
        try:
            for _ in range(3):
                reply = await conn.exchange("POST", [*LEGACY_HEADERS, FOREIGN],
                                            initialize_body())
                assert reply.status == 403 and not reply.closes
            follow = await conn.exchange("POST", modern_headers("tools/list"), MODERN_LIST)
            assert follow.status == 200
        finally:
            conn.close()


async def test_a_refusal_during_a_chunked_upload_closes_after_saying_so() -> None:
    async with running(build(), max_request_bytes=LIMIT) as srv:
        conn = await WireConn.open(srv.port)
        try:
            head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
                    "Content-Type: application/json\r\nAccept: application/json, "
                    "text/event-stream\r\nOrigin: http://evil.example\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n").encode()
            chunk = b"x" * 1024
            await conn.send(head + b"%x\r\n%s\r\n" % (len(chunk), chunk))
            reply = await conn.read_reply()
            assert reply.status == 403
            assert reply.closes
            assert await conn.at_eof()
        finally:
            conn.close()


# -- logs -------------------------------------------------------------------------------------

@pytest.mark.parametrize("fast", [False, True], ids=["ordinary", "fast"])
async def test_client_mistakes_are_one_line_with_the_request_id(
        caplog: pytest.LogCaptureFixture, fast: bool) -> None:
    """On the library's servers: the fast path's own access line, or the application's
    ``log_function`` (:func:`tornado_mcp.transport.serving.log_request`) on the ordinary
    one, name the request's id and why it was refused."""
    caplog.set_level(logging.INFO)
    async with running(build(), fast=fast,
                       app_settings={"log_function": serving.log_request}) as srv:
        conn = await WireConn.open(srv.port)
        try:
            reply = await conn.exchange(
                "POST", modern_headers("tools/call", "echo"),
                modern_body("tools/call", {"name": "echo", "arguments": {"text": 5}},
                            request_id="req-41"))
            assert reply.status in (200, 400)
            reply = await conn.exchange("POST", modern_headers("tools/list"),
                                        modern_body("tools/list", request_id="req-42")
                                        .replace(b'"jsonrpc"', b'"jsonrpc" :', 1))
            assert reply.status == 400
            reply = await conn.exchange("POST", modern_headers("prompts/list"),
                                        modern_body("tools/list", request_id="req-43"))
            assert reply.status == 400
        finally:
            conn.close()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]
    assert not any(r.exc_info for r in caplog.records)
    lines = [r.getMessage() for r in caplog.records if r.name == "tornado.access"]
    assert any("400" in line and "req-43" in line for line in lines), lines
    assert any("400" in line for line in lines), lines


# -- numbers no double holds ------------------------------------------------------------------

def test_a_number_out_of_range_is_a_parse_error_on_both_json_backends() -> None:
    """``1e999`` is refused as invalid JSON whether orjson is installed or not, so no
    infinity ever reaches a handler, an id or an access line."""
    probe = ("from tornado_mcp.protocol import jsonio\n"
             "try:\n"
             "    jsonio.loads(b'{\"jsonrpc\":\"2.0\",\"id\":1e999,\"method\":\"ping\"}')\n"
             "except jsonio.JSONDecodeError as exc:\n"
             "    print('refused', exc)\n"
             "else:\n"
             "    print('parsed')\n")
    for block in ("", "import sys; sys.modules['orjson'] = None\n"):
        out = subprocess.run([sys.executable, "-c", block + probe], capture_output=True,
                             text=True, timeout=60, check=True).stdout
        assert out.startswith("refused"), (block, out)


async def test_an_id_of_1e999_is_answered_and_logged_without_an_error(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with running(build(), app_settings={"log_function": serving.log_request}) as srv:
        conn = await WireConn.open(srv.port)
        try:
            reply = await conn.exchange(
                "POST", modern_headers("tools/list"),
                modern_body("tools/list").replace(b'"id": 1', b'"id": 1e999', 1))
            assert reply.status == 400 and reply.json["error"]["code"] == -32700
        finally:
            conn.close()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
