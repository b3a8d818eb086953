"""The legacy era (2025-03-26 / 2025-06-18 / 2025-11-25) over real HTTP, one test per rule.

Every test starts a real Tornado server on a loopback port (``tests/mcp_http.running``) and
talks to it with real HTTP requests or raw sockets; statuses, JSON-RPC codes and messages
follow ../shared/reference/ruby-sdk-behaviour.md (sections 2-4 and the checklist in 8).
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp_http import LEGACY, TIMEOUT, Reply, Running, Stream, running

from tornado_mcp import Context, Server

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from conformance_server import build_server

ALL_LEGACY = ("2025-03-26", "2025-06-18", "2025-11-25")
ALL_CAPS = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
SECRET = "secret-detail-4f1c"


# -- fixtures -------------------------------------------------------------------------------------

@dataclass
class Probe:
    """What the extra tools of :func:`make_server` let a test observe and steer."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    subscribe_calls: list[str] = field(default_factory=list)
    answers: list[Any] = field(default_factory=list)


def make_server() -> tuple[Server, Probe]:
    """The conformance fixtures plus a few tools that block, fail or ask the client."""
    server = build_server()
    probe = Probe()

    async def block(ctx: Context) -> str:
        probe.started.set()
        try:
            await probe.gate.wait()
        except asyncio.CancelledError:
            probe.cancelled.set()
            raise
        return "released"

    def boom() -> str:
        raise RuntimeError(SECRET)

    async def ask(kind: str, ctx: Context) -> dict[str, Any]:
        if kind == "sampling":
            got = await ctx.sample([{"role": "user",
                                     "content": {"type": "text", "text": "hi"}}], 10)
        elif kind == "elicitation":
            got = await ctx.elicit("Name?", {"type": "object",
                                             "properties": {"name": {"type": "string"}}})
        elif kind == "roots":
            got = await ctx.list_roots()
        else:
            got = await ctx.ping()
        probe.answers.append(got)
        return {"got": got}

    server.add_tool(block, "block", description="Blocks until released or cancelled")
    server.add_tool(boom, "boom", description="Raises")
    server.add_tool(ask, "ask", description="Sends a server-to-client request")
    return server, probe


def rpc(method: str, params: dict[str, Any] | None = None, request_id: Any = 1
        ) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def init_msg(version: str = LEGACY, request_id: Any = 0,
             capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return rpc("initialize", {"protocolVersion": version, "capabilities": capabilities or {},
                              "clientInfo": {"name": "t", "version": "1"}}, request_id)


def error_of(reply: Reply) -> dict[str, Any]:
    """The JSON-RPC error of a one-message reply (asserting there is exactly one)."""
    assert reply.content_type.startswith("application/json"), (reply.status, reply.body)
    body = reply.json
    assert isinstance(body, dict) and body.get("jsonrpc") == "2.0", body
    err: dict[str, Any] = body["error"]
    return err


def assert_refused(reply: Reply, status: int, code: int, message: str | None = None,
                   request_id: Any = None) -> dict[str, Any]:
    assert reply.status == status, (reply.status, reply.body)
    err = error_of(reply)
    assert err["code"] == code, err
    if message is not None:
        assert message in err["message"], err
    assert reply.json["id"] == request_id
    return err


def final(reply: Reply) -> dict[str, Any]:
    """The last message of a 200 reply (the JSON-RPC response)."""
    assert reply.status == 200, (reply.status, reply.body)
    assert reply.messages, reply.body
    last: dict[str, Any] = reply.messages[-1]
    return last


def legacy_headers(sid: str, version: str = LEGACY, **override: str | None) -> dict[str, str]:
    """The usual legacy POST headers; an override of ``None`` leaves that header out."""
    headers: dict[str, str | None] = {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "Mcp-Session-Id": sid, "MCP-Protocol-Version": version, **override}
    return {k: v for k, v in headers.items() if v is not None}


async def post_stream(srv: Running, message: dict[str, Any], sid: str) -> Stream:
    """POST a request over a raw socket and read its SSE response incrementally.

    Unlike ``Running.open_stream`` this does not wait for the response headers: a handler
    that blocks before emitting anything sends none until it finishes.
    """
    body = json.dumps(message).encode()
    head = ["POST /mcp HTTP/1.1", f"Content-Length: {len(body)}",
            *(f"{k}: {v}" for k, v in legacy_headers(sid).items())]
    return await raw_exchange(srv, head, [body])


async def raw_exchange(srv: Running, head: list[str],
                       body_parts: tuple[bytes, ...] | list[bytes] = ()) -> Stream:
    """Send a hand-written request (request line and headers, then raw body bytes)."""
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection("127.0.0.1", srv.port), TIMEOUT)
    writer.write(("\r\n".join([*head, f"Host: 127.0.0.1:{srv.port}"]) + "\r\n\r\n").encode())
    for part in body_parts:
        writer.write(part)
    await writer.drain()
    stream = Stream(writer)
    stream.task = asyncio.ensure_future(stream.read(reader))
    return stream


async def raw_post(srv: Running, headers: dict[str, str], body: str | bytes) -> Reply:
    """POST exactly these headers (an HTTP client library would add some of its own)."""
    data = body.encode() if isinstance(body, str) else body
    head = ["POST /mcp HTTP/1.1", f"Content-Length: {len(data)}", "Connection: close",
            *(f"{k}: {v}" for k, v in headers.items())]
    s = await raw_exchange(srv, head, [data])
    await s.wait_closed()
    return Reply(s.status, s.headers, s.raw,
                 s.messages or ([json.loads(s.raw)] if s.raw.startswith(b"{") else []))


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


async def delete(srv: Running, sid: str) -> Reply:
    return await srv.request("DELETE", None, {"Mcp-Session-Id": sid,
                                              "MCP-Protocol-Version": LEGACY})


