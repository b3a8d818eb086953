"""The web side of authentication: refusing a request, and serving the RFC 9728 metadata.

What is decided (who the caller is, whether a token verifies, which scopes a call needs)
lives in :mod:`tornado_mcp.auth`; this module only answers over HTTP.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import tornado.web

from ..auth.dpop import HEADER_DPOP_NONCE
from ..auth.resource import OAuthResource
from ..protocol import HEADER_WWW_AUTHENTICATE, INVALID_REQUEST, Refusal, jsonio
from ..protocol.auth_errors import AuthError
from . import wire
from .gate import authenticate
from .wire import Reply

if TYPE_CHECKING:
    from .flow import RequestFlow

log = logging.getLogger("tornado_mcp.auth")


def refusal(h: RequestFlow, exc: AuthError) -> Reply:
    """The answer to the authentication refusal ``exc``: its status (the wire map's), a
    JSON-RPC error and, on an OAuth resource, the ``WWW-Authenticate`` challenge (with the
    DPoP nonce a retry needs); ``Retry-After`` for a token that could not be judged."""
    status = wire.auth_status(exc)
    extra = wire.auth_headers(exc)
    oauth = h.transport.oauth
    if oauth is not None and exc.kind is not Refusal.AUTH_UNAVAILABLE:
        extra[HEADER_WWW_AUTHENTICATE] = oauth.challenge(h.request, h.request.path, exc)
        if oauth.dpop is not None and oauth.dpop.nonces:
            extra[HEADER_DPOP_NONCE] = oauth.dpop.nonce()
    log.info("%d %s %s (%s): %s", status, h.request.method, h.request.path,
             h.request.remote_ip, exc.description)
    return Reply(status, INVALID_REQUEST, exc.message, exc.request_id, refusal=exc.kind,
                 headers=extra)


def refuse(h: RequestFlow, exc: AuthError) -> None:
    """Answer ``h`` with the refusal ``exc`` now (see :func:`refusal`)."""
    h.write_reply(refusal(h, exc))
    h.finish()


async def authenticate_request(h: RequestFlow) -> None:
    """Establish ``h.principal`` (from its ``get_principal``, the transport's hook or a
    bearer token), or refuse the request before its body is read."""
    try:
        h.principal = await authenticate(h)
    except AuthError as exc:
        h.refuse_early(refusal(h, exc))


class ProtectedResourceMetadataHandler(tornado.web.RequestHandler):
    """Serves the RFC 9728 document for one endpoint (public: no authentication)."""

    def initialize(self, oauth: OAuthResource, path: str) -> None:
        self.oauth = oauth
        self.path = path

    def set_default_headers(self) -> None:
        self.clear_header("Server")

    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "max-age=300")
        self.finish(jsonio.dumps(self.oauth.metadata(self.request, self.path)))
