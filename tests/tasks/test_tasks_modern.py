"""The tasks extension at 2026-07-28 over real HTTP, against the example server's task tools.

A client declaring ``io.modelcontextprotocol/tasks`` gets a task for a task-supporting tool
and polls it with ``tasks/get``; ``tasks/update`` answers its input requests (one at a time
if it likes); ``tasks/cancel`` stops it.  A client that does not declare the extension gets
plain results, or -32021 for a tool that must run as a task, and -32021 for every task
method.  ``tasks/result`` and ``tasks/list`` do not exist at 2026-07-28.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from mcp_http import Running, assert_refused, example_server, result_of, running, tool_text
from tasks_http import EXT, call, get, start, task_meta, task_request, until

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def srv() -> AsyncIterator[Running]:
    async with running(example_server()) as s:
        yield s


async def test_a_task_supporting_tool_answers_with_a_task_then_its_result(
        srv: Running) -> None:
    created = result_of(await call(srv, "slow_compute", {"seconds": 0.05, "label": "pi"}))
    assert created["resultType"] == "task"
    assert created["status"] == "working"
    assert created["ttlMs"] == 3_600_000 and created["pollIntervalMs"] == 500
    assert created["createdAt"] == created["lastUpdatedAt"]
    assert created["content"] == []
    for absent in ("result", "error", "inputRequests", "requestState", "task", "ttl"):
        assert absent not in created
    done = await until(srv, created["taskId"])
    assert done["resultType"] == "complete"
    assert done["status"] == "completed"
    assert done["result"] == {"content": [{"type": "text", "text": "Computed pi after 0.05 s"}]}
    assert srv.transport.snapshot().tasks is not None
    assert srv.transport.snapshot().tasks.by_status == {"completed": 1}


async def test_a_tool_error_completes_and_a_protocol_error_fails(srv: Running) -> None:
    failing = await until(srv, await start(srv, "failing_job"))
    assert failing["status"] == "completed"
    assert failing["result"]["isError"] is True
    assert tool_text(failing["result"]) == "failing_job always fails"
    failed = await until(srv, await start(srv, "protocol_error_job"))
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": -32603, "message": "protocol_error_job always fails"}
    assert "result" not in failed


async def test_cancel_acknowledges_and_the_task_settles_cancelled(srv: Running) -> None:
    task_id = await start(srv, "slow_compute", {"seconds": 60})
    ack = result_of(await task_request(srv, "tasks/cancel", task_id))
    assert ack["resultType"] == "complete"
    assert set(ack) == {"resultType", "_meta"}
    cancelled = await until(srv, task_id)
    assert cancelled["status"] == "cancelled"
    again = result_of(await task_request(srv, "tasks/cancel", task_id))
    assert again["resultType"] == "complete"
    assert srv.transport.snapshot().tasks.running == 0


async def test_input_requests_are_answered_one_at_a_time(srv: Running) -> None:
    task_id = await start(srv, "multi_input")
    parked = await until(srv, task_id, ("input_required",))
    keys = sorted(parked["inputRequests"])
    assert keys == ["r1-confirm", "r1-name"]
    assert parked["inputRequests"]["r1-name"]["method"] == "elicitation/create"
    ack = result_of(await task_request(
        srv, "tasks/update", task_id,
        inputResponses={"r1-name": {"action": "accept", "content": {"name": "Ada"}},
                        "never-issued": {"action": "decline"}}))
    assert ack["resultType"] == "complete"
    still = await get(srv, task_id)
    assert still["status"] == "input_required"
    assert list(still["inputRequests"]) == ["r1-confirm"]
    result_of(await task_request(srv, "tasks/update", task_id,
                                 inputResponses={"r1-confirm": {"action": "accept"}}))
    done = await until(srv, task_id)
    assert done["status"] == "completed"
    assert tool_text(done["result"]) == "Done for Ada"


async def test_a_deferred_tool_gathers_input_inline_then_becomes_a_task(srv: Running) -> None:
    first = result_of(await call(srv, "test_tool_with_task"))
    assert first["resultType"] == "input_required"
    assert "taskId" not in first
    second = result_of(await srv.modern("tools/call", {
        "name": "test_tool_with_task", "arguments": {},
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
        "_meta": task_meta()}))
    assert second["resultType"] == "task"
    done = await until(srv, second["taskId"])
    assert tool_text(done["result"]) == "Hello, Alice! (from a task)"


async def test_without_the_extension_calls_are_plain_and_task_methods_refused(
        srv: Running) -> None:
    plain = result_of(await call(srv, "slow_compute", {"seconds": 0}, capabilities={}))
    assert plain["resultType"] == "complete" and "taskId" not in plain
    assert tool_text(plain) == "Computed result after 0 s"
    err = assert_refused(await call(srv, "failing_job", capabilities={}), 400, -32021,
                         request_id=1)
    assert err["data"] == {"requiredCapabilities": {"extensions": {EXT: {}}}}
    for method in ("tasks/get", "tasks/cancel"):
        assert_refused(await task_request(srv, method, "any", capabilities={}), 400, -32021,
                       request_id=1)
    assert_refused(await task_request(srv, "tasks/update", "any", capabilities={},
                                      inputResponses={}), 400, -32021, request_id=1)
    assert srv.transport.snapshot().tasks.kept == 0


async def test_removed_methods_and_bad_params(srv: Running) -> None:
    for method in ("tasks/result", "tasks/list"):
        assert_refused(await srv.modern(method, {"taskId": "x"},
                                        meta=task_meta()),
                       404, -32601, request_id=1)
    assert_refused(await task_request(srv, "tasks/get", "no-such-task"), 400, -32602,
                   "unknown task no-such-task", request_id=1)
    long_id = "x" * 257
    assert_refused(await task_request(srv, "tasks/get", long_id), 400, -32602,
                   "at most 256 characters", request_id=1)
    task_id = await start(srv, "slow_compute", {"seconds": 60})
    assert_refused(await task_request(srv, "tasks/update", task_id, inputResponses=[1]),
                   400, -32602, "inputResponses", request_id=1)
    assert_refused(await srv.modern("tasks/get", {"taskId": task_id},
                                    headers={"Mcp-Name": "another-task"},
                                    meta=task_meta()),
                   400, -32020, request_id=1)
    result_of(await task_request(srv, "tasks/cancel", task_id))


async def test_tools_list_and_discover_declare_task_support(srv: Running) -> None:
    tools = {t["name"]: t for t in result_of(await srv.modern("tools/list"))["tools"]}
    assert tools["slow_compute"]["execution"] == {"taskSupport": "optional"}
    assert tools["failing_job"]["execution"] == {"taskSupport": "required"}
    assert "execution" not in tools["greet"]
    caps = result_of(await srv.modern("server/discover"))["capabilities"]
    assert caps["extensions"][EXT] == {}  # beside the example server's other extensions
    assert "tasks" not in caps


async def test_listen_streams_hear_the_tasks_they_name(srv: Running) -> None:
    task_id = await start(srv, "slow_compute", {"seconds": 0.3})
    stream = await srv.listen({"taskIds": [task_id, task_id]}, meta=task_meta())
    try:
        await stream.wait_messages(1)
        ack = stream.messages[0]
        assert ack["params"]["notifications"] == {"taskIds": [task_id]}
        await stream.wait_messages(2)
        note = stream.messages[1]
        assert note["method"] == "notifications/tasks/status"
        params = note["params"]
        assert params["_meta"] == {"io.modelcontextprotocol/subscriptionId": "listen-1"}
        assert (params["taskId"], params["status"]) == (task_id, "completed")
        assert tool_text(params["result"]) == "Computed result after 0.3 s"
    finally:
        stream.close()


async def test_listen_for_tasks_needs_the_extension_and_bounded_ids(srv: Running) -> None:
    refused = await srv.listen({"taskIds": ["a"]}, meta=task_meta({}))
    await refused.wait_closed()
    assert refused.status == 400
    assert json.loads(refused.raw)["error"]["code"] == -32021
    too_many = await srv.listen({"taskIds": [f"t{i}" for i in range(101)]}, meta=task_meta())
    await too_many.wait_closed()
    assert too_many.status == 400
    assert json.loads(too_many.raw)["error"]["message"] == \
        "Invalid params: subscriptions/listen `taskIds` exceeds 100 ids"
    at_bound = await srv.listen({"taskIds": [f"t{i}" for i in range(100)]}, meta=task_meta())
    try:
        await at_bound.wait_messages(1)
        assert len(at_bound.messages[0]["params"]["notifications"]["taskIds"]) == 100
    finally:
        at_bound.close()
