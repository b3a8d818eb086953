"""The experimental tasks of 2025-11-25, served by the same machinery.

The session's ``initialize`` result declares the ``tasks`` capability; a ``tools/call``
carrying ``task`` answers ``{"task": ...}``; ``tasks/get`` and ``tasks/list`` (the
session's own tasks) show 2025-11-25 ``Task`` objects; ``tasks/result`` waits for the end
and carries the task's input requests to the client as real requests on its own stream;
``tasks/cancel`` answers the cancelled task (-32602 once terminal); status changes reach
the session's GET stream.  Older sessions see none of it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp_http import (
    TIMEOUT,
    Running,
    example_server,
    legacy_call,
    post_stream,
    rpc,
    running,
)

pytestmark = pytest.mark.timeout(60)
RELATED = "io.modelcontextprotocol/related-task"


@pytest.fixture
async def srv() -> AsyncIterator[Running]:
    async with running(example_server()) as s:
        yield s


async def session(srv: Running, version: str = "2025-11-25") -> str:
    return await srv.initialize(version, {"elicitation": {}})


async def start(srv: Running, sid: str, tool: str, arguments: dict[str, Any],
                ttl: int = 60_000) -> dict[str, Any]:
    reply = await legacy_call(srv, sid, "tools/call",
                              {"name": tool, "arguments": arguments, "task": {"ttl": ttl}})
    task: dict[str, Any] = reply["result"]["task"]
    assert reply["result"]["_meta"] == {RELATED: {"taskId": task["taskId"]}}
    assert reply["result"]["content"] == []  # what the official Python SDK 2.3.0 client needs
    return task


async def test_initialize_declares_tasks_at_2025_11_25_only(srv: Running) -> None:
    r = await srv.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
    caps = r.messages[-1]["result"]["capabilities"]
    assert caps["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    old = await session(srv, "2025-06-18")
    tools = (await legacy_call(srv, old, "tools/list", {}))["result"]["tools"]
    assert all("execution" not in t for t in tools)
    assert (await legacy_call(srv, old, "tasks/get", {"taskId": "x"}))["error"]["code"] \
        == -32601


async def test_a_task_runs_and_tasks_result_returns_its_result(srv: Running) -> None:
    sid = await session(srv)
    tools = {t["name"]: t for t in
             (await legacy_call(srv, sid, "tools/list", {}))["result"]["tools"]}
    assert tools["slow_compute"]["execution"] == {"taskSupport": "optional"}
    task = await start(srv, sid, "slow_compute", {"seconds": 0.05}, ttl=30_000)
    assert task["status"] == "working"
    assert (task["ttl"], task["pollInterval"]) == (30_000, 500)
    got = (await legacy_call(srv, sid, "tasks/get", {"taskId": task["taskId"]}))["result"]
    assert got["taskId"] == task["taskId"]
    result = (await legacy_call(srv, sid, "tasks/result", {"taskId": task["taskId"]}))
    assert result["result"] == {
        "content": [{"type": "text", "text": "Computed result after 0.05 s"}],
        "_meta": {RELATED: {"taskId": task["taskId"]}}}
    listed = (await legacy_call(srv, sid, "tasks/list", {}))["result"]["tasks"]
    assert [t["taskId"] for t in listed] == [task["taskId"]]
    assert listed[0]["status"] == "completed"
    other = await session(srv)
    assert (await legacy_call(srv, other, "tasks/list", {}))["result"]["tasks"] == []
    assert (await legacy_call(srv, other, "tasks/get", {"taskId": task["taskId"]})
            )["error"]["code"] == -32602


async def test_tasks_result_asks_for_the_tasks_input_on_its_stream(srv: Running) -> None:
    sid = await session(srv)
    task = await start(srv, sid, "confirm_delete", {"filename": "a.txt"})
    stream = await post_stream(srv, rpc("tasks/result", {"taskId": task["taskId"]}, 7), sid)
    await stream.wait_messages(1)
    request = stream.messages[0]
    assert request["method"] == "elicitation/create"
    assert request["params"]["_meta"] == {RELATED: {"taskId": task["taskId"]}}
    answer = await srv.post({"jsonrpc": "2.0", "id": request["id"],
                             "result": {"action": "accept", "content": {"confirm": True}}},
                            session=sid)
    assert answer.status == 202
    await stream.wait_messages(2)
    assert stream.messages[1]["id"] == 7
    assert stream.messages[1]["result"]["content"][0]["text"] == "Deleted a.txt"
    stream.close()


async def test_cancel_answers_the_cancelled_task_then_refuses(srv: Running) -> None:
    sid = await session(srv)
    get_stream = await srv.get_stream(sid)
    task = await start(srv, sid, "slow_compute", {"seconds": 60})
    cancelled = (await legacy_call(srv, sid, "tasks/cancel", {"taskId": task["taskId"]}))
    assert cancelled["result"]["status"] == "cancelled"
    again = await legacy_call(srv, sid, "tasks/cancel", {"taskId": task["taskId"]})
    assert again["error"]["code"] == -32602
    failed = await legacy_call(srv, sid, "tasks/result", {"taskId": task["taskId"]})
    assert failed["error"]["code"] == -32602
    await get_stream.wait_messages(1, TIMEOUT)
    status = get_stream.messages[0]
    assert status["method"] == "notifications/tasks/status"
    assert (status["params"]["taskId"], status["params"]["status"]) == \
        (task["taskId"], "cancelled")
    get_stream.close()


async def test_a_required_task_tool_called_plainly_is_refused(srv: Running) -> None:
    sid = await session(srv)
    reply = await legacy_call(srv, sid, "tools/call", {"name": "failing_job", "arguments": {}})
    assert reply["error"]["code"] == -32601
    assert reply["error"]["message"] == "Tool failing_job must be called as a task"
    plain = await legacy_call(srv, sid, "tools/call",
                              {"name": "slow_compute", "arguments": {"seconds": 0}})
    assert plain["result"]["content"][0]["text"] == "Computed result after 0 s"
