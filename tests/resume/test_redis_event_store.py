"""The Redis event store against a real redis-server: frames kept in order per session and
stream, the byte and age bounds exactly at and over (and mirrored in Redis), a stream of
another session refused, a session's end deleting its keys, a replay Redis cannot fully
serve refused, and resumption over real HTTP: a ``Last-Event-ID`` refused, the official
Python SDK client resuming a stream the server closed, and the example server's
``--redis-url`` keeping its streams' events in Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis
from cluster.redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from conftest import ServerFactory
from mcp import Client
from mcp_http import LEGACY, running
from test_event_store import Clock, ev
from test_resumable_streams import closed_post, events, resume_get, stepped_server
from test_sdk_resume import resumable_server, text_of

from tornado_mcp.cluster.event_store import DEFAULT_PREFIX, RedisEventStore
from tornado_mcp.protocol import Refusal
from tornado_mcp.transport.resume import NOT_RESUMABLE

pytestmark = [pytest.mark.timeout(60), pytest.mark.filterwarnings("ignore::DeprecationWarning")]

WAIT = 10.0
PATTERN = f"{DEFAULT_PREFIX}:*"


@contextlib.asynccontextmanager
async def store_on(redis: RedisProc, max_bytes: int = 1000, max_age: float = 60.0
                   ) -> AsyncIterator[tuple[RedisEventStore, Clock, list[Refusal], Any]]:
    """A bound store on ``redis`` with a clock of its own, and a plain client to look."""
    clock = Clock()
    refusals: list[Refusal] = []
    store = RedisEventStore(redis.url, clock=clock)
    store.bind(lambda: max_bytes, lambda: max_age, refusals.append)
    raw = aioredis.from_url(redis.url)
    try:
        yield store, clock, refusals, raw
    finally:
        await store.close()
        await raw.aclose()


async def kept(raw: Any, store: RedisEventStore, session: str, stream: str) -> dict[int, bytes]:
    """What Redis holds for one stream, once every queued write has been sent."""
    await store.flush()
    got = await raw.hgetall(store.key(session, stream))
    return {int(k): v for k, v in got.items()}


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = WAIT) -> None:
    async def loop() -> None:
        while not await check():
            await asyncio.sleep(0.02)
    await asyncio.wait_for(loop(), timeout)


async def test_replays_in_order_only_the_named_stream_of_the_session(redis: RedisProc) -> None:
    async with store_on(redis) as (s, _, _, raw):
        for i in range(3):  # queued without awaiting: written in this order
            s.append("s1", "A", i, ev(i))
            s.append("s1", "B", i, ev(i + 5))
        assert await s.replay("s1", "A", 0) == [(1, ev(1)), (2, ev(2))]
        assert await s.replay("s1", "A", -1) == [(0, ev(0)), (1, ev(1)), (2, ev(2))]
        assert await s.replay("s1", "B", 2) == []
        assert await s.replay("s1", "A", 3) is None  # an id the stream never gave out
        assert await s.replay("s1", "C", 0) is None  # not a stream of this session
        assert await s.replay("s2", "A", 0) is None  # another session's stream
        assert await kept(raw, s, "s1", "A") == {0: ev(0), 1: ev(1), 2: ev(2)}
        assert s.retained_bytes("s1") == 60
        s.append("s1", "A", 3, ev(3))  # a replay reads behind the writes queued before it
        assert await s.replay("s1", "A", 2) == [(3, ev(3))]


async def test_bytes_bound_exactly_at_and_one_over(redis: RedisProc) -> None:
    async with store_on(redis, max_bytes=30) as (s, _, refusals, raw):
        for i in range(3):
            s.append("s1", "A", i, ev(i))
        assert s.retained_bytes("s1") == 30 and refusals == []  # at: all kept
        assert await kept(raw, s, "s1", "A") == {0: ev(0), 1: ev(1), 2: ev(2)}
        s.append("s1", "A", 3, ev(3))  # one over: the oldest goes, here and in Redis
        assert s.retained_bytes("s1") == 30
        assert refusals == [Refusal.EVENT_STORE_MAX_BYTES]
        assert await kept(raw, s, "s1", "A") == {1: ev(1), 2: ev(2), 3: ev(3)}
        assert await s.replay("s1", "A", 0) == [(1, ev(1)), (2, ev(2)), (3, ev(3))]
        assert await s.replay("s1", "A", -1) is None  # event 0 would be missing
        s.append("s1", "B", 0, ev(9, 31))  # an event alone over the bound: never stored
        assert refusals == [Refusal.EVENT_STORE_MAX_BYTES] * 2
        assert await kept(raw, s, "s1", "B") == {}
        assert await s.replay("s1", "B", -1) is None


async def test_age_bound_exactly_at_and_over(redis: RedisProc) -> None:
    async with store_on(redis, max_age=60.0) as (s, clock, refusals, raw):
        s.append("s1", "A", 0, ev(0))
        clock.now += 1.0
        s.append("s1", "A", 1, ev(1))
        await s.flush()
        ttl = await raw.pttl(s.key("s1", "A"))
        assert 59_000 < ttl <= 60_000  # the key itself expires with the age bound
        clock.now += 59.0  # event 0 exactly at the age: kept
        s.prune()
        assert await s.replay("s1", "A", -1) == [(0, ev(0)), (1, ev(1))]
        clock.now += 0.001  # event 0 over it: dropped, here and in Redis
        s.prune()
        assert await kept(raw, s, "s1", "A") == {1: ev(1)}
        assert await s.replay("s1", "A", -1) is None
        assert await s.replay("s1", "A", 0) == [(1, ev(1))]
        clock.now += 1.0  # event 1 over it too: nothing left, no key
        s.prune()
        assert s.retained_bytes("s1") == 0
        assert await kept(raw, s, "s1", "A") == {}
        assert await raw.keys(PATTERN) == []
        assert refusals == []  # age is the normal end of an event, not a refusal


async def test_keys_of_a_process_that_died_expire_with_the_age_bound(redis: RedisProc) -> None:
    async with store_on(redis, max_age=0.2) as (s, _, _, raw):
        s.append("s1", "A", 0, ev(0))
        await s.flush()
        assert await raw.exists(s.key("s1", "A")) == 1
        await eventually(lambda: _gone(raw))  # nobody deletes it: Redis expires it


async def _gone(raw: Any) -> bool:
    return await raw.keys(PATTERN) == []


async def test_forget_deletes_every_key_of_the_session_only(redis: RedisProc) -> None:
    async with store_on(redis) as (s, _, _, raw):
        for stream in ("A", "B"):
            s.append("s1", stream, 0, ev(0))
        s.append("s2", "A", 0, ev(1))
        await s.flush()
        assert len(await raw.keys(PATTERN)) == 3
        s.forget("s1")
        await s.flush()
        assert await raw.keys(PATTERN) == [s.key("s2", "A").encode()]
        assert s.retained_bytes("s1") == 0
        assert await s.replay("s1", "A", -1) is None
        assert await s.replay("s2", "A", -1) == [(0, ev(1))]


async def test_a_replay_redis_cannot_fully_serve_is_refused(redis: RedisProc) -> None:
    async with store_on(redis) as (s, _, _, raw):
        s.append("s1", "A", 0, ev(0))
        s.append("s1", "A", 1, ev(1))
        await s.flush()
        await raw.hdel(s.key("s1", "A"), "1")  # lost (say, Redis restarted empty)
        assert await s.replay("s1", "A", 0) is None  # never a replay with a gap
        assert await s.replay("s1", "A", -1) is None


async def test_over_http_another_sessions_id_is_refused_and_ending_deletes_keys(
        redis: RedisProc) -> None:
    server, go = stepped_server()
    raw = aioredis.from_url(redis.url)
    store = RedisEventStore(redis.url)
    try:
        async with running(server, resumable_streams=True, sse_retry_interval=0.05,
                           event_store=store) as srv:
            sid, other = await srv.initialize(), await srv.initialize()
            a = await closed_post(srv, sid, "a", 1)
            go.set()
            key = a[0]["id"].split(".")[0]
            r = await resume_get(srv, other, a[0]["id"])  # another session's stream
            await r.wait_closed()
            assert r.status == 400
            assert json.loads(r.raw)["error"] == {"code": -32600, "message": NOT_RESUMABLE}
            r = await resume_get(srv, sid, a[1]["id"])  # its own: the rest, from Redis
            await r.wait_closed()
            assert r.status == 200
            assert [e["id"] for e in events(r.raw)] == [f"{key}.2", f"{key}.3"]
            await store.flush()
            assert await raw.keys(PATTERN) == [store.key(sid, key).encode()]
            assert (await srv.delete(sid)).status == 200
            await store.flush()
            assert await raw.keys(PATTERN) == []
    finally:
        await raw.aclose()


async def test_sdk_client_resumes_from_the_redis_store(redis: RedisProc) -> None:
    server, _ = resumable_server()
    seen: list[tuple[float, str | None]] = []
    store = RedisEventStore(redis.url)
    raw = aioredis.from_url(redis.url)

    async def progress(p: float, total: float | None, message: str | None) -> None:
        seen.append((p, message))

    try:
        with anyio.fail_after(30):
            async with running(server, resumable_streams=True, sse_retry_interval=0.05,
                               event_store=store) as srv:
                async with Client(srv.url, mode="legacy", read_timeout_seconds=WAIT) as client:
                    assert client.protocol_version == LEGACY
                    r = await client.call_tool("test_reconnection", {})
                    assert text_of(r) == "Reconnection test completed successfully"
                    r = await client.call_tool("polling", {}, progress_callback=progress)
                    assert text_of(r) == "polled to the end"
                    assert seen == [(1, "one"), (2, "two"), (3, "three")]
                    await store.flush()
                    assert len(await raw.keys(PATTERN)) == 2  # one hash per stream
                await eventually(lambda: _gone(raw))  # the client ended its session
                assert not srv.transport.sessions
    finally:
        await raw.aclose()


async def test_example_server_with_redis_url_keeps_stream_events_in_redis(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    proc = server_factory(["examples/conformance_server.py", "--no-admin",
                           "--redis-url", redis.url, "--sse-retry-interval", "0.05"])
    raw = aioredis.from_url(redis.url)
    try:
        with anyio.fail_after(30):
            url = f"http://127.0.0.1:{proc.port}/mcp"
            async with Client(url, mode="legacy", read_timeout_seconds=WAIT) as client:
                r = await client.call_tool("test_reconnection", {})
                assert text_of(r) == "Reconnection test completed successfully"
                keys = await raw.keys(PATTERN)
                assert len(keys) == 1
                frames = await raw.hgetall(keys[0])
                assert len(frames) >= 2  # the priming event and the result at least
            await eventually(lambda: _gone(raw))  # the session ended: its keys go
    finally:
        await raw.aclose()


async def test_on_a_cluster_link_an_outage_refuses_replays_without_a_traceback(
        redis: RedisProc, caplog: pytest.LogCaptureFixture) -> None:
    """Built on the cluster's link, the store follows its outages: while Redis is down
    nothing is sent, a replay is refused (never an exception), and only the link logs,
    once; once Redis is back the store writes and replays again."""
    from tornado_mcp import Server, Transport
    from tornado_mcp.cluster import Cluster, Link

    link = Link(redis.url)
    store = RedisEventStore(link=link)
    store.bind(lambda: 1000, lambda: 60.0, lambda _r: None)
    cluster = Cluster(Transport(Server("events"), event_store=store), link=link)
    await cluster.start()
    try:
        assert store.key("s", "A") == "tornado-mcp:events:s:A"
        store.append("s", "A", 0, ev(0))
        assert await store.replay("s", "A", -1) == [(0, ev(0))]
        redis.kill()
        store.append("s", "A", 1, ev(1))  # fails: the link learns Redis is gone
        await store.flush()
        assert link.connected is False
        store.append("s", "A", 2, ev(2))
        assert await store.replay("s", "A", 0) is None
        assert not [r for r in caplog.records if r.exc_info]
        assert sum("lost Redis" in r.getMessage() for r in caplog.records) == 1
        redis.start()
        await asyncio.wait_for(link.wait_up(), WAIT)
        store.append("s", "B", 0, ev(0))
        assert await store.replay("s", "B", -1) == [(0, ev(0))]
    finally:
        await cluster.close()
        await store.close()
