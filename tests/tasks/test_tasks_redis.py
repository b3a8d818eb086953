"""Tasks kept in Redis: two real server processes (``examples/conformance_server.py
--redis-url``) and one real redis-server.  A task started on one process is polled,
updated and cancelled through the other, and ``max_tasks`` bounds both together.  A
cancel for a task whose process is gone settles the record where it arrived.
"""

from __future__ import annotations

import pytest
from cluster.redis_proc import redis_url  # noqa: F401 - the real redis-server fixture
from conftest import ServerFactory
from mcp_http import Running, assert_refused, result_of, tool_text
from tasks_http import call, start, task_request, until

from tornado_mcp import Server, Transport
from tornado_mcp.cluster.task_store import RedisTaskStore
from tornado_mcp.tasks import TaskRecord

pytestmark = pytest.mark.timeout(90)


async def test_a_task_started_on_one_process_is_driven_from_another(
        redis_url: str, server_factory: ServerFactory) -> None:  # noqa: F811
    argv = ["examples/conformance_server.py", "--no-admin", "--redis-url", redis_url,
            "--max-tasks", "3"]
    a, b = Running.remote(server_factory(argv).port), Running.remote(server_factory(argv).port)
    try:
        # Polled from B to completion.
        quick = await start(a, "slow_compute", {"seconds": 0.2, "label": "across"})
        done = await until(b, quick)
        assert done["status"] == "completed"
        assert tool_text(done["result"]) == "Computed across after 0.2 s"
        # Cancelled through B while it runs on A.
        slow = await start(a, "slow_compute", {"seconds": 60})
        assert (await until(b, slow, ("working",)))["status"] == "working"
        result_of(await task_request(b, "tasks/cancel", slow))
        assert (await until(a, slow))["status"] == "cancelled"
        # Its input delivered through B.
        asking = await start(a, "confirm_delete", {"filename": "b.txt"})
        parked = await until(b, asking, ("input_required",))
        assert list(parked["inputRequests"]) == ["r1-confirm"]
        result_of(await task_request(b, "tasks/update", asking,
                                     inputResponses={"r1-confirm": {"action": "accept"}}))
        finished = await until(b, asking)
        assert tool_text(finished["result"]) == "Deleted b.txt"
        # Three tasks are kept across both processes: a fourth is refused, on either.
        for srv in (a, b):
            assert_refused(await call(srv, "slow_compute", {"seconds": 0}), 200, -32603,
                           "maximum tasks (3) kept", request_id=1)
    finally:
        a.client.close()
        b.client.close()


async def test_a_cancel_for_a_runner_that_is_gone_settles_the_record(
        redis_url: str) -> None:  # noqa: F811
    transport = Transport(Server("here"), task_store=RedisTaskStore(redis_url))
    store = await transport.tasks.ready()
    try:
        orphan = TaskRecord(task_id="orphan", owner="", era="modern", tool="slow", ttl=60,
                            runner="a-process-that-is-gone")
        assert await store.create(orphan, limit=None)
        assert await store.signal(orphan, {"cancel": True}) is False
        await transport.tasks.cancel(orphan)
        settled = await store.get("orphan")
        assert settled is not None and settled.status == "cancelled"
        # This process's own heartbeat is live: a signal to it is published.
        mine = TaskRecord(task_id="mine", owner="", era="modern", tool="slow", ttl=60,
                          runner=store.process_id)
        assert await store.create(mine, limit=None)
        assert await store.signal(mine, {"cancel": True}) is True
    finally:
        await transport.close()
