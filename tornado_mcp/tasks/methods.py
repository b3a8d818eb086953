"""The task surface of the protocol, as the transport dispatches it.

:func:`intercept` is called for ``tools/call`` and the ``tasks/*`` methods before the
:class:`~tornado_mcp.Server` sees them: it answers a call that becomes a task with the task
(and lets every other call through), and answers the task methods of each era:

* 2026-07-28, the tasks extension: ``tasks/get``, ``tasks/update``, ``tasks/cancel``, each
  -32021 unless the request declares the extension; ``tasks/result`` and ``tasks/list``
  were removed (-32601).  A task-supporting tool becomes a task whenever the request
  declares the extension (the server decides; a ``task`` param is ignored).
* 2025-11-25: a ``tools/call`` carrying ``task`` becomes a task; ``tasks/get``,
  ``tasks/result`` (waits for the end, carrying the task's input requests to the client
  as real requests on its own stream), ``tasks/list`` (the caller's own tasks) and
  ``tasks/cancel``.

:func:`decorate` adds what tasks add to other results: each declaring tool's
``execution.taskSupport`` in ``tools/list``, and the extension in ``server/discover``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..protocol import (
    INVALID_PARAMS,
    META_RELATED_TASK,
    META_SERVER_INFO,
    METHOD_NOT_FOUND,
    SERVER_DISCOVER,
    TASKS_CANCEL,
    TASKS_EXTENSION,
    TASKS_GET,
    TASKS_LIST,
    TASKS_RESULT,
    TASKS_UPDATE,
    TOOLS_CALL,
    TOOLS_LIST,
)
from ..protocol.errors import MCPError, MissingClientCapability, method_not_found
from .record import POLL_INTERVAL_MS, Status, TaskRecord
from .support import RunAsTask, declared, support_of, tool_result

if TYPE_CHECKING:
    from ..protocol.identity import Principal
    from ..server.context import Context
    from .manager import TaskManager

#: The only legacy version with (experimental) tasks.
TASKS_LEGACY_VERSION = "2025-11-25"
TASK_METHODS = frozenset({TASKS_GET, TASKS_UPDATE, TASKS_CANCEL, TASKS_RESULT, TASKS_LIST})
MODERN_TASK_METHODS = frozenset({TASKS_GET, TASKS_UPDATE, TASKS_CANCEL})
DECORATED = frozenset({TOOLS_LIST, SERVER_DISCOVER})
MAX_TASK_ID_LENGTH = 256
#: ``tasks/list`` page size.
LIST_PAGE = 100
#: The 2025-11-25 server capability.
LEGACY_CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


def principal_owner(principal: Principal) -> str:
    """The owner key of what an authenticated ``principal`` starts or watches."""
    return f"principal:{principal.caller}" if principal.authenticated else ""


def owner_of(ctx: Context) -> str:
    """Who a task belongs to: the authenticated subject, else the legacy session, else
    nobody in particular (a 2026-07-28 anonymous task is reachable by its unguessable id,
    as the extension intends)."""
    if ctx.principal.authenticated:
        return principal_owner(ctx.principal)
    if ctx.session is not None:
        return f"session:{ctx.session.id}"
    return ""


def legacy_tasks(ctx: Context) -> bool:
    return not ctx.modern and ctx.protocol_version == TASKS_LEGACY_VERSION


async def intercept(m: TaskManager, method: str, ctx: Context) -> dict[str, Any] | None:
    """The answer to ``method`` when tasks own it, else ``None`` (the server answers)."""
    if method == TOOLS_CALL:
        return await _call(m, ctx)
    if ctx.modern:
        if method not in MODERN_TASK_METHODS:
            raise method_not_found(method)
        if not ctx.client_supports("extensions", TASKS_EXTENSION):
            raise MissingClientCapability({"extensions": {TASKS_EXTENSION: {}}})
    elif not legacy_tasks(ctx) or method == TASKS_UPDATE:
        raise method_not_found(method)
    if method == TASKS_LIST:
        return await _list(m, ctx)
    task_id = ctx.params.get("taskId")
    if not isinstance(task_id, str) or not task_id or len(task_id) > MAX_TASK_ID_LENGTH:
        raise MCPError(INVALID_PARAMS, "Invalid params: taskId must be a non-empty string "
                                       f"of at most {MAX_TASK_ID_LENGTH} characters")
    responses: dict[str, Any] = {}
    if method == TASKS_UPDATE:
        responses = ctx.params.get("inputResponses")  # type: ignore[assignment]
        if not isinstance(responses, dict) or \
                not all(isinstance(v, dict) for v in responses.values()):
            raise MCPError(INVALID_PARAMS,
                           "Invalid params: inputResponses must map keys to result objects")
    record = await _find(m, ctx, task_id)
    if method == TASKS_GET:
        return _stamp(m, ctx, record.detailed()) if ctx.modern else record.legacy_task()
    if method == TASKS_UPDATE:
        await m.deliver(record, responses)
        return _stamp(m, ctx, {"resultType": "complete"})
    if method == TASKS_CANCEL:
        if ctx.modern:
            await m.cancel(record)
            return _stamp(m, ctx, {"resultType": "complete"})
        if record.terminal:
            raise MCPError(INVALID_PARAMS, f"Cannot cancel task {task_id}: it is already "
                                           f"{record.status}")
        await m.cancel(record)
        record = await _wait(m, record, POLL_INTERVAL_MS / 1000 * 4)
        return record.legacy_task()
    return await _result(m, ctx, record)


async def _find(m: TaskManager, ctx: Context, task_id: str) -> TaskRecord:
    store = await m.ready()
    record = await store.get(task_id)
    if record is None or (record.owner and record.owner != owner_of(ctx)):
        raise MCPError(INVALID_PARAMS, f"Invalid params: unknown task {task_id}")
    return record


def _stamp(m: TaskManager, ctx: Context, result: dict[str, Any]) -> dict[str, Any]:
    result["_meta"] = {META_SERVER_INFO: m.t.server.server_info()}
    return result


async def _call(m: TaskManager, ctx: Context) -> dict[str, Any] | None:
    support = support_of(m.t.server, ctx.params.get("name"))
    if support is None:
        return None
    if ctx.modern:
        wanted = ctx.client_supports("extensions", TASKS_EXTENSION)
        if not wanted and support.support == "required":
            raise MissingClientCapability({"extensions": {TASKS_EXTENSION: {}}})
        era, ttl = "modern", None
    else:
        task = ctx.params.get("task")
        wanted = legacy_tasks(ctx) and isinstance(task, dict)
        if legacy_tasks(ctx) and not wanted and support.support == "required":
            raise MCPError(METHOD_NOT_FOUND,
                           f"Tool {ctx.params.get('name')} must be called as a task")
        requested = task.get("ttl") if isinstance(task, dict) else None
        ttl = requested / 1000 if isinstance(requested, int | float) and requested > 0 \
            else None
        era = "legacy"
    if not wanted and not support.deferred:
        return None  # an ordinary call
    work = None
    if support.deferred:  # it runs inline, and may hand its remaining work over
        try:
            return await m.t.server.handle(TOOLS_CALL, ctx.params, ctx)
        except RunAsTask as handoff:
            work = handoff.work
        if not wanted:  # a client that cannot take a task waits for the work
            result = tool_result(await work)
            return _stamp(m, ctx, {**result, "resultType": "complete"}) if ctx.modern \
                else result
    record = await m.create(ctx, owner_of(ctx), era, ttl, work)
    if ctx.modern:
        return _stamp(m, ctx, record.created())
    # ``content`` is not in 2025-11-25's CreateTaskResult, but clients that parse the reply
    # as a CallToolResult (the official Python SDK 2.3.0) need it; empty, as 2026-07-28's.
    return {"task": record.legacy_task(), "content": [],
            "_meta": {META_RELATED_TASK: {"taskId": record.task_id}}}


async def _wait(m: TaskManager, record: TaskRecord, timeout: float) -> TaskRecord:
    """The record once it is terminal, or as it is after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    store = await m.ready()
    while not record.terminal and time.monotonic() < deadline:
        await m.wait_change(record, min(POLL_INTERVAL_MS / 1000, deadline - time.monotonic()))
        fresh = await store.get(record.task_id)
        if fresh is None:
            break
        record = fresh
    return record