async def get(srv: Running, sid: str | None, accept: str | None = "text/event-stream",
              **extra: str) -> Reply:
    """A GET expected to be refused (a successful one never ends; use ``get_stream``)."""
    headers = {"MCP-Protocol-Version": LEGACY, **extra}
    if accept is not None:
        headers["Accept"] = accept
    if sid is not None:
        headers["Mcp-Session-Id"] = sid
    return await srv.request("GET", None, headers, timeout=5.0)


async def until(predicate: Any, timeout: float = TIMEOUT) -> None:
    """Wait (bounded) for server-side state that has no event of its own."""
    async def loop() -> None:
        while not predicate():
            await asyncio.sleep(0.01)
    await asyncio.wait_for(loop(), timeout)


# -- initialize, sessions, negotiation ------------------------------------------------------------

async def test_initialize_answers_json_with_a_random_visible_ascii_session_id() -> None:
    async with running(build_server()) as srv:
        ids = []
        for n in range(8):
            r = await srv.post(init_msg(request_id=n))
            assert r.status == 200
            assert r.content_type.startswith("application/json")
            assert r.json["id"] == n and r.json["result"]["serverInfo"]["name"]
            sid = r.headers["Mcp-Session-Id"]
            assert sid and all(0x21 <= ord(c) <= 0x7E for c in sid)
            assert len(sid) >= 32  # 128 bits or more of randomness as hex
            ids.append(sid)
        assert len(set(ids)) == len(ids)
        # No shared prefix or counter: every character position varies across sessions.
        assert all(len({s[i] for s in ids}) > 1 for i in range(16))
        assert set(ids) == {s.id for s in srv.transport.sessions}


@pytest.mark.parametrize("version", ALL_LEGACY)
async def test_initialize_echoes_each_supported_legacy_version(version: str) -> None:
    async with running(build_server()) as srv:
        r = await srv.post(init_msg(version))
        assert r.status == 200 and r.json["result"]["protocolVersion"] == version
        sid = r.headers["Mcp-Session-Id"]
        ping = await srv.post(rpc("ping", request_id=2), session=sid, version=version)
        assert final(ping) == {"jsonrpc": "2.0", "id": 2, "result": {}}


@pytest.mark.parametrize("requested", ["1999-01-01", "2026-07-28", "2024-11-05"])
async def test_initialize_counter_offers_latest_for_an_unknown_version(requested: str) -> None:
    async with running(build_server()) as srv:
        r = await srv.post(init_msg(requested))
        assert r.status == 200 and r.json["result"]["protocolVersion"] == "2025-11-25"
        assert "Mcp-Session-Id" in r.headers


async def test_missing_session_id_is_400() -> None:
    async with running(build_server()) as srv:
        await srv.initialize()
        r = await srv.post(rpc("ping"))
        assert_refused(r, 400, -32600, "Missing session ID")
        n = await srv.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert_refused(n, 400, -32600, "Missing session ID")
        resp = await srv.post({"jsonrpc": "2.0", "id": "x", "result": {}})
        assert_refused(resp, 400, -32600, "Missing session ID")
        assert_refused(await get(srv, None), 400, -32600, "Missing session ID")
        d = await srv.request("DELETE", None, {"MCP-Protocol-Version": LEGACY})
        assert_refused(d, 400, -32600, "Missing session ID")


async def test_unknown_session_id_is_404_on_every_method() -> None:
    async with running(build_server()) as srv:
        await srv.initialize()
        bogus = "0" * 32
        assert_refused(await srv.post(rpc("ping"), session=bogus), 404, -32600,
                       "Session not found")
        n = await srv.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                           session=bogus)
        assert_refused(n, 404, -32600, "Session not found")
        assert_refused(await get(srv, bogus), 404, -32600, "Session not found")
        assert_refused(await delete(srv, bogus), 404, -32600, "Session not found")


async def test_delete_ends_the_session_then_its_id_is_404() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        other = await srv.initialize()
        d = await delete(srv, sid)
        assert d.status == 200 and d.json == {"success": True}
        assert d.content_type.startswith("application/json")
        assert_refused(await srv.post(rpc("ping"), session=sid), 404, -32600,
                       "Session not found")
        assert_refused(await delete(srv, sid), 404, -32600, "Session not found")
        assert [s.id for s in srv.transport.sessions] == [other]
        assert final(await srv.post(rpc("ping"), session=other))["result"] == {}


async def test_reinitialize_on_a_live_session_is_400_and_keeps_it() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(init_msg(request_id="second"), session=sid)
        assert_refused(r, 400, -32600, "already initialized", request_id="second")
        assert final(await srv.post(rpc("ping"), session=sid))["result"] == {}
        assert len(srv.transport.sessions) == 1


# -- GET stream -----------------------------------------------------------------------------------

async def test_second_get_stream_is_409() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        g = await srv.get_stream(sid)
        assert g.status == 200 and g.headers["Content-Type"].startswith("text/event-stream")
        r = await get(srv, sid)
        assert_refused(r, 409, -32600, "Only one SSE stream is allowed per session")
        assert not g.ended.is_set()
        g.close()


@pytest.mark.parametrize("accept", [None, "application/json", "text/html"])
async def test_get_without_event_stream_accept_is_406(accept: str | None) -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await get(srv, sid, accept=accept)
        assert_refused(r, 406, -32600, "Accept header must include text/event-stream")


async def test_get_stream_keepalive_and_no_buffering_header() -> None:
    async with running(build_server(), sse_keepalive_interval=0.05) as srv:
        sid = await srv.initialize()
        g = await srv.get_stream(sid)
        assert g.headers.get("X-Accel-Buffering") == "no"
        assert g.headers["Content-Type"].startswith("text/event-stream")
        await g.wait_for(lambda s: s.comments >= 2, timeout=5.0)
        assert g.messages == []  # comments only, no JSON-RPC message
        g.close()


