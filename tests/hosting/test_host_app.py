"""Embedded means seen: inside a host application, with the instrumentation real Tornado
applications run, every MCP request (refusals included) is one of the application's own.

Each test starts ``tests/hosting/host_app.py`` with one agent (a real package: OpenTelemetry's
Tornado instrumentation, sentry-sdk's Tornado integration set up before and after the
import, a Prometheus instrumentator; or the application's own ``log_function``, an output
transform, a handler subclass with Tornado's hooks, two applications behind one server),
sends the same requests (answers, streams, and refusals before and after the body is
read), and checks what the agent counted: every request, with its status, and no error
logged by anyone.  They run on every supported Tornado (``./dev test``'s matrix).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from typing import Any

import pytest
import tornado
from conftest import ServerFactory, ServerProc
from http_wire import WireConn, WireReply, request_bytes
from mcp_http import LEGACY, MODERN, modern_meta

pytestmark = pytest.mark.timeout(120)

HOST_APP = "tests/hosting/host_app.py"
LIMIT = 16 * 1024  # host_app.LIMIT
SSE_ACCEPT = ("Accept", "application/json, text/event-stream")
JSON = ("Content-Type", "application/json")
FOREIGN = ("Origin", "http://evil.example")


def start(server_factory: ServerFactory, agent: str, early: bool = False) -> ServerProc:
    return server_factory([HOST_APP, agent, *(["--early"] if early else [])])


def body(method: str, params: dict[str, Any] | None = None, request_id: Any = 1) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        msg["id"] = request_id
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode()


def legacy(sid: str | None = None) -> list[tuple[str, str]]:
    headers = [SSE_ACCEPT, JSON, ("MCP-Protocol-Version", LEGACY)]
    return [*headers, ("Mcp-Session-Id", sid)] if sid else headers


def modern(method: str, name: str | None = None) -> list[tuple[str, str]]:
    headers = [SSE_ACCEPT, JSON, ("MCP-Protocol-Version", MODERN), ("Mcp-Method", method)]
    return [*headers, ("Mcp-Name", name)] if name else headers


def call(name: str, arguments: dict[str, Any], request_id: int) -> bytes:
    return body("tools/call", {"name": name, "arguments": arguments, "_meta": modern_meta()},
                request_id)


async def one(port: int, method: str, headers: list[tuple[str, str]], data: bytes = b"",
              extra: list[tuple[str, str]] = ()) -> WireReply:  # type: ignore[assignment]
    conn = await WireConn.open(port)
    try:
        return await conn.exchange(method, [*headers, *extra], data)
    finally:
        conn.close()


async def chunked(port: int, headers: list[tuple[str, str]], data: bytes) -> WireReply:
    conn = await WireConn.open(port)
    try:
        head = request_bytes("POST", port, [*headers, ("Transfer-Encoding", "chunked")], b"",
                             content_length=False)
        pieces = [data[i:i + 4096] for i in range(0, len(data), 4096)]
        await conn.send(head + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces)
                        + b"0\r\n\r\n")
        return await conn.read_reply()
    finally:
        conn.close()


async def exercise(port: int, extra: list[tuple[str, str]] = ()  # type: ignore[assignment]
                   ) -> tuple[list[WireReply], Counter[tuple[str, int]]]:
    """The requests every agent must see: (method, status) of each, as sent."""
    replies: list[WireReply] = []
    sent: Counter[tuple[str, int]] = Counter()

    def saw(method: str, reply: WireReply, status: int) -> None:
        assert reply.status == status, (method, reply.status, reply.body)
        replies.append(reply)
        sent[(method, status)] += 1

    init = await one(port, "POST", legacy(), body("initialize", {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "host-test", "version": "1"}}), extra)
    saw("POST", init, 200)
    sid = init.header("Mcp-Session-Id")
    assert sid
    saw("POST", await one(port, "POST", legacy(sid),
                          body("notifications/initialized", request_id=None), extra), 202)
    saw("POST", await one(port, "POST", legacy(sid),
                          body("tools/call", {"name": "echo", "arguments": {"text": "a"}}, 2),
                          extra), 200)
    streamed = await one(port, "POST", legacy(sid), body("tools/call", {
        "name": "chatty", "arguments": {}}, 3), extra)
    saw("POST", streamed, 200)
    assert b"notifications/message" in streamed.body, streamed.body
    saw("POST", await one(port, "POST", modern("tools/call", "echo_sync"),
                          call("echo_sync", {"text": "b"}, 4), extra), 200)
    failed = await one(port, "POST", modern("tools/call", "fails"), call("fails", {}, 5), extra)
    saw("POST", failed, 200)
    # Refused before the body is read (declared too large; a large body from a foreign
    # origin), once it is read (a small foreign body; a chunked body past the limit; a
    # gzip body that inflates past it), and from the headers alone (Accept).
    too_big = b"x" * (LIMIT + 1)
    saw("POST", await one(port, "POST", modern("tools/list"), too_big, extra), 413)
    saw("POST", await chunked(port, [*modern("tools/list"), *extra], too_big), 413)
    saw("POST", await one(port, "POST", [*modern("tools/list"), ("Content-Encoding", "gzip")],
                          gzip.compress(b" " * (LIMIT * 4)), extra), 413)
    saw("POST", await one(port, "POST", [*modern("tools/list"), FOREIGN],
                          body("tools/list", {"_meta": modern_meta()}), extra), 403)
    saw("POST", await one(port, "POST", [*modern("tools/list"), FOREIGN], b" " * 100_000,
                          extra), 403)
    saw("POST", await one(port, "POST", [("Accept", "text/html"), JSON,
                                         ("MCP-Protocol-Version", MODERN),
                                         ("Mcp-Method", "tools/list")],
                          body("tools/list", {"_meta": modern_meta()}), extra), 406)
    saw("DELETE", await one(port, "DELETE", legacy(sid), b"", extra), 200)
    return replies, sent


def observed(port: int, header: tuple[str, str] | None = None) -> dict[str, Any]:
    import urllib.request
    request = urllib.request.Request(f"http://127.0.0.1:{port}/observed")
    if header is not None:
        request.add_header(*header)
    with urllib.request.urlopen(request, timeout=10) as reply:
        data: dict[str, Any] = json.loads(reply.read())
    return data


#: What the fixture's own ``fails`` tool logs, as any unexpected error of a tool is.
TOOL_BUG = "tornado_mcp.server: tool fails raised"


def errors_of(seen: dict[str, Any]) -> list[str]:
    """The ERROR lines logged, less the one the test's broken tool causes on purpose."""
    return [e for e in seen["errors"] if e != TOOL_BUG]


