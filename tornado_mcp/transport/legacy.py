"""The legacy era (2025-03-26, 2025-06-18, 2025-11-25): ``initialize`` opens a session
named by ``Mcp-Session-Id``; POST carries requests, notifications, responses to the
server's own requests and (2025-03-26 only) batches; GET opens the session's stream of
server-initiated messages; DELETE ends the session.

Each function serves one request on the exchange it is given (a
:class:`~.flow.RequestFlow`) and
answers a refusal by raising :class:`~.wire.Reply`; ``initialize`` itself is the
engine's (:meth:`Lifecycle.initialize <tornado_mcp.engine.lifecycle.Lifecycle.initialize>`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol import (
    BATCHING_VERSION,
    DEFAULT_LEGACY_VERSION,
    HEADER_LAST_EVENT_ID,
    HEADER_MISMATCH,
    HEADER_PROTOCOL_VERSION,
    HEADER_SESSION_ID,
    INITIALIZE,
    INVALID_REQUEST,
    LEGACY_VERSIONS,
    META_VERSION,
    MODERN_VERSIONS,
    SERVER_DISCOVER,
    Refusal,
)
from ..protocol.auth_errors import AuthError
from ..protocol.errors import Refused
from ..protocol.jsonrpc import Kind, classify, error_body, safe_id, valid_id
from ..server.session import Session
from . import headers, wire
from .gate import same_caller
from .request import dispatch, run_request
from .resume import resume
from .wire import Reply

if TYPE_CHECKING:
    from .flow import RequestFlow

IN_FLIGHT_CONFLICT = "Conflict: Request id is already in flight for this session"
SINGLE_OBJECT = "Invalid Request: JSON-RPC body must be a single request object"


def is_initialize(message: Any) -> bool:
    """A legacy ``initialize``: the method, without the modern ``_meta`` envelope."""
    if not isinstance(message, dict) or message.get("method") != INITIALIZE:
        return False
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return not (isinstance(meta, dict) and META_VERSION in meta)


# -- POST ----------------------------------------------------------------------------------
async def post(h: RequestFlow, message: Any, header: str | None, body: bytes) -> None:
    opts = h.transport.options
    if isinstance(message, list):
        await _batch(h, message, body)
        return
    if not isinstance(message, dict):
        raise Reply(400, INVALID_REQUEST, SINGLE_OBJECT)
    request_id = message.get("id")
    method = message.get("method")
    params = message.get("params")
    has_session = HEADER_SESSION_ID in h.request.headers
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(meta, dict) and META_VERSION in meta:
        if header in MODERN_VERSIONS and not has_session:
            raise Reply(400, INVALID_REQUEST,
                        f"Bad Request: this endpoint does not serve protocol {header}; "
                        "open a session with `initialize`", request_id)
        if header in MODERN_VERSIONS:
            raise Reply(400, INVALID_REQUEST,
                        "Invalid Request: the session already negotiated the legacy "
                        "lifecycle via `initialize`", request_id)
        raise Reply(400, HEADER_MISMATCH,
                    "Header mismatch: MCP-Protocol-Version header is missing or legacy "
                    "while the body carries the modern _meta envelope", request_id)
    if method == INITIALIZE:
        await _initialize(h, message, body)
        return
    if method == SERVER_DISCOVER and not has_session:
        await run_request(h, message, None, json_only=True)
        return
    session = None if opts.stateless else await session_from_header(h, body)
    check_version(h)
    kind = classify(message)
    lifecycle = h.transport.engine.lifecycle
    if kind is Kind.NOTIFICATION:
        lifecycle.client_notification(method, params, session)
        h.accepted()
    elif kind is Kind.RESPONSE:
        lifecycle.client_response(message, session)
        h.accepted()
    elif kind is Kind.REQUEST:
        if session is not None and valid_id(request_id) and request_id in session.in_flight:
            raise Reply(409, INVALID_REQUEST, IN_FLIGHT_CONFLICT, request_id)
        await run_request(h, message, session, json_only=opts.json_response)
    else:
        raise Reply(400, INVALID_REQUEST, "Invalid Request", safe_id(request_id))


async def _batch(h: RequestFlow, batch: list[Any], body: bytes) -> None:
    """2025-03-26 allowed batches; later versions and sessionless calls do not.

    One JSON array answers the batch, so its requests never stream."""
    session = None if h.transport.options.stateless else await session_from_header(h, body)
    version = check_version(h)
    negotiated = session.protocol_version if session else version
    if not batch or negotiated != BATCHING_VERSION or not all(isinstance(m, dict) for m in batch):
        raise Reply(400, INVALID_REQUEST, SINGLE_OBJECT)
    if any(m.get("method") == INITIALIZE for m in batch):
        raise Reply(400, INVALID_REQUEST, "Invalid Request: initialize cannot be batched")
    stream = h.request_stream()
    stream.json_only = True
    responses = []
    lifecycle = h.transport.engine.lifecycle
    for m in batch:
        kind = classify(m)
        if kind is Kind.NOTIFICATION:
            lifecycle.client_notification(m.get("method"), m.get("params"), session)
        elif kind is Kind.RESPONSE:
            lifecycle.client_response(m, session)
        elif kind is Kind.REQUEST:
            rid = m.get("id")
            if session is not None and valid_id(rid) and rid in session.in_flight:
                responses.append(error_body(rid, INVALID_REQUEST, IN_FLIGHT_CONFLICT))
                continue
            try:
                reply = await dispatch(stream, m, session, None)
            except (AuthError, Refused) as exc:  # this call's own error, not the batch's
                refusal = exc.kind if isinstance(exc, AuthError) else exc.refusal
                if refusal is not None:
                    h.transport.count_refusal(refusal)
                responses.append(wire.in_band(exc, rid))
                continue
            if reply is not None:  # a cancelled request is not answered
                responses.append(reply)
        else:
            responses.append(error_body(None, INVALID_REQUEST, "Invalid Request"))
    if responses:
        h.send_json(200, responses)
    else:
        h.accepted()


async def _initialize(h: RequestFlow, message: dict[str, Any], body: bytes) -> None:
    """``initialize``: answered by the engine, which opens the session through the
    transport once the request passed its bounds and the middleware."""
    t = h.transport
    opts = t.options
    request_id = message.get("id")
    if not opts.stateless:
        existing = h.request.headers.get(HEADER_SESSION_ID)
        if existing:
            if t.sessions.get(existing.strip()) is not None:
                raise Reply(400, INVALID_REQUEST, "Invalid Request: Server already initialized",
                            safe_id(request_id))
            raise Reply(404, INVALID_REQUEST, "Session not found")
    if "id" not in message:
        h.accepted()  # an initialize notification: nothing to answer, nothing kept
        return

    async def open_session(version: str, params: dict[str, Any]) -> Session | None:
        reserved = await t.reserve("sessions")  # cluster-wide limits: a place in Redis
        return t.open_session(version, params, h.principal) if reserved else None

    try:
        response, session = await t.engine.lifecycle.initialize(
            message, versions=opts.protocol_versions, principal=h.principal, facts=h.request,
            size=len(body), stateless=opts.stateless, open_session=open_session)
    except Refused as exc:
        raise wire.refused(exc, request_id) from None
    h.send_json(200, response, {HEADER_SESSION_ID: session.id} if session is not None
                else None)


# -- GET and DELETE ------------------------------------------------------------------------
async def get(h: RequestFlow) -> None:
    """Open the session's stream of server-initiated messages (one per session)."""
    opts = h.transport.options
    if _addressed_to_modern(h) or opts.stateless:
        raise Reply(405, INVALID_REQUEST, "Method not allowed")
    headers.require_accept(h.request.headers.get("Accept"), "text/event-stream")
    session = await session_from_header(h)
    check_version(h)
    last_event_id = h.request.headers.get(HEADER_LAST_EVENT_ID)
    if last_event_id is not None and h.transport.resumption.enabled:
        await resume(h, session, last_event_id)
        return
    if session.get_channel is not None and not session.get_channel.closed:
        raise Reply(409, INVALID_REQUEST, "Conflict: Only one SSE stream is allowed per session")
    channel = h.open_channel(lambda: opts.sse_keepalive_interval)
    session.get_channel = channel
    h.on_disconnect = channel.abort
    channel.start()
    try:
        await h.stream(channel)
    finally:
        if session.get_channel is channel:
            session.get_channel = None
        session.touch()


