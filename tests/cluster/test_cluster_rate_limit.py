"""``rate_limit_per_principal`` over a cluster: two real server processes sharing one real
redis-server draw from one bucket per caller; while Redis is unreachable each judges by
its share of what the caller had left (a caller that used its allowance gets nothing
more, a new caller its share), and after Redis restarts empty the bucket is rebuilt from
what the processes know, so no caller is granted more across an outage and a restart
than the one bucket would have; a frozen Redis stalls no call past a bound; /readyz turns
503 once the outage outlasts the heartbeat TTL and 200 again when Redis is back.  Audit
records name the process, and a tool's bounds changed on one process reach the other."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from typing import Any

from conftest import ServerFactory
from mcp_http import Running, assert_refused
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from test_cluster_processes import admin, metric, start
from tornado.httpclient import AsyncHTTPClient

from tornado_mcp.cluster.rate_limit import TAKE_TIMEOUT

LIMIT = 4
TTL = "1"
FLAGS = ("--rate-limit-per-principal", str(LIMIT), "--cluster-heartbeat-ttl", TTL)
FALLBACKS = 'tornado_mcp_cluster_fallbacks_total{kind="rate_limit"}'


async def ready(port: int) -> tuple[int, dict[str, Any]]:
    client = AsyncHTTPClient(force_instance=True)
    try:
        r = await client.fetch(f"http://127.0.0.1:{port}/readyz", raise_error=False,
                               request_timeout=10)
    finally:
        client.close()
    return r.code, json.loads(r.body or b"{}")


async def until_ready(port: int, status: int, timeout: float = 15.0) -> dict[str, Any]:
    """Poll /readyz (bounded) until it answers ``status``."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        code, body = await ready(port)
        if code == status:
            return body
        assert asyncio.get_running_loop().time() < deadline, (code, body)
        await asyncio.sleep(0.05)


async def until_processes(port: int, count: int) -> None:
    for _ in range(300):
        _, view = await admin(port, "GET", "api/cluster")
        if len(view["processes"]) == count:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the cluster never showed {count} processes")


def caller(ip: str) -> dict[str, str]:
    return {"X-Real-IP": ip}  # the processes run with --xheaders: one caller per address


async def granted(srv: Running, ip: str, tries: int, base: int) -> int:
    """How many of ``tries`` calls by the caller at ``ip`` were allowed (the rest 429)."""
    count = 0
    for i in range(tries):
        r = await srv.modern("tools/list", request_id=base + i, headers=caller(ip))
        assert r.status in (200, 429), r.body
        count += r.status == 200
    return count


async def until_disconnected(port: int) -> None:
    for _ in range(200):  # until the process noticed (a heartbeat fails within a TTL/4)
        _, overview = await admin(port, "GET", "api/overview")
        if overview["cluster"] and not overview["cluster"]["connected"]:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the process never noticed the outage")


