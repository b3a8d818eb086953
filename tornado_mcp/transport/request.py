"""Running one JSON-RPC request, in either era, and the channel its
:class:`~tornado_mcp.Context` talks to the client through.

:func:`run_request` dispatches a request to the :class:`~tornado_mcp.Server` and writes
its response: as JSON, as a one-event SSE response, or as the last event of the SSE stream
the handler opened once it emitted progress or log notifications.  :class:`RequestStream`
is the :class:`~tornado_mcp.server.context.RequestChannel` behind each ``Context``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from ..engine.engine import RETRY_AFTER_SHUTDOWN_S, SHUTTING_DOWN
from ..options import MAX_REQUEST_NOTIFICATIONS
from ..protocol import HEADER_RETRY_AFTER, INTERNAL_ERROR, RESOURCES_UPDATED, jsonio
from ..protocol.errors import MCPError, Refused
from ..protocol.jsonrpc import error_body
from ..server.context_ref import HoldsContext
from ..server.outbound import client_result, request_message
from ..server.session import Session
from ..sync.handlers import call_on_loop, worker_loop
from . import wire
from .resume import retry_ms

if TYPE_CHECKING:
    from .flow import RequestFlow
    from .resume import ResumableStream

log = logging.getLogger("tornado_mcp.transport")


class RequestStream(HoldsContext):
    """One HTTP request's way back to its client: the ``Context``'s request channel.

    Notifications a handler emits open the response as an SSE stream (unless the
    response must be plain JSON); server-to-client requests go on that stream, or on
    the session's GET stream once the response is complete.
    """

    __slots__ = ("exchange", "json_only", "notifications", "resumable")

    def __init__(self, exchange: RequestFlow) -> None:
        super().__init__()
        #: The HTTP request this is the way back of.
        self.exchange = exchange
        self.json_only = False
        self.notifications = 0
        #: This request's stream, once it opened as a resumable one.
        self.resumable: ResumableStream | None = None

    def cancel(self) -> None:
        ctx = self.ctx
        if ctx is not None:
            ctx.cancel()

    def disconnected(self) -> None:
        """The legacy client's connection closed before the response was complete.

        On a resumable stream this is not a cancellation (the spec's rule): the handler
        runs on and what it sends waits in the event store for the client to resume.
        Otherwise nothing the handler does can reach the client any more, so its
        handler is cancelled and the stream freed at once.
        """
        if self.resumable is not None:
            self.resumable.detach(self.exchange.channel)
            self.exchange.drop_channel()
            return
        self.exchange.drop_channel()
        self.cancel()

    def _resumable(self) -> ResumableStream | None:
        """This request's resumable stream, opening (and priming) it when the transport
        and the session allow one."""
        if self.resumable is not None:
            return self.resumable
        h = self.exchange
        ctx = self.ctx
        resumption = h.transport.resumption
        if self.json_only or h.done or h.channel is not None or ctx is None \
                or ctx.session is None or ctx.modern or not resumption.enabled:
            return None
        opts = h.transport.options
        channel = h.open_channel(lambda: opts.sse_keepalive_interval)
        self.resumable = resumption.open(ctx.session, channel)
        return self.resumable

    def close_stream(self) -> bool:
        """Close the connection of a resumable stream (the client polls to resume)."""
        rs = self._resumable()
        return rs is not None and rs.close_connection(retry_ms(self.exchange.transport))

    def emit(self, message: dict[str, Any]) -> bool:
        if worker_loop() is not None:  # from a plain handler's thread: on the loop
            return call_on_loop(self.emit, message)
        rs = self._resumable()
        if rs is not None:
            return rs.send(message)
        h = self.exchange
        if self.json_only or h.done:
            return False
        if self.ctx is not None and self.ctx.modern:
            self.notifications += 1
            if self.notifications > MAX_REQUEST_NOTIFICATIONS:
                return False
        channel = h.channel
        if channel is None:
            opts = h.transport.options
            channel = h.open_channel(lambda: opts.sse_keepalive_interval)
        return channel.send(jsonio.dumps(message))

    @property
    def requests_unavailable(self) -> str | None:
        """Why a server-to-client request cannot be sent for this request, or ``None``."""
        if not self.json_only:
            return None
        if self.exchange.transport.options.json_response:
            return ("JSON response mode does not support server-to-client requests "
                    "(sampling, elicitation, roots): the response is one JSON body; serve "
                    "this endpoint with json_response=False, or let the client use 2026-07-28")
        return "A batched request cannot send server-to-client requests"

    async def send_request(self, method: str, params: dict[str, Any] | None,
                           timeout: float | None) -> dict[str, Any]:
        ctx = self.ctx
        session = ctx.session if ctx is not None else None
        if session is None:
            raise MCPError(INTERNAL_ERROR,
                           "Stateless mode does not support server-to-client requests")
        reason = self.requests_unavailable
        if reason is not None:
            raise MCPError(INTERNAL_ERROR, reason)
        request_id = f"s-{session.id[:8]}-{len(session.pending)}-{time.monotonic_ns()}"
        message = request_message(request_id, method, params)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        session.pending[request_id] = fut
        sent = self.emit(message)
        if not sent and session.get_channel is not None:
            sent = session.get_channel.send(jsonio.dumps(message))
        if not sent:
            session.pending.pop(request_id, None)
            raise MCPError(INTERNAL_ERROR, f"No active stream for {method} request")
        wait = timeout if timeout is not None else \
            self.exchange.transport.options.server_to_client_request_timeout
        return await client_result(fut, request_id, method, wait, self.emit,
                                   lambda: session.pending.pop(request_id, None))

    def notify_resources_updated(self, uri: str) -> None:
        """Once to the listen streams and the tracked subscribers, and once to the caller's
        session if that did not reach it: on its GET stream, or without one on this
        request's own stream."""
        if worker_loop() is not None:
            return call_on_loop(self.notify_resources_updated, uri)
        server = self.exchange.transport.server
        server.notify_resources_updated(uri)
        ctx = self.ctx
        session = ctx.session if ctx is not None else None
        if session is None:
            return
        if session.get_channel is None:
            self.emit({"jsonrpc": "2.0", "method": RESOURCES_UPDATED, "params": {"uri": uri}})
        elif not server.tracks(session, uri):
            session.notify_resources_updated(uri)


async def run_request(h: RequestFlow, message: dict[str, Any], session: Session | None,
                      json_only: bool, envelope: dict[str, Any] | None = None) -> None:
    """Dispatch ``message`` and write its response.

    ``json_only``: answer with plain JSON, never SSE.  ``envelope``: the validated
    2026-07-28 ``_meta`` (the request is modern, answered as JSON unless it streamed, an
    error with the era's status).  A refusal is answered through the wire map: with its
    status when the request is answered on its own, else as the stream's last event.
    """
    stream = h.request_stream()
    stream.json_only = json_only
    if h.on_disconnect is None:
        # Legacy era: see RequestStream.disconnected.
        h.on_disconnect = stream.disconnected
    modern = envelope is not None
    try:
        response = await h.transport.engine.dispatch(
            message, stream, session=session, envelope=envelope, principal=h.principal,
            facts=h.request)
    except Refused as exc:
        if h.channel is None and stream.resumable is None:
            raise wire.refused(exc, message.get("id")) from None
        if exc.refusal is not None:  # the response began: the refusal is its last event
            h.transport.count_refusal(exc.refusal)
        response = wire.in_band(exc, message.get("id"))
    rs = stream.resumable
    if rs is not None:
        own = h.channel if rs.channel is h.channel else None
        rs.finish(response)  # on this connection, a resumed one, or only in the store
        if own is not None:
            await h.stream(own)
        return
    if h.done:
        return
    if response is None and modern and h.transport.closing and h.channel is None:
        h.send_json(503, error_body(message.get("id"), INTERNAL_ERROR, SHUTTING_DOWN),
                    {HEADER_RETRY_AFTER: str(RETRY_AFTER_SHUTDOWN_S)})
        return
    channel = h.channel
    if channel is not None:  # the response ends the SSE stream the handler opened
        channel.close(jsonio.dumps(response) if response is not None else None)
        await h.stream(channel)
    elif json_only or modern:
        if response is None:  # cancelled: nothing more is written for it
            h.accepted()
        else:
            h.send_json(wire.answer_status(response, modern), response)
    else:
        h.send_sse(response)


async def dispatch(stream: RequestStream, message: dict[str, Any], session: Session | None,
                   envelope: dict[str, Any] | None) -> dict[str, Any] | None:
    """The server's JSON-RPC response to ``message``, or ``None`` when it was cancelled:
    the engine's one pipeline, with this HTTP request's caller and facts (a refusal is
    raised, as :meth:`Engine.dispatch <tornado_mcp.engine.engine.Engine.dispatch>` does)."""
    h = stream.exchange
    return await h.transport.engine.dispatch(message, stream, session=session,
                                             envelope=envelope, principal=h.principal,
                                             facts=h.request)
