"""One request's way through the endpoint, shared by both ways of serving it.

:class:`RequestFlow` is what :class:`~tornado_mcp.transport.handler.MCPHandler` (an
ordinary ``RequestHandler``) and :class:`~tornado_mcp.transport.fast.FastExchange` (the
fast path's ``HTTPMessageDelegate``) do alike, written once over the response methods
each implements (``set_status``, ``set_header``, ``clear_header``, ``clear``, ``write``,
``flush``, ``finish``, ``respond``):

1. :meth:`~RequestFlow.begin`, as the headers arrive (Tornado's ``prepare``): the
   Host/Origin verdict, a declared body over the limit, authentication (last, and the only
   step that may be asynchronous), all before the body is read.  A refusal of a request
   whose body is small (at most :data:`DISCARD_BYTES`) waits for the body, which is read
   and discarded so the connection stays usable; one whose body is large or chunked is
   answered at once, ``Connection: close``, and its connection closed after a bounded
   linger (:func:`.seams.linger_on_finish`).
2. :meth:`~RequestFlow.receive` buffers the body within ``max_request_bytes``; a body
   crossing it is read on and discarded (at most :data:`DISCARD_BYTES` more) and then
   refused, or refused at once past that.
3. :meth:`~RequestFlow.serve` runs the HTTP method's work (:mod:`.router`, :mod:`.legacy`,
   :mod:`.cors`) and answers whatever it raises through the wire map (:mod:`.wire`), then
   finishes the response if the work did not: in the request's own task, so whatever
   wraps a request (a tracing span, say) sees it end where it began.
"""

from __future__ import annotations

import asyncio
import logging
from asyncio import Future
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from tornado.httputil import HTTPServerRequest
from tornado.iostream import StreamClosedError

from ..engine.engine import RETRY_AFTER_SHUTDOWN_S, SHUTTING_DOWN
from ..protocol import HEADER_RETRY_AFTER, INTERNAL_ERROR, INVALID_REQUEST, Refusal, jsonio
from ..protocol.auth_errors import AuthError
from ..protocol.errors import MCPError
from ..protocol.identity import ANONYMOUS, Principal
from . import cors, headers, legacy, router, seams, wire
from .auth import authenticate_request, refuse
from .request import RequestStream
from .router import LOG_TEXT
from .sse import SSE_CONTENT_TYPE, SSE_EXTRA_HEADERS, SSEChannel, frame
from .wire import Reply

if TYPE_CHECKING:
    from .core import Transport

log = logging.getLogger("tornado_mcp.transport")

#: A refused request's body of at most this many bytes is read and discarded before the
#: refusal is answered, so the client's keep-alive connection stays usable; so is a body
#: crossing ``max_request_bytes`` by at most this much.  Past it the refusal is answered
#: at once and the connection closed.
DISCARD_BYTES = 64 * 1024

#: What the endpoint answers an HTTP method it does not serve with.
NOT_ALLOWED = "Method not allowed"


