"""One stdio client: :class:`StdioConnection` reads lines, runs requests through the
engine, and writes responses, notifications and listen streams' frames as lines (see
:mod:`tornado_mcp.stdio`)."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..engine.engine import SHUTTING_DOWN, Engine, auth_error_body
from ..engine.listen import admit, answer_id, close_stream, open_stream
from ..engine.listen_index import LIST_CHANGED, ListenStream
from ..engine.middleware import Middleware
from ..options import Options
from ..protocol import (
    INITIALIZE,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LEGACY_VERSIONS,
    META_VERSION,
    MODERN_VERSIONS,
    PARSE_ERROR,
    PING,
    SUBSCRIPTIONS_LISTEN,
    UNSUPPORTED_PROTOCOL_VERSION,
    jsonio,
)
from ..protocol.auth_errors import AuthError
from ..protocol.errors import MCPError, Refused
from ..protocol.identity import ANONYMOUS, Principal
from ..protocol.jsonrpc import Kind, classify, error_body, safe_id, valid_id
from ..protocol.shapes import ENVELOPE, load
from ..server.context_ref import HoldsContext
from ..server.outbound import client_result, request_message
from ..server.server import Server
from ..server.session import Session
from ..sync.handlers import call_on_loop, worker_loop

log = logging.getLogger("tornado_mcp.stdio")

#: The longest line (one JSON-RPC message) read from standard input, by default.
MAX_LINE_BYTES = 4 * 1024 * 1024
#: Requests handled at once, by default; more are answered with an error.
MAX_IN_FLIGHT = 100


class _Channel(HoldsContext):
    """A request's way back to the client: the one output stream."""

    __slots__ = ("cancelled", "conn")

    def __init__(self, conn: StdioConnection) -> None:
        super().__init__()
        self.conn = conn
        #: Cancelled before its handler started (read in the same chunk as the request).
        self.cancelled = False

    def emit(self, message: dict[str, Any]) -> bool:
        if worker_loop() is not None:  # from a plain handler's thread: on the loop
            return call_on_loop(self.emit, message)
        return self.conn.send(message)

    async def send_request(self, method: str, params: dict[str, Any] | None,
                           timeout: float | None) -> dict[str, Any]:
        return await self.conn.request(method, params, timeout)

    def notify_resources_updated(self, uri: str) -> None:
        """Once to the listen streams and the tracked subscribers, and once to this
        request's session (the pipe) if that did not reach it."""
        if worker_loop() is not None:
            return call_on_loop(self.notify_resources_updated, uri)
        server = self.conn.server
        server.notify_resources_updated(uri)
        ctx = self.ctx
        session = ctx.session if ctx is not None else None
        if session is not None and not server.tracks(session, uri):
            session.notify_resources_updated(uri)

    def close_stream(self) -> bool:
        return False  # stdio has no stream to close and resume

    def cancel(self) -> None:
        self.cancelled = True
        ctx = self.ctx
        if ctx is not None:
            ctx.cancel()

    @property
    def requests_unavailable(self) -> str | None:
        """Server-to-client requests always have the way back over stdio."""
        return None


class _ListenChannel:
    """A listen stream's share of the pipe: its messages written as lines, never queued."""

    __slots__ = ("_done", "conn")

    def __init__(self, conn: StdioConnection) -> None:
        self.conn = conn
        self._done: asyncio.Future[None] = conn.loop.create_future()

    @property
    def closed(self) -> bool:
        return self._done.done()

    @property
    def done(self) -> asyncio.Future[None]:
        return self._done

    @property
    def queue_depth(self) -> int:
        return 0

    def send(self, message: bytes, key: Any = None) -> bool:
        if self.closed:
            return False
        self.conn.write_line(message)
        return True

    def close(self, final: bytes | None = None) -> None:
        if not self.closed:
            if final is not None:
                self.conn.write_line(final)
            self._done.set_result(None)

    def abort(self) -> None:
        if not self.closed:
            self._done.set_result(None)


