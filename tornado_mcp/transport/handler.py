"""The Tornado side of the endpoint: :class:`MCPHandler`.

One instance serves one HTTP request.  It owns what is HTTP about it: the hooks Tornado
calls, the body limit and the refusals answered before the body is read, choosing the
protocol era of a POST, and writing responses (JSON, SSE, errors).  What each era does
with a request lives in :mod:`.legacy` and :mod:`.modern`; state shared between requests
lives on the :class:`~tornado_mcp.transport.core.Transport`.
"""

from __future__ import annotations

import asyncio
import logging
from asyncio import Future
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import tornado.web
from tornado.iostream import StreamClosedError
from tornado.log import access_log

from ..engine.engine import RETRY_AFTER_SHUTDOWN_S, SHUTTING_DOWN
from ..protocol import HEADER_RETRY_AFTER, INTERNAL_ERROR, INVALID_REQUEST, Refusal, jsonio
from ..protocol.auth_errors import AuthError
from ..protocol.identity import ANONYMOUS, Principal
from . import cors, direct, headers, legacy, router
from .auth import authenticate_request, refuse
from .gate import default_principal
from .lean import LeanHandler, body_unread, log_level
from .linger import raw_response
from .reply import Reply, error_body
from .request import RequestStream
from .router import LOG_TEXT
from .sse import SSE_CONTENT_TYPE, SSE_EXTRA_HEADERS, SSEChannel, frame

if TYPE_CHECKING:
    from .exchange import Endpoint

log = logging.getLogger("tornado_mcp.transport")

#: The HTTP server may read this much past ``max_request_bytes`` before it gives up on a
#: body itself; ours refuses first, with a JSON-RPC error.
BODY_SLACK = 256 * 1024

#: A request refused from its headers alone whose declared body is at most this long has
#: the body read and discarded, so its keep-alive connection stays usable; a longer (or
#: chunked) body is not read: the refusal says ``Connection: close`` and the connection
#: is closed after a bounded linger.
DISCARD_BYTES = 64 * 1024