async def test_get_client_disconnect_frees_the_stream() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        g = await srv.get_stream(sid)
        session = srv.transport.sessions.get(sid)
        assert session is not None and session.get_channel is not None
        channel = session.get_channel
        g.close()
        await asyncio.wait_for(asyncio.shield(channel.done), TIMEOUT)
        g2 = await srv.get_stream(sid)
        assert g2.status == 200, g2.raw
        assert session.get_channel is not None and session.get_channel is not channel
        g2.close()


# -- Accept, Content-Type, methods ----------------------------------------------------------------

@pytest.mark.parametrize("accept", [None, "application/json", "text/event-stream", "text/html"])
async def test_post_accept_missing_a_type_is_406(accept: str | None) -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await raw_post(srv, legacy_headers(sid, Accept=accept), json.dumps(rpc("ping")))
        assert_refused(r, 406, -32600,
                       "Accept header must include application/json and text/event-stream")


@pytest.mark.parametrize("accept", ["application/json, text/event-stream",
                                    "application/json;q=0.9, text/event-stream;q=0.5",
                                    "*/*", "APPLICATION/JSON, Text/Event-Stream"])
async def test_post_accept_variants_are_accepted(accept: str) -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("ping"), session=sid, headers={"Accept": accept})
        assert final(r)["result"] == {}


async def test_json_response_mode_needs_only_application_json() -> None:
    async with running(build_server(), json_response=True) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("ping"), session=sid, headers={"Accept": "application/json"})
        assert r.status == 200 and r.content_type.startswith("application/json")
        assert r.json == {"jsonrpc": "2.0", "id": 1, "result": {}}
        bad = await srv.post(rpc("ping"), session=sid, headers={"Accept": "text/event-stream"})
        assert_refused(bad, 406, -32600, "Accept header must include application/json")


@pytest.mark.parametrize("ctype", [None, "text/plain", "application/x-www-form-urlencoded",
                                   "application/jsonx"])
async def test_content_type_other_than_json_is_415(ctype: str | None) -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        headers = legacy_headers(sid, **{"Content-Type": ctype})
        r = await raw_post(srv, headers, json.dumps(rpc("ping")))
        assert_refused(r, 415, -32600,
                       "Unsupported Media Type: Content-Type must be application/json")


async def test_content_type_with_charset_is_accepted() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("ping"), session=sid,
                           headers={"Content-Type": "application/json; charset=utf-8"})
        assert final(r)["result"] == {}


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
async def test_unknown_http_method_is_405_with_a_jsonrpc_body(method: str) -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.request(method, b"{}", legacy_headers(sid))
        assert_refused(r, 405, -32600, "Method not allowed")


# -- body size bound ------------------------------------------------------------------------------

LIMIT = 2048


async def test_body_exactly_at_max_request_bytes_is_accepted() -> None:
    async with running(build_server(), max_request_bytes=LIMIT) as srv:
        sid = await srv.initialize()
        r = await srv.post(None, session=sid, raw=padded_ping(LIMIT))
        assert final(r) == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_body_one_over_max_request_bytes_is_413() -> None:
    async with running(build_server(), max_request_bytes=LIMIT) as srv:
        sid = await srv.initialize()
        r = await srv.post(None, session=sid, raw=padded_ping(LIMIT + 1))
        assert_refused(r, 413, -32600, f"Payload too large: request body exceeds {LIMIT} bytes")
        assert srv.transport.refusals["max_request_bytes"] == 1


def chunked_head(sid: str) -> list[str]:
    return ["POST /mcp HTTP/1.1", "Transfer-Encoding: chunked", "Connection: close",
            *(f"{k}: {v}" for k, v in legacy_headers(sid).items())]


async def test_chunked_body_at_the_bound_is_accepted() -> None:
    async with running(build_server(), max_request_bytes=LIMIT) as srv:
        sid = await srv.initialize()
        s = await raw_exchange(srv, chunked_head(sid), chunked(padded_ping(LIMIT)))
        await s.wait_closed()
        assert s.status == 200, s.raw
        assert s.messages == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


async def test_chunked_body_over_the_bound_is_413() -> None:
    async with running(build_server(), max_request_bytes=LIMIT) as srv:
        sid = await srv.initialize()
        s = await raw_exchange(srv, chunked_head(sid), chunked(padded_ping(LIMIT + 1)))
        await s.wait_closed()
        assert s.status == 413, s.raw
        body = json.loads(s.raw)
        assert body["error"]["code"] == -32600 and body["id"] is None
        assert "Payload too large" in body["error"]["message"]


@pytest.mark.parametrize("declared", [LIMIT + 1, 10**9])
async def test_declared_content_length_over_the_bound_is_refused_unread(declared: int) -> None:
    async with running(build_server(), max_request_bytes=LIMIT) as srv:
        sid = await srv.initialize()
        head = ["POST /mcp HTTP/1.1", f"Content-Length: {declared}",
                *(f"{k}: {v}" for k, v in legacy_headers(sid).items())]
        s = await raw_exchange(srv, head)  # headers only: the body is never sent
        await s.wait_closed(timeout=5.0)
        assert s.status == 413, s.raw
        assert s.headers.get("Connection", "").lower() == "close"
        body = json.loads(s.raw)
        assert body["error"]["code"] == -32600
        assert f"exceeds {LIMIT} bytes" in body["error"]["message"]


# -- parsing, nesting, JSON-RPC shape -------------------------------------------------------------

