"""The endpoint's handler served directly (``transport/direct.py``), and when it is not.

``Transport.routes()`` lists a ``DirectRoute`` before the ordinary rule: from its second
request on, an HTTP server's requests run the same ``MCPHandler`` without Tornado's
``_HandlerDelegate`` and ``_execute`` (whose mark is the ``_prepared_future`` they give a
``stream_request_body`` handler).  These tests pin which path serves what, that each HTTP
server is served with its own application, and that an asynchronous ``prepare``
(authentication) keeps Tornado's order: the body is not read before it is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import tornado.httpserver
import tornado.routing
import tornado.web
from http_wire import WireConn
from mcp_http import (
    MODERN,
    TIMEOUT,
    Running,
    loopback_sockets,
    modern_body,
    modern_header_lines,
    result_of,
    rpc,
    wait_until,
)

from tornado_mcp import Principal, Server, Transport
from tornado_mcp.transport import MCPHandler
from tornado_mcp.transport.direct import MAX_HOSTS


class Recording(MCPHandler):
    """Records, per request, whether Tornado's generic machinery drove it."""

    paths: list[str] = []

    def prepare(self) -> Any:
        Recording.paths.append("tornado" if self._prepared_future is not None else "direct")
        return super().prepare()


def echo_server() -> Server:
    server = Server("direct")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    return server


async def serve(app: tornado.web.Application) -> tuple[tornado.httpserver.HTTPServer, int]:
    http = tornado.httpserver.HTTPServer(app)
    sockets = loopback_sockets()
    http.add_sockets(sockets)
    return http, sockets[0].getsockname()[1]


@contextlib.asynccontextmanager
async def served(handler: type[MCPHandler]) -> AsyncIterator[tuple[Running, int]]:
    """A transport serving ``handler`` on its own HTTP server, and a client for it."""
    transport = Transport(echo_server(), shutdown_grace=0.5)
    http, port = await serve(tornado.web.Application(transport.routes("/mcp", handler)))
    srv = Running(Server("client"), transport, port)
    try:
        yield srv, port
    finally:
        srv.client.close()
        http.stop()
        await transport.close()


async def echo_n_times(transport: Transport, app: tornado.web.Application, times: int) -> None:
    """Serve ``app`` and call ``echo`` ``times`` times on it; then stop it all."""
    http, port = await serve(app)
    try:
        for n in range(times):
            assert await echo(port, f"hi {n}", n) == f"hi {n}"
    finally:
        http.stop()
        await transport.close()


async def echo(port: int, text: str, request_id: int = 1) -> str:
    srv = Running(Server("client"), None, port)  # type: ignore[arg-type]
    try:
        reply = await srv.request("POST", modern_body("tools/call", {
            "name": "echo", "arguments": {"text": text}}, request_id), {
            **dict(modern_header_lines("tools/call", "echo"))})
    finally:
        srv.client.close()
    assert reply.status == 200, reply.body
    return str(result_of(reply)["content"][0]["text"])


@pytest.fixture
def recorded() -> AsyncIterator[list[str]]:
    Recording.paths = []
    yield Recording.paths


async def test_requests_after_a_servers_first_are_served_directly(recorded: list[str]) -> None:
    transport = Transport(echo_server(), shutdown_grace=0.5)
    await echo_n_times(transport, tornado.web.Application(transport.routes("/mcp", Recording)), 4)
    assert recorded == ["tornado", "direct", "direct", "direct"]


@pytest.mark.parametrize("settings", [{"xsrf_cookies": True, "cookie_secret": "s" * 32},
                                      {"compiled_template_cache": False}])
async def test_applications_that_ask_tornado_for_per_request_work_keep_its_path(
        recorded: list[str], settings: dict[str, Any]) -> None:
    transport = Transport(echo_server(), shutdown_grace=0.5)
    app = tornado.web.Application(transport.routes("/mcp", Recording), **settings)
    await echo_n_times(transport, app, 3)
    assert recorded == ["tornado"] * 3


