"""The official Python SDK client (``mcp`` 2.3.0) driving tasks at 2026-07-28.

The SDK has no tasks extension of its own, but it has the machinery to write one: a
``ClientExtension`` advertises ``io.modelcontextprotocol/tasks`` and claims the
``resultType: "task"`` shape of ``tools/call``; its resolver polls ``tasks/get`` (sent with
``ClientSession.send_request`` and a request type naming ``taskId`` for ``Mcp-Name``) until
the task ends.  ``Client.call_tool`` then runs a task to completion transparently, and
``allow_claimed=True`` hands the task over so the test can cancel it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_http import Running, example_server, running

pytestmark = [pytest.mark.timeout(60),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]
STEP = 10.0


class TaskIdParams(types.RequestParams):
    task_id: str


class TasksGet(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param: ClassVar[str | None] = "taskId"


class TasksCancel(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param: ClassVar[str | None] = "taskId"


class CreatedTask(types.Result):
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class TaskState(types.Result):
    task_id: str
    status: str
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


async def poll(session: Any, task_id: str) -> TaskState:
    while True:
        state: TaskState = await session.send_request(
            TasksGet(params=TaskIdParams(task_id=task_id)), TaskState)
        if state.status in ("completed", "failed", "cancelled"):
            return state
        await anyio.sleep(0.05)


async def resolve(created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
    state = await poll(ctx.session, created.task_id)
    if state.status != "completed" or state.result is None:
        raise RuntimeError(f"task {created.task_id} ended {state.status}: {state.error}")
    return types.CallToolResult.model_validate(state.result)


class Tasks(ClientExtension):
    identifier = "io.modelcontextprotocol/tasks"

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=resolve)]


@pytest.fixture
async def srv() -> Any:
    async with running(example_server()) as s:
        yield s


async def test_sdk_client_runs_a_task_to_completion_and_cancels_another(srv: Running) -> None:
    with anyio.fail_after(4 * STEP):
        async with Client(srv.url, read_timeout_seconds=STEP, extensions=[Tasks()]) as client:
            assert client.protocol_version == "2026-07-28"
            caps = client.server_capabilities
            assert caps.extensions is not None
            assert "io.modelcontextprotocol/tasks" in caps.extensions
            done = await client.call_tool("slow_compute", {"seconds": 0.1, "label": "sdk"})
            assert [c.text for c in done.content] == ["Computed sdk after 0.1 s"]
            handed = await client.session.call_tool("slow_compute", {"seconds": 60},
                                                    allow_claimed=True)
            assert isinstance(handed, CreatedTask)
            assert handed.status == "working"
            await client.session.send_request(
                TasksCancel(params=TaskIdParams(task_id=handed.task_id)), types.Result)
            state = await poll(client.session, handed.task_id)
            assert state.status == "cancelled"
    tasks = srv.transport.snapshot().tasks
    assert tasks is not None and tasks.by_status == {"completed": 1, "cancelled": 1}
