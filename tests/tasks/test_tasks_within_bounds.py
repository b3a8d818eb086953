"""A task run is bounded by its tool's timeout, counted in flight, and audited."""

from __future__ import annotations

import asyncio

from mcp_http import result_of, running, tool_text, wait_until
from tasks_http import start, task_request, until

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
