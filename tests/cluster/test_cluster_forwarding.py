"""A legacy session's request that reaches the wrong process of a cluster, when forwarding
it cannot work or must be bounded: an owner that advertises no URL (421), an owner whose
listener is gone (503 while its heartbeat lives, then 404), an owner that accepts and
never answers (504, within ``forward_idle_timeout``), an owner that answers slowly but
steadily (passed on whole), and a client that stops reading a forwarded stream (dropped
after ``stream_stall_timeout``, without the forwarding process reading the owner's answer
ahead of it).

Every process here is a Tornado server in this test process on its own loopback port,
joined to one real redis-server; the misbehaving owners are raw asyncio servers
advertised as a cluster member's URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from mcp_http import (
    LEGACY,
    TIMEOUT,
    Running,
    assert_refused,
    example_server,
    rpc,
    running,
    unread_socket,
)
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture

from tornado_mcp import Transport
from tornado_mcp.cluster import Cluster
from tornado_mcp.protocol import INTERNAL_ERROR, INVALID_REQUEST

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def member(redis: RedisProc, advertise: str | None = None,
                 **options: Any) -> AsyncIterator[tuple[Cluster, Transport]]:
    """A cluster member with no listener of its own; ``advertise`` is the URL it gives."""
    transport = Transport(example_server(), **options)
    cluster = Cluster(transport, redis.url, advertise_url=advertise)
    await cluster.start()
    try:
        yield cluster, transport
    finally:
        await cluster.close()


@contextlib.asynccontextmanager
async def forwarder(redis: RedisProc, **options: Any) -> AsyncIterator[Running]:
    """A cluster member serving MCP on a loopback port (the one clients reach).  Its live
    ``options`` are set once it has joined (a member takes the cluster's live limits when
    it joins, and shares its own changes)."""
    transport = Transport(example_server())
    async with running(transport.server, transport=transport) as srv:
        cluster = Cluster(transport, redis.url, advertise_url=srv.url)
        await cluster.start()
        transport.options.update(options, actor="test")
        try:
            yield srv
        finally:
            await cluster.close()


@contextlib.asynccontextmanager
async def raw_owner(handle: Handler) -> AsyncIterator[str]:
    """A raw HTTP endpoint on a loopback port; yields its URL."""
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.close()
        await asyncio.wait_for(server.wait_closed(), TIMEOUT)


async def read_head(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)


SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def test_an_owner_that_advertises_no_url_gets_421_naming_it(redis: RedisProc) -> None:
    owner_transport = Transport(example_server())
    async with running(owner_transport.server, transport=owner_transport) as owner:
        cluster = Cluster(owner_transport, redis.url)  # no advertise_url: nowhere to forward
        await cluster.start()
        try:
            sid = await owner.initialize()
            assert sid.startswith(cluster.id + ".")
            async with forwarder(redis) as other:
                for reply in (await other.post(rpc("ping"), session=sid),
                              await other.get(sid),
                              await other.delete(sid)):
                    err = assert_refused(reply, 421, INVALID_REQUEST)
                    assert err["message"] == (
                        f"Misdirected request: session {sid} is held by process "
                        f"{cluster.id} on {cluster.host} (pid {cluster.pid}); route requests "
                        "by Mcp-Session-Id to the process that created the session "
                        "(sticky sessions)")
            # The session itself is untouched, on its own process.
            r = await owner.post(rpc("ping"), session=sid)
            assert r.status == 200 and r.messages[-1]["result"] == {}
        finally:
            await cluster.close()


async def test_an_owner_whose_listener_is_gone_is_503_while_it_beats_then_404(
        redis: RedisProc) -> None:
    """Nothing listens at the URL of a member whose heartbeat is fresh (it crashed a moment
    ago, or restarts): 503 with ``Retry-After: 1``, as Redis says it lives; once its
    heartbeat record is gone, 404 at once (its sessions died with it)."""
    async with raw_owner(read_head_and_close) as url:
        pass  # closed: nothing listens there any more
    async with member(redis, url) as (cluster, _), forwarder(redis) as other:
        sid = f"{cluster.id}.abc"
        reply = await other.post(rpc("ping"), session=sid)
        err = assert_refused(reply, 503, INTERNAL_ERROR)
        assert reply.headers["Retry-After"] == "1"
        assert err["message"] == ("Service unavailable: the process holding this session "
                                  "cannot be confirmed right now; retry")
        for task in cluster._tasks:  # it beats no more, and its record is gone (expired)
            task.cancel()
        await cluster.link.redis.delete(cluster.link.proc_key(cluster.id))
        assert_refused(await other.post(rpc("ping"), session=sid), 404, INVALID_REQUEST)


async def read_head_and_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await read_head(reader)
    writer.close()


async def test_an_owner_that_closes_without_answering_gets_502(redis: RedisProc) -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.close()

    async with raw_owner(hang_up) as url, member(redis, url) as (cluster, _), \
            forwarder(redis) as other:
        sid = f"{cluster.id}.abc"
        err = assert_refused(await other.post(rpc("ping"), session=sid), 502, INTERNAL_ERROR)
        assert err["message"].endswith(
            f"which holds session {sid}, closed the connection without answering")


async def test_an_owner_that_never_answers_gets_504_after_the_idle_timeout(
        redis: RedisProc) -> None:
    released = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        await reader.read()  # accepts the request, answers nothing, until dropped
        released.set()

    async with raw_owner(silent) as url, member(redis, url) as (cluster, _), \
            forwarder(redis, forward_idle_timeout=0.5) as other:
        sid = f"{cluster.id}.abc"
        began = time.monotonic()
        reply = await other.post(rpc("ping"), session=sid)
        waited = time.monotonic() - began
        err = assert_refused(reply, 504, INTERNAL_ERROR)
        assert err["message"] == (
            f"Gateway timeout: process {cluster.id} on {cluster.host} (pid {cluster.pid}), "
            f"which holds session {sid}, did not answer within 0.5 s")
        assert 0.5 <= waited < 3.0
        await asyncio.wait_for(released.wait(), TIMEOUT)  # the upstream connection is closed
        assert other.transport.snapshot().refusals["forward_idle_timeout"] == 1


async def test_the_idle_timeout_counts_silence_not_the_whole_answer(redis: RedisProc) -> None:
    """Frames every 0.2 s for 1.2 s pass under a 0.5 s idle timeout; then the owner falls
    silent with the stream open, and the client's connection is closed 0.5 s later."""
    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(SSE_HEAD)
        for n in range(6):
            await asyncio.sleep(0.2)
            writer.write(chunk(b'data: {"jsonrpc": "2.0", "method": "n%d"}\n\n' % n))
            await writer.drain()
        await reader.read()  # silent, until dropped

    async with raw_owner(trickle) as url, member(redis, url) as (cluster, _), \
            forwarder(redis, forward_idle_timeout=0.5) as other:
        stream = await other.get_stream(f"{cluster.id}.abc")
        try:
            assert stream.status == 200
            await stream.wait_messages(6)
            assert [m["method"] for m in stream.messages] == [f"n{n}" for n in range(6)]
            began = time.monotonic()
            await stream.wait_closed()
            assert 0.3 <= time.monotonic() - began < 3.0
            assert other.transport.snapshot().refusals["forward_idle_timeout"] == 1
        finally:
            stream.close()