async def test_nesting_exactly_64_is_accepted() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(None, session=sid, raw=nested_ping(64))
        assert final(r) == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.parametrize("depth", [65, 69, 500])
async def test_nesting_over_64_is_a_parse_error(depth: int) -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(None, session=sid, raw=nested_ping(depth))
        assert_refused(r, 400, -32700, "Parse error: Invalid JSON")


@pytest.mark.parametrize("raw", [b"{not json", b"", b"\xff\xfe{}", b'{"jsonrpc":"2.0",'])
async def test_parse_error_is_400_with_id_null(raw: bytes) -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(None, session=sid, raw=raw)
        assert_refused(r, 400, -32700, "Parse error: Invalid JSON", request_id=None)


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_batch_is_refused_after_2025_03_26(version: str) -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize(version)
        r = await srv.post([rpc("ping", request_id=1), rpc("ping", request_id=2)],
                           session=sid, version=version)
        assert_refused(r, 400, -32600, "single request object")


async def test_non_object_body_is_400_invalid_request() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post("just a string", session=sid)
        assert_refused(r, 400, -32600, "single request object")


async def test_batch_of_requests_on_a_2025_03_26_session_gets_an_array() -> None:
    async with running(build_server()) as srv:
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
    async with running(build_server()) as srv:
        sid = await srv.initialize("2025-03-26")
        batch = [{"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}]
        r = await srv.post(batch, session=sid, version="2025-03-26")
        assert r.status == 202 and r.body == b""


async def test_batched_initialize_is_refused() -> None:
    async with running(build_server()) as srv:
        r = await srv.post([init_msg()])
        assert r.status == 400 and error_of(r)["code"] == -32600
        assert len(srv.transport.sessions) == 0


async def test_notifications_and_client_responses_are_202_empty() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        for msg in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
                    {"jsonrpc": "2.0", "id": "unknown-id", "result": {}},
                    {"jsonrpc": "2.0", "id": 77, "error": {"code": -1, "message": "no"}}):
            r = await srv.post(msg, session=sid)
            assert r.status == 202 and r.body == b"", (msg, r.status, r.body)


# -- MCP-Protocol-Version -------------------------------------------------------------------------

@pytest.mark.parametrize("header", ["1999-01-01", "not-a-version"])
async def test_unsupported_protocol_version_header_is_400(header: str) -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("ping"), session=sid, version=header)
        assert r.status == 400
        err = error_of(r)
        assert err["code"] == -32022 and err["data"]["requested"] == header


async def test_empty_protocol_version_header_is_400_invalid_request() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("ping"), session=sid, headers={"MCP-Protocol-Version": ""})
        assert_refused(r, 400, -32600, "Unsupported protocol version")


async def test_2025_03_26_header_and_no_header_accepted_on_a_2025_11_25_session() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize("2025-11-25")
        r = await srv.post(rpc("ping"), session=sid, version="2025-03-26")
        assert final(r)["result"] == {}
        h = legacy_headers(sid, **{"MCP-Protocol-Version": None})
        r2 = await raw_post(srv, h, json.dumps(rpc("ping", request_id=3)))
        assert final(r2) == {"jsonrpc": "2.0", "id": 3, "result": {}}


# -- max_sessions ---------------------------------------------------------------------------------

async def test_max_sessions_at_the_cap_then_over_it() -> None:
    async with running(build_server(), max_sessions=3) as srv:
        sids = [await srv.initialize() for _ in range(3)]  # exactly at the cap: all fine
        assert len(srv.transport.sessions) == 3
        r = await srv.post(init_msg(request_id=9))
        assert_refused(r, 503, -32603,
                       "Service unavailable: maximum concurrent sessions (3) reached")
        assert "Mcp-Session-Id" not in r.headers
        assert len(srv.transport.sessions) == 3
        assert {s.id for s in srv.transport.sessions} == set(sids)
        assert srv.transport.refusals["max_sessions"] == 1
        for sid in sids:  # nobody was evicted
            assert final(await srv.post(rpc("ping"), session=sid))["result"] == {}
        assert (await delete(srv, sids[0])).status == 200
        assert (await srv.post(init_msg())).status == 200  # room again


async def test_max_sessions_none_removes_the_cap() -> None:
    async with running(build_server(), max_sessions=None) as srv:
        for _ in range(12):
            await srv.initialize()
        assert len(srv.transport.sessions) == 12


async def test_at_the_cap_an_expired_session_is_reclaimed() -> None:
    async with running(build_server(), max_sessions=1, session_idle_timeout=0.1) as srv:
        old = await srv.initialize()
        await asyncio.sleep(0.2)  # the idle clock must pass: no event can stand in for it
        new = await srv.initialize()
        assert [s.id for s in srv.transport.sessions] == [new] and new != old


# -- idle expiry ----------------------------------------------------------------------------------

async def test_idle_session_expires_and_answers_404() -> None:
    async with running(build_server(), session_idle_timeout=0.1) as srv:
        sid = await srv.initialize()
        assert final(await srv.post(rpc("ping"), session=sid))["result"] == {}
        await asyncio.sleep(0.2)  # the idle clock only
        assert_refused(await srv.post(rpc("ping"), session=sid), 404, -32600,
                       "Session not found")
        assert len(srv.transport.sessions) == 0  # evicted on access
        assert_refused(await get(srv, sid), 404, -32600, "Session not found")


async def test_idle_expiry_reaped_without_access() -> None:
    async with running(build_server(), session_idle_timeout=0.1) as srv:
        await srv.initialize()
        await asyncio.sleep(0.2)  # the idle clock only
        assert srv.transport.sessions.reap() == 1
        assert len(srv.transport.sessions) == 0