class RequestFlow:
    """The endpoint's side of one request, whichever way it is served; see the module
    docstring.  The per-request state is class defaults, set per instance when it
    changes."""

    transport: Transport
    request: HTTPServerRequest
    #: True in a class whose ``get_principal`` is its own (decided per class).
    custom_principal = False
    #: This response as an SSE stream, once :meth:`open_channel` made it one.
    channel: SSEChannel | None = None
    #: Called when the client disconnects before the response is complete.
    on_disconnect: Callable[[], None] | None = None
    #: The request a ``Context`` is handling, once one is dispatched.
    request_channel: RequestStream | None = None
    #: Who is calling, as the endpoint's authentication established it.
    principal: Principal = ANONYMOUS
    #: The parsed request, whose JSON-RPC id(s) the access line names.
    log_message: Any = None
    #: Why the request was refused, for the access line (printable, bounded).
    log_reason: str | None = None
    #: A refusal decided before the body was read, answered once it is in.
    _deferred: Reply | None = None
    #: The whole body has arrived.
    _body_in = False
    #: Bytes of the body received so far (kept or discarded).
    _received = 0
    #: Past this many bytes received, a refused body is no longer read.
    _discard_until = 1 << 62
    #: The most body bytes kept: ``max_request_bytes``, or the HTTP server's own limit
    #: (set as the headers arrive; nothing is kept of a request refused before).
    _limit = 0
    #: The body is held to ``body_timeout`` (among the transport's bodies arriving).
    _timed = False
    #: The stream the request's own task waits on (that task then finishes the response).
    _awaiting: SSEChannel | None = None
    _chunks: list[bytes]

    # -- the response methods each way of serving implements (``RequestHandler``'s) ------
    def set_status(self, status_code: int, reason: str | None = None) -> None:
        raise NotImplementedError

    def set_header(self, name: str, value: Any) -> None:
        raise NotImplementedError

    def clear_header(self, name: str) -> None:
        raise NotImplementedError

    def clear(self) -> None:
        raise NotImplementedError

    def write(self, chunk: str | bytes | dict[str, Any]) -> None:
        raise NotImplementedError

    def flush(self, include_footers: bool = False) -> Future[None]:
        raise NotImplementedError

    def finish(self, chunk: str | bytes | dict[str, Any] | None = None) -> Future[None]:
        raise NotImplementedError

    def respond(self, content_type: str, body: bytes) -> None:
        """Finish with the complete ``body`` of ``content_type``."""
        raise NotImplementedError

    def get_principal(self) -> Principal | Awaitable[Principal | None] | None:
        raise NotImplementedError

    @property
    def done(self) -> bool:
        """The response is complete; nothing more may be written."""
        raise NotImplementedError

    @property
    def started(self) -> bool:
        """The response's status line and headers were sent."""
        raise NotImplementedError

    # -- 1. the headers ----------------------------------------------------------------------
    def begin(self) -> Awaitable[None] | None:
        """Checks that need no body, and a refusal answered before the body is read;
        synchronous unless the endpoint authenticates (then last, still before the body
        is read).  (Written flat: this runs for every request.)"""
        t = self.transport
        t.attach(self)
        request = self.request
        opts = t.options
        if opts.cors_allowed_origins:
            cors.add_headers(self)
        try:
            if opts.dns_rebinding_protection:
                h = request.headers
                verdict = t.rebinding.verdict(headers.value(h, "Host"),
                                              headers.value(h, "Origin"))
                if verdict is not None:
                    raise Reply(403, INVALID_REQUEST, verdict)
            # max_request_bytes, or the HTTP server's own limit when smaller (any method)
            limit = opts.max_request_bytes
            server = seams.body_limit(request.connection)
            if server is not None and server < limit:
                limit = server
            self._limit = limit
            if request.method == "POST":
                timeout = opts.body_timeout
                if timeout is not None:  # the body must be in within body_timeout
                    self._timed = True
                    t.bodies.arriving(self, timeout)
                declared = headers.value(request.headers, "Content-Length")
                if declared is not None and declared.isdigit() and int(declared) > limit:
                    raise too_large(limit)
        except Reply as reply:
            self.refuse_early(reply)
            return None
        if (t.authenticates or self.custom_principal) and request.method != "OPTIONS":
            return authenticate_request(self)
        return None

    def refuse_early(self, reply: Reply) -> None:
        """Refuse from the headers: once a small body is read, or now."""
        if reply.status != 413 and headers.declares_small_body(self.request.headers,
                                                               DISCARD_BYTES):
            self.refuse_later(reply)
        else:
            self.refuse_unread(reply)

    def refuse_later(self, reply: Reply) -> None:
        """Answer ``reply`` once the body is in (what arrives of it is discarded), or,
        should the client leave first, note it in the access line."""
        self._deferred = reply

    def refuse_unread(self, reply: Reply) -> None:
        """Answer ``reply`` before the body is read, and never read it: the connection is
        closed once the answer is sent, after a bounded linger (see :mod:`.linger`)."""
        self.transport.detach(self)
        self.deadline_met()
        seams.linger_on_finish(self.request, self.transport.linger)
        self.write_reply(reply)
        self.set_header("Connection", "close")
        self.finish()

    # -- 2. the body -------------------------------------------------------------------------
    def receive(self, chunk: bytes) -> None:
        """A piece of the body: kept within the limit; past it discarded, and refused
        once the body is in, unless more than :data:`DISCARD_BYTES` follow (then the
        connection is closed: the client is still sending, nothing can reach it)."""
        received = self._received = self._received + len(chunk)
        if self._deferred is None and received <= self._limit:
            self._chunks.append(chunk)
            return
        if self.done:
            return
        if self._deferred is None:
            self._chunks = []
            self._discard_until = self._limit + DISCARD_BYTES
            self.refuse_later(too_large(self._limit))
        elif received > self._discard_until:
            log.info("%d %s %s (%s): more than %d bytes past the refusal: connection "
                     "closed", self._deferred.status, self.request.method,
                     self.request.uri, self.request.remote_ip, DISCARD_BYTES)
            self.transport.detach(self)
            self.deadline_met()
            seams.close(self.request.connection)

    def deadline_met(self) -> None:
        """The body is in, or no longer read: its ``body_timeout`` no longer runs."""
        if self._timed:
            self._timed = False
            self.transport.bodies.complete(self)

    def take_body(self) -> bytes:
        """The request body, handed over once (the exchange lets go of it)."""
        body = b"".join(self._chunks)
        self._chunks = []
        return body

    @property
    def buffered_body_bytes(self) -> int:
        """Bytes of this request's body received and not yet handled."""
        return sum(len(c) for c in self._chunks)

    def client_left(self) -> None:
        """The client closed the connection before the response was complete."""
        if self.on_disconnect is not None:
            self.on_disconnect()
        if not self._body_in:  # mid-upload: no method will run, so let go now
            self._chunks = []
            self.transport.detach(self)
            self.deadline_met()

    # -- 3. the method ---------------------------------------------------------------------
    async def serve(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work`` once the body is in, answer what it raises, and finish."""
        self._body_in = True
        if self._timed:
            self.deadline_met()
        try:
            if self._deferred is not None:
                raise self._deferred
            if self.transport.closing:
                raise Reply(503, INTERNAL_ERROR, SHUTTING_DOWN,
                            headers={HEADER_RETRY_AFTER: str(RETRY_AFTER_SHUTDOWN_S)})
            if not self.done:
                await work()
        except (StreamClosedError, asyncio.CancelledError):
            # The peer went away, or the loop is shutting down under us.
            self.drop_channel()
        except Exception as exc:
            self.answer_failure(exc)
        if not self.done:
            self.finish()

    def answer_failure(self, exc: Exception) -> None:
        """Answer what serving the request raised, through the wire map: a
        :class:`~.wire.Reply` with its status, an authentication refusal with its
        challenge, anything else a 500 (logged, never sent)."""
        if isinstance(exc, AuthError):
            if not self.started and not self.done:
                refuse(self, exc)
            return
        if isinstance(exc, Reply):
            reply = exc
        elif isinstance(exc, MCPError):
            reply = wire.failed(exc, None, modern=False)
        else:
            log.error("unexpected error serving %s", self.request.method, exc_info=exc)
            reply = Reply(500, INTERNAL_ERROR, "Internal server error")
        self.answer(reply)

    def answer(self, reply: Reply) -> None:
        """Answer ``reply``, unless the response has begun (then it can only end)."""
        if self.done:
            return
        if self.started:
            if reply.refusal is not None:
                self.transport.count_refusal(reply.refusal)
            self.drop_channel()
            return
        self.write_reply(reply)
        self.finish()

    # -- answering ---------------------------------------------------------------------------
    def write_reply(self, reply: Reply) -> None:
        """Set the status, headers and JSON-RPC error body of ``reply`` (the caller
        finishes); counted under its refusal."""
        if reply.refusal is not None:
            self.transport.count_refusal(reply.refusal)
        self.log_reason = "".join(c if c.isprintable() else "?"
                                  for c in reply.message[:LOG_TEXT])
        self.clear()
        if self.transport.options.cors_allowed_origins:
            cors.add_headers(self)  # clear() dropped them; the page may read the error
        self.set_status(reply.status)
        self.set_header("Content-Type", "application/json")
        if reply.status == 405:  # RFC 9110: a 405 names the methods the endpoint has
            self.set_header("Allow", self.allowed_methods)
        for name, value in reply.headers.items():
            self.set_header(name, value)
        self.write(reply.body())

    def send_json(self, status: int, message: Any,
                  extra_headers: dict[str, str] | None = None) -> None:
        if status != 200:
            self.set_status(status)
        if extra_headers:
            for name, value in extra_headers.items():
                self.set_header(name, value)
        self.respond("application/json", jsonio.dumps(message))

    def send_sse(self, message: Any | None) -> None:
        """Answer with a complete SSE response: one event, or none (``None``)."""
        for name, value in SSE_EXTRA_HEADERS:
            self.set_header(name, value)
        self.respond(SSE_CONTENT_TYPE,
                     frame(jsonio.dumps(message)) if message is not None else b"")

    def accepted(self) -> None:
        self.set_status(202)
        self.finish()

    @property
    def allowed_methods(self) -> str:
        """The ``Allow`` of a 405: GET (the session stream) and DELETE (ending a session)
        exist only where legacy sessions do."""
        t = self.transport
        return "GET, POST, DELETE" if t.serves_legacy and not t.options.stateless else "POST"

    def single_header(self, name: str) -> str | None:
        return headers.single(self.request.headers, name)

    def request_stream(self) -> RequestStream:
        """The request a ``Context`` talks through (one per HTTP request, batches too)."""
        if self.request_channel is None:
            self.request_channel = RequestStream(self)
        return self.request_channel

    def open_channel(self, keepalive: Callable[[], float | None]) -> SSEChannel:
        """Make this response an SSE stream, bounded by the live options."""
        opts = self.transport.options
        self.channel = SSEChannel(self, lambda: opts.max_stream_queue, keepalive,
                                  self.transport.count_refusal,
                                  lambda: opts.stream_stall_timeout)
        return self.channel

    async def stream(self, channel: SSEChannel) -> None:
        """Wait, in the request's own task, until ``channel`` has ended, then finish the
        response here (where it began, for whatever wraps the request)."""
        self._awaiting = channel
        try:
            await channel.ended
        finally:
            self._awaiting = None
        self.end_stream(channel)

    def stream_ended(self, channel: SSEChannel) -> None:
        """``channel`` ended gracefully: finish the response now, unless the request's own
        task waits on the stream (it finishes it, see :meth:`stream`)."""
        if self._awaiting is not channel:
            self.end_stream(channel)

    def end_stream(self, channel: SSEChannel) -> None:
        if self.done:
            channel.finished(_over())
        else:
            channel.finished(self.finish())

    def drop_channel(self) -> None:
        """Abort this response's SSE stream, if it has one (the peer is gone)."""
        if self.channel is not None:
            self.channel.abort()

    def cancel_request(self) -> None:
        """Cancel the handler running for this request, if any (shutdown, disconnect)."""
        if self.request_channel is not None:
            self.request_channel.cancel()

    def forget(self) -> None:
        """The request is over: let go of what points back at this exchange, so nothing
        waits for the garbage collector."""
        self.transport.detach(self)
        self.on_disconnect = self.request_channel = self.channel = None

    # -- the work of each HTTP method ----------------------------------------------------------
    def post_work(self) -> Awaitable[None]:
        return router.post(self)

    def get_work(self) -> Awaitable[None]:
        return legacy.get(self)

    def delete_work(self) -> Awaitable[None]:
        return legacy.delete(self)

    def options_work(self) -> Awaitable[None]:
        return cors.preflight(self)

    @staticmethod
    async def not_allowed() -> None:
        raise Reply(405, INVALID_REQUEST, NOT_ALLOWED)

    def access_details(self) -> str:
        """What the access line adds for an MCP request: its JSON-RPC id(s) and why it
        was refused, if it was (``" id=7 [Not Acceptable: ...]"``)."""
        details = ""
        if (log_id := router.log_id(self.log_message)) is not None:
            details += f" id={log_id}"
        if self.log_reason is not None:
            details += f" [{self.log_reason}]"
        return details


def _over() -> Future[None]:
    fut: Future[None] = asyncio.get_running_loop().create_future()
    fut.set_result(None)
    return fut


def too_large(limit: int) -> Reply:
    return wire.bound_refused(Refusal.MAX_REQUEST_BYTES, INVALID_REQUEST,
                              f"Payload too large: request body exceeds {limit} bytes")
