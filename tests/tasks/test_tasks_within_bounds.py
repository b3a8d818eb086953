"""A task run is bounded by its tool's timeout, counted in flight (so against its
max_concurrency: a creation while a run holds the last slot is refused), and audited."""

from __future__ import annotations

import asyncio

from mcp_http import assert_refused, result_of, running, tool_text, wait_until
from tasks_http import call, start, task_request, until

from tornado_mcp import Server
from tornado_mcp.protocol import TOOLS_CALL
from tornado_mcp.server.bounds import CallBounds
from tornado_mcp.tasks import task_tool


async def test_a_task_run_past_its_timeout_fails_as_a_tool_error_naming_it() -> None:
    server = Server("tasks")

    @task_tool(server)
    async def long_job() -> str:
        await asyncio.sleep(30)
        return "never"

    server.set_bounds(TOOLS_CALL, "long_job", CallBounds(timeout=0.2, max_concurrency=1))
    async with running(server) as srv:
        task_id = await start(srv, "long_job")
        await until(srv, task_id)
        got = result_of(await task_request(srv, "tasks/get", task_id))
        assert got["status"] == "completed"
        result = got["result"]
        assert result["isError"] is True and "timed out after 0.2 s" in tool_text(result)
        await wait_until(lambda: any(a.request_id == f"task-{task_id}"
                                     for a in srv.transport.audit()))
        run = next(a for a in srv.transport.audit() if a.request_id == f"task-{task_id}")
        assert (run.name, run.outcome) == ("long_job", "timeout")
        row = next(t for t in srv.transport.snapshot().tools if t.name == "long_job")
        assert row.in_flight == 0 and row.timeouts == 1


async def test_a_running_task_counts_against_max_concurrency() -> None:
    server = Server("tasks")
    release = asyncio.Event()

    @task_tool(server)
    async def exclusive_job() -> str:
        await release.wait()
        return "done"

    server.set_bounds(TOOLS_CALL, "exclusive_job", CallBounds(max_concurrency=1))
    async with running(server) as srv:
        task_id = await start(srv, "exclusive_job")  # at the bound: its run holds the slot

        def in_flight() -> int:
            return next(t.in_flight for t in srv.transport.snapshot().tools
                        if t.name == "exclusive_job")

        await wait_until(lambda: in_flight() == 1)
        refused = await call(srv, "exclusive_job", request_id=2)  # one over
        assert_refused(refused, 429, -32029, "tool exclusive_job has 1 calls running", 2)
        release.set()
        assert (await until(srv, task_id))["status"] == "completed"
        await wait_until(lambda: in_flight() == 0)
        assert (await start(srv, "exclusive_job"))  # admitted again


def burst_server() -> tuple[Server, list[int], asyncio.Event]:
    """A ``max_concurrency=1`` task tool recording how many of its runs overlap."""
    server = Server("tasks")
    running_now = [0]
    overlaps: list[int] = []
    release = asyncio.Event()

    @task_tool(server)
    async def exclusive_job() -> str:
        running_now[0] += 1
        overlaps.append(running_now[0])
        try:
            await release.wait()
        finally:
            running_now[0] -= 1
        return "done"

    server.set_bounds(TOOLS_CALL, "exclusive_job", CallBounds(max_concurrency=1))
    return server, overlaps, release


async def test_a_burst_of_task_creating_calls_admits_one_at_a_time() -> None:
    """Six concurrent creating calls, 18 bursts: one task each time, five refused, and
    never two runs at once (before: 2-3 tasks ran at once in 6 of 18 bursts)."""
    server, overlaps, release = burst_server()
    async with running(server) as srv:
        def in_flight() -> int:
            return next(t.in_flight for t in srv.transport.snapshot().tools
                        if t.name == "exclusive_job")

        for _ in range(18):
            replies = await asyncio.gather(*(call(srv, "exclusive_job", request_id=i)
                                             for i in range(6)))
            created = [result_of(r)["taskId"] for r in replies if r.status == 200]
            assert len(created) == 1, [r.status for r in replies]
            assert sorted(r.status for r in replies) == [200] + [429] * 5
            assert in_flight() == 1  # the run holds the slot its creating call took
            late = await call(srv, "exclusive_job", request_id=99)  # one over, later
            assert late.status == 429
            release.set()
            assert (await until(srv, created[0]))["status"] == "completed"
            await wait_until(lambda: in_flight() == 0)
            release.clear()
        assert overlaps and max(overlaps) == 1, overlaps


async def test_a_failed_or_cancelled_task_gives_its_slot_back() -> None:
    server, _, release = burst_server()
    async with running(server) as srv:
        def in_flight() -> int:
            return next(t.in_flight for t in srv.transport.snapshot().tools
                        if t.name == "exclusive_job")

        task_id = await start(srv, "exclusive_job")
        assert in_flight() == 1
        cancelled = await task_request(srv, "tasks/cancel", task_id)
        assert cancelled.status == 200, cancelled.body
        await wait_until(lambda: in_flight() == 0)
        assert (await until(srv, task_id))["status"] == "cancelled"
        assert await start(srv, "exclusive_job")  # the slot is free again
        release.set()
