"""The legacy lifecycle, for every transport: ``initialize`` opening a session, what the
client sends that is not a request (notifications, answers to the server's own
requests), and a session's end.

:meth:`Lifecycle.initialize` is the one place an ``initialize`` is answered, over
Streamable HTTP and over stdio alike: its bounds (the bytes and the JSON values a session
would keep), its shape, the version negotiated, the result with the tasks capability, the
middleware around it (the rate limit and the server's and transport's own, which see
``initialize`` as they see every request), and only then the session, opened through the
transport, which alone knows where sessions live (a cluster reserves a place in Redis).
A refusal is raised as :class:`~tornado_mcp.protocol.errors.Refused` naming its bound;
each transport answers it through its own wire map.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..options import MAX_INITIALIZE_PARAMS_VALUES
from ..protocol import (
    CANCELLED,
    INITIALIZE,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    ROOTS_LIST_CHANGED,
    Refusal,
    jsonio,
)
from ..protocol.errors import MCPError, Refused, error_of
from ..protocol.identity import ANONYMOUS, Principal
from ..protocol.jsonrpc import error_body, safe_id, valid_id
from ..protocol.shapes import INITIALIZE_PARAMS, load
from ..server.context import Context, HTTPRequestFacts
from ..server.server import without_change_flags
from ..server.session import Session

if TYPE_CHECKING:
    from .engine import Engine

log = logging.getLogger("tornado_mcp.engine")

#: Opens the session of an admitted ``initialize`` (its version and params); ``None``
#: when no more sessions may be opened.
OpenSession = Callable[[str, dict[str, Any]], Awaitable[Session | None]]


class Lifecycle:
    """The legacy lifecycle of one :class:`~tornado_mcp.engine.engine.Engine`; see the
    module docstring."""

    def __init__(self, engine: Engine,
                 on_session_removed: Callable[[Session], None] | None = None) -> None:
        self.engine = engine
        self._on_session_removed = on_session_removed

    async def initialize(self, message: dict[str, Any], *, versions: Sequence[str],
                         principal: Principal = ANONYMOUS,
                         facts: HTTPRequestFacts | None = None, size: int | None = None,
                         stateless: bool = False, open_session: OpenSession | None = None
                         ) -> tuple[dict[str, Any], Session | None]:
        """The response to the ``initialize`` request ``message`` and the session it
        opened (``None`` when ``stateless`` or on an error response).

        ``size`` is the request's size in bytes as it arrived; ``versions`` are those the
        transport serves.  Raises :class:`Refused` past a bound (the request's bytes, its
        JSON values, the session cap) or when a middleware refuses it.
        """
        engine = self.engine
        opts = engine.options
        request_id = message.get("id")
        params = message.get("params")
        if not stateless:  # what a session keeps of its initialize is bounded
            bound = opts.max_initialize_request_bytes
            if bound is not None and size is not None and size > bound:
                raise Refused(f"Payload too large: initialize request body exceeds {bound} "
                              "bytes", code=INVALID_REQUEST,
                              refusal=Refusal.MAX_INITIALIZE_REQUEST_BYTES)
            if jsonio.count_values_exceeds(params, MAX_INITIALIZE_PARAMS_VALUES):
                raise Refused("Payload too large: initialize request params exceed "
                              f"{MAX_INITIALIZE_PARAMS_VALUES} JSON values",
                              code=INVALID_REQUEST, refusal=Refusal.INITIALIZE_PARAMS_VALUES)
        if message.get("jsonrpc") != "2.0" or not valid_id(request_id):
            return error_body(safe_id(request_id), INVALID_REQUEST, "Invalid Request"), None
        try:
            p = load(INITIALIZE_PARAMS, params, INITIALIZE)
        except MCPError as exc:
            return error_body(request_id, exc.code, exc.message), None
        assert isinstance(params, dict)  # the schema above guarantees it
        version = engine.server.negotiate_version(p["protocolVersion"], versions)
        result = engine.initialize_result(version)
        if stateless:
            # No session, no stream of its own: nothing could carry list changes or
            # resource updates, so they are not advertised.
            result["capabilities"] = without_change_flags(result["capabilities"])
        if engine.middleware.active(opts):
            try:
                result = await self._through_middleware(message, result, principal, facts)
            except Refused:
                raise
            except Exception as exc:
                return {"jsonrpc": "2.0", "id": request_id,
                        "error": error_of(exc, "middleware for initialize")}, None
        response = {"jsonrpc": "2.0", "id": request_id, "result": result}
        if stateless or open_session is None:
            return response, None
        session = await open_session(version, params)
        if session is None:
            raise Refused("Service unavailable: maximum concurrent sessions "
                          f"({opts.max_sessions}) reached", code=INTERNAL_ERROR,
                          refusal=Refusal.MAX_SESSIONS)
        return response, session

    async def _through_middleware(self, message: dict[str, Any], result: dict[str, Any],
                                  principal: Principal,
                                  facts: HTTPRequestFacts | None) -> dict[str, Any]:
        """Run the middleware around an ``initialize`` whose ``result`` is ready (no
        session exists yet: one is opened only once the chain let the request through)."""
        engine = self.engine
        opts = engine.options
        ctx = Context(engine.server, INITIALIZE, message.get("params") or {},
                      message.get("id"), None, listen_served=opts.serve_subscriptions_listen,
                      served_versions=opts.protocol_versions, principal=principal, http=facts)

        async def answer(method: str, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
            return result

        return await engine.middleware.run(ctx, answer)

    # -- what a client sends that is not a request ------------------------------------------
    def client_notification(self, method: Any, params: Any, session: Session | None,
                            cancel: Callable[[Any], bool] | None = None) -> None:
        """A notification from the client: ``notifications/cancelled`` cancels the request
        it names (in ``session``, or through ``cancel(request_id)``); a roots change reaches
        the server's hook.  Resets the session's idle timer."""
        if session is not None:
            session.touch()
        if method == CANCELLED and isinstance(params, dict):
            request_id = params.get("requestId")
            if not valid_id(request_id):
                return
            ctx = session.in_flight.get(request_id) if session is not None else None
            if ctx is not None:
                ctx.cancel()
            elif cancel is not None:
                cancel(request_id)
        elif method == ROOTS_LIST_CHANGED and session is not None:
            self.engine.server.roots_list_changed(session)

    @staticmethod
    def client_response(message: dict[str, Any], session: Session | None,
                        pending: dict[str, asyncio.Future[dict[str, Any]]] | None = None
                        ) -> None:
        """The client answered one of the server's own requests (sampling, elicitation,
        roots, ping): the waiting request gets the answer.  Resets the idle timer."""
        if session is not None:
            session.touch()
            pending = session.pending if pending is None else pending
        if pending is None:
            return
        fut = pending.pop(str(message.get("id")), None)
        if fut is not None and not fut.done():
            fut.set_result(message)

    # -- a session's end ----------------------------------------------------------------------
    def session_removed(self, session: Session) -> None:
        """Everything a session held ends with it: its subscriptions, what middleware kept
        for it, the transport's streams, its requests in flight (cancelled) and the server's
        requests waiting for its answers (failed)."""
        server = self.engine.server
        session.notifier = None
        if server.subscriptions is not None:
            server.subscriptions.forget(session)
        middleware = self.engine.middleware
        for mw in (*middleware.user, *middleware.shared):
            ended = getattr(mw, "session_ended", None)  # e.g. the OpenTelemetry metrics
            if ended is not None:
                try:
                    ended(session)
                except Exception:
                    log.exception("session_ended of %r raised", mw)
        if self._on_session_removed is not None:
            self._on_session_removed(session)
        for ctx in list(session.in_flight.values()):
            ctx.cancel()
        for fut in session.pending.values():
            if not fut.done():
                fut.set_exception(MCPError(INTERNAL_ERROR, "Session closed while waiting for "
                                                           "the client's response"))
        session.pending.clear()