@tornado.web.stream_request_body
class MCPHandler(LeanHandler):
    """The MCP endpoint. One instance per HTTP request; state lives on the transport."""

    SUPPORTED_METHODS = ("GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD")

    transport: Endpoint
    #: True in a subclass that overrides :meth:`get_principal` (set by ``__init_subclass__``).
    custom_principal = False
    #: This response as an SSE stream, once :meth:`open_channel` made it one.
    channel: SSEChannel | None = None
    #: Called when the client disconnects before the response is complete.
    on_disconnect: Callable[[], None] | None = None
    #: The request a ``Context`` is handling, once one is dispatched.
    exchange: RequestStream | None = None
    #: Who is calling, as the endpoint's authentication established it.
    principal: Principal = ANONYMOUS
    #: A refusal decided from the headers, answered once the (small) body is read.
    _deferred: Reply | None = None
    #: The parsed request, whose JSON-RPC id(s) the access log line names.
    log_message: Any = None
    _log_reason: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.custom_principal = cls.get_principal is not MCPHandler.get_principal

    def initialize(self, transport: Endpoint) -> None:
        self.transport = transport
        self._chunks: list[bytes] = []
        self._size = 0

    # -- Tornado hooks ----------------------------------------------------------------------
    def check_xsrf_cookie(self) -> None:
        """MCP clients are not browsers with cookies; Origin checks guard this endpoint."""

    def prepare(self) -> Awaitable[None] | None:
        """Checks that need no body, a refusal answered before the body is read; synchronous
        unless the endpoint authenticates (then last, still before the body is read)."""
        t = self.transport
        t.attach(self)
        t.bodies.take_over(self)  # Tornado's per-request body timer off: ours is free
        if t.options.cors_allowed_origins:
            cors.add_headers(self)
        try:
            if t.options.dns_rebinding_protection:
                h = self.request.headers
                verdict = t.rebinding.verdict(headers.value(h, "Host"),
                                              headers.value(h, "Origin"))
                if verdict is not None:
                    raise Reply(403, INVALID_REQUEST, verdict)
            if direct.LEARN in self.request.__dict__:  # served the ordinary way: .direct
                direct.learn(self)  # (a Host let through only: the route remembers it)
            if self.request.method == "POST":
                limit = t.options.max_request_bytes
                self.request.connection.set_max_body_size(limit + BODY_SLACK)  # type: ignore[union-attr]
                declared = headers.value(self.request.headers, "Content-Length")
                if declared is not None and declared.isdigit() and int(declared) > limit:
                    raise _too_large(limit)
        except Reply as reply:
            if reply.status != 413 and headers.declares_small_body(self.request.headers,
                                                                   DISCARD_BYTES):
                self._deferred = reply  # answered by the method, after the body is read
            else:
                self._refuse_unread(reply)
            return None
        if (t.authenticates or self.custom_principal) and self.request.method != "OPTIONS":
            return authenticate_request(self)
        return None

    def get_principal(self) -> Principal | Awaitable[Principal | None] | None:
        """Who is calling, by the host application's own authentication; ``None`` is a 401.

        Override it to protect the endpoint with the app's login (it may be ``async``)::

            class AppMCPHandler(MCPHandler):
                def get_principal(self):
                    user = self.get_current_user()
                    return Principal.of(user, scopes=["notes"]) if user else None

        By default it is the transport's ``authenticate=`` hook; without one, the
        anonymous principal (or ``None`` when the endpoint takes OAuth bearer tokens).
        """
        return default_principal(self, self.transport)  # type: ignore[return-value]

    def data_received(self, chunk: bytes) -> None:
        if self._finished or self._deferred is not None:
            return
        self._size += len(chunk)
        limit = self.transport.options.max_request_bytes
        if self._size > limit:
            self._chunks = []
            self._refuse_unread(_too_large(limit))
            return
        self._chunks.append(chunk)

    def on_connection_close(self) -> None:
        if self.on_disconnect is not None:
            self.on_disconnect()
        if body_unread(self.request):
            # The peer left mid-upload: Tornado will never finish this request, so
            # on_finish will not run. Let go of the handler and what it had read.
            self._chunks = []
            self.transport.detach(self)
        super().on_connection_close()

    def on_finish(self) -> None:
        self.transport.detach(self)
        self.on_disconnect = self.exchange = None  # no cycle left: freed now, not by gc

    def finish(self, chunk: str | bytes | dict[str, Any] | None = None) -> Future[None]:
        """Finish the response; one finished before its request's body was read (Tornado
        then closes the connection) says ``Connection: close``, so a keep-alive client
        does not send its next request into a closing connection."""
        if not self._headers_written and body_unread(self.request):
            self.set_header("Connection", "close")
        return super().finish(chunk)

    lean_finishes = (*LeanHandler.lean_finishes, finish)  # respond() says close too

    def _request_summary(self) -> str:
        """The access log line names the JSON-RPC id and why a request was refused (one
        line per client mistake, never a traceback); nothing when it is not logged."""
        if not access_log.isEnabledFor(log_level(self._status_code)):
            return ""
        summary = super()._request_summary()
        if (log_id := router.log_id(self.log_message)) is not None:
            summary += f" id={log_id}"
        if self._log_reason is not None:
            summary += f" [{self._log_reason}]"
        return summary

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if isinstance(value, StreamClosedError):
            return
        super().log_exception(typ, value, tb)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Every error is a JSON-RPC error body; never a traceback."""
        self.set_header("Content-Type", "application/json")
        if self.transport.options.cors_allowed_origins:
            cors.add_headers(self)
        if status_code == 405:
            self.set_header("Allow", self.allowed_methods)
            body = error_body(None, INVALID_REQUEST, "Method not allowed")
        elif status_code >= 500:
            body = error_body(None, INTERNAL_ERROR, "Internal server error")
        else:
            body = error_body(None, INVALID_REQUEST, self._reason or "Bad request")
        self.finish(jsonio.dumps(body))

    # -- HTTP methods -----------------------------------------------------------------------
    def post(self) -> Awaitable[None]:
        return self._guarded(lambda: router.post(self))

    def get(self) -> Awaitable[None]:
        return self._guarded(lambda: legacy.get(self))

    def delete(self) -> Awaitable[None]:
        return self._guarded(lambda: legacy.delete(self))

    def options(self) -> Awaitable[None]:
        return self._guarded(lambda: cors.preflight(self))

    def put(self) -> Awaitable[None]:  # PATCH and HEAD too: 405, with the Allow header
        return self._guarded(_not_allowed)

    patch = head = put

    async def _guarded(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work``, answering a :class:`Reply` it raises; never a traceback."""
        self.transport.bodies.complete(self)  # the body is in: its deadline is met
        if self._finished:
            return
        if self._deferred is not None:
            self.write_reply(self._deferred)
            self.finish()
            return
        if self.transport.closing:
            self.write_reply(Reply(503, INTERNAL_ERROR, SHUTTING_DOWN))
            self.set_header(HEADER_RETRY_AFTER, str(RETRY_AFTER_SHUTDOWN_S))
            self.finish()
            return
        try:
            await work()
        except Reply as reply:
            if not self._finished:
                self.write_reply(reply)
                self.finish()
        except AuthError as exc:  # a call needing scopes the caller lacks
            if not self._finished and not self._headers_written:
                refuse(self, exc)
        except (StreamClosedError, asyncio.CancelledError):
            # The peer went away, or the loop is shutting down under us.
            self.drop_channel()
        except Exception:
            log.exception("unexpected error serving %s", self.request.method)
            if not self._finished and not self._headers_written:
                self.write_reply(Reply(500, INTERNAL_ERROR, "Internal server error"))
                self.finish()

    # -- for the eras -----------------------------------------------------------------------
    def take_body(self) -> bytes:
        """The request body, handed over once (the handler lets go of it)."""
        body = b"".join(self._chunks)
        self._chunks = []
        return body

    @property
    def buffered_body_bytes(self) -> int:
        """Bytes of this request's body received and not yet handled."""
        return sum(len(c) for c in self._chunks)

    @property
    def done(self) -> bool:
        """The response is complete; nothing more may be written."""
        return self._finished

    @property
    def allowed_methods(self) -> str:
        """The ``Allow`` of a 405: GET and DELETE exist only where legacy sessions do."""
        t = self.transport
        return "GET, POST, DELETE" if t.serves_legacy and not t.options.stateless else "POST"

    def single_header(self, name: str) -> str | None:
        return headers.single(self.request.headers, name)

    def request_stream(self) -> RequestStream:
        """The request a ``Context`` talks through (one per HTTP request, batches too)."""
        if self.exchange is None:
            self.exchange = RequestStream(self)
        return self.exchange

    def open_channel(self, keepalive: Callable[[], float | None]) -> SSEChannel:
        """Make this response an SSE stream, bounded by the live options."""
        opts = self.transport.options
        self.channel = SSEChannel(self, lambda: opts.max_stream_queue, keepalive,
                                  self.transport.count_refusal,
                                  lambda: opts.stream_stall_timeout)
        return self.channel

    def drop_channel(self) -> None:
        """Abort this response's SSE stream, if it has one (the peer is gone)."""
        if self.channel is not None:
            self.channel.abort()

    def cancel_request(self) -> None:
        """Cancel the handler running for this request, if any (shutdown, disconnect)."""
        if self.exchange is not None:
            self.exchange.cancel()

    def write_reply(self, reply: Reply) -> None:
        """Set the status and JSON-RPC error body of ``reply`` (the caller finishes)."""
        if reply.refusal is not None:
            self.transport.count_refusal(reply.refusal)
        self._log_reason = "".join(c if c.isprintable() else "?"
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
        self.respond(SSE_CONTENT_TYPE, frame(message) if message is not None else b"")

    def accepted(self) -> None:
        self.set_status(202)
        self.finish()

    # -- refusing before the body is read ---------------------------------------------------
    def _refuse_unread(self, reply: Reply) -> None:
        """Answer before the body is read, and never read it: the connection is taken
        from Tornado and closed after a bounded linger (see :mod:`.linger`)."""
        if reply.refusal is not None:
            self.transport.count_refusal(reply.refusal)
        self.transport.detach(self)
        self.log_refusal(reply.status)
        self.transport.linger(self.detach(), raw_response(reply.status, reply.body()))

    def log_refusal(self, status: int) -> None:
        """Log a refusal answered before reading the body (a hook to override)."""
        log.info("%d %s %s (%s): refused before reading the body", status,
                 self.request.method, self.request.uri, self.request.remote_ip)




def _too_large(limit: int) -> Reply:
    return Reply(413, INVALID_REQUEST, f"Payload too large: request body exceeds {limit} bytes",
                 refusal=Refusal.MAX_REQUEST_BYTES)


async def _not_allowed() -> None:
    raise Reply(405, INVALID_REQUEST, "Method not allowed")
