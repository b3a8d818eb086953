"""The endpoint as an OAuth 2.1 protected resource (MCP Authorization, RFC 9728).

:class:`OAuthResource` says which authorization servers the endpoint trusts, how tokens
are verified, and what the endpoint is called; the transport then

* publishes the RFC 9728 metadata at the well-known path for the endpoint
  (``/.well-known/oauth-protected-resource/mcp`` for an endpoint at ``/mcp``), among the
  routes :meth:`Transport.routes <tornado_mcp.Transport.routes>` returns;
* answers a request without a valid token with 401 and
  ``WWW-Authenticate: Bearer resource_metadata="..."``, from which a client discovers
  the metadata, then the authorization server, and comes back with a token;
* answers a token lacking a required scope with 403 ``error="insufficient_scope"`` and the
  scopes needed, so a client can step up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..protocol import WELL_KNOWN_PROTECTED_RESOURCE
from .dpop import DPoP
from .errors import AuthError
from .verifier import TokenVerifier


@dataclass
class OAuthResource:
    """How the endpoint accepts bearer tokens.

    ``resource``: the endpoint's canonical URL (what tokens' audience must be).  Set it in
    production; when ``None`` it is taken from each request's scheme, ``Host`` and path,
    which is only as trustworthy as the ``Host`` header (keep DNS-rebinding protection on,
    with ``allowed_hosts`` naming your public host names).  ``required_scopes``: what every
    request needs; per-tool scopes come on top (``@server.tool(scopes=[...])``).
    ``dpop``: also accept DPoP-bound tokens (RFC 9449; see :class:`~tornado_mcp.auth.DPoP`).
    """

    verifier: TokenVerifier
    authorization_servers: Sequence[str]
    resource: str | None = None
    scopes_supported: Sequence[str] = ()
    required_scopes: Sequence[str] = ()
    resource_name: str | None = None
    resource_documentation: str | None = None
    extra_metadata: dict[str, Any] = field(default_factory=dict)
    dpop: DPoP | None = None

    @classmethod
    def jwt(cls, issuer: str, jwks_url: str, audience: str | None = None,
            **kwargs: Any) -> OAuthResource:
        """A resource accepting JWTs from ``issuer`` (keys from ``jwks_url``) meant for
        ``audience``: by default the endpoint's own URL, which is also then the
        ``resource`` (needs the ``oauth`` extra).  ``kwargs`` are the other fields."""
        from .jwt_verifier import JWTVerifier

        kwargs.setdefault("resource", audience)
        return cls(JWTVerifier(issuer, jwks_url, audience=audience), [issuer], **kwargs)

    def resource_url(self, request: Any, path: str) -> str:
        """The canonical URL of the endpoint mounted at ``path``, as ``request`` reached it."""
        if self.resource is not None:
            return self.resource
        return f"{request.protocol}://{request.host}{path}"

    @staticmethod
    def metadata_path(path: str) -> str:
        """The local route of the RFC 9728 document for the endpoint mounted at ``path``."""
        return WELL_KNOWN_PROTECTED_RESOURCE + ("/" + path.strip("/") if path.strip("/") else "")

    def metadata_url(self, request: Any, path: str) -> str:
        """Where the RFC 9728 document for the endpoint at ``path`` is served."""
        resource = self.resource_url(request, path)
        scheme, _, rest = resource.partition("://")
        host, slash, res_path = rest.partition("/")
        suffix = ("/" + res_path.rstrip("/")) if slash and res_path.strip("/") else ""
        return f"{scheme}://{host}{WELL_KNOWN_PROTECTED_RESOURCE}{suffix}"

    def metadata(self, request: Any, path: str) -> dict[str, Any]:
        """The RFC 9728 protected resource metadata document."""
        doc: dict[str, Any] = {
            "resource": self.resource_url(request, path),
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        scopes = list(dict.fromkeys([*self.scopes_supported, *self.required_scopes]))
        if scopes:
            doc["scopes_supported"] = scopes
        if self.resource_name:
            doc["resource_name"] = self.resource_name
        if self.resource_documentation:
            doc["resource_documentation"] = self.resource_documentation
        if self.dpop is not None:
            doc.update(self.dpop.metadata())
        doc.update(self.extra_metadata)
        return doc

    def challenge(self, request: Any, path: str, error: AuthError) -> str:
        """The ``WWW-Authenticate`` value for ``error`` (RFC 6750 §3, RFC 9728 §5.1)."""
        parts = [f'resource_metadata="{self.metadata_url(request, path)}"']
        scopes = error.scopes or tuple(self.required_scopes)
        if scopes:
            parts.append(f'scope="{" ".join(scopes)}"')
        if self.dpop is not None:
            from .dpop_gate import challenge
            return challenge(self.dpop, request, parts, error)
        if error.error is not None:
            parts.append(f'error="{error.error}"')
            parts.append(f'error_description="{_quoted(error.description)}"')
        return "Bearer " + ", ".join(parts)


def _quoted(text: str) -> str:
    """``text`` safe inside a quoted-string (RFC 6750 limits it to printable ASCII)."""
    return "".join(c for c in text if 0x20 <= ord(c) < 0x7F and c not in '"\\')
