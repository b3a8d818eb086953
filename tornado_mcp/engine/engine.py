"""The :class:`Engine`: one request pipeline for every transport.

A transport turns bytes into JSON-RPC messages and answers back into bytes; everything
between is here, so a promise kept here holds over Streamable HTTP, over stdio and in the
task runner alike.  For one request, :meth:`Engine.dispatch`:

1. checks the message's shape (``jsonrpc``, ``method``, ``id``, ``params``);
2. applies the scope rules (a caller without the scopes of the tool, resource or prompt
   gets :class:`~tornado_mcp.protocol.auth_errors.AuthError`, which each transport answers
   in its own way: 401/403 with a challenge over HTTP, an in-band error over stdio);
3. builds the request's :class:`~tornado_mcp.Context`, counts the request in flight (on
   its session too, whose idle timer it resets) and sets the pool where plain ``def``
   handlers run;
4. runs the middleware chain (the per-principal rate limit, then the server's middleware,
   then the transport's) around :meth:`Engine._handle`: the tasks interception, the server's own
   ``handle``, list visibility (``hide_unauthorized``) and the tasks decorations;
5. maps the outcome to a JSON-RPC response with :func:`error_of`, the one exception map:
   a cancelled request gets no response at all.

The engine also owns the runtime state that is not HTTP: the session store, the task
manager, the listen-stream index, the middleware chain, the sync-handler pool, the refusal
counters, and the drain (:meth:`Engine.drain`) that lets work in flight finish at shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from ..options import Options
from ..protocol import (
    INVALID_REQUEST,
    PING,
    TOOLS_CALL,
    Refusal,
)
from ..protocol.auth_errors import AuthError
from ..protocol.errors import Refused, error_of
from ..protocol.identity import ANONYMOUS, Principal
from ..protocol.jsonrpc import error_body, safe_id, valid_id
from ..server.builtins import as_unknown
from ..server.context import Context, HTTPRequestFacts, RequestChannel
from ..server.server import Server
from ..server.session import Session, SessionStore
from ..sync.handlers import CURRENT as CURRENT_RUNNER
from ..sync.handlers import SyncRunner
from ..tasks import methods as task_methods
from ..tasks.manager import TaskManager
from ..tasks.record import TaskRecord
from ..tasks.store import TaskStore
from ..tasks.support import support_of
from .governance import GOVERNED, Governance
from .lifecycle import Lifecycle
from .listen_index import ListenIndex
from .middleware import Chain, Middleware, RateLimit
from .task_watch import Watchers

log = logging.getLogger("tornado_mcp.engine")

#: The answer to a request that arrives while the engine drains.
SHUTTING_DOWN = "Service unavailable: shutting down"
#: Seconds a client is told to wait before retrying a request refused by the drain.
RETRY_AFTER_SHUTDOWN_S = 5


class Channel(RequestChannel, Protocol):
    """What the engine needs of a transport's way back to the client, beyond the
    :class:`~tornado_mcp.server.context.RequestChannel` a ``Context`` uses: a slot for the
    request's context.  Implemented in the transports above (an HTTP request's
    ``RequestStream``, a stdio request's channel)."""

    ctx: Context | None


def auth_error_body(request_id: Any, exc: AuthError) -> dict[str, Any]:
    """A scope refusal as an in-band JSON-RPC error (stdio, a batched call)."""
    return error_body(request_id, INVALID_REQUEST, exc.message)


