"""Helpers shared by the dashboard tests: a real server in-process, and raw MCP calls.

``running_admin()`` starts a real Tornado application -- a real :class:`tornado_mcp.Transport`
at ``/mcp`` and ``admin_ui`` at ``/admin`` -- on an ephemeral loopback port, inside the test's
own event loop, so the test talks real HTTP to it and can also look at the transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import tornado.web
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

import admin_ui
from tornado_mcp import Server, Transport

TOKEN = "test-admin-token-0123456789"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
LEGACY_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
ACCEPT_BOTH = "application/json, text/event-stream"


@dataclass
class Running:
    """A live server: its base URL, its transport, and the HTTP server to stop."""

    base: str
    transport: Transport
    http_server: HTTPServer

    @property
    def mcp(self) -> str:
        return self.base + "/mcp"

    @property
    def admin(self) -> str:
        return self.base + "/admin"


def make_server() -> Server:
    server = Server("admin-test", version="1.0.0")

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    return server


@contextlib.asynccontextmanager
async def running_admin(
    read_only: bool = False,
    app_settings: dict[str, Any] | None = None,
    failure_limits: admin_ui.FailureLimits | None = None,
    xheaders: bool = False,
    server: Server | None = None,
    **options: Any,
) -> AsyncIterator[Running]:
    """``failure_limits`` goes to ``admin_ui.mount``, ``xheaders`` to the ``HTTPServer``,
    the other keywords to the ``Transport`` (of ``server``, else :func:`make_server`'s)."""
    transport = Transport(server or make_server(), **options)
    app = tornado.web.Application(transport.routes("/mcp"), **(app_settings or {}))
    admin_ui.mount(app, transport, "/admin", token=TOKEN, read_only=read_only,
                   failure_limits=failure_limits)
    sockets = bind_sockets(0, "127.0.0.1")
    port = sockets[0].getsockname()[1]
    http_server = HTTPServer(app, xheaders=xheaders)
    http_server.add_sockets(sockets)
    try:
        yield Running(f"http://127.0.0.1:{port}", transport, http_server)
    finally:
        http_server.stop()
        await http_server.close_all_connections()


async def log_in(client: httpx.AsyncClient, admin: str, name: str = "alice",
                 next_: str = "/admin/", token: str = TOKEN) -> httpx.Response:
    """Post the login form as a browser would (the response, not followed)."""
    return await client.post(f"{admin}/login",
                             data={"name": name, "token": token, "next": next_})


async def page_xsrf(client: httpx.AsyncClient, admin: str) -> str:
    """The XSRF token the dashboard page embeds for this client's login (``data-xsrf``)."""
    page = await client.get(f"{admin}/")
    assert page.status_code == 200, page.status_code
    match = re.search(r'data-xsrf="([^"]*)"', page.text)
    assert match and match.group(1), "the page embeds no XSRF token"
    return match.group(1)


def initialize_body(client_name: str = "api-test-client", request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": {},
            "clientInfo": {"name": client_name, "version": "1.0"},
        },
    }


async def initialize(
    client: httpx.AsyncClient, mcp_url: str, client_name: str = "api-test-client"
) -> httpx.Response:
    """A raw legacy ``initialize`` POST; the session id is in ``Mcp-Session-Id``."""
    return await client.post(
        mcp_url,
        json=initialize_body(client_name),
        headers={"Content-Type": "application/json", "Accept": ACCEPT_BOTH},
    )


async def open_session(client: httpx.AsyncClient, mcp_url: str, client_name: str) -> str:
    resp = await initialize(client, mcp_url, client_name)
    assert resp.status_code == 200, resp.text
    session_id = resp.headers["Mcp-Session-Id"]
    # Complete the handshake as a client would.
    note = await client.post(
        mcp_url,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers={
            "Content-Type": "application/json",
            "Accept": ACCEPT_BOTH,
            "Mcp-Session-Id": session_id,
            "MCP-Protocol-Version": LEGACY_VERSION,
        },
    )
    assert note.status_code == 202, note.text
    return session_id


def listen_request(request_id: str = "listen-1", notifications: dict[str, Any] | None = None
                   ) -> tuple[dict[str, str], dict[str, Any]]:
    """Headers and body of a modern ``subscriptions/listen`` request (for
    ``notifications``, by default ``{"toolsListChanged": True}``)."""
    headers = {
        "Content-Type": "application/json",
        "Accept": ACCEPT_BOTH,
        "MCP-Protocol-Version": MODERN_VERSION,
        "Mcp-Method": "subscriptions/listen",
    }
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "subscriptions/listen",
        "params": {
            "notifications": notifications or {"toolsListChanged": True},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    return headers, body


async def wait_until(
    check: Callable[[], Awaitable[bool]], timeout: float = 10.0, what: str = "condition"
) -> None:
    """Poll ``check`` (bounded by ``timeout``) until it returns true."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)


def sse_messages(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages in an SSE body (``data:`` lines)."""
    out = []
    for line in text.splitlines():
        if line.startswith("data:"):
            payload = line[5:].strip()
            if payload:
                out.append(json.loads(payload))
    return out
