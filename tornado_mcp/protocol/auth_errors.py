"""Why authentication refused a request, and what the refusal tells the client.

An :class:`AuthError` carries the :class:`~tornado_mcp.protocol.Refusal` it is counted
under (which decides how each transport answers it: over HTTP, 401 to authenticate, 403
for a missing scope, 503 when the token could not be judged), the RFC 6750 ``error`` code
for the ``WWW-Authenticate`` challenge, and a description a person can act on (never the
token itself).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from . import Refusal


class InvalidToken(Exception):
    """A :class:`~tornado_mcp.auth.TokenVerifier` did not accept a token.

    The message says why in words safe to send back to the client and to log: it never
    contains the token or its claims.
    """


class VerifierBusy(Exception):
    """A verifier could not judge a token now (its bound on calls to the authorization
    server is full): the request is refused as not judged (over HTTP 503 with
    ``Retry-After``), not as a bad token, since the token may be good."""


class AuthError(Exception):
    """Authentication or authorization refused the request."""

    def __init__(self, kind: Refusal, description: str,
                 scopes: Iterable[str] = ()) -> None:
        super().__init__(description)
        self.kind = kind
        self.description = description
        #: Scopes the request needs (sent as the challenge's ``scope``), sorted.
        self.scopes = tuple(sorted(scopes))
        #: The id of the JSON-RPC request refused, once it was read (else ``None``).
        self.request_id: Any = None

    @property
    def error(self) -> str | None:
        """The RFC 6750 error code; none when no credential was offered (RFC 6750 §3.1),
        nor when the token was not judged at all (503)."""
        if self.kind in (Refusal.AUTH_MISSING, Refusal.AUTH_UNAVAILABLE):
            return None
        if self.kind is Refusal.AUTH_INSUFFICIENT_SCOPE:
            return "insufficient_scope"
        return "invalid_token"

    @property
    def message(self) -> str:
        """The JSON-RPC error message."""
        head = ("Forbidden" if self.kind is Refusal.AUTH_INSUFFICIENT_SCOPE
                else "Service unavailable" if self.kind is Refusal.AUTH_UNAVAILABLE
                else "Unauthorized")
        return f"{head}: {self.description}"


def missing(description: str = "authentication required",
            scopes: Iterable[str] = ()) -> AuthError:
    return AuthError(Refusal.AUTH_MISSING, description, scopes)


#: Seconds a client is told to wait after a 503 (``Retry-After``).
RETRY_AFTER_BUSY = 1


def unavailable(description: str) -> AuthError:
    return AuthError(Refusal.AUTH_UNAVAILABLE, description)


def invalid(description: str) -> AuthError:
    return AuthError(Refusal.AUTH_INVALID, description)


def insufficient(scopes: Iterable[str]) -> AuthError:
    needed = sorted(scopes)
    return AuthError(Refusal.AUTH_INSUFFICIENT_SCOPE,
                     f"insufficient scope: requires {' '.join(needed)}", needed)