async def _result(m: TaskManager, ctx: Context, record: TaskRecord) -> dict[str, Any]:
    """2025-11-25 ``tasks/result``: wait for the end; input the task needs meanwhile is
    asked of the client on this request's own stream."""
    store = await m.ready()
    while not record.terminal:
        if record.status == Status.INPUT_REQUIRED and record.input_requests:
            answers = {}
            for key, request in list(record.input_requests.items()):
                params = dict(request.get("params") or {})
                params["_meta"] = {META_RELATED_TASK: {"taskId": record.task_id}}
                answers[key] = await ctx.send_request(str(request.get("method")), params)
            await m.deliver(record, answers)
        await m.wait_change(record, POLL_INTERVAL_MS / 1000)
        fresh = await store.get(record.task_id)
        if fresh is None:
            raise MCPError(INVALID_PARAMS, f"Invalid params: task {record.task_id} expired")
        record = fresh
    related = {META_RELATED_TASK: {"taskId": record.task_id}}
    if record.status == Status.COMPLETED and record.result is not None:
        result = dict(record.result)
        result["_meta"] = {**(result.get("_meta") or {}), **related}
        return result
    if record.status == Status.FAILED and record.error is not None:
        raise MCPError(int(record.error.get("code", -32603)), str(record.error.get("message")),
                       record.error.get("data"))
    raise MCPError(INVALID_PARAMS, f"Task {record.task_id} was cancelled")


