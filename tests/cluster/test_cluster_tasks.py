"""Tasks in a cluster, with real server processes and a real redis-server: each process
talks to Redis through its cluster's one link (every connection it opens carries its
process id, and no heartbeat key of the task store's own exists), and the tasks of a
process that was killed are settled ``failed`` by a survivor once its heartbeat expires."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import redis.asyncio as aioredis
from conftest import ServerFactory
from mcp_http import Running
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from tasks.tasks_http import get, start, until
from test_cluster_processes import admin
from test_cluster_processes import start as start_process

#: cluster_heartbeat_ttl of these processes, and how long a survivor may take past it.
TTL = 2.0
SETTLE_MARGIN = 3.0


async def cluster_id(port: int) -> str:
    _, view = await admin(port, "GET", "api/cluster")
    process_id: str = view["self_id"]
    return process_id


async def test_a_process_talks_to_redis_through_one_named_client(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    a = start_process(server_factory, redis)
    srv = Running.remote(a.port)
    task_id = await start(srv, "slow_compute", {"seconds": 0.1, "label": "one"})
    assert (await until(srv, task_id))["status"] == "completed"
    own = await cluster_id(a.port)
    raw: Any = aioredis.from_url(redis.url)
    try:
        await raw.client_setname("probe")
        clients = [c for c in await raw.client_list() if c["name"] != "probe"]
        assert clients, "the process holds connections"
        assert {c["name"] for c in clients} == {f"tornado-mcp:{own}"}
        # The feed's blocking read, the task signals' subscription, and commands.
        assert len(clients) <= 4, clients
        # Liveness is the cluster's heartbeat record: the task store keeps none of its own.
        assert await raw.keys("tornado-mcp:tasks:runner:*") == []
        assert await raw.exists(f"tornado-mcp:proc:{own}") == 1
    finally:
        await raw.aclose()


async def test_the_tasks_of_a_killed_process_are_settled_failed_once(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    flags = ("--cluster-heartbeat-ttl", str(TTL))
    a = start_process(server_factory, redis, *flags)
    b = start_process(server_factory, redis, *flags)
    c = start_process(server_factory, redis, *flags)
    on_a, on_b = Running.remote(a.port), Running.remote(b.port)
    orphan = await start(on_a, "slow_compute", {"seconds": 600, "label": "orphan"})
    assert (await until(on_b, orphan, ("working",)))["status"] == "working"
    a.proc.kill()
    a.proc.wait(timeout=10)
    killed = time.monotonic()
    settled = await until(on_b, orphan, ("failed",), timeout=TTL + SETTLE_MARGIN + 5)
    took = time.monotonic() - killed
    assert took < TTL + SETTLE_MARGIN, took
    assert settled["error"]["message"] == "Task failed: the process running it ended"
    # Every process agrees, and it stays settled (the two survivors raced; one won).
    await asyncio.sleep(1.5)
    for port in (b.port, c.port):
        assert (await get(Running.remote(port), orphan))["status"] == "failed"
    _, overview_b = await admin(b.port, "GET", "api/overview")
    _, overview_c = await admin(c.port, "GET", "api/overview")
    assert overview_b is not None and overview_c is not None
