"""What tasks make the server keep, bounded: ``max_tasks`` records at once (running or
finished within their TTL; a creation past it is refused with -32603 and counted),
``max_task_result_bytes`` per result (a bigger result fails the task and is not kept),
``task_ttl`` seconds of life (running work is then cancelled and the record forgotten).
Each bound exactly at and one over, a flood of creations, a huge result, and a bound
tuned while the server runs.
"""

from __future__ import annotations

import asyncio

import pytest
from mcp_http import Running, assert_refused, result_of, running, wait_until
from tasks_http import call, start, task_request, until

from tornado_mcp import Server
from tornado_mcp.protocol import jsonio
from tornado_mcp.tasks import task_tool

pytestmark = pytest.mark.timeout(60)
MiB = 1024 * 1024


def bounded_server() -> Server:
    server = Server("bounded")

    @task_tool(server)
    async def sleeper(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "slept"

    @task_tool(server)
    async def sized(n: int) -> str:
        await asyncio.sleep(0)
        return "x" * n

    return server


def text_result_bytes(n: int) -> int:
    """JSON bytes of the kept result of ``sized(n)``."""
    return len(jsonio.dumps({"content": [{"type": "text", "text": "x" * n}]}))


def refusals(srv: Running, kind: str) -> int:
    return srv.transport.snapshot().refusals[kind]


async def test_max_tasks_admits_exactly_the_bound_and_refuses_one_over() -> None:
    async with running(bounded_server(), max_tasks=3) as srv:
        ids = [await start(srv, "sleeper", {"seconds": 60}) for _ in range(3)]
        assert len(set(ids)) == 3
        err = assert_refused(await call(srv, "sleeper", {"seconds": 60}), 200, -32603,
                             "maximum tasks (3) kept", request_id=1)
        assert err["data"] == {"limit": "max_tasks", "value": 3}
        assert refusals(srv, "max_tasks") == 1
        tasks = srv.transport.snapshot().tasks
        assert tasks is not None and (tasks.kept, tasks.running) == (3, 3)
        # A finished task still counts until its TTL elapses: cancelling frees nothing.
        result_of(await task_request(srv, "tasks/cancel", ids[0]))
        await until(srv, ids[0])
        assert_refused(await call(srv, "sleeper", {"seconds": 60}), 200, -32603,
                       request_id=1)
        assert refusals(srv, "max_tasks") == 2


async def test_a_flood_of_task_creations_keeps_exactly_max_tasks() -> None:
    async with running(bounded_server(), max_tasks=10) as srv:
        replies = await asyncio.gather(*(call(srv, "sleeper", {"seconds": 60}, request_id=i)
                                         for i in range(50)))
        created = [r for r in replies if "result" in r.json]
        refused = [r for r in replies if "error" in r.json]
        assert (len(created), len(refused)) == (10, 40)
        assert {r.json["error"]["code"] for r in refused} == {-32603}
        assert refusals(srv, "max_tasks") == 40
        tasks = srv.transport.snapshot().tasks
        assert tasks is not None and (tasks.kept, tasks.running) == (10, 10)
    assert srv.transport.tasks.jobs == {}  # closing the transport stopped every task


async def test_max_tasks_tuned_live() -> None:
    async with running(bounded_server(), max_tasks=1) as srv:
        await start(srv, "sleeper", {"seconds": 60})
        assert_refused(await call(srv, "sleeper", {"seconds": 60}), 200, -32603, request_id=1)
        srv.transport.options.update({"max_tasks": 2})
        await start(srv, "sleeper", {"seconds": 60})
        srv.transport.options.update({"max_tasks": None})
        for _ in range(3):
            await start(srv, "sleeper", {"seconds": 60})
        assert srv.transport.snapshot().tasks.kept == 5


async def test_max_task_result_bytes_keeps_a_result_at_the_bound_and_fails_one_over() -> None:
    n = 1000
    bound = text_result_bytes(n)
    async with running(bounded_server(), max_task_result_bytes=bound) as srv:
        at = await until(srv, await start(srv, "sized", {"n": n}))
        assert at["status"] == "completed"
        assert at["result"]["content"][0]["text"] == "x" * n
        assert srv.transport.snapshot().tasks.result_bytes == bound
        over = await until(srv, await start(srv, "sized", {"n": n + 1}))
        assert over["status"] == "failed"
        assert "result" not in over
        assert over["error"] == {
            "code": -32603,
            "message": f"Task result of {bound + 1} bytes exceeds max_task_result_bytes "
                       f"({bound})",
            "data": {"limit": "max_task_result_bytes", "value": bound}}
        assert refusals(srv, "max_task_result_bytes") == 1


async def test_a_huge_result_is_not_kept() -> None:
    async with running(bounded_server(), max_task_result_bytes=MiB) as srv:
        task = await until(srv, await start(srv, "sized", {"n": 8 * MiB}))
        assert task["status"] == "failed"
        size = text_result_bytes(8 * MiB)
        assert task["error"]["message"] == \
            f"Task result of {size} bytes exceeds max_task_result_bytes ({MiB})"
        tasks = srv.transport.snapshot().tasks
        assert tasks is not None
        assert tasks.result_bytes < 1024  # only the error is kept
        assert all(r.result is None for r in srv.transport.tasks.store.local())


async def test_task_ttl_cancels_running_work_and_forgets_the_task() -> None:
    async with running(bounded_server(), task_ttl=0.3, max_tasks=1) as srv:
        task_id = await start(srv, "sleeper", {"seconds": 60})
        assert srv.transport.snapshot().tasks.running == 1
        await wait_until(lambda: not srv.transport.tasks.jobs)
        await asyncio.sleep(0.05)
        assert_refused(await task_request(srv, "tasks/get", task_id), 400, -32602,
                       "unknown task", request_id=1)
        # The expired task no longer counts against max_tasks.
        await start(srv, "sleeper", {"seconds": 0})
        tasks = srv.transport.snapshot().tasks
        assert tasks is not None and tasks.kept == 1


async def test_a_finished_task_is_forgotten_when_its_ttl_ends() -> None:
    async with running(bounded_server(), task_ttl=0.3) as srv:
        task_id = await start(srv, "sized", {"n": 10})
        assert (await until(srv, task_id))["status"] == "completed"
        assert srv.transport.snapshot().tasks.kept == 1
        # No request comes in: the expiry timer alone forgets it.
        await wait_until(lambda: srv.transport.snapshot().tasks.kept == 0)
        assert srv.transport.snapshot().tasks.result_bytes == 0
        assert_refused(await task_request(srv, "tasks/get", task_id), 400, -32602,
                       request_id=1)