async def test_each_http_server_is_served_with_its_own_application(
        recorded: list[str]) -> None:
    """The same rules in two applications: every request is logged by the application
    whose server received it (``log_function`` is an application setting)."""
    transport = Transport(echo_server(), shutdown_grace=0.5)
    rules = transport.routes("/mcp", Recording)
    logged: dict[str, list[int]] = {"a": [], "b": []}

    def log_to(name: str) -> Any:
        return lambda handler: logged[name].append(handler.get_status())

    http_a, port_a = await serve(tornado.web.Application(rules, log_function=log_to("a")))
    http_b, port_b = await serve(tornado.web.Application(rules, log_function=log_to("b")))
    try:
        for n in range(3):
            assert await echo(port_a, "a", n) == "a"
            assert await echo(port_b, "b", n) == "b"
    finally:
        http_a.stop()
        http_b.stop()
        await transport.close()
    assert logged == {"a": [200, 200, 200], "b": [200, 200, 200]}
    assert recorded.count("direct") == 4


class SlowLogin(Recording):
    """Authenticates asynchronously; records when prepare finished and the body began."""

    events: list[str] = []
    entered: asyncio.Event
    release: asyncio.Event

    async def get_principal(self) -> Principal | None:  # type: ignore[override]
        SlowLogin.entered.set()
        await asyncio.wait_for(SlowLogin.release.wait(), TIMEOUT)
        SlowLogin.events.append("prepared")
        return Principal.of("someone")

    def data_received(self, chunk: bytes) -> None:
        SlowLogin.events.append("body")
        super().data_received(chunk)

    def on_connection_close(self) -> None:
        SlowLogin.events.append("closed")
        super().on_connection_close()


async def test_an_asynchronous_prepare_runs_before_the_body_is_read(
        recorded: list[str]) -> None:
    SlowLogin.events = []
    SlowLogin.entered, SlowLogin.release = asyncio.Event(), asyncio.Event()
    transport = Transport(echo_server(), shutdown_grace=0.5)
    http, port = await serve(tornado.web.Application(transport.routes("/mcp", SlowLogin)))
    try:
        for n in range(2):  # the second request takes the direct route
            SlowLogin.events.clear()
            SlowLogin.entered.clear()
            SlowLogin.release.clear()
            call = asyncio.ensure_future(echo(port, f"t{n}", n))
            await asyncio.wait_for(SlowLogin.entered.wait(), TIMEOUT)  # prepare is waiting
            assert SlowLogin.events == []  # and the body, sent with the headers, is unread
            SlowLogin.release.set()
            assert await asyncio.wait_for(call, TIMEOUT) == f"t{n}"
            assert SlowLogin.events == ["prepared", "body"]
    finally:
        http.stop()
        await transport.close()
    assert recorded == ["tornado", "direct"]


async def test_methods_without_a_body_and_refusals_take_the_direct_route(
        recorded: list[str]) -> None:
    async with served(Recording) as (srv, port):
        assert await echo(port, "first") == "first"
        reply = await srv.request("GET", None, {"MCP-Protocol-Version": MODERN})
        assert reply.status == 405 and "POST" in reply.headers["Allow"]
        reply = await srv.request("POST", json.dumps(rpc("tools/list")).encode(),
                                  {"Content-Type": "text/plain",
                                   "Accept": "application/json, text/event-stream"})
        assert reply.status == 415
    assert recorded == ["tornado", "direct", "direct"]


async def test_a_client_leaving_mid_body_after_an_asynchronous_prepare_gets_no_500(
        caplog: pytest.LogCaptureFixture) -> None:
    """Tornado's order: the peer that leaves while its body is awaited is not answered,
    and nothing is logged as an error."""
    SlowLogin.events = []
    SlowLogin.entered, SlowLogin.release = asyncio.Event(), asyncio.Event()
    SlowLogin.release.set()
    transport = Transport(echo_server(), shutdown_grace=0.5)
    http, port = await serve(tornado.web.Application(transport.routes("/mcp", SlowLogin)))
    try:
        assert await echo(port, "first") == "first"  # the route knows the server now
        body = modern_body("tools/call", {"name": "echo", "arguments": {"text": "t"}})
        conn = await WireConn.open(port)
        head = "".join(f"{k}: {v}\r\n" for k, v in modern_header_lines("tools/call", "echo"))
        await conn.send(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}"
                        f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:10])
        await asyncio.wait_for(SlowLogin.entered.wait(), TIMEOUT)
        conn.close()
        await wait_until(lambda: "closed" in SlowLogin.events)  # the server saw it go
        assert await echo(port, "after") == "after"  # the server is fine
    finally:
        http.stop()
        await transport.close()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


