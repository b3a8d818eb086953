"""Tasks on the dashboard: the overview API shows the task store against its bounds, the
page has a card for it, and ``/metrics`` exports the kept and running tasks, the task
options and the task refusals."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from admin_support import BEARER, TOKEN
from mcp_http import assert_refused, running
from tasks_http import call, start, until

from tornado_mcp import Server, Transport
from tornado_mcp.dashboard import dashboard_routes
from tornado_mcp.tasks import task_tool

pytestmark = pytest.mark.timeout(60)


def task_server() -> Server:
    server = Server("dash")

    @task_tool(server)
    async def wait(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "waited"

    return server


async def test_the_dashboard_shows_the_task_store() -> None:
    def admin(t: Transport) -> list[Any]:
        return dashboard_routes(t, "/admin", TOKEN) or []

    async with running(task_server(), extra_routes=admin, max_tasks=2,
                       max_task_result_bytes=4096) as srv:
        done = await start(srv, "wait", {"seconds": 0})
        await until(srv, done)
        await start(srv, "wait", {"seconds": 60})
        assert_refused(await call(srv, "wait", {"seconds": 0}), 200, -32603, request_id=1)
        base = f"http://127.0.0.1:{srv.port}/admin"
        async with httpx.AsyncClient(timeout=10) as client:
            overview = (await client.get(f"{base}/api/overview", headers=BEARER)).json()
            assert overview["tasks"] == {
                "store": "memory", "count": 2, "limit": 2, "running": 1,
                "by_status": {"completed": 1, "working": 1},
                "result_bytes": len(b'{"content":[{"type":"text","text":"waited"}]}'),
                "result_limit": 4096}
            assert overview["refusals"]["max_tasks"] == 1
            page = (await client.get(f"{base}/", headers=BEARER)).text
            assert 'data-bind="tasks.count"' in page
            metrics = (await client.get(f"{base}/metrics", headers=BEARER)).text
    lines = set(metrics.splitlines())
    assert "tornado_mcp_tasks_kept 2.0" in lines
    assert "tornado_mcp_tasks_running 1.0" in lines
    assert "tornado_mcp_option_max_tasks 2.0" in lines
    assert 'tornado_mcp_refusals_total{bound="max_tasks"} 1.0' in lines