class StdioConnection:
    """One client on a pair of byte streams: reads lines, dispatches, writes lines.

    ``write`` takes one encoded line (newline included).  Feed input with :meth:`feed`
    (or let :func:`serve` do it) and call :meth:`close` at end of input.  ``principal``
    is the caller every request is made by; ``options`` (or option keywords) are the
    :class:`~tornado_mcp.Options` that bound it; ``middleware`` runs after the
    server's own.
    """

    def __init__(self, server: Server, write: Callable[[bytes], None], *,
                 principal: Principal = ANONYMOUS, options: Options | None = None,
                 middleware: Sequence[Middleware] = (), max_line_bytes: int = MAX_LINE_BYTES,
                 max_in_flight: int = MAX_IN_FLIGHT, request_timeout: float | None = None,
                 **option_values: Any) -> None:
        if options is not None and option_values:
            raise TypeError("pass either options= or option keywords, not both")
        self.server = server
        self.principal = principal
        self.options = options if options is not None else Options(**option_values)
        self.engine = Engine(server, self.options, middleware=middleware)
        self._write = write
        self.max_line_bytes = max_line_bytes
        self.max_in_flight = max_in_flight
        self.request_timeout = request_timeout
        self.session: Session | None = None
        #: The requests running now, by id: their channels (to cancel them).
        self.in_flight: dict[Any, _Channel] = {}
        #: Ids of the requests admitted and not yet answered, counted from when they are
        #: read (several read at once are admitted before any handler starts).
        self._admitted: set[Any] = set()
        self._listens: dict[Any, tuple[ListenStream, _ListenChannel]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._buffer = bytearray()
        self._discarding = False
        self.loop = asyncio.get_running_loop()
        server.add_sink(self)

    # -- output -----------------------------------------------------------------------------
    def send(self, message: dict[str, Any]) -> bool:
        self._write(jsonio.dumps(message) + b"\n")
        return True

    def write_line(self, message: bytes) -> None:
        """Write one encoded message (a listen stream's) as one line."""
        self._write(message + b"\n")

    def publish(self, method: str, params: dict[str, Any] | None) -> None:
        """Server-wide notifications, from any thread: to the listen streams that asked,
        and list changes to the legacy session too (as its GET stream would get them)."""
        def deliver() -> None:
            self.engine.listen_index.publish(method, params)
            if self.session is not None and method in LIST_CHANGED:
                message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
                if params:
                    message["params"] = params
                self.send(message)
        self.loop.call_soon_threadsafe(deliver)

    def _session_notify(self, session: Session, method: str,
                        params: dict[str, Any] | None) -> bool:
        def deliver() -> None:
            message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
            if params is not None:
                message["params"] = params
            self.send(message)
        self.loop.call_soon_threadsafe(deliver)
        return True

    async def request(self, method: str, params: dict[str, Any] | None,
                      timeout: float | None) -> dict[str, Any]:
        """Send a request to the client and wait for its result (legacy era)."""
        request_id = f"s-{next(self._ids)}"
        fut: asyncio.Future[dict[str, Any]] = self.loop.create_future()
        self._pending[request_id] = fut
        self.send(request_message(request_id, method, params))
        wait = timeout if timeout is not None else (
            self.request_timeout if self.request_timeout is not None
            else self.options.server_to_client_request_timeout)
        return await client_result(fut, request_id, method, wait, self.send,
                                   lambda: self._pending.pop(request_id, None))

    # -- input ------------------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Take bytes read from the input; complete lines are dispatched at once."""
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                rest = data[start:]
                if self._discarding:
                    return
                if len(self._buffer) + len(rest) > self.max_line_bytes:
                    self._too_long()
                    return
                self._buffer += rest
                return
            part = data[start:end]
            start = end + 1
            if self._discarding:
                self._discarding = False
                continue
            if len(self._buffer) + len(part) > self.max_line_bytes:
                self._buffer.clear()
                self.send(error_body(None, INVALID_REQUEST, self._too_long_message()))
                continue
            line = bytes(self._buffer + part) if self._buffer else part
            self._buffer.clear()
            if line.strip():
                self._line(line)

    def _too_long_message(self) -> str:
        return f"Invalid Request: message exceeds {self.max_line_bytes} bytes"

    def _too_long(self) -> None:
        """The line being read is over the bound: drop it, skip the rest of it."""
        self._buffer.clear()
        self._discarding = True
        self.send(error_body(None, INVALID_REQUEST, self._too_long_message()))

    def _line(self, line: bytes) -> None:
        try:
            message = jsonio.loads(line)
        except (jsonio.JSONDecodeError, jsonio.JSONNestingError):
            self.send(error_body(None, PARSE_ERROR, "Parse error: Invalid JSON"))
            return
        if not isinstance(message, dict):
            self.send(error_body(None, INVALID_REQUEST,
                                 "Invalid Request: a line must hold one JSON-RPC message"))
            return
        kind = classify(message)
        lifecycle = self.engine.lifecycle
        if kind is Kind.REQUEST:
            self._request(message, len(line))
        elif kind is Kind.NOTIFICATION:
            lifecycle.client_notification(message["method"], message.get("params"),
                                          self.session, self._cancel)
        elif kind is Kind.RESPONSE:
            lifecycle.client_response(message, self.session, self._pending)
        else:
            self.send(error_body(None, INVALID_REQUEST, "Invalid Request"))

    def _cancel(self, request_id: Any) -> bool:
        """``notifications/cancelled`` for a request outside the session (or a listen)."""
        listen = self._listens.pop(request_id, None)
        if listen is not None:
            close_stream(self.engine, listen[0])
            listen[1].abort()
            return True
        channel = self.in_flight.get(request_id)
        if channel is not None:
            channel.cancel()
        return channel is not None

    def _request(self, message: dict[str, Any], size: int) -> None:
        request_id = message.get("id")
        params = message.get("params")
        if message.get("jsonrpc") != "2.0" or not valid_id(request_id) or \
                (params is not None and not isinstance(params, dict)):
            self.send(error_body(safe_id(request_id), INVALID_REQUEST, "Invalid Request"))
            return
        if self.engine.closing:
            self.send(error_body(request_id, INTERNAL_ERROR, SHUTTING_DOWN))
            return
        if request_id in self._admitted or request_id in self._listens:
            self.send(error_body(request_id, INVALID_REQUEST,
                                 "Invalid Request: request id is already in flight"))
            return
        if len(self._admitted) >= self.max_in_flight:
            self.send(error_body(request_id, INVALID_REQUEST, "Invalid Request: more than "
                                 f"{self.max_in_flight} requests in flight"))
            return
        self._admitted.add(request_id)
        channel = self.in_flight[request_id] = _Channel(self)

        def done() -> None:
            self._admitted.discard(request_id)
            if self.in_flight.get(request_id) is channel:
                del self.in_flight[request_id]
        self._spawn(self._run(message, params or {}, channel, size), done)

    def _spawn(self, work: Awaitable[Any], done: Callable[[], None] | None = None) -> None:
        async def run() -> None:
            await work
        task = self.loop.create_task(run())
        if done is not None:
            task.add_done_callback(lambda _: done())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, message: dict[str, Any], params: dict[str, Any],
                   channel: _Channel, size: int) -> None:
        if channel.cancelled:
            return  # cancelled before it started: never run, never answered
        request_id = message["id"]
        method = message["method"]
        meta = params.get("_meta")
        envelope = None
        if isinstance(meta, dict) and META_VERSION in meta:
            if meta[META_VERSION] not in MODERN_VERSIONS:
                self.send(error_body(request_id, UNSUPPORTED_PROTOCOL_VERSION,
                                     "Unsupported protocol version"))
                return
            try:
                envelope = load(ENVELOPE, meta, "missing or invalid `_meta` envelope")
            except MCPError as exc:
                self.send(error_body(request_id, INVALID_PARAMS, exc.message))
                return
        elif method == INITIALIZE:
            await self._initialize(message, size)
            return
        elif self.session is None and method != PING:
            self.send(error_body(request_id, INVALID_REQUEST,
                                 "Invalid Request: send initialize first"))
            return
        try:
            if envelope is not None and method == SUBSCRIPTIONS_LISTEN \
                    and self.options.serve_subscriptions_listen:
                await self._listen(message, params)
                return
            session = None if envelope is not None else self.session
            response = await self.engine.dispatch(message, channel, session=session,
                                                  envelope=envelope, principal=self.principal)
        except AuthError as exc:  # a caller without the scopes this request needs
            self.engine.count_refusal(exc.kind)
            response = auth_error_body(request_id, exc)
        except MCPError as exc:  # refused (a bound, the rate limit, a middleware), in-band
            if isinstance(exc, Refused) and exc.refusal is not None:
                self.engine.count_refusal(exc.refusal)
            answer = answer_id(message) if method == SUBSCRIPTIONS_LISTEN else request_id
            response = error_body(answer, exc.code, exc.message, exc.data)
        if response is not None:
            self.send(response)

    async def _listen(self, message: dict[str, Any], params: dict[str, Any]) -> None:
        admission = admit(self.engine, message, params, self.principal)
        channel = _ListenChannel(self)
        stream = open_stream(self.engine, admission, channel)
        if stream is None:
            return
        self._listens[admission.listen_id] = (stream, channel)
        try:
            await channel.done
        finally:
            close_stream(self.engine, stream)
            self._listens.pop(admission.listen_id, None)

    async def _initialize(self, message: dict[str, Any], size: int) -> None:
        """``initialize``: answered by the engine, as over HTTP; it replaces the pipe's
        session once admitted."""
        versions = [v for v in LEGACY_VERSIONS if v in self.options.protocol_versions]

        async def open_session(version: str, params: dict[str, Any]) -> Session:
            if self.session is not None:
                self.session.notifier = None
            session = Session("stdio", version, params.get("clientInfo"),
                              params.get("capabilities"), jsonio.count_values(params))
            session.principal = self.principal
            session.notifier = self._session_notify
            self.session = session
            return session

        try:
            response, _ = await self.engine.lifecycle.initialize(
                message, versions=versions, principal=self.principal, size=size,
                open_session=open_session)
        except Refused as exc:
            if exc.refusal is not None:
                self.engine.count_refusal(exc.refusal)
            response = error_body(message.get("id"), exc.code, exc.message, exc.data)
        self.send(response)

    async def close(self) -> None:
        """End of input, stdio's SIGTERM: the client can answer nothing more, so the
        server's requests to it fail at once; requests and task runs in flight get
        ``shutdown_grace`` seconds to finish and be answered; then listen streams get
        their final result and what is left is cancelled."""
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(MCPError(INTERNAL_ERROR, "The client closed its input"))
        await self.engine.drain(self.options.shutdown_grace)
        for stream, listen in list(self._listens.values()):
            close_stream(self.engine, stream)
            listen.close(stream.final_result())
        for channel in list(self.in_flight.values()):
            channel.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5.0)
        await self.engine.close()
        self.server.remove_sink(self)
        if self.session is not None:
            self.session.notifier = None
