"""Authenticating one request, before its body is read.

:func:`authenticate` runs from :meth:`MCPHandler.prepare
<tornado_mcp.transport.MCPHandler.prepare>` only on endpoints that authenticate (an
``oauth=`` resource, an ``authenticate=`` hook, or a handler class overriding
``get_principal``); an endpoint without authentication never gets here and pays nothing.

The order: a ``Bearer`` token, when the endpoint is an OAuth resource and the request has
one, is verified and decides alone (a bad token is refused even if a cookie would pass).
Otherwise the handler's ``get_principal()`` (by default the ``authenticate=`` hook) is
asked; ``None`` from it is a 401.  A resource accepting DPoP (``OAuthResource(dpop=...)``)
also takes ``Authorization: DPoP <token>`` with a proof (:mod:`..auth.dpop_gate`); a DPoP-bound
token is never accepted as ``Bearer``.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import tornado.web

from ..auth.dpop import HEADER_DPOP_NONCE
from ..auth.dpop_gate import authenticate_dpop, check_bearer
from ..protocol import HEADER_AUTHORIZATION, Refusal
from ..protocol.auth_errors import (
    AuthError,
    InvalidToken,
    VerifierBusy,
    insufficient,
    invalid,
    missing,
    unavailable,
)
from ..protocol.identity import ANONYMOUS, Principal

if TYPE_CHECKING:
    from .core import Transport
    from .flow import RequestFlow

log = logging.getLogger("tornado_mcp.auth")

#: The host app's authentication hook (``Transport(authenticate=...)``): the request's
#: handler -> its :class:`~tornado_mcp.Principal`, ``None`` for nobody (or an awaitable of it).
Authenticate = Callable[[tornado.web.RequestHandler],
                        Principal | Awaitable[Principal | None] | None]

#: RFC 6750 §2.1 ``b64token``: what a bearer token may be made of.
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


async def authenticate(h: RequestFlow) -> Principal:
    """The principal of ``h``'s request, or :class:`AuthError`."""
    t = h.transport
    oauth = t.oauth
    if oauth is not None:
        async def verify(token: str) -> Principal:
            try:
                return await oauth.verifier.verify(token, oauth.resource_url())
            except InvalidToken as exc:
                raise invalid(str(exc)) from None
            except VerifierBusy as exc:
                raise unavailable(str(exc)) from None
            except Exception as exc:  # a verifier's bug is a refused token, never a 500
                # Its type only: the message or traceback of a failing verifier may hold
                # the token.  It fails so for every token that trips it: one line a minute.
                oauth.verifier_errors.log(logging.ERROR, "token verifier %s raised %s",
                                          type(oauth.verifier).__name__, type(exc).__name__)
                raise invalid("token could not be verified") from None

        max_bytes = t.options.max_bearer_token_bytes
        dpop_token = bearer_token(h, max_bytes, "dpop") if oauth.dpop is not None else None
        token = dpop_token or bearer_token(h, max_bytes)
        if token is not None:
            if oauth.dpop is not None and dpop_token is not None:
                principal = await authenticate_dpop(h.request, oauth.resource, oauth.dpop,
                                                    token, verify)
                if oauth.dpop.nonces:  # the nonce the next proof should carry
                    h.set_header(HEADER_DPOP_NONCE, oauth.dpop.nonce())
            else:
                principal = await verify(token)
                check_bearer(oauth.dpop, principal)
            if not principal.has_scopes(*oauth.required_scopes):
                raise insufficient(oauth.required_scopes)
            return principal
    found = h.get_principal()
    if inspect.isawaitable(found):
        found = await found
    if found is None:
        raise missing(scopes=oauth.required_scopes if oauth is not None else ())
    return found


def default_principal(handler: tornado.web.RequestHandler, t: Transport) -> object:
    """What :meth:`MCPHandler.get_principal` answers unless overridden: the ``authenticate``
    hook's answer of ``handler``'s transport ``t``; without a hook, ``None`` on an OAuth
    resource (a token is required) and the anonymous principal otherwise."""
    hook = t.authenticate
    if hook is not None:
        return hook(handler)
    return None if t.oauth is not None else ANONYMOUS


def bearer_token(h: RequestFlow, max_bytes: int, scheme: str = "bearer") -> str | None:
    """The request's bearer token (or the token of another ``scheme``, such as ``dpop``);
    ``None`` when it offers none."""
    values = h.request.headers.get_list(HEADER_AUTHORIZATION)
    if not values:
        return None
    if len(values) > 1:
        raise invalid("more than one Authorization header")
    offered, _, token = values[0].strip().partition(" ")
    if offered.lower() != scheme:
        return None
    token = token.strip()
    if len(token) > max_bytes:
        raise AuthError(Refusal.MAX_BEARER_TOKEN_BYTES,
                        f"bearer token exceeds {max_bytes} bytes")
    if not _B64TOKEN.fullmatch(token):
        raise invalid("malformed token")
    return token


def same_caller(a: Principal, b: Principal) -> bool:
    """``a`` and ``b`` are the same caller (same subject, same way of authenticating):
    a session opened by one is not usable by the other.  Scopes may differ (a client
    that stepped up to more scopes is still the same caller)."""
    return a.caller == b.caller
