"""The HTTP wire map: how every outcome of a request becomes an HTTP answer.

The engine answers a request with a JSON-RPC result or error and never chooses an HTTP
status; what is HTTP about an outcome is decided here, in one place:

* an **answer** (a JSON-RPC response from the engine) is 200 in the legacy era, where
  errors travel in-band; at 2026-07-28 an error gets the era's status ladder
  (:func:`answer_status`: -32601 is 404, the request's own faults are 400);
* a **refusal** (:class:`~tornado_mcp.protocol.errors.Refused`, raised by a bound, the rate
  limit or a middleware) gets the status of the bound that refused it
  (:data:`REFUSAL_STATUS`), else of its code (:data:`CODE_STATUS`), with ``Retry-After``
  when it says when to retry (:func:`refused`);
* an **authentication** refusal (:class:`~tornado_mcp.protocol.auth_errors.AuthError`) is
  401, 403 for a missing scope, 503 when the token could not be judged
  (:func:`auth_status`; the challenge is :mod:`.auth`'s);
* the transport's own refusals (a missing ``Accept``, an unknown session, a body over
  ``max_request_bytes``) are a :class:`Reply`, raised where they are decided with the
  status HTTP gives them (those that refuse a bound take it from :data:`REFUSAL_STATUS`).

Whatever is raised while a request is served reaches the client through one function,
the exchange's ``answer_failure``; a refusal of a request answered in a batch, or after
its response began to stream, travels in-band instead (its JSON-RPC error alone).
"""

from __future__ import annotations

import math
from typing import Any

from ..protocol import (
    HEADER_MISMATCH,
    HEADER_RETRY_AFTER,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    RATE_LIMITED,
    REQUEST_REFUSED,
    UNSUPPORTED_PROTOCOL_VERSION,
    Refusal,
    jsonio,
)
from ..protocol.auth_errors import RETRY_AFTER_BUSY, AuthError
from ..protocol.errors import MCPError, Refused
from ..protocol.jsonrpc import error_body, safe_id

#: The status of a refusal, by the bound that refused it.
REFUSAL_STATUS: dict[Refusal, int] = {
    Refusal.MAX_REQUEST_BYTES: 413,
    Refusal.MAX_INITIALIZE_REQUEST_BYTES: 413,
    Refusal.INITIALIZE_PARAMS_VALUES: 413,
    Refusal.JSON_NESTING: 400,
    Refusal.RESOURCE_SUBSCRIPTION_URIS: 400,
    Refusal.MAX_RESOURCE_SUBSCRIPTION_BYTES: 400,
    Refusal.MAX_SESSIONS: 503,
    Refusal.MAX_LISTEN_SUBSCRIPTIONS: 503,
    Refusal.RATE_LIMIT_PER_PRINCIPAL: 429,
    Refusal.MAX_CONCURRENCY: 429,
    Refusal.MAX_CONCURRENT_CALLS_PER_PRINCIPAL: 429,
    Refusal.AUTH_MISSING: 401,
    Refusal.AUTH_INVALID: 401,
    Refusal.MAX_BEARER_TOKEN_BYTES: 401,
    Refusal.AUTH_DPOP: 401,
    Refusal.DPOP_MAX_PROOF_BYTES: 401,
    Refusal.DPOP_REPLAY_CACHE_SIZE: 401,
    Refusal.AUTH_INSUFFICIENT_SCOPE: 403,
    Refusal.AUTH_UNAVAILABLE: 503,
    Refusal.AUTH_SESSION_MISMATCH: 404,
    Refusal.FORWARD_IDLE_TIMEOUT: 504,
}
#: The status of a refusal that names no bound, by its code.
CODE_STATUS: dict[int, int] = {REQUEST_REFUSED: 403, RATE_LIMITED: 429}
#: Codes the 2026-07-28 binding answers with 400 (and -32601 with 404).
MODERN_BAD_REQUEST_CODES = frozenset(
    {PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, HEADER_MISMATCH,
     MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION})


class Reply(Exception):
    """Stop serving this request and answer it with ``status`` and a JSON-RPC error.

    ``refusal`` names the bound that refused it (counted in the refusals); ``headers``
    go on the answer (``Retry-After``, say).
    """

    def __init__(self, status: int, code: int, message: str, request_id: Any = None,
                 data: Any = None, refusal: Refusal | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.request_id, self.data, self.refusal = request_id, data, refusal
        self.headers = headers or {}

    def error_body(self) -> dict[str, Any]:
        return error_body(self.request_id, self.code, self.message, self.data)

    def body(self) -> bytes:
        return jsonio.dumps(self.error_body())


def bound_refused(refusal: Refusal, code: int, message: str, request_id: Any = None,
                  data: Any = None) -> Reply:
    """The transport's own refusal by the bound ``refusal``, with its status."""
    return Reply(REFUSAL_STATUS[refusal], code, message, request_id, data, refusal)


def answer_status(response: dict[str, Any], modern: bool) -> int:
    """The status of the JSON-RPC response ``response`` answered on its own: 200, but
    for a 2026-07-28 error the era's ladder."""
    if not modern:
        return 200
    error = response.get("error")
    if error is None:
        return 200
    code = error.get("code")
    if code == METHOD_NOT_FOUND:
        return 404
    return 400 if code in MODERN_BAD_REQUEST_CODES else 200


def refused(exc: Refused, request_id: Any) -> Reply:
    """The answer to the refusal ``exc`` of the request ``request_id``: the status its
    middleware chose, else its bound's, else its code's, else 403."""
    status = exc.status
    if status is None and exc.refusal is not None:
        status = REFUSAL_STATUS.get(exc.refusal)
    if status is None:
        status = CODE_STATUS.get(exc.code, 403)
    headers = dict(exc.headers)
    if exc.retry_after is not None and HEADER_RETRY_AFTER not in headers:
        headers[HEADER_RETRY_AFTER] = str(max(1, math.ceil(exc.retry_after)))
    return Reply(status, exc.code, exc.message, safe_id(request_id), exc.data, exc.refusal,
                 headers)


def failed(exc: MCPError, request_id: Any, modern: bool) -> Reply:
    """The answer to an error raised (not returned) while serving ``request_id``."""
    if isinstance(exc, Refused):
        return refused(exc, request_id)
    status = answer_status({"error": {"code": exc.code}}, True) if modern else 400
    return Reply(status if status != 200 else 400, exc.code, exc.message, safe_id(request_id),
                 exc.data)


def auth_status(exc: AuthError) -> int:
    """The status of an authentication refusal."""
    return REFUSAL_STATUS.get(exc.kind, 401)


def auth_headers(exc: AuthError) -> dict[str, str]:
    """``Retry-After`` for a token that could not be judged (try again, the same token)."""
    return {HEADER_RETRY_AFTER: str(RETRY_AFTER_BUSY)} if exc.kind is Refusal.AUTH_UNAVAILABLE \
        else {}


def in_band(exc: Refused | AuthError, request_id: Any) -> dict[str, Any]:
    """A refusal as a JSON-RPC error alone (an entry of a batch, the last event of a
    stream): the code, message and data, no status."""
    if isinstance(exc, AuthError):
        return error_body(request_id, INVALID_REQUEST, exc.message)
    return error_body(request_id, exc.code, exc.message, exc.data)