async def test_applications_behind_one_server_by_host_are_each_served_with_their_own(
        recorded: list[str]) -> None:
    """The same rules in two applications that one HTTP server routes by host name."""
    transport = Transport(echo_server(), shutdown_grace=0.5, allowed_hosts=["public", "admin"])
    rules = transport.routes("/mcp", Recording)
    logged: dict[str, list[str]] = {"pub": [], "admin": []}
    pub = tornado.web.Application(rules, log_function=lambda h: logged["pub"].append(
        h.request.host_name))
    admin = tornado.web.Application(rules, log_function=lambda h: logged["admin"].append(
        h.request.host_name))
    router = tornado.routing.RuleRouter([(tornado.routing.HostMatches("admin"), admin),
                                         (tornado.routing.AnyMatches(), pub)])
    http = tornado.httpserver.HTTPServer(router)
    sockets = loopback_sockets()
    http.add_sockets(sockets)
    port = sockets[0].getsockname()[1]
    try:
        for n in range(3):
            for host in ("public", "admin"):
                body = modern_body("tools/call", {"name": "echo", "arguments": {"text": host}},
                                   n)
                lines = [f"{k}: {v}" for k, v in modern_header_lines("tools/call", "echo")]
                conn = await WireConn.open(port)
                try:
                    await conn.send("\r\n".join([
                        "POST /mcp HTTP/1.1", f"Host: {host}", *lines,
                        f"Content-Length: {len(body)}", "", ""]).encode() + body)
                    reply = await conn.read_reply()
                finally:
                    conn.close()
                assert reply.status == 200 and host.encode() in reply.body
    finally:
        http.stop()
        await transport.close()
    assert logged == {"pub": ["public"] * 3, "admin": ["admin"] * 3}
    assert recorded.count("direct") == 4  # each host's first request taught the route


class StampingBase(tornado.web.RequestHandler):
    """An application's base handler that adds a header in ``finish``, and sets up
    something of its own in ``__init__``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.stamp = "base"
        super().__init__(*args, **kwargs)

    def finish(self, chunk: Any = None) -> Any:
        self.set_header("X-Stamp", self.stamp)
        return super().finish(chunk)


class StampedMCPHandler(StampingBase, MCPHandler):
    pass


class LaterBaseMCPHandler(MCPHandler, StampingBase):
    """The application's base listed after MCPHandler: its own ``__init__`` and
    ``finish`` still run."""


class Mixin:
    def __init__(self) -> None:
        self.mixed = True


class MixedMCPHandler(MCPHandler, Mixin):
    def prepare(self) -> Any:
        assert self.mixed
        return super().prepare()


@pytest.mark.parametrize("handler", [StampedMCPHandler, LaterBaseMCPHandler, MixedMCPHandler])
async def test_a_subclass_keeps_its_own_finish_and_its_mixins_init(
        handler: type[MCPHandler]) -> None:
    async with served(handler) as (srv, _):
        for n in range(3):  # Tornado's path, then the direct route
            reply = await srv.request("POST", modern_body("tools/call", {
                "name": "echo", "arguments": {"text": "s"}}, n),
                dict(modern_header_lines("tools/call", "echo")))
            assert reply.status == 200
            if handler is not MixedMCPHandler:
                assert reply.headers.get("X-Stamp") == "base"


async def test_a_wrapped_tornado_keeps_its_path(recorded: list[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent that wraps RequestHandler._execute (as tracing agents do) sees every
    request: the direct route steps aside."""
    seen: list[str] = []
    original = tornado.web.RequestHandler._execute

    @functools.wraps(original)
    def traced(self: tornado.web.RequestHandler, *args: Any, **kwargs: Any) -> Any:
        seen.append(self.request.method or "")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(tornado.web.RequestHandler, "_execute", traced)
    transport = Transport(echo_server(), shutdown_grace=0.5)
    await echo_n_times(transport, tornado.web.Application(transport.routes("/mcp", Recording)), 3)
    assert recorded == ["tornado"] * 3 and seen == ["POST"] * 3


REQUEST_USER: contextvars.ContextVar[str | None] = contextvars.ContextVar("user", default=None)


class ContextualLogin(Recording):
    """A synchronous prepare that sets a context variable for its request."""

    seen: list[str | None] = []

    def prepare(self) -> Any:
        ContextualLogin.seen.append(REQUEST_USER.get())
        REQUEST_USER.set(f"user-{len(ContextualLogin.seen)}")
        return super().prepare()


