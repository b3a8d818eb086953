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
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import tornado.httpserver
import tornado.web
from mcp_http import (
    MODERN,
    TIMEOUT,
    Running,
    loopback_sockets,
    modern_body,
    modern_header_lines,
    result_of,
    rpc,
)

from tornado_mcp import Principal, Server, Transport
from tornado_mcp.transport import MCPHandler


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
    transport = Transport(echo_server(), shutdown_grace=0.5)
    http, port = await serve(tornado.web.Application(transport.routes("/mcp", Recording)))
    srv = Running(Server("client"), transport, port)
    try:
        assert await echo(port, "first") == "first"
        reply = await srv.request("GET", None, {"MCP-Protocol-Version": MODERN})
        assert reply.status == 405 and "POST" in reply.headers["Allow"]
        reply = await srv.request("POST", json.dumps(rpc("tools/list")).encode(),
                                  {"Content-Type": "text/plain",
                                   "Accept": "application/json, text/event-stream"})
        assert reply.status == 415
    finally:
        srv.client.close()
        http.stop()
        await transport.close()
    assert recorded == ["tornado", "direct", "direct"]
