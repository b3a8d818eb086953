"""A legacy session's request on a process that does not hold it, while the cluster
cannot tell whether its owner lives: the answer is 503 with ``Retry-After`` (retry: the
session may well be alive), never 404, which tells the client its session is gone.
Real server processes, a real redis-server (killed and restarted) and, for a partition,
a TCP proxy between the owner and Redis.  A session whose owner is known to be gone (it
stopped, or a new process took its URL) is still answered 404 at once."""

from __future__ import annotations

import asyncio
import time

from conftest import ServerFactory
from mcp_http import Reply, Running, example_server, rpc, running
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from tcp_proxy import proxy_to
from test_cluster_partition import start_at, until_connected

from tornado_mcp import Transport
from tornado_mcp.cluster import Cluster
from tornado_mcp.cluster.core import cancel_and_wait

TTL = "1"


async def ping(port: int, sid: str) -> Reply:
    return await Running.remote(port).post(rpc("ping"), session=sid)


async def statuses_for(port: int, sid: str, seconds: float) -> list[Reply]:
    """Ping the session through ``port`` every 50 ms for ``seconds``."""
    replies = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        replies.append(await ping(port, sid))
        await asyncio.sleep(0.05)
    return replies


def assert_retry_not_gone(replies: list[Reply]) -> None:
    codes = {r.status for r in replies}
    assert 404 not in codes, [(r.status, r.body) for r in replies if r.status == 404][:3]
    for r in replies:
        if r.status == 503:
            assert r.headers.get("Retry-After") == "1", r.headers
            assert r.json["error"]["message"].startswith("Service unavailable: the process "
                                                         "holding this session")


async def test_a_partitioned_owner_s_sessions_are_answered_503_never_404(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    with proxy_to(redis.path) as proxy:
        owner = start_at(server_factory, proxy.url, "--cluster-heartbeat-ttl", TTL)
        other = start_at(server_factory, redis.url, "--cluster-heartbeat-ttl", TTL)
        sid = await Running.remote(owner.port).initialize()
        await until_connected(owner, True)
        assert (await ping(other.port, sid)).status == 200  # forwarded to its owner
        proxy.cut()
        during = await statuses_for(other.port, sid, 3.0)  # past the owner's heartbeat
        assert_retry_not_gone(during)
        assert 503 in {r.status for r in during}
        proxy.restore()
        await until_connected(owner, True)
        after = await statuses_for(other.port, sid, 2.0)
        assert_retry_not_gone(after)
        assert after[-1].status == 200


async def test_a_redis_restart_never_makes_a_live_session_404(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    """The owner reaches Redis through a proxy, cut while Redis restarts empty: the other
    process comes back first and finds no record of the owner for a while."""
    with proxy_to(redis.path) as proxy:
        owner = start_at(server_factory, proxy.url)
        other = start_at(server_factory, redis.url)
        sid = await Running.remote(owner.port).initialize()
        await until_connected(owner, True)
        assert (await ping(other.port, sid)).status == 200
        redis.kill()
        proxy.cut()
        redis.start()  # empty: every heartbeat record is gone until its process beats again
        await until_connected(other, True)
        replies = await statuses_for(other.port, sid, 1.5)
        proxy.restore()
        await until_connected(owner, True)
        replies += await statuses_for(other.port, sid, 1.5)
        assert_retry_not_gone(replies)
        assert replies[-1].status == 200


async def test_a_stopped_owner_s_sessions_are_gone_at_once(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    owner = start_at(server_factory, redis.url)
    other = start_at(server_factory, redis.url)
    sid = await Running.remote(owner.port).initialize()
    assert (await ping(other.port, sid)).status == 200
    owner.stop()
    await asyncio.sleep(0.3)  # its leaving reaches the other through the feed
    assert (await ping(other.port, sid)).status == 404


async def test_a_process_that_took_a_dead_one_s_url_answers_its_sessions_404(
        redis: RedisProc) -> None:
    transport = Transport(example_server())
    async with running(transport.server, transport=transport) as srv:
        # A process that died at this URL (its heartbeat record is still fresh).
        dead = Cluster(Transport(example_server()), redis.url, advertise_url=srv.url)
        await dead.start()
        await dead.members.beat()
        for task in dead._tasks:
            task.cancel()
        sid = dead.session_prefix + "x" * 20
        # Its successor at the same URL, and a third process elsewhere.
        successor = Cluster(transport, redis.url, advertise_url=srv.url)
        third = Cluster(Transport(example_server()), redis.url, advertise_url=None)
        await successor.start()
        await third.start()
        try:
            assert (await srv.post(rpc("ping"), session=sid)).status == 404
            assert successor.owner_uncertain(sid) is None
            # The third forgets it once the successor's notice arrives (not after a TTL).
            for _ in range(100):
                if await third.members.lookup(dead.id) is None:
                    break
                await asyncio.sleep(0.02)
            assert await third.members.lookup(dead.id) is None
            assert third.owner_uncertain(sid) is None
        finally:
            await third.close()
            await successor.close()
            await dead.link.aclose()


async def test_a_vanished_owner_is_uncertain_for_two_ttls_then_gone(
        redis: RedisProc) -> None:
    """Exactly the bound: from the moment the reader drops the frozen owner (its record
    expired) its sessions are 503 for two heartbeat TTLs, then 404."""
    ttl = 1.0
    reader = Cluster(Transport(example_server(), cluster_heartbeat_ttl=ttl), redis.url)
    frozen = Cluster(Transport(example_server(), cluster_heartbeat_ttl=ttl), redis.url,
                     advertise_url="http://127.0.0.1:9/mcp")
    await reader.start()
    await frozen.start()
    sid = frozen.session_prefix + "y" * 20
    try:
        for _ in range(100):
            if frozen.id in reader.members.others:
                break
            await asyncio.sleep(0.02)
        assert frozen.id in reader.members.others
        # frozen: it beats no more, and never leaves (cancelled until its tasks have stopped:
        # redis-py can lose a cancellation)
        await cancel_and_wait(frozen._tasks)
        assert reader.owner_uncertain(sid) is None  # still listed: forwarded, not refused
        dropped = gone = 0.0
        deadline = time.monotonic() + 8 * ttl
        while time.monotonic() < deadline:
            listed = frozen.id in reader.members.others
            uncertain = reader.owner_uncertain(sid)
            if not listed and uncertain is not None and not dropped:
                dropped = time.monotonic()
            if dropped and uncertain is None:
                gone = time.monotonic()
                break
            await asyncio.sleep(0.02)
        assert dropped and gone, (dropped, gone)
        span = gone - dropped
        assert 2 * ttl - 0.05 <= span <= 2 * ttl + reader.members.interval + 0.3, span
    finally:
        await reader.close()
        await frozen.link.aclose()