async def test_a_session_with_a_request_in_flight_is_not_idle() -> None:
    server, probe = make_server()
    async with running(server, session_idle_timeout=0.1) as srv:
        sid = await srv.initialize()
        p = await post_stream(srv, rpc("tools/call", {"name": "block"}, "b1"), sid)
        await asyncio.wait_for(probe.started.wait(), TIMEOUT)
        await asyncio.sleep(0.25)  # well past the idle timeout, with the request in flight
        assert srv.transport.sessions.reap() == 0
        assert final(await srv.post(rpc("ping", request_id=2), session=sid))["result"] == {}
        probe.gate.set()
        msgs = await p.wait_messages(1)
        assert msgs[-1]["result"]["content"][0]["text"] == "released"


async def test_a_session_with_an_open_get_stream_is_not_idle() -> None:
    async with running(build_server(), session_idle_timeout=0.1) as srv:
        sid = await srv.initialize()
        g = await srv.get_stream(sid)
        await asyncio.sleep(0.25)  # the idle clock only
        assert srv.transport.sessions.reap() == 0
        assert final(await srv.post(rpc("ping"), session=sid))["result"] == {}
        g.close()


# -- DNS rebinding --------------------------------------------------------------------------------

async def test_bad_host_is_403() -> None:
    async with running(build_server()) as srv:
        r = await srv.post(init_msg(), headers={"Host": "evil.example.com"})
        assert_refused(r, 403, -32600, "Forbidden: Invalid Host header")
        assert len(srv.transport.sessions) == 0
        sid = await srv.initialize()
        assert_refused(await get(srv, sid, Host="evil.example.com"), 403, -32600,
                       "Invalid Host header")


@pytest.mark.parametrize("origin", ["http://evil.example.com", "null", "file:///etc/x",
                                    "http://127.0.0.1:1/path"])
async def test_bad_origin_is_403(origin: str) -> None:
    async with running(build_server()) as srv:
        r = await srv.post(init_msg(), headers={"Origin": origin})
        assert_refused(r, 403, -32600, "Forbidden: Invalid Origin header")
        sid = await srv.initialize()
        d = await srv.request("DELETE", None, {"Mcp-Session-Id": sid, "Origin": origin})
        assert_refused(d, 403, -32600, "Forbidden: Invalid Origin header")
        assert len(srv.transport.sessions) == 1


async def test_same_origin_and_no_origin_are_accepted() -> None:
    async with running(build_server()) as srv:
        same = await srv.post(init_msg(), headers={"Origin": f"http://127.0.0.1:{srv.port}"})
        assert same.status == 200
        none = await srv.post(init_msg())
        assert none.status == 200
        upper = await srv.post(init_msg(), headers={"Host": f"LOCALHOST:{srv.port}",
                                                    "Origin": f"http://localhost:{srv.port}"})
        assert upper.status == 200


async def test_allowed_hosts_and_allowed_origins_are_accepted() -> None:
    async with running(build_server(), allowed_hosts=["mcp.example.com", "api.example:8443"],
                       allowed_origins=["https://app.example"]) as srv:
        ok_host = await srv.post(init_msg(), headers={"Host": "mcp.example.com:1234"})
        assert ok_host.status == 200
        ok_hostport = await srv.post(init_msg(), headers={"Host": "api.example:8443"})
        assert ok_hostport.status == 200
        bad_port = await srv.post(init_msg(), headers={"Host": "api.example:9000"})
        assert_refused(bad_port, 403, -32600, "Invalid Host header")
        ok_origin = await srv.post(init_msg(), headers={"Origin": "https://app.example"})
        assert ok_origin.status == 200
        bad_origin = await srv.post(init_msg(), headers={"Origin": "https://other.example"})
        assert_refused(bad_origin, 403, -32600, "Invalid Origin header")


async def test_rebinding_protection_off_skips_the_checks() -> None:
    async with running(build_server(), dns_rebinding_protection=False) as srv:
        r = await srv.post(init_msg(), headers={"Host": "evil.example.com",
                                                "Origin": "http://evil.example.com"})
        assert r.status == 200


# -- stateless and json_response modes ------------------------------------------------------------

async def test_stateless_mode_has_no_sessions_and_refuses_get_and_delete() -> None:
    async with running(build_server(), stateless=True) as srv:
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
    async with running(build_server(), json_response=True) as srv:
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
    server, _ = make_server()
    async with running(server, json_response=True) as srv:
        sid = await srv.initialize(capabilities=ALL_CAPS)
        r = await srv.post(rpc("tools/call", {"name": "ask", "arguments": {"kind": "roots"}}),
                           session=sid)
        assert r.status == 200 and r.content_type.startswith("application/json")
        assert "JSON response mode does not support" in r.json["error"]["message"]


# -- notification routing -------------------------------------------------------------------------

async def test_progress_rides_the_post_stream_before_the_result_never_the_get() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        g = await srv.get_stream(sid)
        r = await srv.post(rpc("tools/call", {"name": "test_tool_with_progress",
                                              "_meta": {"progressToken": "p-1"}}), session=sid)
        assert r.status == 200 and r.content_type.startswith("text/event-stream")
        methods = [m.get("method") for m in r.messages]
        assert methods == ["notifications/progress"] * 3 + [None]
        assert [m["params"]["progress"] for m in r.messages[:3]] == [0, 50, 100]
        assert all(m["params"]["progressToken"] == "p-1" for m in r.messages[:3])
        assert r.messages[-1]["result"]["content"][0]["text"] == "p-1"
        # Barrier: a broadcast after the call; the GET stream must hold only that.
        srv.server.notify_tools_list_changed()
        await g.wait_messages(1)
        assert [m["method"] for m in g.messages] == ["notifications/tools/list_changed"]
        g.close()


