"""The legacy era's request bodies: the ``max_request_bytes`` bound (plain and chunked), JSON
nesting, parse errors, JSON-RPC shapes, and malformed bodies that must never answer 500.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp_http import (
    assert_refused,
    error_of,
    example_server,
    final,
    legacy_headers,
    raw_request,
    rpc,
    running,
    wait_until,
)

from tornado_mcp import Server


def chunked(data: bytes, size: int = 300) -> list[bytes]:
    parts = [data[i:i + size] for i in range(0, len(data), size)]
    return [b"%x\r\n%s\r\n" % (len(p), p) for p in parts] + [b"0\r\n\r\n"]


def padded_ping(total: int) -> bytes:
    """A valid ``ping`` request whose body is exactly ``total`` bytes."""
    base = json.dumps(rpc("ping", {"pad": ""})).encode()
    body = json.dumps(rpc("ping", {"pad": "x" * (total - len(base))})).encode()
    assert len(body) == total
    return body


def nested_ping(depth: int) -> bytes:
    """A ``ping`` whose JSON nests exactly ``depth`` containers deep (the body is depth 1)."""
    inner = "[" * (depth - 2) + "]" * (depth - 2)
    body = ('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + inner + "}}").encode()
    assert json_depth(json.loads(body)) == depth
    return body


def json_depth(value: Any) -> int:
    """Containers on the deepest path (iterative, so any depth is fine)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d)
            stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    return deepest


# -- body size bound ------------------------------------------------------------------------------

LIMIT = 2048


async def test_body_exactly_at_max_request_bytes_is_accepted() -> None:
    async with running(example_server(), max_request_bytes=LIMIT) as srv:
        sid = await srv.initialize()
        r = await srv.post(None, session=sid, raw=padded_ping(LIMIT))
        assert final(r) == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_body_one_over_max_request_bytes_is_413() -> None:
    async with running(example_server(), max_request_bytes=LIMIT) as srv:
        sid = await srv.initialize()
        r = await srv.post(None, session=sid, raw=padded_ping(LIMIT + 1))
        assert_refused(r, 413, -32600, f"Payload too large: request body exceeds {LIMIT} bytes")
        assert srv.transport.refusals["max_request_bytes"] == 1


def chunked_head(sid: str) -> list[str]:
    return ["POST /mcp HTTP/1.1", "Transfer-Encoding: chunked", "Connection: close",
            *(f"{k}: {v}" for k, v in legacy_headers(sid).items())]


async def test_chunked_body_at_the_bound_is_accepted() -> None:
    async with running(example_server(), max_request_bytes=LIMIT) as srv:
        sid = await srv.initialize()
        s = await raw_request(srv.port, chunked_head(sid), chunked(padded_ping(LIMIT)))
        await s.wait_closed()
        assert s.status == 200, s.raw
        assert s.messages == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


async def test_chunked_body_over_the_bound_is_413() -> None:
    async with running(example_server(), max_request_bytes=LIMIT) as srv:
        sid = await srv.initialize()
        s = await raw_request(srv.port, chunked_head(sid), chunked(padded_ping(LIMIT + 1)))
        await s.wait_closed()
        assert s.status == 413, s.raw
        body = json.loads(s.raw)
        assert body["error"]["code"] == -32600 and body["id"] is None
        assert "Payload too large" in body["error"]["message"]


@pytest.mark.parametrize("declared", [LIMIT + 1, 10**9])
async def test_declared_content_length_over_the_bound_is_refused_unread(declared: int) -> None:
    async with running(example_server(), max_request_bytes=LIMIT) as srv:
        sid = await srv.initialize()
        head = ["POST /mcp HTTP/1.1", f"Content-Length: {declared}",
                *(f"{k}: {v}" for k, v in legacy_headers(sid).items())]
        s = await raw_request(srv.port, head)  # headers only: the body is never sent
        await s.wait_closed(timeout=5.0)
        assert s.status == 413, s.raw
        assert s.headers.get("Connection", "").lower() == "close"
        body = json.loads(s.raw)
        assert body["error"]["code"] == -32600
        assert f"exceeds {LIMIT} bytes" in body["error"]["message"]


# -- parsing, nesting, JSON-RPC shape -------------------------------------------------------------

async def test_nesting_exactly_64_is_accepted() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(None, session=sid, raw=nested_ping(64))
        assert final(r) == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.parametrize("depth", [65, 69, 500])
