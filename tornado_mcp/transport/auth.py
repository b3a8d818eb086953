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
from ..protocol import HEADER_RETRY_AFTER, HEADER_WWW_AUTHENTICATE, INVALID_REQUEST, jsonio
from ..protocol.auth_errors import RETRY_AFTER_BUSY, AuthError
from .gate import authenticate
from .reply import Reply

if TYPE_CHECKING:
    from .exchange import Exchange

log = logging.getLogger("tornado_mcp.auth")


def refuse(h: Exchange, exc: AuthError) -> None:
    """Answer ``h`` with the refusal: its status, a JSON-RPC error and, on an OAuth
    resource, the ``WWW-Authenticate`` challenge. Counted under ``exc.kind``."""
    h.write_reply(Reply(exc.status, INVALID_REQUEST, exc.message, exc.request_id,
                        refusal=exc.kind))
    oauth = h.transport.oauth
    if exc.status == 503:  # not judged: try again soon, the same token
        h.set_header(HEADER_RETRY_AFTER, str(RETRY_AFTER_BUSY))
    elif oauth is not None:
        h.set_header(HEADER_WWW_AUTHENTICATE, oauth.challenge(h.request, h.request.path, exc))
        if oauth.dpop is not None and oauth.dpop.nonces:  # the nonce a retry needs
            h.set_header(HEADER_DPOP_NONCE, oauth.dpop.nonce())
    log.info("%d %s %s (%s): %s", exc.status, h.request.method, h.request.path,
             h.request.remote_ip, exc.description)
    h.finish()


async def authenticate_request(h: Exchange) -> None:
    """Establish ``h.principal`` (from its ``get_principal``, the transport's hook or a
    bearer token), or answer the request with the refusal."""
    try:
        h.principal = await authenticate(h)
    except AuthError as exc:
        refuse(h, exc)


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