async def test_no_progress_without_a_progress_token() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("tools/call", {"name": "test_tool_with_progress"}), session=sid)
        assert len(r.messages) == 1 and "result" in r.messages[0]


@pytest.mark.parametrize(("level", "expected"), [(None, 3), ("debug", 3), ("info", 3),
                                                 ("warning", 0), ("emergency", 0)])
async def test_log_messages_honour_set_level(level: str | None, expected: int) -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        g = await srv.get_stream(sid)
        if level is not None:
            s = await srv.post(rpc("logging/setLevel", {"level": level}, "lvl"), session=sid)
            assert final(s)["result"] == {}
        r = await srv.post(rpc("tools/call", {"name": "test_tool_with_logging"}), session=sid)
        logs = [m for m in r.messages if m.get("method") == "notifications/message"]
        assert len(logs) == expected
        assert all(m["params"]["level"] == "info" for m in logs)
        assert "result" in r.messages[-1] and len(r.messages) == expected + 1
        srv.server.notify_prompts_list_changed()
        await g.wait_messages(1)
        assert [m["method"] for m in g.messages] == ["notifications/prompts/list_changed"]
        g.close()


async def test_set_level_with_a_bad_level_is_invalid_params() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("logging/setLevel", {"level": "loud"}), session=sid)
        assert final(r)["error"]["code"] == -32602


async def test_broadcast_goes_once_to_every_get_stream_never_to_a_post_stream() -> None:
    server, probe = make_server()
    async with running(server) as srv:
        a, b = await srv.initialize(), await srv.initialize()
        ga, gb = await srv.get_stream(a), await srv.get_stream(b)
        p = await post_stream(srv, rpc("tools/call", {"name": "block"}, "blk"), a)
        await asyncio.wait_for(probe.started.wait(), TIMEOUT)
        srv.server.notify_tools_list_changed()
        await ga.wait_messages(1)
        await gb.wait_messages(1)
        probe.gate.set()
        await p.wait_closed()
        assert [m.get("id") for m in p.messages] == ["blk"]  # only the result
        srv.server.notify_resources_list_changed()  # barrier
        await ga.wait_messages(2)
        await gb.wait_messages(2)
        expected = ["notifications/tools/list_changed", "notifications/resources/list_changed"]
        assert [m["method"] for m in ga.messages] == expected
        assert [m["method"] for m in gb.messages] == expected
        ga.close()
        gb.close()


async def test_session_scoped_resources_updated_goes_to_the_get_stream_once() -> None:
    async with running(build_server()) as srv:
        a = await srv.initialize()
        b = await srv.initialize()
        ga = await srv.get_stream(a)
        uri = "test://watched-resource"
        sub = await srv.post(rpc("resources/subscribe", {"uri": uri}), session=a)
        assert final(sub)["result"] == {}
        # Another session touches it: a's GET stream hears; b's POST stream does not.
        t = await srv.post(rpc("tools/call", {"name": "touch_resource",
                                              "arguments": {"uri": uri}}), session=b)
        assert [m.get("id") for m in t.messages] == [1]
        await ga.wait_messages(1)
        # a touches it itself: still its GET stream, not the POST's own stream.
        t2 = await srv.post(rpc("tools/call", {"name": "touch_resource",
                                               "arguments": {"uri": uri}}, 2), session=a)
        assert [m.get("id") for m in t2.messages] == [2]
        await ga.wait_messages(2)
        srv.server.notify_tools_list_changed()  # barrier
        await ga.wait_messages(3)
        assert [m["method"] for m in ga.messages] == ["notifications/resources/updated"] * 2 \
            + ["notifications/tools/list_changed"]
        assert all(m["params"] == {"uri": uri} for m in ga.messages[:2])
        ga.close()


async def test_session_notify_from_another_thread_reaches_the_get_stream() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        g = await srv.get_stream(sid)
        session = srv.transport.sessions.get(sid)
        assert session is not None
        await asyncio.to_thread(session.notify_resources_updated, "test://x")
        await g.wait_messages(1)
        assert g.messages == [{"jsonrpc": "2.0", "method": "notifications/resources/updated",
                               "params": {"uri": "test://x"}}]
        g.close()


# -- in-flight ids and cancellation ---------------------------------------------------------------

async def test_duplicate_in_flight_request_id_is_409_and_the_first_survives() -> None:
    server, probe = make_server()
    async with running(server) as srv:
        sid = await srv.initialize()
        p = await post_stream(srv, rpc("tools/call", {"name": "block"}, 7), sid)
        await asyncio.wait_for(probe.started.wait(), TIMEOUT)
        dup = await srv.post(rpc("ping", request_id=7), session=sid)
        assert_refused(dup, 409, -32600,
                       "Conflict: Request id is already in flight for this session",
                       request_id=7)
        probe.gate.set()
        await p.wait_closed()
        assert p.messages[-1]["result"]["content"][0]["text"] == "released"
        again = await srv.post(rpc("ping", request_id=7), session=sid)  # finished: reusable
        assert final(again) == {"jsonrpc": "2.0", "id": 7, "result": {}}


async def test_notifications_cancelled_cancels_the_running_handler() -> None:
    server, probe = make_server()
    async with running(server) as srv:
        sid = await srv.initialize()
        p = await post_stream(srv, rpc("tools/call", {"name": "block"}, "c-1"), sid)
        await asyncio.wait_for(probe.started.wait(), TIMEOUT)
        c = await srv.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": "c-1", "reason": "changed my mind"}},
                           session=sid)
        assert c.status == 202
        await asyncio.wait_for(probe.cancelled.wait(), TIMEOUT)
        await p.wait_closed()
        assert p.messages == []  # a cancelled request gets no response
        session = srv.transport.sessions.get(sid)
        assert session is not None and not session.in_flight


# -- server-to-client requests --------------------------------------------------------------------

