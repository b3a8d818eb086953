"""The official Python SDK client (``mcp`` 2.3.0) resumes a broken 2025-11-25 stream.

Two ways a stream breaks mid-call: the server closes it at will (SSE polling, the
``test_reconnection`` fixture and ``Context.close_sse_stream``), and the network drops
the connection (a small TCP proxy between client and server cuts every connection it
carries).  Either way the client waits the stream's ``retry``, reconnects with ``GET`` +
``Last-Event-ID`` and receives every progress notification and the result: none lost,
none twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp_http import LEGACY, Running, example_server, running, wait_until

from tornado_mcp import Context, Server

TEST_TIMEOUT = 30.0
WAIT = 10.0

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class CuttingProxy:
    """A TCP proxy on a loopback port of its own that can cut every connection at once."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = 0
        self.connections = 0
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> CuttingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.cut()
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._writers -= {writer, up_writer}

    def cut(self) -> None:
        """Drop every connection, both sides, as a network failure would."""
        for w in list(self._writers):
            w.transport.abort()
        self._writers.clear()


def resumable_server() -> tuple[Server, dict[str, asyncio.Event]]:
    """The example server plus ``stepwise``: progress 1, (wait for ``go``), progress 2
    and 3, result; and ``polling``: the same, closing its own stream after progress 1."""
    server = example_server()
    events = {"sent_first": asyncio.Event(), "go": asyncio.Event()}

    async def stepwise(ctx: Context) -> str:
        ctx.report_progress(1, 3, "one")
        events["sent_first"].set()
        await events["go"].wait()
        ctx.report_progress(2, 3, "two")
        ctx.report_progress(3, 3, "three")
        return "all steps done"

    async def polling(ctx: Context) -> str:
        ctx.report_progress(1, 3, "one")
        assert ctx.close_sse_stream()
        await asyncio.sleep(0.05)
        ctx.report_progress(2, 3, "two")
        ctx.report_progress(3, 3, "three")
        return "polled to the end"

    server.add_tool(stepwise, "stepwise", description="Three progress steps, then a result")
    server.add_tool(polling, "polling", description="Closes its own stream mid-call")
    return server, events


@contextlib.asynccontextmanager
async def serving(server: Server) -> AsyncIterator[Running]:
    async with running(server, resumable_streams=True, sse_retry_interval=0.05) as srv:
        yield srv


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


async def test_sdk_client_resumes_when_the_server_closes_the_stream() -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with serving(example_server()) as srv, \
                Client(srv.url, mode="legacy", read_timeout_seconds=WAIT) as client:
            assert client.protocol_version == LEGACY
            r = await client.call_tool("test_reconnection", {})
            assert not r.is_error
            assert text_of(r) == "Reconnection test completed successfully"


async def test_sdk_client_loses_no_progress_when_the_server_polls() -> None:
    server, _ = resumable_server()
    seen: list[tuple[float, str | None]] = []

    async def progress(p: float, total: float | None, message: str | None) -> None:
        seen.append((p, message))

    with anyio.fail_after(TEST_TIMEOUT):
        async with serving(server) as srv, \
                Client(srv.url, mode="legacy", read_timeout_seconds=WAIT) as client:
            r = await client.call_tool("polling", {}, progress_callback=progress)
            assert text_of(r) == "polled to the end"
            assert seen == [(1, "one"), (2, "two"), (3, "three")]


async def test_sdk_client_resumes_a_connection_the_network_broke() -> None:
    server, events = resumable_server()
    seen: list[tuple[float, str | None]] = []

    async def progress(p: float, total: float | None, message: str | None) -> None:
        seen.append((p, message))

    with anyio.fail_after(TEST_TIMEOUT):
        async with serving(server) as srv, CuttingProxy(srv.port) as proxy:
            url = f"http://127.0.0.1:{proxy.port}/mcp"
            async with Client(url, mode="legacy", read_timeout_seconds=WAIT) as client:

                async def break_then_release() -> None:
                    await events["sent_first"].wait()
                    await wait_until(lambda: seen == [(1, "one")])
                    before = proxy.connections
                    proxy.cut()  # mid-call: the POST's stream is gone
                    session = next(iter(srv.transport.sessions))
                    # The handler runs on (a disconnect is not a cancellation here).
                    assert len(session.in_flight) == 1
                    events["go"].set()  # its last messages go to the event store
                    await wait_until(lambda: proxy.connections > before)

                result: dict[str, Any] = {}

                async def call() -> None:
                    result["r"] = await client.call_tool("stepwise", {},
                                                         progress_callback=progress)

                async with anyio.create_task_group() as tg:
                    tg.start_soon(call)
                    tg.start_soon(break_then_release)
                assert text_of(result["r"]) == "all steps done"
                assert seen == [(1, "one"), (2, "two"), (3, "three")]
