"""The list of processes across Redis trouble, with a real redis-server: an outage longer
than the heartbeat TTL (Redis killed, restarted empty) or a freeze (SIGSTOP, SIGCONT)
never shrinks any process's list, while a process that died leaves every list within a
TTL and one heartbeat interval.  Three members served in this test process
(:mod:`nodes`), with a 1 s TTL: a few seconds each."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator

from nodes import WAIT, Node, node, until_connected
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture

from tornado_mcp.cluster.core import cancel_and_wait

TTL = 1.0


async def all_listed(nodes: list[Node]) -> None:
    async def wait() -> None:
        while any(len(n.cluster.snapshot().processes) != len(nodes) for n in nodes):
            await asyncio.sleep(0.02)
    await asyncio.wait_for(wait(), WAIT)


async def watch(nodes: list[Node], seconds: float, seen: list[int]) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen.extend(len(n.cluster.snapshot().processes) for n in nodes)
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def three(redis: RedisProc) -> AsyncIterator[list[Node]]:
    """Three members, each listing all three."""
    async with node(redis, cluster_heartbeat_ttl=TTL) as a, \
            node(redis, cluster_heartbeat_ttl=TTL) as b, \
            node(redis, cluster_heartbeat_ttl=TTL) as c:
        await all_listed([a, b, c])
        yield [a, b, c]


async def test_an_outage_longer_than_the_ttl_never_shrinks_the_list(redis: RedisProc) -> None:
    async with three(redis) as nodes:
        seen: list[int] = []
        redis.kill()
        await watch(nodes, 2.5 * TTL, seen)  # every record expires meanwhile
        redis.start()  # empty
        for n in nodes:
            await until_connected(n)
        await watch(nodes, 2 * TTL, seen)
        assert set(seen) == {3}, sorted(set(seen))


async def test_a_freeze_longer_than_the_ttl_never_shrinks_the_list(redis: RedisProc) -> None:
    async with three(redis) as nodes:
        seen: list[int] = []
        assert redis.proc is not None
        redis.proc.send_signal(signal.SIGSTOP)
        try:
            await watch(nodes, 2.5 * TTL, seen)  # the records' TTLs run out meanwhile
        finally:
            redis.proc.send_signal(signal.SIGCONT)
        await watch(nodes, 2 * TTL, seen)
        assert set(seen) == {3}, sorted(set(seen))


async def test_a_process_that_died_leaves_every_list_within_a_ttl_and_a_beat(
        redis: RedisProc) -> None:
    async with three(redis) as (a, b, dead):
        # it stops beating, and never says goodbye: its loops end, each cancelled until it
        # is (redis-py can lose a cancellation that lands during a command), and the clock
        # starts once none can beat again
        dead.cluster.link.closing = True
        assert await cancel_and_wait(dead.cluster._tasks, WAIT) == 0
        stopped = time.monotonic()

        async def dropped(n: Node) -> float:
            while dead.cluster.id in n.cluster.members.others:
                await asyncio.sleep(0.01)
            return time.monotonic() - stopped
        took = await asyncio.wait_for(asyncio.gather(dropped(a), dropped(b)), WAIT)
        interval = a.cluster.members.interval
        assert max(took) <= TTL + interval + 0.3, took