def statuses(sent: Counter[tuple[str, int]]) -> Counter[int]:
    out: Counter[int] = Counter()
    for (_method, status), n in sent.items():
        out[status] += n
    return out


# -- the agents -----------------------------------------------------------------------------------

async def test_opentelemetry_sees_every_request_with_its_route_and_status(
        server_factory: ServerFactory) -> None:
    srv = start(server_factory, "otel")
    _, sent = await exercise(srv.port)
    seen = observed(srv.port)
    spans = [s for s in seen["seen"] if s["target"] == "/mcp"]
    assert Counter(s["status"] for s in spans) == statuses(sent), spans
    # Named by the route the request took (Tornado's rule), as every handler's span is.
    assert {s["name"] for s in spans} == {"POST /mcp", "DELETE /mcp"}, spans
    assert errors_of(seen) == []


@pytest.mark.parametrize("early", [True, False], ids=["set-up-before-import", "after"])
async def test_sentry_sees_every_request_and_reports_a_tool_error_with_its_request(
        server_factory: ServerFactory, early: bool) -> None:
    srv = start(server_factory, "sentry", early)
    _, sent = await exercise(srv.port)
    seen = observed(srv.port)["seen"]
    mcp = [t for t in seen["transactions"] if (t["url"] or "").endswith("/mcp")]
    assert len(mcp) == sum(sent.values()), seen["transactions"]
    errors = [e for e in seen["events"] if "fails raised" in (e["message"] or "")]
    assert errors, seen["events"]
    assert errors[0]["url"].endswith("/mcp") and errors[0]["method"] == "POST"


async def test_a_prometheus_instrumentator_counts_every_request_by_status(
        server_factory: ServerFactory) -> None:
    srv = start(server_factory, "prometheus")
    _, sent = await exercise(srv.port)
    seen = observed(srv.port)
    counted = {key: n for key, n in seen["seen"].items() if key.startswith("/mcp ")}
    assert counted == {f"/mcp {status}": n for status, n in statuses(sent).items()}
    assert errors_of(seen) == []


async def test_the_applications_log_function_sees_every_request_and_its_summary(
        server_factory: ServerFactory) -> None:
    srv = start(server_factory, "log_function")
    _, sent = await exercise(srv.port)
    lines = [line for line in observed(srv.port)["log"] if "/mcp" in line]
    assert Counter(int(line.split()[1]) for line in lines) == statuses(sent), lines
    # _request_summary() reads as Tornado's: "METHOD URI (ip)".
    assert all(line.split(" ", 2)[2].startswith(("POST /mcp (127.0.0.1)",
                                                 "DELETE /mcp (127.0.0.1)")) for line in lines)


async def test_an_output_transform_sees_every_answer_refusals_included(
        server_factory: ServerFactory) -> None:
    srv = start(server_factory, "transform")
    replies, sent = await exercise(srv.port)
    assert all(r.header("X-Transformed") == "1" for r in replies)
    assert all(r.header("Date") for r in replies)
    seen = observed(srv.port)
    assert len([line for line in seen["log"] if line.startswith("transform")]) \
        >= sum(sent.values())
    assert errors_of(seen) == []


