"""Who may call the endpoint: the host application's own login, or OAuth 2.1 bearer tokens.

Two ways in, both feeding :attr:`Context.principal <tornado_mcp.Context.principal>`:

* the host app's authentication: ``Transport(server, authenticate=fn)`` where ``fn``
  takes the Tornado ``RequestHandler`` (cookies, headers, ``get_current_user``) and
  returns a :class:`~tornado_mcp.Principal`, or ``None`` for a 401; or a subclass of
  :class:`~tornado_mcp.MCPHandler` overriding ``get_principal``;
* an OAuth 2.1 resource server per the MCP Authorization spec:
  ``Transport(server, oauth=OAuthResource(verifier, authorization_servers=[...]))`` with a
  :class:`TokenVerifier`: :class:`~.jwt_verifier.JWTVerifier` (the ``oauth`` extra) or
  :class:`IntrospectionVerifier`; with ``dpop=DPoP()`` it also takes DPoP-bound tokens
  (RFC 9449, :mod:`.dpop`).

Scopes per tool, prompt and resource: see :mod:`..server.scopes`.  The walk-through is
``docs/auth.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol.auth_errors import AuthError, InvalidToken, VerifierBusy
from ..server.scopes import ScopeRules
from .dpop import DPoP
from .resource import OAuthResource
from .token_introspection import IntrospectionVerifier
from .verifier import TokenVerifier

if TYPE_CHECKING:
    from .jwt_verifier import JWTVerifier

__all__ = [
    "AuthError",
    "DPoP",
    "IntrospectionVerifier",
    "InvalidToken",
    "JWTVerifier",
    "OAuthResource",
    "ScopeRules",
    "TokenVerifier",
    "VerifierBusy",
]


def __getattr__(name: str) -> Any:
    """``JWTVerifier`` is imported on first use: it needs PyJWT (the ``oauth`` extra)."""
    if name == "JWTVerifier":
        from .jwt_verifier import JWTVerifier
        return JWTVerifier
    raise AttributeError(name)