async def test_a_large_answer_reaches_a_reading_client_whole_and_in_order(
        redis: RedisProc) -> None:
    frames = [b'data: {"n": %d, "pad": "%s"}\n\n' % (n, b"x" * 1000) for n in range(4000)]

    async def bulk(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(SSE_HEAD)
        for frame in frames:
            writer.write(chunk(frame))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    async with raw_owner(bulk) as url, member(redis, url) as (cluster, _), \
            forwarder(redis) as other:
        stream = await other.get_stream(f"{cluster.id}.abc")
        await stream.wait_closed()
        assert [m["n"] for m in stream.messages] == list(range(4000))
        assert stream.raw == b"".join(frames)


async def test_a_client_that_stops_reading_is_dropped_and_the_owner_is_not_read_ahead(
        redis: RedisProc) -> None:
    """The owner writes as fast as it can; the client reads nothing.  The forwarding
    process reads the owner only as fast as the client takes it, so the owner soon cannot
    write more (a few socket buffers, never the whole answer), and after
    ``stream_stall_timeout`` the client is dropped and the owner's connection closed."""
    written = [0]
    closed = asyncio.Event()
    frame = chunk(b"data: " + b"x" * 16_000 + b"\n\n")

    async def firehose(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(SSE_HEAD)
        try:
            while True:
                writer.write(frame)
                await writer.drain()
                written[0] += len(frame)
        except (ConnectionError, OSError):
            closed.set()

    async with raw_owner(firehose) as url, member(redis, url) as (cluster, _), \
            forwarder(redis, stream_stall_timeout=1.0) as other:
        request = (f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{other.port}\r\n"
                   f"Accept: text/event-stream\r\nMcp-Session-Id: {cluster.id}.abc\r\n"
                   f"MCP-Protocol-Version: {LEGACY}\r\n\r\n").encode()
        sock = unread_socket(other.port, request, rcvbuf=4096)
        try:
            began = time.monotonic()
            await asyncio.wait_for(closed.wait(), TIMEOUT)
            assert time.monotonic() - began >= 1.0
            # Socket buffers on both hops, one chunk in the forwarding process: far less
            # than the owner writes in a second when nothing holds it back.
            assert 0 < written[0] < 16 * 1024 * 1024, written[0]
            assert other.transport.snapshot().refusals["stream_stall_timeout"] == 1
        finally:
            sock.close()