async def _list(m: TaskManager, ctx: Context) -> dict[str, Any]:
    cursor = ctx.params.get("cursor")
    start = 0
    if cursor is not None:
        if not isinstance(cursor, str) or not cursor.isdigit() or len(cursor) > 9:
            raise MCPError(INVALID_PARAMS, "Invalid params: invalid cursor")
        start = int(cursor)
    store = await m.ready()
    records = await store.owned(owner_of(ctx))
    page = records[start:start + LIST_PAGE]
    result: dict[str, Any] = {"tasks": [r.legacy_task() for r in page]}
    if start + LIST_PAGE < len(records):
        result["nextCursor"] = str(start + LIST_PAGE)
    return result


def decorate(m: TaskManager, method: str, result: dict[str, Any],
             ctx: Context) -> dict[str, Any]:
    """Add the tasks parts to a ``tools/list`` or ``server/discover`` result (when some
    tool declares task support)."""
    support = declared(m.t.server)
    if not support:
        return result
    if method == SERVER_DISCOVER:
        caps = result.get("capabilities")
        if isinstance(caps, dict):
            result["capabilities"] = _with_extension(caps)
        return result
    tools = result.get("tools")
    if isinstance(tools, list) and (ctx.modern or legacy_tasks(ctx)):
        result["tools"] = [
            {**tool, "execution": {"taskSupport": support[tool["name"]].support}}
            if isinstance(tool, dict) and tool.get("name") in support else tool
            for tool in tools]
    return result


def _with_extension(capabilities: dict[str, Any]) -> dict[str, Any]:
    extensions = dict(capabilities.get("extensions") or {})
    extensions[TASKS_EXTENSION] = {}
    return {**capabilities, "extensions": extensions}


def decorate_initialize(m: TaskManager, result: dict[str, Any], version: str) -> None:
    """A legacy ``initialize`` result: the extension, and at 2025-11-25 the experimental
    ``tasks`` capability (when some tool declares task support)."""
    caps = result.get("capabilities")
    if not declared(m.t.server) or not isinstance(caps, dict):
        return
    caps = _with_extension(caps)
    if version == TASKS_LEGACY_VERSION:
        caps["tasks"] = LEGACY_CAPABILITY
    result["capabilities"] = caps
