"""The :class:`Transport`: one Streamable HTTP endpoint over an
:class:`~tornado_mcp.engine.engine.Engine`, and the interface its handlers use.

The engine owns what is not HTTP (sessions, listen streams, tasks, middleware, the
sync-handler pool, the refusal counters); the transport adds what is: GET streams,
resumable streams and their event store, linger, forwarding, authentication, and the
:class:`~tornado_mcp.options.Options` that bound them all.  Its handlers
(:class:`~tornado_mcp.transport.handler.MCPHandler` and the fast path's
:class:`~tornado_mcp.transport.fast.FastExchange`, both a
:class:`~tornado_mcp.transport.flow.RequestFlow`) serve each HTTP request through the
methods in the "for the handlers" section and never touch its private state.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import tornado.web
from tornado.ioloop import IOLoop, PeriodicCallback
from tornado.iostream import IOStream

from ..auth.resource import OAuthResource
from ..engine.engine import Engine
from ..engine.listen_index import LIST_CHANGED, change_key
from ..engine.middleware import Middleware
from ..introspection import AuditRecord, ClusterSnapshot, Snapshot
from ..options import Options
from ..protocol import LEGACY_VERSIONS, MODERN_VERSIONS, Refusal, jsonio
from ..protocol.identity import ANONYMOUS, Principal
from ..server.channels import StreamChannel
from ..server.server import Server
from ..server.session import Session
from ..tasks.store import TaskStore
from .auth import ProtectedResourceMetadataHandler
from .body_deadline import BodyDeadlines
from .event_store import EventStore, MemoryEventStore
from .fast import FastRoute
from .gate import Authenticate
from .handler import MCPHandler
from .health import probe_routes
from .linger import linger_close
from .resume import Resumption
from .security import RebindingGuard
from .snapshot import take_snapshot

if TYPE_CHECKING:
    from .flow import RequestFlow

#: How often idle sessions are looked for, in milliseconds.
REAP_INTERVAL_MS = 5000


class ClusterMember(Protocol):
    """What a transport asks of the cluster it belongs to: a Protocol because the cluster
    (:class:`tornado_mcp.cluster.Cluster`, a layer above) sets itself here, and the
    transport may not import it."""

    session_prefix: str

    async def find_session(self, h: RequestFlow, session_id: str,
                           body: bytes | None) -> Session | None: ...

    async def reserve(self, kind: str) -> bool: ...

    def remote_count(self, kind: str) -> int: ...

    def admitted(self) -> None: ...

    def snapshot(self) -> ClusterSnapshot:
        """The cluster's public view (the dashboard shows it)."""


