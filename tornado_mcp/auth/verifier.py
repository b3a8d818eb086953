"""The pluggable part of the OAuth resource server: who vouches for a bearer token.

A :class:`TokenVerifier` turns a token into a :class:`~tornado_mcp.Principal` or raises
:class:`~tornado_mcp.auth.InvalidToken`.  Two ship with the library:
:class:`~tornado_mcp.auth.jwt_verifier.JWTVerifier` (signed JWTs checked against the
issuer's JWKS, no network per request) and
:class:`~tornado_mcp.auth.token_introspection.IntrospectionVerifier` (RFC 7662: ask the
authorization server, cached).  Write your own for anything else::

    class StaticTokens:
        async def verify(self, token: str, resource: str) -> Principal:
            try:
                return TOKENS[token]
            except KeyError:
                raise InvalidToken("unknown token") from None
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ..protocol.auth_errors import InvalidToken
from ..protocol.identity import Principal

#: How a bearer-authenticated principal says how it was authenticated.
BEARER = "bearer"
#: The namespaces of a bearer principal's subject: a user (``sub``), a client on its own
#: behalf (``client_id``).
USER = "user"
CLIENT = "client"


class TokenVerifier(Protocol):
    """Verifies one bearer token presented to the endpoint whose canonical URL is
    ``resource``.

    ``resource`` is the audience a token must be meant for, unless the verifier was given
    its own (RFC 8707: a token minted for another resource is refused, never passed on).

    A Protocol for its implementations: :class:`~tornado_mcp.auth.JWTVerifier`,
    :class:`~tornado_mcp.auth.IntrospectionVerifier`, the issuer's in-process verifier,
    and any an application writes.
    """

    async def verify(self, token: str, resource: str) -> Principal:
        """The principal ``token`` authenticates, or :class:`InvalidToken`."""
        ...


def scopes_of(claims: Mapping[str, Any],
              scope_claims: Sequence[str] | None = None) -> frozenset[str]:
    """The scopes a token grants: ``scope`` (space-separated, RFC 9068 / RFC 7662) or
    ``scp`` (a list, as Okta writes it, or a string, as Entra ID does), the first present;
    with ``scope_claims``, every one of those claims together (a string is split on
    spaces, a list taken as it is: Auth0's ``permissions``)."""
    if scope_claims is None:
        return _scopes(claims.get("scope", claims.get("scp")))
    out: frozenset[str] = frozenset()
    for claim in scope_claims:
        out |= _scopes(claims.get(claim))
    return out


def _scopes(raw: Any) -> frozenset[str]:
    if isinstance(raw, str):
        return frozenset(raw.split())
    if isinstance(raw, list | tuple):
        return frozenset(s for s in raw if isinstance(s, str))
    return frozenset()


def audiences_of(claims: Mapping[str, Any]) -> tuple[str, ...]:
    aud = claims.get("aud")
    if isinstance(aud, str):
        return (aud,)
    if isinstance(aud, list | tuple):
        return tuple(a for a in aud if isinstance(a, str))
    return ()


def principal_of(claims: Mapping[str, Any], subject_claim: str = "sub",
                 scope_claims: Sequence[str] | None = None) -> Principal:
    """The principal a verified token's claims describe.

    Its subject is the token's ``subject_claim`` (``sub`` unless told otherwise; namespace
    ``"user"``), or for a token without one (a client acting for itself) its ``client_id``
    (namespace ``"client"``): a client whose id is some user's ``sub`` is never that user.
    A token naming neither, or naming one that is not a non-empty string, is refused with
    :class:`InvalidToken`: callers without a subject would all be the same caller, sharing
    sessions, tasks and sealed state.  Its scopes: :func:`scopes_of`."""
    for claim, namespace in ((subject_claim, USER), ("client_id", CLIENT)):
        value = claims.get(claim)
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            raise InvalidToken(f"token {claim} claim is not a non-empty string")
        return Principal.of(value, scopes_of(claims, scope_claims), claims, method=BEARER,
                            namespace=namespace)
    raise InvalidToken(f"token names no subject: it has neither a {subject_claim} nor a "
                       "client_id claim")

