"""CORS: letting a page on another origin call the endpoint from a browser.

Off by default.  With ``cors_allowed_origins`` set, a request whose ``Origin`` is listed
gets the ``Access-Control-Allow-Origin`` answer and the MCP response headers exposed to
the page (``Mcp-Session-Id``, ``MCP-Protocol-Version``, ``WWW-Authenticate``), and a
preflight (``OPTIONS`` with ``Access-Control-Request-Method``) from it is answered 204
with the methods and request headers MCP uses.  Any other ``OPTIONS`` is still 405.

CORS and DNS-rebinding protection agree: an origin listed for CORS also passes the
``Origin`` check (:mod:`.security`), while the ``Host`` check is unchanged, so a hostile
name resolving to loopback is still refused.  ``allowed_origins`` only admits an origin
(for clients that send ``Origin`` but are not browsers, or a same-site proxy); it gives a
browser page no CORS answer, so the browser still hides the response from it.
Credentials (cookies) are not allowed cross-origin: a browser client authenticates with
an ``Authorization`` header, which is allowed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocol import (
    HEADER_LAST_EVENT_ID,
    HEADER_METHOD,
    HEADER_NAME,
    HEADER_PARAM_PREFIX,
    HEADER_PROTOCOL_VERSION,
    HEADER_SESSION_ID,
    INVALID_REQUEST,
)
from .wire import Reply

if TYPE_CHECKING:
    from .flow import RequestFlow

#: The methods the endpoint answers a browser.
ALLOWED_METHODS = "GET, POST, DELETE"
#: Request headers a cross-origin page may send (plus any ``Mcp-Param-*`` it asks for).
ALLOWED_HEADERS = ("Content-Type", "Accept", "Authorization", HEADER_SESSION_ID,
                   HEADER_PROTOCOL_VERSION, HEADER_METHOD, HEADER_NAME, HEADER_LAST_EVENT_ID,
                   "DPoP")
#: Response headers a cross-origin page may read.
EXPOSED_HEADERS = ", ".join((HEADER_SESSION_ID, HEADER_PROTOCOL_VERSION, "WWW-Authenticate",
                             "DPoP-Nonce"))
#: Seconds a browser may cache a preflight answer.
MAX_AGE = "600"
#: At most this many ``Mcp-Param-*`` names are echoed from one preflight.
MAX_PARAM_HEADERS = 64

_PARAM_PREFIX = HEADER_PARAM_PREFIX.lower()


def allowed_origin(handler: RequestFlow) -> str | None:
    """The request's ``Origin`` when it is one CORS allows, else ``None``."""
    origin = handler.request.headers.get("Origin")
    if origin is None:
        return None
    origin = origin.strip()
    return origin if origin.lower() in handler.transport.options.cors_allowed_origins else None


def add_headers(handler: RequestFlow) -> None:
    """The CORS headers of an actual (not preflight) response, for an allowed origin."""
    handler.set_header("Vary", "Origin")
    origin = allowed_origin(handler)
    if origin is not None:
        handler.set_header("Access-Control-Allow-Origin", origin)
        handler.set_header("Access-Control-Expose-Headers", EXPOSED_HEADERS)


async def preflight(handler: RequestFlow) -> None:
    """Answer ``OPTIONS``: 204 for a preflight from an allowed origin, else 403 or 405."""
    headers = handler.request.headers
    method = headers.get("Access-Control-Request-Method")
    if "Origin" not in headers or method is None \
            or not handler.transport.options.cors_allowed_origins:
        raise Reply(405, INVALID_REQUEST, "Method not allowed")
    if allowed_origin(handler) is None:
        raise Reply(403, INVALID_REQUEST, "Forbidden: Origin not allowed for CORS")
    names = list(ALLOWED_HEADERS)
    params = 0
    for name in (headers.get("Access-Control-Request-Headers") or "").split(","):
        name = name.strip()
        if name.lower().startswith(_PARAM_PREFIX) and params < MAX_PARAM_HEADERS \
                and name.replace("-", "").isalnum():
            names.append(name)
            params += 1
    handler.set_status(204)
    handler.set_header("Access-Control-Allow-Methods", ALLOWED_METHODS)
    handler.set_header("Access-Control-Allow-Headers", ", ".join(names))
    handler.set_header("Access-Control-Max-Age", MAX_AGE)
    handler.clear_header("Content-Type")
    handler.finish()