async def test_one_bucket_per_caller_across_processes_outages_and_restarts(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    a = start(server_factory, redis, *FLAGS, "--xheaders")
    b = start(server_factory, redis, *FLAGS, "--xheaders")
    on_a, on_b = Running.remote(a.port), Running.remote(b.port)
    await until_processes(a.port, 2)
    await until_processes(b.port, 2)
    # The limit holds over both processes: two here and two there, then nothing anywhere.
    for i, srv in enumerate((on_a, on_b, on_a, on_b)):
        assert (await srv.modern("tools/list", request_id=i, headers=caller("10.0.0.1"))
                ).status == 200
    for srv in (on_a, on_b):
        r = await srv.modern("tools/list", request_id=9, headers=caller("10.0.0.1"))
        assert_refused(r, 429, -32029, f"the limit is {LIMIT} per minute", 9)
        assert int(r.headers["Retry-After"]) >= 1
    # The audit trail names the process that served each call.
    r = await on_a.modern("tools/call", {"name": "echo", "arguments": {"text": "x"}},
                          request_id="audited", headers=caller("10.0.0.1"))
    assert r.status == 429  # refused, and still audited
    _, trail = await admin(a.port, "GET", "api/audit?limit=1")
    _, view = await admin(a.port, "GET", "api/cluster")
    assert trail["items"][0]["process"] == view["self_id"]
    assert trail["items"][0]["outcome"] == "refused"

    # Redis goes away.  The caller that used its allowance gets nothing more (each
    # process's share of what it had left is nothing); a new caller gets its share on
    # each process (4 // 2 processes = 2), and no more.
    assert (await ready(a.port))[0] == 200
    # (a take Redis answers slowly on a busy machine falls back too: count from here)
    fell_back = [await metric(proc.port, FALLBACKS) for proc in (a, b)]
    assert None not in fell_back
    redis.kill()
    await until_disconnected(a.port)
    await until_disconnected(b.port)
    used = await granted(on_a, "10.0.0.1", 3, 20) + await granted(on_b, "10.0.0.1", 3, 30)
    assert await granted(on_a, "10.0.0.2", 4, 40) == 2
    # Each process counts the calls it judged alone, for an operator to see.
    assert await metric(a.port, FALLBACKS) == fell_back[0] + 3 + 4
    assert await metric(b.port, FALLBACKS) == fell_back[1] + 3
    _, view = await admin(a.port, "GET", "api/cluster")
    assert view["fallbacks"]["rate_limit"] == fell_back[0] + 7
    # Past the heartbeat TTL without Redis, the process is not ready.
    body = await until_ready(a.port, 503)
    assert "Redis unreachable" in body["reason"] and "cluster_heartbeat_ttl" in body["reason"]
    # Redis comes back empty: the buckets are rebuilt from what the processes know.
    redis.start()
    await until_ready(a.port, 200)
    await until_ready(b.port, 200)
    used += await granted(on_a, "10.0.0.1", 3, 50) + await granted(on_b, "10.0.0.1", 3, 60)
    used += await granted(on_a, "10.0.0.2", 2, 70)  # what it had left here, cluster-wide
    # A token comes back every 15 s (4 a minute): this test is shorter than that, but a
    # slow machine may see one.
    assert used <= 1 + 1, used


async def test_a_frozen_redis_stalls_no_call_past_the_bound(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    a = start(server_factory, redis, "--rate-limit-per-principal", "1000")
    on_a = Running.remote(a.port)
    assert (await on_a.modern("tools/list")).status == 200
    assert redis.proc is not None
    redis.proc.send_signal(signal.SIGSTOP)  # frozen: connections stay open, nothing answers
    try:
        took = []
        for i in range(8):
            started = time.monotonic()
            r = await on_a.modern("tools/list", request_id=i)
            took.append(time.monotonic() - started)
            assert r.status == 200, r.body
    finally:
        redis.proc.send_signal(signal.SIGCONT)
    # Each call waits at most TAKE_TIMEOUT for Redis (then the process judges alone for
    # a second without asking): never the socket timeout (5 s).
    assert max(took) < TAKE_TIMEOUT + 0.5, took


async def test_a_tools_bounds_changed_on_one_process_reach_the_other(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    a, b = start(server_factory, redis), start(server_factory, redis)
    await until_processes(a.port, 2)
    status, row = await admin(a.port, "PATCH", "api/tools/echo",
                              {"timeout": 3, "max_concurrency": 2})
    assert status == 200 and (row["timeout"], row["max_concurrency"]) == (3.0, 2)
    for _ in range(300):
        _, there = await admin(b.port, "GET", "api/tools/echo")
        if (there["timeout"], there["max_concurrency"]) == (3.0, 2):
            break
        await asyncio.sleep(0.02)
    assert (there["timeout"], there["max_concurrency"]) == (3.0, 2)
    _, overview = await admin(b.port, "GET", "api/overview")
    assert "tool_bounds" in overview["changes"][0]["detail"]
    assert " on " in overview["changes"][0]["actor"]  # "<who> on <host> pid <pid>"


async def test_ipv6_addresses_of_one_64_share_one_cluster_bucket(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    """Behind a trusted proxy (--xheaders), 8 addresses of one /64 spread over two
    processes draw from one Redis bucket; another /64 has its own."""
    flags = (*FLAGS, "--xheaders")
    a, b = start(server_factory, redis, *flags), start(server_factory, redis, *flags)
    on_a, on_b = Running.remote(a.port), Running.remote(b.port)
    await until_processes(a.port, 2)
    await until_processes(b.port, 2)
    statuses = []
    for i in range(8):
        srv = (on_a, on_b)[i % 2]
        r = await srv.modern("tools/list", request_id=i,
                             headers={"X-Real-Ip": f"2001:db8:7:8:{i:x}::{i + 1}"})
        statuses.append(r.status)
    assert statuses == [200] * LIMIT + [429] * (8 - LIMIT)
    r = await on_b.modern("tools/list", headers={"X-Real-Ip": "2001:db8:7:9::1"})
    assert r.status == 200
