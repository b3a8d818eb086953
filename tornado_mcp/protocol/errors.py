"""The exceptions that carry JSON-RPC and MCP errors (codes: :mod:`tornado_mcp.protocol`).

Raise :class:`MCPError` (or one of its helpers) from a handler to answer with a JSON-RPC
error; anything else a handler raises becomes -32603 with a generic message, and the
exception is logged on the server, never sent to the client.
"""

from __future__ import annotations

import logging
from typing import Any

from . import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    REQUEST_REFUSED,
    RESOURCE_NOT_FOUND_LEGACY,
    Refusal,
)

log = logging.getLogger("tornado_mcp.server")


class MCPError(Exception):
    """A JSON-RPC error to send back: ``code``, ``message`` and optional ``data``.

    The codes are named in :mod:`tornado_mcp.protocol`.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


class Refused(MCPError):
    """The request is refused, not answered: by a bound (``refusal`` names it, and it is
    counted under that name in the refusals), by the rate limit, or by a middleware,
    which may raise it itself::

        raise Refused("Forbidden: deleting needs the admin scope")

    The client gets a JSON-RPC error with ``code`` (default -32030), ``message`` and
    ``data``; ``retry_after`` (seconds) tells it when to try again (``data.retryAfter``).
    Each transport answers a refusal its own way: stdio in-band, Streamable HTTP with the
    status its wire map gives the refusal (403 for -32030, 429 for -32029, 413 for a bound
    on size, 503 for a server-wide cap, with ``Retry-After``) when the request is answered
    on its own, else in-band (an entry of a batch, the last event of a stream).  A
    middleware that wants another HTTP answer gives ``status`` and ``headers``: the HTTP
    transport then uses those instead of its map, and other transports ignore them.
    """

    def __init__(self, message: str, *, code: int = REQUEST_REFUSED, data: Any = None,
                 refusal: Refusal | None = None, retry_after: int | None = None,
                 status: int | None = None, headers: dict[str, str] | None = None) -> None:
        if retry_after is not None:
            data = {**(data if isinstance(data, dict) else {}), "retryAfter": retry_after}
        super().__init__(code, message, data)
        self.refusal = refusal
        self.retry_after = retry_after
        #: An HTTP status and headers of the middleware's own choosing (see above).
        self.status = status
        self.headers = headers or {}


def error_of(exc: Exception, what: str = "handler") -> dict[str, Any]:
    """The JSON-RPC error object for what a handler, a middleware or a task raised: an
    :class:`MCPError`'s own error, else a generic internal error, its traceback logged on
    the server and never sent to the client.  The one exception map of every transport."""
    if isinstance(exc, MCPError):
        return exc.to_error()
    log.error("%s raised", what, exc_info=exc)
    return {"code": INTERNAL_ERROR, "message": "Internal error"}


def method_not_found(method: str) -> MCPError:
    return MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")


class ResourceNotFound(MCPError):
    """Raise from a resource handler when ``uri`` names nothing.

    The transport answers -32002 in the legacy era and -32602 at 2026-07-28, both with
    ``data.uri``.
    """

    def __init__(self, uri: str) -> None:
        super().__init__(RESOURCE_NOT_FOUND_LEGACY, "Resource not found", {"uri": uri})
        self.uri = uri


class ToolError(Exception):
    """Raise from a tool to return a tool result with ``isError: true`` and this message."""


class MissingClientCapability(MCPError):
    """The request needs a client capability its sender did not declare (-32021)."""

    def __init__(self, required: dict[str, Any]) -> None:
        super().__init__(MISSING_CLIENT_CAPABILITY, "Missing required client capability",
                         {"requiredCapabilities": required})
