"""Choosing the era of a POST: from the ``MCP-Protocol-Version`` header, ``Mcp-Session-Id``
and, for a 2026 header without a session, whether the body is a plain ``initialize``;
then what both eras require of a POST (Accept, Content-Type, JSON within the nesting
bound) before the body is handed to :mod:`.legacy` or :mod:`.modern`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol import (
    HEADER_PROTOCOL_VERSION,
    HEADER_SESSION_ID,
    INVALID_REQUEST,
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
    PARSE_ERROR,
    Era,
    Refusal,
    jsonio,
)
from . import headers, legacy, modern
from .wire import Reply

if TYPE_CHECKING:
    from .flow import RequestFlow


async def post(h: RequestFlow) -> None:
    """Choose the era from the headers (and, for ``initialize``, the body), check what
    both eras require of a POST, parse the body, and hand it to the era."""
    t = h.transport
    t.requests_total += 1
    req_headers = h.request.headers
    header = headers.single(req_headers, HEADER_PROTOCOL_VERSION)
    era: Era | None = Era.LEGACY  # None: decided by the body (a modern header, no session)
    if not t.serves_legacy:
        era = Era.MODERN
    elif header and header not in LEGACY_VERSIONS:
        if header not in MODERN_VERSIONS:
            era = Era.MODERN  # an unknown version: the modern path refuses it
        elif t.serves_modern and HEADER_SESSION_ID not in req_headers:
            era = None
    json_response = t.options.json_response
    accept = req_headers.get("Accept")
    if era is Era.LEGACY and json_response:
        headers.require_accept(accept, "application/json")
    elif not (era is None and json_response and headers.accepts(accept, "application/json")):
        headers.require_accept(accept, "application/json", "text/event-stream")
    if headers.media_type(req_headers.get("Content-Type") or "") != "application/json":
        raise Reply(415, INVALID_REQUEST,
                    "Unsupported Media Type: Content-Type must be application/json")
    body = h.take_body()
    try:
        message = jsonio.loads(body)
    except jsonio.JSONNestingError:
        raise Reply(400, PARSE_ERROR, "Parse error: Invalid JSON",
                    refusal=Refusal.JSON_NESTING) from None
    except jsonio.JSONDecodeError:
        raise Reply(400, PARSE_ERROR, "Parse error: Invalid JSON") from None
    h.log_message = message  # its id is formatted only if the access line is logged
    if era is None:
        era = Era.LEGACY if legacy.is_initialize(message) else Era.MODERN
    if era is Era.MODERN:
        await modern.post(h, message, header)
    else:
        await legacy.post(h, message, header, body)


#: Characters of client-sent text (ids, refusal messages) an access-log line may carry.
LOG_TEXT = 120


def log_id(message: Any) -> str | None:
    """The request's JSON-RPC id (a batch's first ids), JSON-encoded so no client text
    can forge a log line."""
    if isinstance(message, dict):
        ids = [message["id"]] if "id" in message else []
    elif isinstance(message, list):
        ids = [m["id"] for m in message[:4] if isinstance(m, dict) and "id" in m]
    else:
        return None
    if not ids:
        return None
    text = ",".join(_shown(i) for i in ids)
    return text[:LOG_TEXT]


def _shown(value: Any) -> str:
    """An id as JSON, or (a value JSON cannot hold) its ``repr``: never raises."""
    try:
        return jsonio.dumps(value).decode("utf-8", "replace")
    except (ValueError, TypeError):
        return repr(value)[:LOG_TEXT]