class Transport:
    """Serves one :class:`~tornado_mcp.Server` over Streamable HTTP, both eras on one
    endpoint::

        transport = Transport(server, max_sessions=1000)
        app = tornado.web.Application([*transport.routes("/mcp"), ...])

    Keyword arguments are :class:`~tornado_mcp.options.Options` (or pass
    ``options=``); ``event_store`` keeps the events of resumable streams (a bounded
    :class:`~tornado_mcp.transport.event_store.MemoryEventStore` unless given); ``middleware`` runs
    around every request (:mod:`tornado_mcp.engine.middleware`); ``task_store`` is where tasks
    are kept (in-process by default, see :mod:`tornado_mcp.tasks`).  Mount it with
    :meth:`routes` or :meth:`mount`, stop it with :meth:`close`, and read what it holds
    with :meth:`snapshot`.  Everything runs on the application's IOLoop; the notify
    methods of :class:`~tornado_mcp.Server` and :class:`~tornado_mcp.Session` may be
    called from other threads.
    """

    def __init__(self, server: Server, options: Options | None = None, *,
                 event_store: EventStore | None = None, middleware: Sequence[Middleware] = (),
                 task_store: TaskStore | None = None, authenticate: Authenticate | None = None,
                 oauth: OAuthResource | None = None, **option_values: Any) -> None:
        if options is not None and option_values:
            raise TypeError("pass either options= or option keywords, not both")
        self.server = server
        #: The host app's authentication hook: ``fn(handler)`` -> Principal or ``None``
        #: (sync or async); see :mod:`tornado_mcp.auth`.
        self.authenticate = authenticate
        #: The OAuth 2.1 resource server configuration, when the endpoint takes tokens.
        self.oauth = oauth
        #: Whether requests are authenticated at all (else it costs nothing).
        self.authenticates = authenticate is not None or oauth is not None
        self.options = options if options is not None else Options(**option_values)
        #: The request pipeline and the runtime state that is not HTTP.
        self.engine = engine = Engine(server, self.options, middleware=middleware,
                                      task_store=task_store, remote_count=self.remote_count,
                                      on_session_removed=self._session_removed)
        self.listen_index = engine.listen_index
        self.sessions = engine.sessions
        self.refusals: Counter[str] = engine.refusals
        self.rate_limit = engine.rate_limit
        self.middleware = engine.middleware
        self.sync_runner = engine.sync_runner
        #: Tasks: tool calls answered with a handle the client polls.
        self.tasks = engine.tasks
        self.requests_total = 0
        self.started_at = time.time()
        self.rebinding = RebindingGuard(self.options)
        versions = self.options.protocol_versions  # not live: fixed for the transport's life
        #: The eras this endpoint serves, and its modern versions in preference order.
        self.serves_legacy = any(v in versions for v in LEGACY_VERSIONS)
        self.serves_modern = any(v in versions for v in MODERN_VERSIONS)
        self.modern_versions = [v for v in MODERN_VERSIONS if v in versions]
        self._loop: IOLoop | None = None
        self._loop_thread: int | None = None
        self._reaper: PeriodicCallback | None = None
        self._handlers: set[RequestFlow] = set()
        #: Request bodies still arriving, held to ``body_timeout``.
        self.bodies = BodyDeadlines()
        self._lingering: set[asyncio.Future[None]] = set()
        #: The cluster this transport belongs to (set by :meth:`Cluster.start`), or None.
        self.cluster: ClusterMember | None = None
        #: Resumable legacy streams and the event store behind them (``resumable_streams``).
        self.resumption = Resumption(self, event_store or MemoryEventStore())
        server.add_sink(self)

    # -- mounting ---------------------------------------------------------------------------
    def routes(self, path: str = "/mcp", handler: type[MCPHandler] = MCPHandler, *,
               fast: bool = False) -> list[tuple[Any, ...]]:
        """URL rules for ``tornado.web.Application`` serving MCP at ``path`` (and, for an
        OAuth resource, its RFC 9728 metadata at the well-known path for ``path``).

        The endpoint is ``handler`` (:class:`MCPHandler`, or a subclass: one overriding
        ``get_principal`` to use the application's login, say), an ordinary handler of the
        application: its settings, transforms, ``log_function`` and instrumentation see
        every MCP request.  ``fast=True`` serves it on the fast path instead
        (:mod:`~tornado_mcp.transport.fast`), which skips those, for an application that
        wants the speed more; an endpoint that needs the ``RequestHandler`` API (a
        ``handler`` of its own, an ``authenticate=`` hook) keeps the ordinary rule.
        """
        kwargs = {"transport": self}
        rules: list[tuple[Any, ...]] = []
        if fast and handler is MCPHandler and self.authenticate is None:
            rules.append((path, FastRoute(self)))
        rules.append((path, handler, kwargs))
        if self.oauth is not None:
            rules.append((self.oauth.metadata_path(path), ProtectedResourceMetadataHandler,
                          {"oauth": self.oauth, "path": path}))
        return rules

    def mount(self, app: tornado.web.Application, path: str = "/mcp",
              host_pattern: str = r".*", handler: type[MCPHandler] = MCPHandler, *,
              fast: bool = False) -> None:
        """Add the MCP endpoint to an existing application (see :meth:`routes`)."""
        app.add_handlers(host_pattern, self.routes(path, handler, fast=fast))

    # -- for the handlers --------------------------------------------------------------------
    def attach(self, handler: RequestFlow) -> None:
        """A request has started: bind to its IOLoop (the first time) and track it, so
        :meth:`close` can cancel it."""
        if self._loop is None:
            self._start()
        self._handlers.add(handler)

    def detach(self, handler: RequestFlow) -> None:
        """The request is over, or no longer ours to cancel (its body deadline, if it had
        one, is its own to let go of: :meth:`BodyDeadlines.complete`)."""
        self._handlers.discard(handler)

    def linger(self, stream: IOStream) -> None:
        """Close a connection taken from Tornado once its answer is sent, without a reset
        (see :mod:`~tornado_mcp.transport.linger`); :meth:`close` ends what is left."""
        task = asyncio.ensure_future(linger_close(stream))
        self._lingering.add(task)
        task.add_done_callback(self._lingering.discard)

    @property
    def lingering(self) -> int:
        """Refused connections still draining their peer's body."""
        return len(self._lingering)

    def use(self, middleware: Middleware) -> None:
        """Add ``middleware`` at the end of the chain (innermost, nearest the server)."""
        self.middleware.user.append(middleware)

    def count_refusal(self, kind: Refusal) -> None:
        self.refusals[kind] += 1

    @property
    def closing(self) -> bool:
        """Shutting down: new requests are answered 503 with ``Retry-After``."""
        return self.engine.closing

    def host_origin_verdict(self, host_header: str | None, origin: str | None) -> str | None:
        """The refusal message for this Host/Origin pair, or ``None`` when it is allowed.

        The DNS-rebinding check of the MCP endpoint, for other handlers mounted beside it
        (the dashboard uses it) to apply the same rule.
        """
        return self.rebinding.verdict(host_header, origin)

    def open_session(self, version: str, params: dict[str, Any], principal: Principal = ANONYMOUS,
                     session_id: str | None = None) -> Session | None:
        """A new legacy session for an ``initialize`` with ``params`` by ``principal`` (or, by
        its id, one a process of the cluster handed over); ``None`` at ``max_sessions``."""
        prefix = self.cluster.session_prefix if self.cluster is not None else ""
        session = Session(session_id or prefix + self.sessions.new_id(), version,
                          params.get("clientInfo"), params.get("capabilities"),
                          jsonio.count_values(params))
        session.principal = principal
        if not self.sessions.admit(session):
            return None
        session.notifier = self._session_notify
        self.admitted()
        return session

    def admitted(self) -> None:
        """A session or a listen stream was admitted: with cluster-wide limits the other
        processes count it at once, not at the next heartbeat."""
        if self.cluster is not None:
            self.cluster.admitted()

    def remote_count(self, kind: str) -> int:
        """``"sessions"`` or ``"listen_streams"`` the rest of the cluster holds, counted
        against this process's limits when ``cluster_wide_limits`` is on (else 0)."""
        return self.cluster.remote_count(kind) if self.cluster is not None else 0

    async def reserve(self, kind: str) -> bool:
        """Before admitting a ``"sessions"`` or ``"listen_streams"``: with cluster-wide
        limits, a place reserved in Redis (admit in the same IOLoop iteration)."""
        return await self.cluster.reserve(kind) if self.cluster is not None else True

    # -- loop affinity ----------------------------------------------------------------------
    def _start(self) -> None:
        self._loop = IOLoop.current()
        self._loop_thread = threading.get_ident()
        self.bodies.start(self._loop)
        if not self.options.stateless:
            self._reaper = PeriodicCallback(self._reap, REAP_INTERVAL_MS)
            self._reaper.start()

    def _reap(self) -> None:
        if self.options.session_idle_timeout is not None:
            self.sessions.reap()
        self.resumption.store.prune()

    def _on_loop(self, fn: Callable[[], Any]) -> bool:
        """Run ``fn`` on the IOLoop: now if we are on it, else soon. False if never started."""
        if self._loop is None:
            return False
        if threading.get_ident() == self._loop_thread:
            fn()
        else:
            self._loop.add_callback(fn)
        return True

    # -- notifications ----------------------------------------------------------------------
    def publish(self, method: str, params: dict[str, Any] | None) -> None:
        """Deliver a server-wide notification (the :class:`~tornado_mcp.Server` calls this)."""
        self._on_loop(lambda: self._publish_now(method, params))

    def _publish_now(self, method: str, params: dict[str, Any] | None) -> int:
        delivered = self.listen_index.publish(method, params)
        if method in LIST_CHANGED:
            data = jsonio.dumps({"jsonrpc": "2.0", "method": method,
                                 **({"params": params} if params else {})})
            key = change_key(method, params)
            for session in self.sessions:
                channel = session.get_channel
                if channel is not None and channel.send(data, key):
                    delivered += 1
        return delivered

    def _session_notify(self, session: Session, method: str,
                        params: dict[str, Any] | None) -> bool:
        if threading.get_ident() != self._loop_thread:
            def later() -> None:
                self._session_notify(session, method, params)
            return self._on_loop(later)
        channel = session.get_channel
        if channel is None:
            return False
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return channel.send(jsonio.dumps(message), change_key(method, params))

    def _session_removed(self, session: Session) -> None:
        """The HTTP side of a session's end (the engine cancels its work)."""
        self.resumption.forget(session)
        if session.get_channel is not None:
            session.get_channel.close()
            session.get_channel = None

    # -- administration ---------------------------------------------------------------------
    def end_session(self, session_id: str) -> bool:
        """End a legacy session now (its id then gets 404). Call on the IOLoop."""
        session = self.sessions.get(session_id)
        return session is not None and self.sessions.remove(session)

    async def close_stream(self, stream_id: str) -> bool:
        """Close one listen stream gracefully: it receives its final result first."""
        stream = self.listen_index.get(stream_id)
        if stream is None:
            return False
        self.listen_index.remove(stream)
        stream.channel.close(stream.final_result())
        try:
            await asyncio.wait_for(asyncio.shield(stream.channel.done), 5.0)
        except TimeoutError:
            stream.channel.abort()  # the peer is not reading: drop it
        return True

    async def close(self, timeout: float = 5.0) -> None:
        """Shut down gracefully, in order: new requests are refused at once (503 with
        ``Retry-After``); requests and task runs in flight get up to ``shutdown_grace``
        seconds to finish; then every acknowledged listen stream gets its final result,
        every session ends (its GET stream closed, what still runs in it cancelled), and
        nothing is left running.  ``timeout`` bounds the wait for streams' last bytes.
        """
        if self.engine.closing:
            return
        await self.engine.drain(self.options.shutdown_grace)
        if self._reaper is not None:
            self._reaper.stop()
            self._reaper = None
        self.bodies.stop()
        channels: list[StreamChannel] = []
        for stream in self.listen_index:
            self.listen_index.remove(stream)
            stream.channel.close(stream.final_result())
            channels.append(stream.channel)
        for session in self.sessions:
            if session.get_channel is not None:
                channels.append(session.get_channel)
            self.sessions.remove(session)
        for handler in list(self._handlers):
            handler.cancel_request()
        if channels:
            await asyncio.wait([asyncio.ensure_future(c.done) for c in channels],
                               timeout=timeout)
            for channel in channels:
                channel.abort()  # a peer that did not take its last bytes is dropped
        for task in list(self._lingering):  # refusals still draining a peer's body
            task.cancel()
        if self._lingering:
            await asyncio.wait(list(self._lingering), timeout=timeout)
        await self.engine.close()
        await self.resumption.store.close()  # a remote store sends what it queued
        self.server.remove_sink(self)

    def snapshot(self, sessions: bool = True, streams: bool = True,
                 stream_uris: bool = False) -> Snapshot:
        """A consistent, read-only picture of what the transport holds right now: its
        totals, limits and refusals, and (unless turned off) one row per session and per
        listen stream (with each stream's URIs when ``stream_uris``)."""
        return take_snapshot(self, sessions, streams, stream_uris)

    def audit(self, principal: str | None = None, tool: str | None = None,
              outcome: str | None = None, limit: int = 100) -> tuple[AuditRecord, ...]:
        """The call audit trail, newest first, filtered (see docs/governance.md)."""
        return self.engine.governance.trail.query(principal, tool, outcome, limit)

    def health_routes(self, healthz: str = "/healthz", readyz: str = "/readyz") -> list[Any]:
        """The liveness and readiness probes (see :mod:`~tornado_mcp.transport.health`)."""
        return probe_routes(self, healthz, readyz)

    @property
    def in_progress(self) -> int:
        """HTTP requests being served right now."""
        return len(self._handlers)

    @property
    def buffered_body_bytes(self) -> int:
        """Bytes of request bodies received and not yet handled, over all requests."""
        return sum(h.buffered_body_bytes for h in self._handlers)