async def test_nesting_over_64_is_a_parse_error(depth: int) -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(None, session=sid, raw=nested_ping(depth))
        assert_refused(r, 400, -32700, "Parse error: Invalid JSON")


@pytest.mark.parametrize("raw", [b"{not json", b"", b"\xff\xfe{}", b'{"jsonrpc":"2.0",'])
async def test_parse_error_is_400_with_id_null(raw: bytes) -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(None, session=sid, raw=raw)
        assert_refused(r, 400, -32700, "Parse error: Invalid JSON", request_id=None)


async def test_non_object_body_is_400_invalid_request() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post("just a string", session=sid)
        assert_refused(r, 400, -32600, "single request object")


async def test_notifications_and_client_responses_are_202_empty() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        for msg in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
                    {"jsonrpc": "2.0", "id": "unknown-id", "result": {}},
                    {"jsonrpc": "2.0", "id": 77, "error": {"code": -1, "message": "no"}}):
            r = await srv.post(msg, session=sid)
            assert r.status == 202 and r.body == b"", (msg, r.status, r.body)


# -- robustness -----------------------------------------------------------------------------------

MALFORMED: list[bytes] = [
    b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
    b'{"jsonrpc":"2.0","id":[1],"method":"ping"}',
    b'{"jsonrpc":"2.0","id":true,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":null,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"method":5}',
    b'{"jsonrpc":"2.0","id":1,"method":null}',
    b'{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}',
    b'{"jsonrpc":"2.0","id":1,"method":"ping","params":[1,2]}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":7}}',
    b'{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":[]}}',
    b'{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"x","arguments":"a"}}',
    b'{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":5}}',
    b'{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":7}}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"x":1}}}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}',
    b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
    b'{"id":1,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":-99999999999999999999,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"result":{},"error":{}}',
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}',
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":null}',
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}',
    b'"a string"', b"42", b"null", b"true", b"{}", b"[]", b"[1,2]", b"[[]]",
    b"123456789012345678901234567890", b'"\\ud800"', b"\x00", b"{}{}",
]


@pytest.mark.parametrize("stateless", [False, True])
async def test_malformed_bodies_never_answer_500(stateless: bool) -> None:
    async with running(example_server(), stateless=stateless) as srv:
        sid = None if stateless else await srv.initialize("2025-03-26")
        for raw in MALFORMED:
            for session in {sid, None}:
                r = await srv.post(None, session=session, raw=raw,
                                   version="2025-03-26" if session else None)
                assert r.status < 500, (raw, r.status, r.body)
                assert b"Traceback" not in r.body and b"File \"" not in r.body, raw
                if r.status >= 400:
                    err = error_of(r)
                    assert isinstance(err["code"], int) and isinstance(err["message"], str)
                elif r.status == 200:
                    for m in r.messages:
                        assert m.get("jsonrpc") == "2.0", (raw, m)
                else:
                    assert r.status == 202 and r.body == b"", (raw, r.status, r.body)
        # The server still works afterwards.
        ok = await srv.post(rpc("ping", request_id="after"), session=sid)
        assert final(ok)["id"] == "after"


async def test_invalid_request_shapes_answer_invalid_request() -> None:
    """A request with a bad ``jsonrpc``, ``id`` or ``params`` is answered on its own stream
    with -32600; the id is echoed when it is a valid id, and null otherwise."""
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        for raw, request_id in ((b'{"jsonrpc":"1.0","id":1,"method":"ping"}', 1),
                                (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', None),
                                (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}', 1)):
            r = await srv.post(None, session=sid, raw=raw)
            assert r.status == 200, (raw, r.status)
            assert r.messages == [{"jsonrpc": "2.0", "id": request_id, "error": {
                "code": -32600, "message": "Invalid Request"}}], (raw, r.messages)


# -- dropped uploads ------------------------------------------------------------------------------

def buffered(transport: Any) -> int:
    """Bytes of request bodies the transport's handlers hold."""
    return int(transport.buffered_body_bytes)


async def test_disconnect_mid_body_frees_handler_and_body() -> None:
    async with running(Server("x")) as srv:
        t = srv.transport
        head = ["POST /mcp HTTP/1.1", "Content-Type: application/json",
                "Accept: application/json, text/event-stream", "Content-Length: 4000000"]
        for _ in range(3):
            upload = await raw_request(srv.port, head, [b" " * 1_000_000])
            await wait_until(lambda: buffered(t) >= 1_000_000, timeout=5)
            upload.close()  # leave mid-upload
            await wait_until(lambda: not t._handlers, timeout=5)
            assert buffered(t) == 0