async def delete(h: RequestFlow) -> None:
    """End the session named by ``Mcp-Session-Id``."""
    t = h.transport
    if _addressed_to_modern(h) or t.options.stateless:
        raise Reply(405, INVALID_REQUEST, "Method not allowed")
    session = await session_from_header(h)
    check_version(h)
    t.sessions.remove(session)
    h.send_json(200, {"success": True})


def _addressed_to_modern(h: RequestFlow) -> bool:
    """GET and DELETE: is this request addressed to the 2026 era (which has neither)?"""
    if not h.transport.serves_legacy:
        return True
    header = (headers.value(h.request.headers, HEADER_PROTOCOL_VERSION) or "").strip()
    if not header or header in LEGACY_VERSIONS:
        return False
    if header in MODERN_VERSIONS:
        return HEADER_SESSION_ID not in h.request.headers
    return True  # unknown version: the modern path, which answers 405


# -- sessions and versions -----------------------------------------------------------------
async def session_from_header(h: RequestFlow, body: bytes | None = None) -> Session:
    session_id = headers.value(h.request.headers, HEADER_SESSION_ID)
    if not session_id:
        raise Reply(400, INVALID_REQUEST, "Bad Request: Missing session ID")
    session = h.transport.sessions.get(session_id.strip())
    if session is None:
        cluster = h.transport.cluster
        if cluster is not None:  # held by another process, or handed over to this one?
            session = await cluster.find_session(h, session_id.strip(), body)
        if session is None:
            raise Reply(404, INVALID_REQUEST, "Session not found")
    if session.principal is not h.principal and not same_caller(session.principal, h.principal):
        # Another caller's session is, for this caller, no session at all: 404, not 403,
        # so a guessed or stolen id reveals nothing (MCP security best practices).
        raise wire.bound_refused(Refusal.AUTH_SESSION_MISMATCH, INVALID_REQUEST,
                                 "Session not found")
    session.touch()  # whatever the session sends keeps it alive
    return session


def check_version(h: RequestFlow) -> str:
    """The request's ``MCP-Protocol-Version`` (2025-03-26 when absent), if served."""
    header = headers.value(h.request.headers, HEADER_PROTOCOL_VERSION)
    version = DEFAULT_LEGACY_VERSION if header is None else header.strip()
    versions = h.transport.options.protocol_versions
    if version not in versions and not (version == DEFAULT_LEGACY_VERSION and header is None):
        raise Reply(400, INVALID_REQUEST,
                    f"Bad Request: Unsupported protocol version: {version}. "
                    f"Supported versions: {', '.join(versions)}")
    return version
