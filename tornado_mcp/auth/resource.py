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

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..protocol import WELL_KNOWN_PROTECTED_RESOURCE
from ..protocol.auth_errors import AuthError
from .dpop import DPoP
from .quietlog import Throttled
from .verifier import TokenVerifier


@dataclass
class OAuthResource:
    """How the endpoint accepts bearer tokens.

    ``resource``: the endpoint's canonical URL (RFC 8707, RFC 9728): the audience tokens
    must name, unless the verifier has its own, and the ``resource`` of the metadata.  It
    is configuration and required: it is never taken from a request (a ``Host`` header is
    the client's to choose), so a resource without it raises :class:`ValueError`.
    ``required_scopes``: what every request needs; per-tool scopes come on top
    (``@server.tool(scopes=[...])``).
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
    #: Where a verifier that raises (a bug, never a bad token) is logged, throttled.
    verifier_errors: Throttled = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.resource = canonical_resource(self.resource)
        self.verifier_errors = Throttled(logging.getLogger("tornado_mcp.auth"))

    @classmethod
    def jwt(cls, issuer: str, jwks_url: str, audience: str | None = None,
            **kwargs: Any) -> OAuthResource:
        """A resource accepting JWTs from ``issuer`` (keys from ``jwks_url``) meant for
        ``audience``, the endpoint's canonical URL (also the ``resource`` unless one is
        given; one of the two is required).  Needs the ``oauth`` extra.  ``kwargs`` are
        the other fields, and the :class:`~.jwt_verifier.JWTVerifier` options
        (``max_key_age``, ``token_types``, ...)."""
        from .jwt_verifier import JWTVerifier

        resource = kwargs.pop("resource", None) or audience
        if resource is None:
            raise ValueError(_NO_RESOURCE)
        verifier_options = {k: kwargs.pop(k) for k in list(kwargs) if k in _JWT_OPTIONS}
        return cls(JWTVerifier(issuer, jwks_url, audience=audience, **verifier_options),
                   [issuer], resource=resource, **kwargs)

    def resource_url(self, request: Any = None, path: str = "") -> str:
        """The canonical URL of the endpoint: the configured ``resource``, whatever
        ``request`` (kept for callers passing one) says."""
        assert self.resource is not None  # __post_init__ refuses None
        return self.resource

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


_NO_RESOURCE = ("an OAuth resource needs its canonical URL: pass resource= (or audience=), "
                "e.g. 'https://mcp.example.com/mcp'; it is never derived from a request's "
                "Host header")
#: The keyword arguments of :meth:`OAuthResource.jwt` that go to the verifier.
_JWT_OPTIONS = frozenset({"algorithms", "leeway", "max_keys", "max_jwks_bytes",
                          "refresh_interval", "max_key_age", "fetch_timeout", "cache_size",
                          "cache_ttl", "token_types", "require_typ", "strict_rfc9068",
                          "subject_claim", "scope_claims"})


def canonical_resource(url: str | None) -> str:
    """``url`` when it can be a resource indicator (RFC 8707 §2: an absolute ``http(s)``
    URI without a fragment), else :class:`ValueError`."""
    if not url:
        raise ValueError(_NO_RESOURCE)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment \
            or "#" in url:
        raise ValueError(f"resource must be an absolute http(s) URL without a fragment: "
                         f"{url!r}")
    return url


def _quoted(text: str) -> str:
    """``text`` safe inside a quoted-string (RFC 6750 limits it to printable ASCII)."""
    return "".join(c for c in text if 0x20 <= ord(c) < 0x7F and c not in '"\\')
