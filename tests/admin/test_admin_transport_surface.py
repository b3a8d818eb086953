"""The dashboard reads and drives a transport only through its public surface.

``admin_ui.TransportLike`` names what the dashboard may use: ``options``, ``snapshot()``,
``end_session()``, ``close_stream()`` and ``host_origin_verdict()``.  Here the dashboard is
mounted on a stand-in that has exactly those and nothing else, and every endpoint is driven
once: a private attribute read anywhere would be an ``AttributeError`` and a 500.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import tornado.web
from admin_support import BEARER, TOKEN, listen_request, make_server, open_session, wait_until
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

import admin_ui
from tornado_mcp import Transport
from tornado_mcp.introspection import Snapshot
from tornado_mcp.options import Options


class PublicSurface:
    """A transport seen through ``TransportLike`` only."""

    __slots__ = ("_transport",)

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    @property
    def options(self) -> Options:
        return self._transport.options

    def snapshot(
        self, sessions: bool = True, streams: bool = True, stream_uris: bool = False
    ) -> Snapshot:
        return self._transport.snapshot(sessions=sessions, streams=streams,
                                        stream_uris=stream_uris)

    def end_session(self, session_id: str) -> bool:
        return self._transport.end_session(session_id)

    def close_stream(self, stream_id: str) -> Awaitable[bool]:
        return self._transport.close_stream(stream_id)

    def host_origin_verdict(self, host_header: str | None, origin: str | None) -> str | None:
        return self._transport.host_origin_verdict(host_header, origin)


@asynccontextmanager
async def served() -> AsyncIterator[tuple[str, Transport]]:
    transport = Transport(make_server())
    surface: admin_ui.TransportLike = PublicSurface(transport)
    app = tornado.web.Application(transport.routes("/mcp"))
    admin_ui.mount(app, surface, "/admin", token=TOKEN)
    sockets = bind_sockets(0, "127.0.0.1")
    server = HTTPServer(app)
    server.add_sockets(sockets)
    try:
        yield f"http://127.0.0.1:{sockets[0].getsockname()[1]}", transport
    finally:
        server.stop()
        await server.close_all_connections()


async def test_every_endpoint_works_through_the_public_surface_alone() -> None:
    async with served() as (base, transport), httpx.AsyncClient(timeout=20) as client:
        admin = base + "/admin"
        sid = await open_session(client, base + "/mcp", "surface")
        headers, body = listen_request("listen-surface")
        async with client.stream("POST", base + "/mcp", json=body, headers=headers) as stream:
            assert stream.status_code == 200
            drained = asyncio.create_task(stream.aread())

            async def listed() -> bool:
                page = (await client.get(f"{admin}/api/streams", headers=BEARER)).json()
                return bool(page["total"] == 1)

            await wait_until(listed, what="the listen stream to be listed")
            stream_id = (await client.get(f"{admin}/api/streams", headers=BEARER)
                         ).json()["items"][0]["id"]

            answers: dict[str, Any] = {}
            for path in ("", "api/overview", "api/history", "api/sessions",
                         f"api/sessions/{sid}", "api/streams", f"api/streams/{stream_id}",
                         "api/limits", "metrics"):
                answers[path] = await client.get(f"{admin}/{path}", headers=BEARER)
            answers["PATCH api/limits"] = await client.patch(
                f"{admin}/api/limits", json={"max_sessions": 7}, headers=BEARER)
            answers["DELETE stream"] = await client.delete(
                f"{admin}/api/streams/{stream_id}", headers=BEARER)
            await asyncio.wait_for(drained, 10)
        answers["DELETE session"] = await client.delete(
            f"{admin}/api/sessions/{sid}", headers=BEARER)

        for what, resp in answers.items():
            assert resp.status_code == 200, (what, resp.text)
        assert transport.options.max_sessions == 7
        assert transport.snapshot().totals.sessions == 0
