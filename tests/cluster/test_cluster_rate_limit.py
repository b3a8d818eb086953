"""``rate_limit_per_principal`` over a cluster: two real server processes sharing one real
redis-server draw from one bucket per caller; while Redis is unreachable each falls back to
its share of the limit; /readyz turns 503 once the outage outlasts the heartbeat TTL and
200 again when Redis is back.  Audit records name the process, and a tool's bounds changed
on one process reach the other."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from conftest import ServerFactory
from mcp_http import Running, assert_refused
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from test_cluster_processes import admin, start
from tornado.httpclient import AsyncHTTPClient

LIMIT = 4
TTL = "1"
FLAGS = ("--rate-limit-per-principal", str(LIMIT), "--cluster-heartbeat-ttl", TTL)


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


async def test_one_bucket_per_caller_across_processes_and_a_share_each_in_an_outage(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    a, b = start(server_factory, redis, *FLAGS), start(server_factory, redis, *FLAGS)
    on_a, on_b = Running.remote(a.port), Running.remote(b.port)
    await until_processes(a.port, 2)
    await until_processes(b.port, 2)
    # The limit holds over both processes: two here and two there, then nothing anywhere.
    for i, srv in enumerate((on_a, on_b, on_a, on_b)):
        assert (await srv.modern("tools/list", request_id=i)).status == 200
    for srv in (on_a, on_b):
        r = await srv.modern("tools/list", request_id=9)
        assert_refused(r, 429, -32029, f"the limit is {LIMIT} per minute", 9)
        assert int(r.headers["Retry-After"]) >= 1
    # The audit trail names the process that served each call.
    r = await on_a.modern("tools/call", {"name": "echo", "arguments": {"text": "x"}},
                          request_id="audited")
    assert r.status == 429  # refused, and still audited
    _, trail = await admin(a.port, "GET", "api/audit?limit=1")
    _, view = await admin(a.port, "GET", "api/cluster")
    assert trail["items"][0]["process"] == view["self_id"]
    assert trail["items"][0]["outcome"] == "refused"

    # Redis goes away: each process now allows its share (4 // 2 processes = 2).
    assert (await ready(a.port))[0] == 200
    redis.kill()
    for _ in range(200):  # until A has noticed (a heartbeat fails within a TTL/4)
        _, overview = await admin(a.port, "GET", "api/overview")
        if overview["cluster"] and not overview["cluster"]["connected"]:
            break
        await asyncio.sleep(0.02)
    for i in range(2):
        assert (await on_a.modern("tools/list", request_id=20 + i)).status == 200
    assert_refused(await on_a.modern("tools/list", request_id=30), 429, -32029,
                   f"the limit is {LIMIT} per minute", 30)
    # Past the heartbeat TTL without Redis, the process is not ready.
    body = await until_ready(a.port, 503)
    assert "Redis unreachable" in body["reason"] and "cluster_heartbeat_ttl" in body["reason"]
    redis.start()
    await until_ready(a.port, 200)


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