async def test_what_a_synchronous_prepare_sets_stays_with_its_request(
        recorded: list[str]) -> None:
    """Each request on a keep-alive connection starts from a clean context."""
    ContextualLogin.seen = []
    transport = Transport(echo_server(), shutdown_grace=0.5)
    http, port = await serve(tornado.web.Application(transport.routes("/mcp",
                                                                      ContextualLogin)))
    conn = await WireConn.open(port)
    try:
        for n in range(4):
            reply = await conn.exchange("POST", list(modern_header_lines("tools/call", "echo")),
                                        modern_body("tools/call", {
                                            "name": "echo", "arguments": {"text": "c"}}, n))
            assert reply.status == 200
    finally:
        conn.close()
        http.stop()
        await transport.close()
    assert recorded == ["tornado", "direct", "direct", "direct"]
    assert ContextualLogin.seen == [None] * 4


async def test_a_finish_wrapped_after_start_up_sees_every_answer(
        recorded: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent that wraps RequestHandler.finish once the handler classes exist still sees
    every answer, on the direct route too."""
    transport = Transport(echo_server(), shutdown_grace=0.5)
    app = tornado.web.Application(transport.routes("/mcp", Recording))
    http, port = await serve(app)
    finished: list[int] = []
    original = tornado.web.RequestHandler.finish

    @functools.wraps(original)
    def traced(self: tornado.web.RequestHandler, *args: Any, **kwargs: Any) -> Any:
        finished.append(self.get_status())
        return original(self, *args, **kwargs)

    try:
        assert await echo(port, "first") == "first"
        monkeypatch.setattr(tornado.web.RequestHandler, "finish", traced)
        for n in range(3):
            assert await echo(port, f"x{n}", n) == f"x{n}"
    finally:
        http.stop()
        await transport.close()
    assert recorded == ["tornado", "direct", "direct", "direct"]
    assert finished == [200, 200, 200]


async def test_invented_host_names_do_not_push_out_the_real_one(recorded: list[str]) -> None:
    """Host names the endpoint refuses are not remembered: a client sending hundreds of
    them does not evict the served host's application from the route."""
    transport = Transport(echo_server(), shutdown_grace=0.5)
    http, port = await serve(tornado.web.Application(transport.routes("/mcp", Recording)))
    body = modern_body("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    lines = [f"{k}: {v}" for k, v in modern_header_lines("tools/call", "echo")]
    try:
        assert await echo(port, "first") == "first"
        conn = await WireConn.open(port)
        try:
            for n in range(100):
                await conn.send("\r\n".join([
                    "POST /mcp HTTP/1.1", f"Host: evil-{n}.example", *lines,
                    f"Content-Length: {len(body)}", "", ""]).encode() + body)
                assert (await conn.read_reply()).status == 403
        finally:
            conn.close()
        assert await echo(port, "again") == "again"
    finally:
        http.stop()
        await transport.close()
    assert recorded[0] == "tornado" and recorded[-1] == "direct"


async def test_the_route_remembers_max_hosts_host_names_and_forgets_the_oldest_past_it(
        recorded: list[str]) -> None:
    """At the bound every host name is still served directly; one more pushes out the
    first learnt, whose next request is served the ordinary way (and learnt again)."""
    names = [f"h{n}.test" for n in range(MAX_HOSTS + 1)]
    transport = Transport(echo_server(), shutdown_grace=0.5, allowed_hosts=names)
    http, port = await serve(tornado.web.Application(transport.routes("/mcp", Recording)))
    body = modern_body("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    lines = [f"{k}: {v}" for k, v in modern_header_lines("tools/call", "echo")]

    async def call(host: str) -> str:
        conn = await WireConn.open(port)
        try:
            await conn.send("\r\n".join(["POST /mcp HTTP/1.1", f"Host: {host}", *lines,
                                         f"Content-Length: {len(body)}", "", ""]).encode()
                            + body)
            assert (await conn.read_reply()).status == 200
        finally:
            conn.close()
        return recorded[-1]

    try:
        assert [await call(name) for name in names[:MAX_HOSTS]] == ["tornado"] * MAX_HOSTS
        assert await call(names[0]) == "direct"  # at the bound: all remembered
        assert await call(names[MAX_HOSTS]) == "tornado"  # one over: the oldest goes
        assert await call(names[1]) == "direct"
        assert await call(names[0]) == "tornado"
        assert await call(names[0]) == "direct"
    finally:
        http.stop()
        await transport.close()
