"""One process cut off from Redis (a TCP proxy the test controls sits between it and the
real redis-server) while the others keep it: limits changed on either side converge on
the newest change everywhere once it reconnects, and stay converged."""

from __future__ import annotations

import asyncio
from typing import Any

from conftest import ServerFactory, ServerProc
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from tcp_proxy import Proxy, proxy_to
from test_cluster_processes import TOKEN, admin

WAIT = 15.0


def start_at(factory: ServerFactory, url: str, *extra: str) -> ServerProc:
    return factory(["examples/conformance_server.py", "--admin-token", TOKEN,
                    "--redis-url", url, *extra])


async def limits(proc: ServerProc) -> dict[str, Any]:
    _, body = await admin(proc.port, "GET", "api/limits")
    found: dict[str, Any] = body["limits"]
    return found


async def connected(proc: ServerProc) -> bool:
    _, view = await admin(proc.port, "GET", "api/cluster")
    return bool(view["connected"])


async def until_connected(proc: ServerProc, state: bool) -> None:
    async def wait() -> None:
        while await connected(proc) is not state:
            await asyncio.sleep(0.05)
    await asyncio.wait_for(wait(), WAIT)


async def change(proc: ServerProc, values: dict[str, Any]) -> None:
    status, body = await admin(proc.port, "PATCH", "api/limits", values)
    assert status == 200, body


async def converged(procs: list[ServerProc], want: dict[str, Any]) -> None:
    async def wait() -> None:
        while True:
            seen = [await limits(p) for p in procs]
            if all(all(s[k] == v for k, v in want.items()) for s in seen):
                return
            await asyncio.sleep(0.05)
    await asyncio.wait_for(wait(), WAIT)


async def partition(proxy: Proxy, cut: ServerProc) -> None:
    proxy.cut()
    # The cut process notices when a command fails (its blocked read, within a second).
    await until_connected(cut, False)


async def test_a_limit_changed_while_cut_off_is_kept_everywhere_after_reconnecting(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    with proxy_to(redis.path) as proxy:
        a = start_at(server_factory, proxy.url)
        b = start_at(server_factory, redis.url)
        await until_connected(a, True)
        await partition(proxy, a)
        await change(a, {"max_sessions": 7})
        assert (await limits(a))["max_sessions"] == 7
        assert (await limits(b))["max_sessions"] == 10_000
        proxy.restore()
        await until_connected(a, True)
        await converged([a, b], {"max_sessions": 7})
        await asyncio.sleep(2.0)  # two heartbeat rounds later: still one value everywhere
        assert (await limits(a))["max_sessions"] == 7
        assert (await limits(b))["max_sessions"] == 7


async def test_the_newest_change_wins_on_both_sides_of_a_partition(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    with proxy_to(redis.path) as proxy:
        a = start_at(server_factory, proxy.url)
        b = start_at(server_factory, redis.url)
        await until_connected(a, True)
        await partition(proxy, a)
        await change(a, {"max_sessions": 7, "max_listen_subscriptions": 70})
        await asyncio.sleep(0.05)
        await change(b, {"max_sessions": 9})  # newer than A's change of the same limit
        proxy.restore()
        await until_connected(a, True)
        want = {"max_sessions": 9, "max_listen_subscriptions": 70}
        await converged([a, b], want)
        await asyncio.sleep(2.0)
        for proc in (a, b):
            got = await limits(proc)
            assert {k: got[k] for k in want} == want


async def bounds(proc: ServerProc) -> dict[str, Any]:
    found: dict[str, Any] = (await limits(proc))["tool_bounds"]
    return found


async def bounds_converged(procs: list[ServerProc], want: dict[str, Any]) -> None:
    async def wait() -> None:
        while [await bounds(p) for p in procs] != [want] * len(procs):
            await asyncio.sleep(0.05)
    try:
        await asyncio.wait_for(wait(), WAIT)
    except TimeoutError:
        raise AssertionError([await bounds(p) for p in procs]) from None


async def test_tool_bounds_edits_merge_tool_by_tool_across_a_partition(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    """The connected side bounds one tool while the cut-off side bounds another, later:
    both edits survive everywhere (a tool's entry is shared on its own)."""
    with proxy_to(redis.path) as proxy:
        a = start_at(server_factory, proxy.url)
        b = start_at(server_factory, redis.url)
        await until_connected(a, True)
        await partition(proxy, a)
        status, _ = await admin(b.port, "PATCH", "api/tools/echo", {"timeout": 3})
        assert status == 200
        await asyncio.sleep(0.05)
        status, _ = await admin(a.port, "PATCH", "api/tools/greet", {"max_concurrency": 2})
        assert status == 200
        proxy.restore()
        await until_connected(a, True)
        want = {"echo": {"timeout": 3.0}, "greet": {"max_concurrency": 2}}
        await bounds_converged([a, b], want)
        await asyncio.sleep(2.0)
        assert await bounds(a) == want and await bounds(b) == want


async def test_simultaneous_edits_of_two_tools_on_two_processes_both_survive(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    a = start_at(server_factory, redis.url)
    b = start_at(server_factory, redis.url)
    want: dict[str, Any] = {}
    for round_ in range(3):
        timeout, cap = round_ + 1, round_ + 2
        results = await asyncio.gather(
            admin(a.port, "PATCH", "api/tools/echo", {"timeout": timeout}),
            admin(b.port, "PATCH", "api/tools/greet", {"max_concurrency": cap}))
        assert [status for status, _ in results] == [200, 200]
        want = {"echo": {"timeout": float(timeout)}, "greet": {"max_concurrency": cap}}
        await bounds_converged([a, b], want)