CLIENT_RESULTS: dict[str, dict[str, Any]] = {
    "sampling": {"role": "assistant", "content": {"type": "text", "text": "42"},
                 "model": "m", "stopReason": "endTurn"},
    "elicitation": {"action": "accept", "content": {"name": "Ada"}},
    "roots": {"roots": [{"uri": "file:///tmp", "name": "tmp"}]},
    "ping": {},
}
METHODS = {"sampling": "sampling/createMessage", "elicitation": "elicitation/create",
           "roots": "roots/list", "ping": "ping"}


@pytest.mark.parametrize("kind", list(METHODS))
async def test_server_to_client_request_round_trip(kind: str) -> None:
    server, probe = make_server()
    async with running(server) as srv:
        sid = await srv.initialize(capabilities=ALL_CAPS)
        g = await srv.get_stream(sid)
        p = await post_stream(srv, rpc("tools/call", {"name": "ask",
                                                      "arguments": {"kind": kind}}, "t"), sid)
        msgs = await p.wait_messages(1)
        request = msgs[0]
        assert request["method"] == METHODS[kind] and "id" in request
        assert request["id"] != "t"
        if kind == "elicitation":
            assert request["params"]["mode"] == "form"
            assert request["params"]["message"] == "Name?"
        reply = await srv.post({"jsonrpc": "2.0", "id": request["id"],
                                "result": CLIENT_RESULTS[kind]}, session=sid)
        assert reply.status == 202 and reply.body == b""
        await p.wait_closed()
        assert p.messages[-1]["id"] == "t"
        assert p.messages[-1]["result"]["structuredContent"] == {"got": CLIENT_RESULTS[kind]}
        assert probe.answers == [CLIENT_RESULTS[kind]]
        srv.server.notify_tools_list_changed()  # barrier: the request never hit the GET stream
        await g.wait_messages(1)
        assert [m["method"] for m in g.messages] == ["notifications/tools/list_changed"]
        g.close()


@pytest.mark.parametrize("kind", ["sampling", "elicitation", "roots"])
async def test_server_to_client_request_needs_the_client_capability(kind: str) -> None:
    server, probe = make_server()
    async with running(server) as srv:
        sid = await srv.initialize(capabilities={})
        r = await srv.post(rpc("tools/call", {"name": "ask", "arguments": {"kind": kind}}),
                           session=sid)
        err = final(r)["error"]
        assert err["code"] == -32021
        assert err["message"] == "Missing required client capability"
        assert [m.get("method") for m in r.messages] == [None]  # nothing sent to the client
        assert probe.answers == []


async def test_client_error_response_fails_the_server_request() -> None:
    server, probe = make_server()
    async with running(server) as srv:
        sid = await srv.initialize(capabilities=ALL_CAPS)
        p = await post_stream(srv, rpc("tools/call", {"name": "ask",
                                                      "arguments": {"kind": "sampling"}}), sid)
        request = (await p.wait_messages(1))[0]
        r = await srv.post({"jsonrpc": "2.0", "id": request["id"],
                            "error": {"code": -1, "message": "User rejected"}}, session=sid)
        assert r.status == 202
        await p.wait_closed()
        err = p.messages[-1]["error"]
        assert err["code"] == -32603
        assert err["message"] == ("Client returned an error for sampling/createMessage "
                                  "request (code: -1): User rejected")
        assert probe.answers == []


async def test_server_to_client_request_times_out() -> None:
    server, probe = make_server()
    async with running(server, server_to_client_request_timeout=0.2) as srv:
        sid = await srv.initialize(capabilities=ALL_CAPS)
        p = await post_stream(srv, rpc("tools/call", {"name": "ask",
                                                      "arguments": {"kind": "roots"}}), sid)
        await p.wait_closed()
        request, cancel, response = p.messages
        assert request["method"] == "roots/list"
        assert cancel == {"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": request["id"],
                                     "reason": "Timed out after 0.2 seconds"}}
        assert response["error"]["code"] == -32001
        assert "roots/list" in response["error"]["message"]
        session = srv.transport.sessions.get(sid)
        assert session is not None and session.pending == {}
        late = await srv.post({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": []}},
                              session=sid)
        assert late.status == 202 and probe.answers == []


async def test_a_response_from_another_session_does_not_resolve_the_request() -> None:
    server, probe = make_server()
    async with running(server) as srv:
        sid = await srv.initialize(capabilities=ALL_CAPS)
        other = await srv.initialize(capabilities=ALL_CAPS)
        p = await post_stream(srv, rpc("tools/call", {"name": "ask",
                                                      "arguments": {"kind": "ping"}}), sid)
        request = (await p.wait_messages(1))[0]
        wrong = await srv.post({"jsonrpc": "2.0", "id": request["id"], "result": {}},
                               session=other)
        assert wrong.status == 202
        assert not p.ended.is_set() and probe.answers == []
        right = await srv.post({"jsonrpc": "2.0", "id": request["id"], "result": {}},
                               session=sid)
        assert right.status == 202
        await p.wait_closed()
        assert probe.answers == [{}]


async def test_delete_wakes_a_pending_server_to_client_request() -> None:
    server, probe = make_server()
    async with running(server) as srv:
        sid = await srv.initialize(capabilities=ALL_CAPS)
        p = await post_stream(srv, rpc("tools/call", {"name": "ask",
                                                      "arguments": {"kind": "ping"}}), sid)
        await p.wait_messages(1)
        assert (await delete(srv, sid)).status == 200
        await p.wait_closed()
        assert len(srv.transport.sessions) == 0 and probe.answers == []
        assert all("result" not in m for m in p.messages)


# -- tools, resources, prompts --------------------------------------------------------------------

async def test_tool_argument_violation_is_an_is_error_result() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("tools/call", {"name": "echo", "arguments": {"text": 5}}),
                           session=sid)
        result = final(r)["result"]
        assert result["isError"] is True
        assert "Invalid arguments for tool echo" in result["content"][0]["text"]
        missing = await srv.post(rpc("tools/call", {"name": "echo", "arguments": {}}, 2),
                                 session=sid)
        assert final(missing)["result"]["isError"] is True