async def test_a_subclass_has_tornados_hooks_in_tornados_order(
        server_factory: ServerFactory) -> None:
    srv = start(server_factory, "hooks")
    replies, sent = await exercise(srv.port)
    assert all(r.header("X-Frame-Options") == "DENY" for r in replies)  # default headers
    # A method the endpoint does not support: Tornado's own 405, through write_error.
    reply = await one(srv.port, "TRACE", [])
    assert reply.status == 405 and reply.header("X-Frame-Options") == "DENY"
    hooks = observed(srv.port)["hooks"]
    prepares = [h for h in hooks if h.startswith("prepare")]
    finishes = [h for h in hooks if h.startswith("on_finish")]
    assert len(prepares) == sum(sent.values())  # TRACE never reaches prepare
    assert len(finishes) == sum(sent.values()) + 1
    assert "write_error 405" in hooks
    # Tornado's order: each prepare before its on_finish.
    depth = 0
    for hook in hooks:
        depth += hook.startswith("prepare") - hook.startswith("on_finish")
        assert depth <= 1, hooks


async def test_two_applications_behind_one_server_each_serve_their_own_requests(
        server_factory: ServerFactory) -> None:
    srv = start(server_factory, "two_apps")
    _, sent_a = await exercise(srv.port)
    _, sent_b = await exercise(srv.port, [("X-App", "b")])
    log = observed(srv.port)["log"]
    a = [line for line in log if line.startswith("a ") and "/mcp" in line]
    b = [line for line in log if line.startswith("b ") and "/mcp" in line]
    assert len(a) == sum(sent_a.values()) and len(b) == sum(sent_b.values()), log


async def test_compress_response_gzips_the_event_streams_and_they_still_stream(
        server_factory: ServerFactory) -> None:
    """An application with ``compress_response=True`` compresses the endpoint's answers
    too, event streams included (each write a gzip sync point, so events still arrive as
    they are sent), for clients that accept gzip: docs/deploy.md says so."""
    srv = start(server_factory, "compress")
    gz = ("Accept-Encoding", "gzip")
    init = await one(srv.port, "POST", legacy(), body("initialize", {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "host-test", "version": "1"}}))
    sid = init.header("Mcp-Session-Id")
    assert sid
    streamed = await one(srv.port, "POST", [*legacy(sid), gz], body("tools/call", {
        "name": "chatty", "arguments": {}}, 2))
    assert streamed.status == 200 and streamed.header("Content-Encoding") == "gzip"
    events = gzip.decompress(streamed.body)
    assert events.count(b"event: message") == 2 and b"notifications/message" in events


@pytest.mark.skipif(tornado.version_info < (6, 6), reason="cross_origin_protection is 6.6's")
async def test_cross_origin_protection_trusts_the_origins_the_endpoint_allows() -> None:
    """Tornado 6.6's ``cross_origin_protection`` and the endpoint's CORS list agree: an
    origin in ``cors_allowed_origins`` (or ``allowed_origins``) is trusted by both, any
    other still refused."""
    from mcp_http import running

    from tornado_mcp import Server

    page = "http://app.example"
    async with running(Server("cop"), cors_allowed_origins=(page,),
                       app_settings={"cross_origin_protection": True}) as srv:
        discover = body("server/discover", {"_meta": modern_meta()})
        ok = await one(srv.port, "POST", [*modern("server/discover"), ("Origin", page)],
                       discover)
        assert ok.status == 200, ok.body
        assert ok.header("Access-Control-Allow-Origin") == page
        refused = await one(srv.port, "POST", [*modern("server/discover"), FOREIGN], discover)
        assert refused.status == 403


async def test_mount_serves_the_applications_own_handler_class() -> None:
    """``transport.mount(app, handler=...)``: the login-protected handler docs/auth.md
    recommends, added to an application that exists already."""
    import tornado.httpserver
    import tornado.netutil
    import tornado.web

    from tornado_mcp import MCPHandler, Principal, Server, Transport

    class AppMCPHandler(MCPHandler):
        def get_principal(self) -> Principal | None:
            user = self.request.headers.get("X-User")
            return Principal.of(user) if user else None

    transport = Transport(Server("mounted"))
    app = tornado.web.Application()
    transport.mount(app, "/mcp", handler=AppMCPHandler)
    http = tornado.httpserver.HTTPServer(app)
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
    http.add_sockets(sockets)
    port = sockets[0].getsockname()[1]
    try:
        discover = body("server/discover", {"_meta": modern_meta()})
        assert (await one(port, "POST", modern("server/discover"), discover)).status == 401
        ok = await one(port, "POST", [*modern("server/discover"), ("X-User", "ada")], discover)
        assert ok.status == 200, ok.body
    finally:
        http.stop()
        await transport.close()
