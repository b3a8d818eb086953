"""Helpers shared by the task tests: 2026-07-28 task requests with their routing headers,
and polling a task to an end."""

from __future__ import annotations

import asyncio
from typing import Any

from mcp_http import TIMEOUT, Reply, Running, modern_meta, result_of

EXT = "io.modelcontextprotocol/tasks"
#: A client declaring the tasks extension (and elicitation, for input requests).
TASK_CAPS = {"extensions": {EXT: {}}, "elicitation": {}}
TERMINAL = ("completed", "failed", "cancelled")


def task_meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return modern_meta(TASK_CAPS if capabilities is None else capabilities)


async def call(srv: Running, tool: str, arguments: dict[str, Any] | None = None,
               capabilities: dict[str, Any] | None = None, request_id: Any = 1) -> Reply:
    """``tools/call`` at 2026-07-28, declaring the extension unless told otherwise."""
    return await srv.modern("tools/call", {"name": tool, "arguments": arguments or {}},
                            request_id=request_id, meta=task_meta(capabilities))


async def task_request(srv: Running, method: str, task_id: str,
                       capabilities: dict[str, Any] | None = None,
                       **params: Any) -> Reply:
    """``tasks/get``, ``tasks/update`` or ``tasks/cancel`` with ``Mcp-Name: <taskId>``."""
    return await srv.modern(method, {"taskId": task_id, **params},
                            headers={"Mcp-Name": task_id}, meta=task_meta(capabilities))


async def start(srv: Running, tool: str, arguments: dict[str, Any] | None = None) -> str:
    """Call a task tool; assert it became a task; return the task id."""
    created = result_of(await call(srv, tool, arguments))
    assert created["resultType"] == "task", created
    task_id: str = created["taskId"]
    return task_id


async def get(srv: Running, task_id: str) -> dict[str, Any]:
    return result_of(await task_request(srv, "tasks/get", task_id))


async def until(srv: Running, task_id: str, statuses: tuple[str, ...] = TERMINAL,
                timeout: float = TIMEOUT) -> dict[str, Any]:
    """Poll ``tasks/get`` until the task's status is one of ``statuses``."""
    async def poll() -> dict[str, Any]:
        while True:
            task = await get(srv, task_id)
            if task["status"] in statuses:
                return task
            await asyncio.sleep(0.02)
    return await asyncio.wait_for(poll(), timeout)
