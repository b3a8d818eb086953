"""What a Redis outage looks like from the processes of a cluster (real server processes,
a real redis-server killed and restarted, and a TCP proxy cutting one process off):
a task call on the cut-off process gets a clear error and the log one line; entries
trimmed from the feed before a process read them are counted and logged once; a Redis
restart counts one reconnection and every process stays listed throughout."""

from __future__ import annotations

import asyncio
from typing import Any

from conftest import ServerFactory, ServerProc
from mcp_http import Running, assert_refused
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from tasks.tasks_http import call, start, until
from tcp_proxy import proxy_to
from test_cluster_partition import start_at, until_connected
from test_cluster_processes import admin, touch

from tornado_mcp.protocol import INTERNAL_ERROR

WAIT = 15.0


async def cluster_view(proc: ServerProc) -> dict[str, Any]:
    _, view = await admin(proc.port, "GET", "api/cluster")
    found: dict[str, Any] = view
    return found


async def relay(proc: ServerProc) -> dict[str, int]:
    _, overview = await admin(proc.port, "GET", "api/overview")
    counts: dict[str, int] = overview["cluster"]["relay"]
    return counts


async def test_a_task_call_cut_off_from_redis_gets_a_clear_error_and_one_log_line(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    with proxy_to(redis.path) as proxy:
        a = start_at(server_factory, proxy.url)
        srv = Running.remote(a.port)
        task_id = await start(srv, "slow_compute", {"seconds": 0.1, "label": "before"})
        assert (await until(srv, task_id))["status"] == "completed"
        proxy.cut()
        await until_connected(a, False)
        for n in range(3):
            assert_refused(await call(srv, "slow_compute", {"seconds": 0}, request_id=n),
                           200, INTERNAL_ERROR, "Service unavailable: the task store (Redis) "
                           "cannot be reached; try again later", request_id=n)
        proxy.restore()
        await until_connected(a, True)
        again = await start(srv, "slow_compute", {"seconds": 0.1, "label": "after"})
        assert (await until(srv, again))["status"] == "completed"
        log = a.stderr
    assert "Traceback" not in log, log[-3000:]
    assert log.count("lost Redis") == 1, log[-3000:]


async def test_feed_entries_trimmed_before_a_process_read_them_are_counted(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    sent = 400  # well past the stream length (trimming is by whole nodes of 100 entries)
    with proxy_to(redis.path) as proxy:
        publisher = start_at(server_factory, redis.url, "--cluster-stream-length", "10")
        reader = start_at(server_factory, proxy.url, "--cluster-stream-length", "10")
        await until_connected(reader, True)
        await touch(publisher.port, "test://r/first")  # the reader knows the publisher

        async def heard_first() -> dict[str, int]:
            while (counts := await relay(reader))["received"] < 1:
                await asyncio.sleep(0.05)
            return counts
        before = await asyncio.wait_for(heard_first(), WAIT)
        proxy.cut()
        await until_connected(reader, False)
        for n in range(sent):
            await touch(publisher.port, f"test://r/{n}")
        proxy.restore()
        await until_connected(reader, True)
        await touch(publisher.port, "test://r/last")

        async def caught_up() -> dict[str, int]:
            while True:
                now = await relay(reader)
                if now["received"] + now["trimmed"] - before["received"] == sent + 1:
                    return now
                await asyncio.sleep(0.05)
        after = await asyncio.wait_for(caught_up(), WAIT)
    assert after["trimmed"] >= sent - 300, after
    assert after["received"] - before["received"] >= 1
    assert reader.stderr.count("trimmed before this process read them") == 1


async def test_a_redis_restart_is_one_reconnection_and_the_view_keeps_every_process(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    procs = [start_at(server_factory, redis.url) for _ in range(3)]
    for proc in procs:
        async def all_listed(p: ServerProc = proc) -> None:
            while len((await cluster_view(p))["processes"]) != 3:
                await asyncio.sleep(0.05)
        await asyncio.wait_for(all_listed(), WAIT)
    redis.kill()
    redis.start()
    seen: list[int] = []

    async def until_all_reconnected() -> None:
        while True:
            views = [await cluster_view(p) for p in procs]
            seen.extend(len(v["processes"]) for v in views)
            if all(v["connected"] for v in views) and len(seen) > 30:
                return
            await asyncio.sleep(0.05)
    await asyncio.wait_for(until_all_reconnected(), WAIT)
    assert set(seen) == {3}, seen
    await asyncio.sleep(1.5)  # a heartbeat round after: nothing failed over again
    for proc in procs:
        assert (await relay(proc))["reconnects"] == 1
