"""The legacy era's GET stream: one per session, ``Accept`` required, keepalives, disconnects."""

from __future__ import annotations

import asyncio

import pytest
from mcp_http import (
    TIMEOUT,
    assert_refused,
    example_server,
    running,
)

# -- GET stream -----------------------------------------------------------------------------------

async def test_second_get_stream_is_409() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        g = await srv.get_stream(sid)
        assert g.status == 200 and g.headers["Content-Type"].startswith("text/event-stream")
        r = await srv.get(sid)
        assert_refused(r, 409, -32600, "Only one SSE stream is allowed per session")
        assert not g.ended.is_set()
        g.close()


@pytest.mark.parametrize("accept", [None, "application/json", "text/html"])
async def test_get_without_event_stream_accept_is_406(accept: str | None) -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.get(sid, accept=accept)
        assert_refused(r, 406, -32600, "Accept header must include text/event-stream")


async def test_get_stream_keepalive_and_no_buffering_header() -> None:
    async with running(example_server(), sse_keepalive_interval=0.05) as srv:
        sid = await srv.initialize()
        g = await srv.get_stream(sid)
        assert g.headers.get("X-Accel-Buffering") == "no"
        assert g.headers["Content-Type"].startswith("text/event-stream")
        await g.wait_for(lambda s: s.comments >= 2, timeout=5.0)
        assert g.messages == []  # comments only, no JSON-RPC message
        g.close()


async def test_get_client_disconnect_frees_the_stream() -> None:
    async with running(example_server()) as srv:
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
