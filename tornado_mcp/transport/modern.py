"""The modern era (2026-07-28): every POST is one self-contained request.

No session: the request's ``_meta`` envelope carries the protocol version, the client's
capabilities and info.  The routing headers (``MCP-Protocol-Version``, ``Mcp-Method``,
``Mcp-Name``, ``Mcp-Param-*``) must agree with the body.  Errors are answered with the
status ladder (:func:`.wire.answer_status`): -32601 is 404, the request's own faults are
400, anything else 200.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol import (
    HEADER_METHOD,
    HEADER_NAME,
    HEADER_PARAM_PREFIX,
    HEADER_PROTOCOL_VERSION,
    INVALID_PARAMS,
    INVALID_REQUEST,
    META_VERSION,
    NAME_BEARING,
    SUBSCRIPTIONS_LISTEN,
    TOOLS_CALL,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ..protocol import HEADER_MISMATCH as MISMATCH
from ..protocol.errors import MCPError
from ..protocol.jsonrpc import Kind, classify, safe_id
from ..protocol.shapes import ENVELOPE, load
from . import headers
from .legacy import is_initialize
from .listen import listen
from .request import run_request
from .wire import Reply

if TYPE_CHECKING:
    from .flow import RequestFlow

SINGLE_OBJECT = "Invalid Request: JSON-RPC body must be a single request object"


async def post(h: RequestFlow, message: Any, header: str | None) -> None:
    t = h.transport
    if not isinstance(message, dict):
        raise Reply(400, INVALID_REQUEST, SINGLE_OBJECT)
    request_id = safe_id(message.get("id"))
    method = message.get("method")
    supported = t.modern_versions
    if header is None and is_initialize(message):
        # A 2025 client on a modern-only endpoint: say which versions are served.
        params = message.get("params")
        requested = params.get("protocolVersion") if isinstance(params, dict) else None
        raise Reply(400, UNSUPPORTED_PROTOCOL_VERSION,
                    f"Unsupported protocol version: this endpoint serves only "
                    f"{', '.join(supported)}, which has no `initialize`; the client must "
                    "use 2026-07-28", request_id,
                    {"supported": supported, "requested": requested})
    if header is None:
        raise Reply(400, MISMATCH,
                    f"Header mismatch: {HEADER_PROTOCOL_VERSION} header is required",
                    request_id, {"supported": supported})
    if header not in supported:
        raise Reply(400, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                    request_id, {"supported": supported, "requested": header})
    kind = classify(message)
    if kind is Kind.NOTIFICATION:
        h.accepted()
        return
    if kind is not Kind.REQUEST:
        raise Reply(400, INVALID_REQUEST, SINGLE_OBJECT, request_id)
    params = message.get("params")
    if params is None:
        params = message["params"] = {}
    if not isinstance(params, dict):
        raise Reply(400, INVALID_PARAMS, "Invalid params: params must be an object", request_id)
    meta = params.get("_meta")
    if isinstance(meta, dict) and META_VERSION in meta and meta[META_VERSION] != header:
        raise Reply(400, MISMATCH,
                    f"Header mismatch: {HEADER_PROTOCOL_VERSION} header does not match "
                    "`_meta` protocolVersion", request_id)
    _check_routing_headers(h, method, params, request_id)
    try:
        envelope = load(ENVELOPE, meta, "missing or invalid `_meta` envelope")
    except MCPError as exc:
        raise Reply(400, INVALID_PARAMS, exc.message, request_id) from None
    if method == SUBSCRIPTIONS_LISTEN and t.options.serve_subscriptions_listen:
        await listen(h, message, params)
        return
    # Unknown, removed and capability-gated methods are -32601 from the server's own
    # check, which the status ladder answers with 404.
    h.on_disconnect = h.cancel_request  # closing the stream cancels the request
    await run_request(h, message, None, json_only=False, envelope=envelope)


def _check_routing_headers(h: RequestFlow, method: Any, params: dict[str, Any],
                           request_id: Any) -> None:
    hdr_method = h.single_header(HEADER_METHOD)
    if not hdr_method:
        raise Reply(400, MISMATCH,
                    f"Header mismatch: {HEADER_METHOD} header is required on the modern path",
                    request_id)
    if hdr_method != method:
        raise Reply(400, MISMATCH,
                    f"Header mismatch: {HEADER_METHOD} header does not match the body's method",
                    request_id)
    name_key = NAME_BEARING.get(str(method))
    if name_key is None:
        return
    body_name = params.get(name_key)
    hdr_name = h.single_header(HEADER_NAME)
    if hdr_name is None:
        raise Reply(400, MISMATCH, f"Header mismatch: {HEADER_NAME} header is required for "
                                   f"`{method}`", request_id)
    if headers.decode_value(hdr_name) != body_name:
        raise Reply(400, MISMATCH,
                    f"Header mismatch: {HEADER_NAME} header does not match params.{name_key}",
                    request_id)
    if method == TOOLS_CALL:
        _check_param_headers(h, str(body_name), params, request_id)


def _check_param_headers(h: RequestFlow, tool_name: str, params: dict[str, Any],
                         request_id: Any) -> None:
    """A tool's arguments that it declared as headers must be repeated, and match."""
    tool = h.transport.server.registry.tools.get(tool_name)
    if tool is None or not tool.header_params:
        return
    arguments = params.get("arguments")
    arguments = arguments if isinstance(arguments, dict) else {}
    for header_name, path in tool.header_params.items():
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        full_name = HEADER_PARAM_PREFIX + header_name
        raw = h.single_header(full_name)
        if value is None:
            if raw is not None:
                raise Reply(400, MISMATCH,
                            f"Header mismatch: {full_name} header has no matching argument",
                            request_id)
            continue
        if raw is None:
            raise Reply(400, MISMATCH, f"Header mismatch: {full_name} header is required",
                        request_id)
        if not headers.value_matches(headers.decode_value(raw), value):
            raise Reply(400, MISMATCH,
                        f"Header mismatch: {full_name} header does not match the argument",
                        request_id)
