"""``cluster_outage_buffer`` exactly at its bound and one over: while Redis is down a
process keeps at most that many notifications for the others; exactly that many are all
delivered, in order, once Redis is back, and one more is dropped and counted as the
``cluster_outage_buffer`` refusal (snapshot and /metrics) while the rest still arrive.
Two real server processes and a real redis-server, killed and restarted."""

from __future__ import annotations

import asyncio

from conftest import ServerFactory, ServerProc
from mcp_http import Running, Stream
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from test_cluster_processes import admin, metric, start, touch, updates

BUFFER = 3
REFUSALS = 'tornado_mcp_refusals_total{bound="cluster_outage_buffer"}'


async def relay(proc: ServerProc) -> dict[str, int]:
    _, overview = await admin(proc.port, "GET", "api/overview")
    counts: dict[str, int] = overview["cluster"]["relay"]
    counts["refused"] = overview["refusals"]["cluster_outage_buffer"]
    return counts


async def drained(publisher: ServerProc) -> None:
    """Wait until ``publisher`` holds nothing for Redis: an entry another process has
    already read stays queued until Redis's answer to the write reaches the publisher
    (and is resent, then skipped as a duplicate, if Redis dies before it does)."""
    for _ in range(200):
        if (await relay(publisher))["buffered"] == 0:
            return
        await asyncio.sleep(0.02)
    assert (await relay(publisher))["buffered"] == 0


async def outage(redis: RedisProc, publisher: ServerProc, receiver: Stream,
                 uris: list[str], seen: list[str]) -> dict[str, int]:
    """Publish ``uris`` on ``publisher`` with Redis down, bring Redis back, and wait until
    ``receiver`` has every update the publisher kept (and a marker published after)."""
    await drained(publisher)
    redis.kill()
    for uri in uris:
        await touch(publisher.port, uri)
    during = await relay(publisher)
    redis.start()  # empty: nothing was saved
    marker = f"test://marker/{len(seen)}"
    await drained(publisher)  # the publisher has reconnected and sent what it kept
    await touch(publisher.port, marker)
    await receiver.wait_for(lambda s: marker in updates(s), timeout=20)
    seen.append(marker)
    return during


async def test_the_outage_buffer_keeps_exactly_its_bound(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    extra = ("--cluster-outage-buffer", str(BUFFER))
    a, b = start(server_factory, redis, *extra), start(server_factory, redis, *extra)
    uris = [f"test://r/{n}" for n in range(2 * BUFFER + 1)]
    markers = [f"test://marker/{n}" for n in range(3)]
    on_a = await Running.remote(a.port).listen({"resourceSubscriptions": uris + markers})
    try:
        await on_a.wait_messages(1)
        seen: list[str] = []
        await touch(b.port, markers[0])
        await on_a.wait_for(lambda s: updates(s) == markers[:1])
        seen.append(markers[0])

        # Exactly the bound: all kept, all delivered in order, nothing refused.
        during = await outage(redis, b, on_a, uris[:BUFFER], seen)
        assert (during["buffered"], during["dropped"], during["refused"]) == (BUFFER, 0, 0)
        assert updates(on_a) == [markers[0], *uris[:BUFFER], markers[1]]

        # One over: the newest is dropped and counted; the others arrive in order.
        during = await outage(redis, b, on_a, uris[BUFFER:], seen)
        assert (during["buffered"], during["dropped"], during["refused"]) == (BUFFER, 1, 1)
        assert updates(on_a) == [markers[0], *uris[:BUFFER], markers[1],
                                 *uris[BUFFER:2 * BUFFER], markers[2]]
        assert await metric(b.port, REFUSALS) == 1.0
        assert await metric(a.port, REFUSALS) == 0.0
        assert (await relay(b))["buffered"] == 0
    finally:
        on_a.close()
