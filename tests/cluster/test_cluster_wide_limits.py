"""``cluster_wide_limits``: ``max_sessions`` and ``max_listen_subscriptions`` bound the
whole cluster, each process counting what the others reported in their last heartbeat.
Two real server processes share one real redis-server; each holds one session (and one
listen stream) of a cap of two, so a third on either process is refused, exactly as a
single process refuses past its cap."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from conftest import ServerFactory, ServerProc
from mcp_http import LEGACY, Running, Stream, assert_refused, rpc
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from test_cluster_processes import admin, start

from tornado_mcp.protocol import INTERNAL_ERROR

CAPS = ("--cluster-wide-limits", "true", "--max-sessions", "2",
        "--max-listen-subscriptions", "2")


def init(name: str) -> dict[str, Any]:
    return rpc("initialize", {"protocolVersion": LEGACY, "capabilities": {},
                              "clientInfo": {"name": name, "version": "1"}}, 0)


async def held_by(seen_from: ServerProc, other: ServerProc) -> tuple[int, int] | None:
    """(sessions, listen streams) of ``other`` as ``seen_from`` last heard (None: not
    heard of yet)."""
    _, view = await admin(seen_from.port, "GET", "api/cluster")
    for p in view["processes"]:
        if p["pid"] == other.proc.pid:
            return p["sessions"], p["listen_streams"]
    return None


async def until_seen(seen_from: ServerProc, other: ServerProc, counts: tuple[int, int]
                     ) -> None:
    """Wait (bounded: a few heartbeats) until ``seen_from`` knows ``other`` holds ``counts``."""
    for _ in range(150):
        if await held_by(seen_from, other) == counts:
            return
        await asyncio.sleep(0.02)
    assert await held_by(seen_from, other) == counts


async def test_a_third_session_or_stream_is_refused_on_either_process(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    a, b = start(server_factory, redis, *CAPS), start(server_factory, redis, *CAPS)
    on_a, on_b = Running.remote(a.port), Running.remote(b.port)
    sid_a = await on_a.initialize(client_name="first")
    await on_b.initialize(client_name="second")  # the cap: two in the cluster
    streams: list[Stream] = []
    try:
        for srv in (on_a, on_b):
            streams.append(await srv.listen({"toolsListChanged": True}))
            await streams[-1].wait_messages(1)
        await until_seen(a, b, (1, 1))
        await until_seen(b, a, (1, 1))
        for srv in (on_a, on_b):  # one over the cap, on either process
            assert_refused(await srv.post(init("third")), 503, INTERNAL_ERROR,
                           "Service unavailable: maximum concurrent sessions (2) reached", 0)
            extra = await srv.modern("subscriptions/listen",
                                     {"notifications": {"toolsListChanged": True}},
                                     request_id="extra")
            assert_refused(extra, 503, INTERNAL_ERROR,
                           "Service unavailable: maximum concurrent subscriptions/listen "
                           "streams (2) reached", "extra")
        for port in (a.port, b.port):
            _, overview = await admin(port, "GET", "api/overview")
            assert overview["refusals"]["max_sessions"] == 1
            assert overview["refusals"]["max_listen_subscriptions"] == 1
        # A's session ends: once B hears of it, B admits one again (and then is full).
        assert (await on_a.delete(sid_a)).status == 200
        await until_seen(b, a, (0, 1))
        assert (await on_b.post(init("fourth"))).status == 200
        assert (await on_b.post(init("fifth"))).status == 503
    finally:
        for s in streams:
            s.close()


async def test_per_process_limits_are_the_default(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    caps = ("--max-sessions", "1")
    a, b = start(server_factory, redis, *caps), start(server_factory, redis, *caps)
    await Running.remote(a.port).initialize()
    await Running.remote(b.port).initialize()  # B's own cap, whatever A holds
    await until_seen(b, a, (1, 0))
    assert (await Running.remote(b.port).post(init("over"))).status == 503


async def test_an_admission_is_counted_elsewhere_before_the_next_heartbeat(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    """Heartbeats come every second; an admission is announced on the feed at once, so
    another process counts it within milliseconds (0.5 s allowed here, for a loaded
    machine; a heartbeat alone would make it only about one time in eight, each round)."""
    caps = ("--cluster-wide-limits", "true", "--max-sessions", "5")
    a, b = start(server_factory, redis, *caps), start(server_factory, redis, *caps)
    on_a = Running.remote(a.port)
    await until_seen(b, a, (0, 0))
    for n in (1, 2, 3):
        await on_a.initialize(client_name=f"client-{n}")
        began = time.monotonic()
        await until_seen(b, a, (n, 0))
        assert time.monotonic() - began < 0.5
    stream = await on_a.listen({"toolsListChanged": True})
    try:
        await stream.wait_messages(1)
        began = time.monotonic()
        await until_seen(b, a, (3, 1))
        assert time.monotonic() - began < 0.5
    finally:
        stream.close()


async def test_simultaneous_admissions_on_three_processes_stop_exactly_at_the_cap(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    """Each admission reserves its place in Redis first (one atomic script), so however
    many arrive at once on however many processes, exactly the cap is admitted."""
    cap = 6
    caps = ("--cluster-wide-limits", "true", "--max-sessions", str(cap),
            "--max-listen-subscriptions", str(cap))
    procs = [start(server_factory, redis, *caps) for _ in range(3)]
    for seen_from in procs:
        for other in procs:
            if other is not seen_from:
                await until_seen(seen_from, other, (0, 0))
    clients = [Running.remote(p.port) for p in procs]
    sessions = await asyncio.gather(*(c.post(init(f"c{n}")) for n in range(cap)
                                      for c in clients))
    assert sorted(r.status for r in sessions) == [200] * cap + [503] * (2 * cap)
    for r in sessions:
        if r.status == 503:
            assert_refused(r, 503, INTERNAL_ERROR, "Service unavailable: maximum "
                           f"concurrent sessions ({cap}) reached", 0)
    streams = await asyncio.gather(*(c.listen({"toolsListChanged": True},
                                              request_id=f"l{n}")
                                     for n in range(cap) for c in clients))
    try:
        assert sorted(s.status for s in streams) == [200] * cap + [503] * (2 * cap)
    finally:
        for s in streams:
            s.close()