async def test_unknown_tool_is_invalid_params() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("tools/call", {"name": "nope"}), session=sid)
        err = final(r)["error"]
        assert err["code"] == -32602 and "nope" in err["message"]


async def test_unknown_method_is_method_not_found() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("no/such/method"), session=sid)
        assert r.status == 200 and final(r)["error"]["code"] == -32601


async def test_handler_exception_is_internal_error_without_its_text() -> None:
    server, _ = make_server()
    async with running(server) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("tools/call", {"name": "boom"}), session=sid)
        err = final(r)["error"]
        assert r.status == 200 and err["code"] == -32603
        assert err["message"] == "Internal error calling tool boom"
        assert SECRET.encode() not in r.body and b"Traceback" not in r.body
        assert b"RuntimeError" not in r.body


def paged_server() -> Server:
    server = Server("paged", page_size=2)
    for i in range(5):
        server.add_tool(lambda: "x", f"tool{i}", description="t")
        server.add_prompt(lambda: "p", f"prompt{i}", description="p")
        server.add_resource(lambda: "r", f"test://res/{i}", f"res{i}")
        server.add_resource_template(lambda i: "t", f"test://tpl{i}/{{i}}", f"tpl{i}")
    return server


@pytest.mark.parametrize(("method", "key", "name_key"), [
    ("tools/list", "tools", "name"), ("prompts/list", "prompts", "name"),
    ("resources/list", "resources", "uri"),
    ("resources/templates/list", "resourceTemplates", "uriTemplate")])
async def test_pagination_walks_every_page(method: str, key: str, name_key: str) -> None:
    async with running(paged_server()) as srv:
        sid = await srv.initialize()
        seen: list[str] = []
        sizes: list[int] = []
        cursor: str | None = None
        for n in range(10):
            params = {"cursor": cursor} if cursor is not None else {}
            result = final(await srv.post(rpc(method, params, n), session=sid))["result"]
            sizes.append(len(result[key]))
            seen += [item[name_key] for item in result[key]]
            cursor = result.get("nextCursor")
            if cursor is None:
                break
        assert sizes == [2, 2, 1]
        assert len(seen) == 5 and len(set(seen)) == 5


@pytest.mark.parametrize("cursor", ["garbage!", "dG1jcDo5OTk", 12, "x" * 100])
async def test_bad_cursor_is_invalid_params(cursor: Any) -> None:
    async with running(paged_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("tools/list", {"cursor": cursor}), session=sid)
        assert final(r)["error"]["code"] == -32602


async def test_resource_not_found_is_32002_with_the_uri() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("resources/read", {"uri": "test://missing"}), session=sid)
        err = final(r)["error"]
        assert err["code"] == -32002 and err["data"] == {"uri": "test://missing"}


def subscribing_server(calls: list[str], returned: Any) -> Server:
    server = Server("subs")

    @server.resource("test://a")
    def a() -> str:
        return "a"

    @server.on_subscribe
    def on_subscribe(uri: str) -> Any:
        calls.append(uri)
        return returned

    return server


async def test_subscribe_without_uri_is_invalid_params_and_skips_the_handler() -> None:
    calls: list[str] = []
    async with running(subscribing_server(calls, None)) as srv:
        sid = await srv.initialize()
        for params in ({}, {"uri": 5}, {"uri": None}):
            r = await srv.post(rpc("resources/subscribe", params), session=sid)
            assert final(r)["error"]["code"] == -32602
        assert calls == []
        ok = await srv.post(rpc("resources/subscribe", {"uri": "test://a"}), session=sid)
        assert final(ok)["result"] == {} and calls == ["test://a"]


async def test_subscribe_handler_meta_passes_through_and_nothing_else() -> None:
    calls: list[str] = []
    returned = {"_meta": {"example.com/note": "kept"}, "extra": "dropped"}
    async with running(subscribing_server(calls, returned)) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("resources/subscribe", {"uri": "test://a"}), session=sid)
        assert final(r)["result"] == {"_meta": {"example.com/note": "kept"}}


async def test_subscribe_capability_only_with_a_subscribe_handler() -> None:
    plain = Server("plain")
    plain.add_resource(lambda: "a", "test://a", "a")
    async with running(plain) as srv:
        r = await srv.post(init_msg())
        caps = r.json["result"]["capabilities"]
        assert "resources" in caps and "subscribe" not in caps["resources"]
        sid = r.headers["Mcp-Session-Id"]
        sub = await srv.post(rpc("resources/subscribe", {"uri": "test://a"}), session=sid)
        assert final(sub)["error"]["code"] == -32601
    async with running(subscribing_server([], None)) as srv:
        r = await srv.post(init_msg())
        assert r.json["result"]["capabilities"]["resources"]["subscribe"] is True


# -- shutdown -------------------------------------------------------------------------------------

async def test_close_ends_get_streams_and_drops_every_session() -> None:
    server, probe = make_server()
    async with running(server) as srv:
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
    async with running(build_server(), stateless=stateless) as srv:
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
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        for raw in (b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
                    b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
                    b'{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}'):
            r = await srv.post(None, session=sid, raw=raw)
            assert r.status in (200, 400), (raw, r.status)
            msg = r.messages[-1]
            assert msg["error"]["code"] == -32600, (raw, msg)
            assert msg["id"] in (None, 1)
