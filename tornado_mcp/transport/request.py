"""Running one JSON-RPC request, in either era, and the channel its
:class:`~tornado_mcp.Context` talks to the client through.

:func:`run_request` dispatches a request to the :class:`~tornado_mcp.Server` and writes
its response: as JSON, as a one-event SSE response, or as the last event of the SSE stream
the handler opened once it emitted progress or log notifications.  :class:`RequestStream`
is the :class:`~tornado_mcp.context.RequestChannel` behind each ``Context``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..context import Context
from ..errors import MCPError
from ..options import MAX_REQUEST_NOTIFICATIONS
from ..protocol import (
    CANCELLED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    REQUEST_TIMEOUT,
    RESOURCES_UPDATED,
)
from ..session import Session
from ..sse import frame
from .jsonrpc import error_body, safe_id, valid_id

if TYPE_CHECKING:
    from .handler import MCPHandler

log = logging.getLogger("tornado_mcp.transport")


class RequestStream:
    """One HTTP request's way back to its client: the ``Context``'s request channel.

    Notifications a handler emits open the response as an SSE stream (unless the
    response must be plain JSON); server-to-client requests go on that stream, or on
    the session's GET stream once the response is complete.
    """

    __slots__ = ("ctx", "handler", "json_only", "notifications")

    def __init__(self, handler: MCPHandler) -> None:
        self.handler = handler
        self.ctx: Context | None = None
        self.json_only = False
        self.notifications = 0

    def cancel(self) -> None:
        if self.ctx is not None:
            self.ctx.cancel()

    def emit(self, message: dict[str, Any]) -> bool:
        h = self.handler
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
        return channel.send(frame(message))

    async def send_request(self, method: str, params: dict[str, Any] | None,
                           timeout: float | None) -> dict[str, Any]:
        ctx = self.ctx
        session = ctx.session if ctx is not None else None
        if session is None:
            raise MCPError(INVALID_REQUEST,
                           "Stateless mode does not support server-to-client requests")
        if self.json_only:
            raise MCPError(INVALID_REQUEST,
                           "JSON response mode does not support server-to-client requests")
        request_id = f"s-{session.id[:8]}-{len(session.pending)}-{time.monotonic_ns()}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        session.pending[request_id] = fut
        sent = self.emit(message) if not self.handler.done else False
        if not sent and session.get_channel is not None:
            sent = session.get_channel.send(frame(message))
        if not sent:
            session.pending.pop(request_id, None)
            raise MCPError(INTERNAL_ERROR, f"No active stream for {method} request")
        wait = timeout if timeout is not None else \
            self.handler.transport.options.server_to_client_request_timeout
        try:
            reply = await asyncio.wait_for(fut, wait)
        except TimeoutError:
            self.emit({"jsonrpc": "2.0", "method": CANCELLED,
                       "params": {"requestId": request_id,
                                  "reason": f"Timed out after {wait:g} seconds"}})
            raise MCPError(REQUEST_TIMEOUT,
                           f"Timed out waiting for the client's {method} response") from None
        finally:
            session.pending.pop(request_id, None)
        if "error" in reply:
            err = reply["error"] if isinstance(reply["error"], dict) else {}
            raise MCPError(INTERNAL_ERROR,
                           f"Client returned an error for {method} request "
                           f"(code: {err.get('code')}): {err.get('message')}")
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    def notify_resources_updated(self, uri: str) -> None:
        ctx = self.ctx
        params = {"uri": uri}
        session = ctx.session if ctx is not None else None
        if session is not None and session.get_channel is not None:
            session.notify_resources_updated(uri)
            return
        self.handler.transport.server.publish(RESOURCES_UPDATED, params)
        if session is not None:
            self.emit({"jsonrpc": "2.0", "method": RESOURCES_UPDATED, "params": params})


async def run_request(h: MCPHandler, message: dict[str, Any], session: Session | None,
                      json_only: bool, envelope: dict[str, Any] | None = None,
                      status_of: Callable[[dict[str, Any]], int] | None = None) -> None:
    """Dispatch ``message`` and write its response.

    ``json_only``: answer with plain JSON, never SSE.  ``envelope``: the validated
    2026-07-28 ``_meta`` (the request is modern, answered as JSON unless it streamed),
    with ``status_of`` choosing the HTTP status of an error response.
    """
    stream = h.request_stream()
    stream.json_only = json_only
    if h.on_disconnect is None:
        # Legacy era: a disconnect is not a cancellation (clients send
        # notifications/cancelled), but the stream and its queue are freed at once.
        h.on_disconnect = h.drop_channel
    response = await dispatch(stream, message, session, envelope)
    if h.done:
        return
    modern = envelope is not None
    if response is None and modern and h.transport.closing and h.channel is None:
        h.send_json(503, error_body(message.get("id"), INTERNAL_ERROR,
                                    "Service unavailable: shutting down"))
        return
    channel = h.channel
    if channel is not None:  # the response ends the SSE stream the handler opened
        channel.close(frame(response) if response is not None else None)
        await channel.done
    elif json_only or modern:
        if response is None:  # cancelled: nothing more is written for it
            h.accepted()
        else:
            status = status_of(response) if status_of is not None and "error" in response \
                else 200
            h.send_json(status, response)
    else:
        h.send_sse(response)


async def dispatch(stream: RequestStream, message: dict[str, Any], session: Session | None,
                   envelope: dict[str, Any] | None) -> dict[str, Any] | None:
    """The server's JSON-RPC response to ``message``, or ``None`` when it was cancelled."""
    t = stream.handler.transport
    request_id = message.get("id")
    method = message.get("method")
    params = message.get("params")
    if message.get("jsonrpc") != "2.0" or not isinstance(method, str) \
            or not valid_id(request_id) or (params is not None and not isinstance(params, dict)):
        return error_body(safe_id(request_id), INVALID_REQUEST, "Invalid Request")
    rules = t.server.scope_rules
    if rules.active:  # raises AuthError: answered by the handler with 401/403
        rules.authorize(method, params, stream.handler.principal)
    ctx = Context(t.server, method, params or {}, request_id, stream, session=session,
                  envelope=envelope, listen_served=t.options.serve_subscriptions_listen,
                  served_versions=t.options.protocol_versions,
                  principal=stream.handler.principal, http=stream.handler.request)
    stream.ctx = ctx
    if session is not None:
        session.in_flight[request_id] = ctx  # in flight: never idle until it is done
    # The handler runs in this request's own task (no extra task per request); a
    # cancellation (notifications/cancelled, or a 2026-07-28 client closing its stream)
    # cancels this task while the handler runs, and is absorbed here.
    task = asyncio.current_task()
    ctx.task = task
    try:
        result = await t.server.handle(method, ctx.params, ctx)
        if rules.active and t.options.hide_unauthorized:
            result = rules.visible(method, result, ctx.principal)
        return {"jsonrpc": "2.0", "id": request_id, "result": result}
    except asyncio.CancelledError:
        if not ctx.cancelled or task is None:
            raise
        task.uncancel()
        return None
    except MCPError as exc:
        return {"jsonrpc": "2.0", "id": request_id, "error": exc.to_error()}
    except Exception:
        log.exception("handler for %s raised", method)
        return error_body(request_id, INTERNAL_ERROR, "Internal error")
    finally:
        ctx.task = None
        if session is not None and session.in_flight.get(request_id) is ctx:
            del session.in_flight[request_id]
