"""The :class:`TaskManager`: one per transport, it creates tasks, runs their work in
background asyncio tasks it owns, and keeps their records in its
:class:`~tornado_mcp.tasks.store.TaskStore`.

A task's work is the tool call itself, dispatched to the :class:`~tornado_mcp.Server`
exactly as a request would be, with a :class:`~tornado_mcp.Context` of its own whose
client is the caller (its capabilities, info and principal).  That context always speaks
the input-required idiom, in both eras: a handler needing input returns
:class:`~tornado_mcp.InputRequired`, the task parks in ``input_required`` with the
requests, and the client's answers (``tasks/update``, or at 2025-11-25 the answers to the
requests sent on its ``tasks/result`` stream) call the handler again, as a retried request
would.

Every task is bounded: ``max_tasks`` records kept at once (a creation past it is refused
and counted), ``max_task_result_bytes`` per result (a bigger one fails the task and is not
kept), ``task_ttl`` seconds of life (work still running then is cancelled and the record
forgotten).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..protocol import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    META_SERVER_INFO,
    MODERN_VERSIONS,
    TASKS_STATUS,
    TOOLS_CALL,
    Refusal,
    jsonio,
)
from ..protocol.errors import MCPError, error_of
from ..server.context import Context
from .record import Status, TaskRecord
from .store import TaskStore
from .support import RunAsTask, tool_result

if TYPE_CHECKING:
    from ..options import Options
    from ..server.server import Server
    from ..server.session import Session

log = logging.getLogger("tornado_mcp.tasks")

#: What a task context's channel does: nothing streams from a task (no request is open).
_NO_STREAM = "A task has no stream to the client: return InputRequired to ask for input"


class TaskHost(Protocol):
    """What the task manager needs of the engine that owns it: a Protocol because the
    engine imports the tasks package, never the reverse."""

    @property
    def server(self) -> Server: ...

    @property
    def options(self) -> Options: ...

    def count_refusal(self, kind: Refusal) -> None: ...

    def task_changed(self, record: TaskRecord) -> None:
        """A task's status changed: tell the listen streams watching it."""

    async def governed_run(self, ctx: Context,
                           work: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        """Run ``work()`` as a task run: within its tool's timeout, counted, audited."""

    def hold_slot(self, ctx: Context) -> Callable[[], None]:
        """Keep the concurrency slot of the creating call ``ctx`` for the task's run; the
        function returned gives it back."""


class _Facts:
    """The creating request's headers and address, kept for the task's context."""

    __slots__ = ("headers", "remote_ip")

    def __init__(self, headers: Mapping[str, str], remote_ip: str | None) -> None:
        self.headers = dict(headers)
        self.remote_ip = remote_ip


class _TaskChannel:
    """The :class:`~tornado_mcp.server.context.RequestChannel` of a task's context."""

    def __init__(self, server: Any) -> None:
        self.server = server

    def emit(self, message: dict[str, Any]) -> bool:
        return False

    async def send_request(self, method: str, params: dict[str, Any] | None,
                           timeout: float | None) -> dict[str, Any]:
        raise MCPError(INVALID_REQUEST, _NO_STREAM)

    def notify_resources_updated(self, uri: str) -> None:
        self.server.notify_resources_updated(uri)

    @property
    def requests_unavailable(self) -> str | None:
        return _NO_STREAM

    def close_stream(self) -> bool:
        return False  # no stream to close and resume


def _no_slot() -> None:
    return None


class Job:
    """A task running in this process."""

    __slots__ = ("changed", "ctx", "expired", "inputs", "keys", "params", "record",
                 "release", "round", "session", "task")

    def __init__(self, record: TaskRecord, ctx: Context, params: dict[str, Any],
                 session: Session | None) -> None:
        self.record = record
        self.ctx = ctx
        self.params = params
        self.session = session  # a 2025-11-25 task's session: status notifications go there
        self.task: asyncio.Task[None] | None = None
        self.expired = False
        self.round = 0
        self.keys: dict[str, str] = {}  # wire key -> the handler's key, this round
        self.inputs: dict[str, Any] = {}  # answers so far, by wire key
        self.changed = asyncio.Event()  # set (and replaced) whenever the record changes
        #: Gives back the concurrency slot the creating call handed over (idempotent).
        self.release: Callable[[], None] = _no_slot


class TaskManager:
    """Creates, runs and tracks one transport's tasks; see the module docstring."""

    def __init__(self, host: TaskHost, store: TaskStore | None = None) -> None:
        self.t = host
        self.store = store if store is not None else TaskStore()
        self.store.process_id = self.process_id = secrets.token_hex(8)
        self.store.on_signal = self._on_signal
        self.jobs: dict[str, Job] = {}
        self.created_total = 0
        self._started: asyncio.Future[None] | None = None
        self._deliveries: set[asyncio.Future[None]] = set()
        #: One timer per kept task, at its expiry: nothing outlives its TTL.
        self._timers: dict[str, asyncio.TimerHandle] = {}

    async def ready(self) -> TaskStore:
        """The store, started on first use."""
        if self._started is None:
            self._started = asyncio.ensure_future(self.store.start())
        await asyncio.shield(self._started)
        return self.store

    # -- creating --------------------------------------------------------------------------
    async def create(self, ctx: Context, owner: str, era: str, ttl: float | None = None,
                     work: Awaitable[Any] | None = None) -> TaskRecord:
        """Create a task for the ``tools/call`` ``ctx`` is handling and start its work
        (``work``, or the call itself); the record is stored before this returns."""
        store = await self.ready()
        opts = self.t.options
        ttl = opts.task_ttl if ttl is None else min(ttl, opts.task_ttl)
        for record in store.expired():
            self._stop(record.task_id, expired=True)
        record = TaskRecord(task_id=secrets.token_urlsafe(16), owner=owner, era=era,
                            tool=str(ctx.params.get("name")), ttl=ttl,
                            runner=self.process_id)
        if not await store.create(record, opts.max_tasks):
            if work is not None and asyncio.iscoroutine(work):
                work.close()
            self.t.count_refusal(Refusal.MAX_TASKS)
            raise MCPError(INTERNAL_ERROR, "Service unavailable: maximum tasks "
                                           f"({opts.max_tasks}) kept; try again later",
                           {"limit": "max_tasks", "value": opts.max_tasks})
        self.created_total += 1
        params = {k: v for k, v in ctx.params.items()
                  if k not in ("task", "inputResponses", "requestState")}
        job = Job(record, self._task_context(ctx, params, record), params, ctx.session)
        self.jobs[record.task_id] = job
        # The creating call's slot (its tool's max_concurrency, its caller's count) is the
        # run's until the run ends, however it ends: no other call is admitted between.
        job.release = release = self.t.hold_slot(ctx)
        job.task = asyncio.ensure_future(self._run(job, work))
        job.task.add_done_callback(lambda _: release())  # however the task ends
        job.ctx.task = job.task
        self._timers[record.task_id] = asyncio.get_running_loop().call_later(
            ttl, self._expire, record.task_id, record.expires_at)
        return record

    def _expire(self, task_id: str, expires_at: float) -> None:
        """The task's TTL elapsed: stop its work if it still runs, forget the record (the
        loop's clock may run a little ahead of the wall clock: sweep up to the expiry)."""
        self._timers.pop(task_id, None)
        self._stop(task_id, expired=True)
        self.store.expired(max(time.time(), expires_at))

    def _task_context(self, ctx: Context, params: dict[str, Any],
                      record: TaskRecord) -> Context:
        envelope = {"protocol_version": MODERN_VERSIONS[0],
                    "client_capabilities": ctx.client_capabilities,
                    "client_info": ctx.client_info, "log_level": None}
        return Context(self.t.server, TOOLS_CALL, dict(params), f"task-{record.task_id}",
                       _TaskChannel(self.t.server), envelope=envelope,
                       listen_served=ctx.listen_served, served_versions=ctx.served_versions,
                       principal=ctx.principal, http=_Facts(ctx.headers, ctx.remote_ip))

    # -- running -----------------------------------------------------------------------------
    async def _run(self, job: Job, work: Awaitable[Any] | None) -> None:
        server = self.t.server

        async def handed_over() -> dict[str, Any]:
            return tool_result(await work)  # type: ignore[misc]

        async def one_round() -> dict[str, Any]:
            try:
                return await server.handle(TOOLS_CALL, job.ctx.params, job.ctx)
            except RunAsTask as handoff:  # a deferred tool, already in a task
                return tool_result(await handoff.work)

        try:  # each run within its tool's bounds, counted and audited (the governance)
            if work is not None:
                result = await self.t.governed_run(job.ctx, handed_over)
            else:
                while True:
                    result = await self.t.governed_run(job.ctx, one_round)
                    if result.get("resultType") != "input_required":
                        break
                    await self._park(job, result)
            await self._finish(job, Status.COMPLETED, result=result)
        except asyncio.CancelledError:
            if job.expired:
                await self._finish(job, Status.FAILED, error={
                    "code": INTERNAL_ERROR, "message": "Task expired: its TTL elapsed"})
            else:
                await self._finish(job, Status.CANCELLED, message="Cancelled by the client")
        except Exception as exc:
            await self._finish(job, Status.FAILED, error=error_of(
                exc, f"task {job.record.task_id} ({job.record.tool})"))

    async def _park(self, job: Job, result: dict[str, Any]) -> None:
        """Wait in ``input_required`` until every input request is answered, then set up
        the handler's next round."""
        requests = result.get("inputRequests") or {}
        job.round += 1
        job.keys = {f"r{job.round}-{key}": key for key in requests}
        job.inputs = {}
        record = job.record
        record.input_requests = {wire: requests[key] for wire, key in job.keys.items()}
        await self._change(job, Status.INPUT_REQUIRED)
        while record.input_requests:
            await job.changed.wait()
        answers = {job.keys[wire]: value for wire, value in job.inputs.items()}
        params = {**job.params, "inputResponses": answers}
        if result.get("requestState") is not None:
            params["requestState"] = result["requestState"]
        job.ctx.params = params
        await self._change(job, Status.WORKING)

    async def deliver(self, record: TaskRecord, responses: dict[str, Any]) -> None:
        """Answers to a task's outstanding input requests; unknown or already answered
        keys are ignored.  The task resumes once every request has an answer."""
        job = self.jobs.get(record.task_id)
        if job is None:
            await self.store.signal(record, {"inputResponses": responses})
            return
        outstanding = job.record.input_requests
        taken = [key for key in responses if key in outstanding]
        if not taken:
            return
        for key in taken:
            job.inputs[key] = responses[key]
            del outstanding[key]
        await self._change(job, Status(job.record.status))

    async def cancel(self, record: TaskRecord) -> None:
        """Ask a task to stop; its status becomes ``cancelled`` once its work has."""
        if record.terminal:
            return
        if self._stop(record.task_id, expired=False):
            return
        if not await self.store.signal(record, {"cancel": True}):
            # Nobody runs it any more (its process is gone): settle the record here.
            record.status, record.status_message = Status.CANCELLED.value, "Cancelled"
            record.updated_at = time.time()
            await self.store.save(record)

    def _stop(self, task_id: str, expired: bool) -> bool:
        job = self.jobs.get(task_id)
        if job is None or job.task is None or job.task.done():
            return False
        job.expired = expired
        job.ctx.cancel()
        return True

    def _on_signal(self, task_id: str, message: dict[str, Any]) -> None:
        job = self.jobs.get(task_id)
        if job is None:
            return
        if message.get("cancel") is True:
            self._stop(task_id, expired=False)
        responses = message.get("inputResponses")
        if isinstance(responses, dict):
            delivery = asyncio.ensure_future(self.deliver(job.record, responses))
            self._deliveries.add(delivery)
            delivery.add_done_callback(self._deliveries.discard)

    # -- recording ---------------------------------------------------------------------------
    async def _change(self, job: Job, status: Status, message: str | None = None) -> None:
        record = job.record
        record.status, record.status_message = status.value, message
        if status is not Status.INPUT_REQUIRED:
            record.input_requests = {}
        record.updated_at = time.time()
        with contextlib.suppress(Exception):  # a store outage must not kill the work
            await self.store.save(record)
        job.changed.set()
        job.changed = asyncio.Event()
        self._announce(job)

    async def _finish(self, job: Job, status: Status, result: dict[str, Any] | None = None,
                      error: dict[str, Any] | None = None, message: str | None = None) -> None:
        job.release()  # the run is over: free its slot before anyone can see it ended
        record = job.record
        if result is not None:
            result = _clean(result)
            size = len(jsonio.dumps(result))
            bound = self.t.options.max_task_result_bytes
            if bound is not None and size > bound:
                self.t.count_refusal(Refusal.MAX_TASK_RESULT_BYTES)
                status, result = Status.FAILED, None
                error = {"code": INTERNAL_ERROR,
                         "message": f"Task result of {size} bytes exceeds "
                                    f"max_task_result_bytes ({bound})",
                         "data": {"limit": "max_task_result_bytes", "value": bound}}
            else:
                record.result_bytes = size
        if error is not None:
            record.result_bytes = len(jsonio.dumps(error))
        record.result, record.error = result, error
        self.jobs.pop(record.task_id, None)
        await self._change(job, status, message)

    def _announce(self, job: Job) -> None:
        """``notifications/tasks/status``: on the creating session's GET stream
        (2025-11-25 tasks), and on the listen streams watching the task (2026-07-28)."""
        session = job.session
        if session is not None:
            session.send_notification(TASKS_STATUS, job.record.legacy_task())
        self.t.task_changed(job.record)

    async def wait_change(self, record: TaskRecord, timeout: float) -> None:
        """Wait until the task changes (a local one), or ``timeout`` seconds."""
        job = self.jobs.get(record.task_id)
        if job is None:
            await asyncio.sleep(timeout)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(job.changed.wait(), timeout)

    # -- lifecycle ---------------------------------------------------------------------------
    async def drain(self, grace: float | None) -> bool:
        """Wait up to ``grace`` seconds (``None``: without a bound) for the task runs of this
        process to finish; True when none is left."""
        runs = [j.task for j in self.jobs.values() if j.task is not None and not j.task.done()]
        if not runs:
            return True
        _, pending = await asyncio.wait(runs, timeout=grace)
        return not pending

    async def close(self) -> None:
        """Cancel every running task (each settles ``cancelled``) and close the store."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        jobs = [j.task for j in self.jobs.values() if j.task is not None]
        for task_id in list(self.jobs):
            self._stop(task_id, expired=False)
        if jobs:
            await asyncio.wait(jobs, timeout=5.0)
        if self._started is not None:
            with contextlib.suppress(Exception):
                await self.store.close()

    def stats(self) -> dict[str, Any]:
        stats = self.store.stats()
        stats["running"] = len(self.jobs)
        stats["created_total"] = self.created_total
        stats["store"] = self.store.kind
        return stats


def _clean(result: dict[str, Any]) -> dict[str, Any]:
    """A tool result as a task keeps it: without the per-response ``resultType`` and
    server-info ``_meta`` that the 2026-07-28 stamping adds."""
    out = {k: v for k, v in result.items() if k != "resultType"}
    meta = out.get("_meta")
    if isinstance(meta, dict):
        meta = {k: v for k, v in meta.items() if k != META_SERVER_INFO}
        if meta:
            out["_meta"] = meta
        else:
            del out["_meta"]
    return out
