"""A legacy session's request on a process that does not hold it, while the cluster
cannot tell whether its owner lives: the answer is 503 with ``Retry-After`` (retry: the
session may well be alive), never 404, which tells the client its session is gone; an
owner cut off from Redis still serves its sessions through the others (they forward to
where it was last reached).  Real server processes, a real redis-server (killed and
restarted) and, for a partition, a TCP proxy between the owner and Redis.  A crashed
owner's sessions are known lost within its heartbeat TTL: 503 until its record expires,
then 404 (never 502), and it leaves every process's list within a TTL and a heartbeat."""

from __future__ import annotations

import asyncio
import time

from conftest import ServerFactory
from mcp_http import Reply, Running, example_server, rpc, running
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from tcp_proxy import proxy_to
from test_cluster_partition import start_at, until_connected
from test_cluster_processes import admin

from tornado_mcp import Transport
from tornado_mcp.cluster import Cluster
from tornado_mcp.cluster.members import LOOKUP_TIMEOUT
from tornado_mcp.cluster.sessions import MOVING

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
    assert codes <= {200, 503}, [(r.status, r.body) for r in replies if r.status not in
                                 (200, 503)][:3]
    for r in replies:
        if r.status == 503:
            assert r.headers.get("Retry-After") == "1", r.headers
            assert r.json["error"]["message"].startswith("Service unavailable: the process "
                                                         "holding this session")


async def test_a_partitioned_owner_s_sessions_are_served_through_the_others(
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
        assert during[-1].status == 200  # forwarded to where the owner was last reached
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


async def test_a_crashed_owner_s_sessions_are_503_then_404_within_its_ttl(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    ttl = float(TTL)
    owner = start_at(server_factory, redis.url, "--cluster-heartbeat-ttl", TTL)
    other = start_at(server_factory, redis.url, "--cluster-heartbeat-ttl", TTL)
    sid = await Running.remote(owner.port).initialize()
    assert (await ping(other.port, sid)).status == 200
    owner.proc.kill()
    owner.proc.wait(timeout=10)
    killed = time.monotonic()
    listed_until = lost_at = 0.0
    replies: list[Reply] = []
    while time.monotonic() - killed < 4 * ttl + 2:
        replies.append(await ping(other.port, sid))
        _, view = await admin(other.port, "GET", "api/cluster")
        if len(view["processes"]) == 2:
            listed_until = time.monotonic()
        if replies[-1].status == 404:
            lost_at = time.monotonic()
            break
        await asyncio.sleep(0.05)
    assert lost_at, [r.status for r in replies]
    before = replies[:-1]
    assert {r.status for r in before} <= {503}, [(r.status, r.body) for r in before][:3]
    for r in before:
        assert r.headers.get("Retry-After") == "1"
    # Its record expires within the TTL of its last heartbeat; then the next request
    # finds nothing at its URL and no record: 404.  The list drops it within a TTL and
    # a heartbeat interval (a quarter TTL here).
    assert lost_at - killed <= ttl + 0.5, lost_at - killed
    assert listed_until - killed <= ttl + ttl / 4 + 0.5, listed_until - killed


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


async def test_a_slow_answer_from_redis_is_a_503_not_a_404(redis: RedisProc) -> None:
    """A process that has not listed the session's owner yet asks Redis, which does not
    answer within ``LOOKUP_TIMEOUT`` (a machine whose cores are all busy): it cannot tell
    whether the owner lives, so the client is asked to retry, and is served when it does."""
    owner_t, other_t = Transport(example_server()), Transport(example_server())
    async with running(owner_t.server, transport=owner_t) as owner_srv, \
            running(other_t.server, transport=other_t) as other_srv:
        other = Cluster(other_t, redis.url, advertise_url=other_srv.url)
        await other.start()
        for task in other._tasks:  # no heartbeat rounds: it has not heard of the owner
            task.cancel()
        owner = Cluster(owner_t, redis.url, advertise_url=owner_srv.url)
        await owner.start()
        try:
            sid = await owner_srv.initialize()
            assert owner.id not in other.members.others
            real_get = other.link.redis.get

            async def slow_get(*args: object, **kw: object) -> object:
                await asyncio.sleep(LOOKUP_TIMEOUT + 0.5)
                return await real_get(*args, **kw)

            other.link.redis.get = slow_get
            reply = await other_srv.post(rpc("ping"), session=sid)
            assert reply.status == 503, (reply.status, reply.body)
            assert reply.headers.get("Retry-After") == "1"
            other.link.redis.get = real_get
            reply = await other_srv.post(rpc("ping"), session=sid)
            assert reply.status == 200, (reply.status, reply.body)  # forwarded to the owner
        finally:
            await owner.close()
            await other.close()


async def test_a_session_handed_over_while_it_was_looked_for_is_not_lost(
        redis: RedisProc) -> None:
    """The holder drains: another process reads the session's record (none yet: the
    holder still has it), and before the answer is used the holder hands it over and
    leaves the cluster.  The client is asked to retry, and its retry adopts the session.
    The interleaving is fixed here: the record is read while the holder has the session,
    the hand-over and the leaving happen, and that earlier answer is what the process
    looking for the session then gets from Redis."""
    owner_t, other_t = Transport(example_server()), Transport(example_server())
    async with running(owner_t.server, transport=owner_t) as owner_srv, \
            running(other_t.server, transport=other_t) as other_srv:
        owner = Cluster(owner_t, redis.url, advertise_url=owner_srv.url)
        other = Cluster(other_t, redis.url, advertise_url=other_srv.url)
        await owner.start()
        await other.start()
        try:
            sid = await owner_srv.initialize()
            real_hmget = other.link.redis.hmget
            key = other.sessions.key(sid)
            stale = await real_hmget(key, ["state", "owner", "data"])
            assert stale == [None, None, None]  # the holder has it: no record yet
            await owner_t.close()  # hands the idle session over
            await owner.close()  # and leaves: the others forget it at once
            for _ in range(200):
                if owner.id in other.members.gone:
                    break
                await asyncio.sleep(0.01)
            assert owner.id in other.members.gone
            assert (await real_hmget(key, ["state"]))[0] == b"free"

            async def answered_before_the_hand_over(*args: object, **kw: object) -> object:
                other.link.redis.hmget = real_hmget  # only the first read is the old one
                return stale

            other.link.redis.hmget = answered_before_the_hand_over
            reply = await other_srv.post(rpc("ping"), session=sid)
            assert reply.status == 503, (reply.status, reply.body)
            assert reply.headers.get("Retry-After") == "1"
            assert reply.json["error"]["message"] == MOVING
            reply = await other_srv.post(rpc("ping"), session=sid)
            assert reply.status == 200, (reply.status, reply.body)  # adopted here
            assert sid in other.sessions.adopted
        finally:
            await owner.close()
            await other.close()