class Engine:
    """Serves one :class:`~tornado_mcp.Server` for a transport; see the module docstring.

    ``options`` bound what clients may make it keep (live: read on every use);
    ``middleware`` runs around every request after the server's own (``server.use``);
    ``task_store`` keeps tasks (in-process unless given); ``remote_count(kind)`` is what
    the rest of a cluster holds of ``"sessions"`` or ``"listen_streams"``, counted against
    this engine's limits; ``on_session_removed`` is the transport's own clean-up of a
    session that ended (its streams).
    """

    def __init__(self, server: Server, options: Options, *,
                 middleware: Sequence[Middleware] = (), task_store: TaskStore | None = None,
                 remote_count: Callable[[str], int] | None = None,
                 on_session_removed: Callable[[Session], None] | None = None) -> None:
        self.server = server
        self.options = options
        self.refusals: Counter[str] = Counter({kind.value: 0 for kind in Refusal})
        self._remote_count = remote_count
        #: ``initialize``, client notifications and responses, a session's end.
        self.lifecycle = Lifecycle(self, on_session_removed)
        #: Legacy sessions, bounded by ``max_sessions`` and ``session_idle_timeout``.
        self.sessions = SessionStore(
            lambda: _less(options.max_sessions, self.remote_count("sessions")),
            lambda: options.session_idle_timeout, self.lifecycle.session_removed)
        #: Acknowledged ``subscriptions/listen`` streams, indexed by what they watch.
        self.listen_index = ListenIndex()
        #: The per-principal rate limit (idle while ``rate_limit_per_principal`` is None).
        self.rate_limit = RateLimit(options)
        self.middleware = Chain(self.rate_limit, middleware, server.middleware)
        #: Where plain ``def`` handlers run (``sync_handler_threads``).
        self.sync_runner = SyncRunner(options.sync_handler_threads)
        #: Per-tool and per-caller bounds, statistics and the audit trail.
        self.governance = Governance(server, options, self.sync_runner)
        #: Tasks: tool calls answered with a handle the client polls.
        self.tasks = TaskManager(self, task_store)
        #: Listen streams watching tasks (``taskIds``).
        self.watchers = Watchers()
        #: Set once :meth:`drain` began: new requests are refused from then on.
        self.closing = False
        #: Checks the readiness probe runs: each returns why the engine cannot serve now,
        #: or ``None`` (the cluster adds one for its Redis).
        self.readiness_checks: list[Callable[[], str | None]] = []
        #: Run as the drain begins, each given its deadline (``time.monotonic()`` seconds,
        #: ``None`` without one), and awaited with what is in flight, at most
        #: :data:`DRAIN_HOOK_MARGIN` seconds past the deadline (a cluster hands its legacy
        #: sessions to the other processes while they go idle).
        self.drain_hooks: list[Callable[[float | None], Awaitable[None]]] = []
        self._running: set[asyncio.Task[Any]] = set()
        self._idle: asyncio.Event | None = None

    # -- bookkeeping ------------------------------------------------------------------------
    def count_refusal(self, kind: Refusal) -> None:
        self.refusals[kind] += 1

    def task_changed(self, record: TaskRecord) -> None:
        self.watchers.announce(record)

    def remote_count(self, kind: str) -> int:
        return self._remote_count(kind) if self._remote_count is not None else 0

    @property
    def in_flight(self) -> int:
        """Requests being handled right now (task runs are counted by the task manager)."""
        return len(self._running)

    def not_ready(self) -> str | None:
        """Why this engine cannot serve right now (draining, a check failing), or None."""
        if self.closing:
            return "draining: shutting down"
        for check in self.readiness_checks:
            reason = check()
            if reason is not None:
                return reason
        return None

    def initialize_result(self, version: str) -> dict[str, Any]:
        """The result of a legacy ``initialize`` at ``version``, tasks capability included."""
        answer = self.server.initialize_result(version)
        task_methods.decorate_initialize(self.tasks, answer, version)
        return answer

    # -- the pipeline -----------------------------------------------------------------------
    async def dispatch(self, message: dict[str, Any], channel: Channel, *,
                       session: Session | None = None, envelope: dict[str, Any] | None = None,
                       principal: Principal = ANONYMOUS,
                       facts: HTTPRequestFacts | None = None) -> dict[str, Any] | None:
        """The server's JSON-RPC response to the request ``message``, or ``None`` when it
        was cancelled (nothing is sent for it).  Raises ``AuthError`` for a caller who
        lacks the scopes the request needs, and :class:`Refused` for a request refused
        rather than answered (the rate limit, a concurrency bound, a middleware): each
        transport answers those through its own wire map."""
        request_id = message.get("id")
        method = message.get("method")
        params = message.get("params")
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str) \
                or not valid_id(request_id) or (params is not None and not isinstance(params,
                                                                                       dict)):
            return error_body(safe_id(request_id), INVALID_REQUEST, "Invalid Request")
        rules = self.server.scope_rules
        known = True
        if rules.active:
            try:
                rules.authorize(method, params, principal)
            except AuthError as exc:
                if not self.options.hide_unauthorized:
                    exc.request_id = request_id
                    raise
                known = False  # hidden is answered exactly as unknown
        opts = self.options
        ctx = Context(self.server, method, params or {}, request_id, channel, session=session,
                      envelope=envelope, listen_served=opts.serve_subscriptions_listen,
                      served_versions=opts.protocol_versions, principal=principal, http=facts)
        channel.ctx = ctx
        if session is not None:
            session.in_flight[request_id] = ctx  # in flight: never idle until it is done
            session.touch()
        # The handler runs in the caller's own task (no extra task per request); a
        # cancellation (notifications/cancelled, a client closing its stream) cancels this
        # task while the handler runs, and is absorbed here.
        task = asyncio.current_task()
        ctx.task = task
        if task is not None:
            self._running.add(task)
        CURRENT_RUNNER.set(self.sync_runner)  # where plain def handlers run (this task only)
        try:
            if method in GOVERNED:
                if self.middleware.active(opts):
                    inner = self._via_middleware if known else self._as_unknown_via_middleware
                else:
                    inner = self._handle if known else self._as_unknown
                result = await self.governance.call(ctx, inner, known=known)
            elif self.middleware.active(opts):
                result = await self.middleware.run(ctx, self._handle if known
                                                   else self._as_unknown)
            elif known:
                result = await self._handle(method, ctx.params, ctx)
            else:
                result = await self._as_unknown(method, ctx.params, ctx)
            return {"jsonrpc": "2.0", "id": request_id, "result": result}
        except asyncio.CancelledError:
            if not ctx.cancelled or task is None:
                raise
            task.uncancel()
            return None
        except Exception as exc:
            if isinstance(exc, Refused):
                raise  # refused, not answered: each transport's wire map answers it
            return {"jsonrpc": "2.0", "id": request_id,
                    "error": error_of(exc, f"handler for {method}")}
        finally:
            ctx.task = None
            if task is not None:
                self._running.discard(task)
                if not self._running and self._idle is not None:
                    self._idle.set()
            if session is not None:
                if session.in_flight.get(request_id) is ctx:
                    del session.in_flight[request_id]
                session.touch()

    async def _via_middleware(self, method: str, params: dict[str, Any],
                              ctx: Context) -> dict[str, Any]:
        return await self.middleware.run(ctx, self._handle)

    async def _as_unknown_via_middleware(self, method: str, params: dict[str, Any],
                                         ctx: Context) -> dict[str, Any]:
        return await self.middleware.run(ctx, self._as_unknown)

    async def _as_unknown(self, method: str, params: dict[str, Any],
                          ctx: Context) -> dict[str, Any]:
        """A request naming what ``hide_unauthorized`` hides from its caller: the method's
        own checks, then the answer a name nothing answers to gets (nothing is run)."""
        self.server.check_method(method, ctx.modern)
        return await as_unknown(method, params, ctx)

    def hold_slot(self, ctx: Context) -> Callable[[], None]:
        """Keep the governance slot of the call ``ctx`` is handling for the task it creates
        (see :meth:`Governance.hand_over`); the function returned releases it."""
        return self.governance.hand_over(ctx)

    async def governed_run(self, ctx: Context,
                           work: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        """A task run: ``work()`` within its tool's timeout, counted and audited."""
        async def inner(method: str, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
            return await work()

        return await self.governance.call(ctx, inner, task_run=True)

    async def _handle(self, method: str, params: dict[str, Any],
                      ctx: Context) -> dict[str, Any]:
        """The answer to a request: from the tasks machinery for task methods and
        task-augmented calls, else from the server (with lists filtered and marked)."""
        if method in task_methods.TASK_METHODS or (
                method == TOOLS_CALL and support_of(self.server, params.get("name")) is not None):
            result = await task_methods.intercept(self.tasks, method, ctx)  # None: not a task
            if result is not None:
                return result
        result = await self.server.handle(method, params, ctx)
        if method in (PING, TOOLS_CALL):
            return result
        rules = self.server.scope_rules
        if rules.active and self.options.hide_unauthorized:
            result = rules.visible(method, result, ctx.principal)
        if method in task_methods.DECORATED:
            result = task_methods.decorate(self.tasks, method, result, ctx)
        return result

    # -- shutdown -----------------------------------------------------------------------------
    async def drain(self, grace: float | None) -> bool:
        """Stop admitting requests (from now on a transport answers them "shutting down")
        and wait up to ``grace`` seconds (``None``: as long as it takes) for the requests
        and task runs in flight to finish.  True when everything finished in time; what is
        left is the caller's to cancel."""
        self.closing = True
        deadline = None if grace is None else time.monotonic() + grace
        hooks = [asyncio.ensure_future(hook(deadline)) for hook in self.drain_hooks]
        finished = await self._drain_work(deadline)
        if hooks:
            left = None if deadline is None \
                else max(0.0, deadline - time.monotonic()) + DRAIN_HOOK_MARGIN
            done, late = await asyncio.wait(hooks, timeout=left)
            for task in late:
                task.cancel()
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    log.error("a drain hook failed", exc_info=task.exception())
        return finished

    async def _drain_work(self, deadline: float | None) -> bool:
        while self._running:
            self._idle = asyncio.Event()
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), left)
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        return await self.tasks.drain(left)

    async def close(self) -> None:
        """After the drain: cancel every task run left, close the task store, stop the pool."""
        await self.tasks.close()
        self.sync_runner.shutdown()


#: Seconds a drain hook may run past the drain's deadline (it finishes what the deadline
#: cut short, such as handing the last sessions over).
DRAIN_HOOK_MARGIN = 5.0


def _less(cap: int | None, taken: int) -> int | None:
    return None if cap is None else cap - taken
