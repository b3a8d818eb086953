"""Verifying opaque tokens by RFC 7662 introspection, cached.

The resource server asks the authorization server's introspection endpoint about each
token it has not seen recently (authenticating itself with its own client id and secret),
and keeps the answer for at most ``cache_ttl`` seconds, never past the token's ``exp``.
The cache holds at most ``cache_size`` tokens (the least recently used goes first), keyed
by a SHA-256 of the token (and of the resource it was presented at, when the audience is
the resource), so a flood of made-up tokens costs bounded memory and the cache
itself holds no token.  Negative answers are cached too, so one bad token is asked about
once per TTL.

A token is accepted when the answer says ``active``, its ``aud`` holds the audience (the
endpoint's own URL by default; RFC 8707) and, when ``issuer`` is given, its ``iss`` is it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import time
from collections import OrderedDict
from urllib.parse import quote, urlencode

from tornado.httpclient import HTTPClientError, HTTPRequest

from ..identity import Principal
from .errors import InvalidToken
from .http import fetch
from .verifier import audiences_of, principal_of

log = logging.getLogger("tornado_mcp.auth")


class IntrospectionVerifier:
    """A :class:`~tornado_mcp.auth.TokenVerifier` asking ``endpoint`` (RFC 7662)."""

    def __init__(self, endpoint: str, client_id: str, client_secret: str, *,
                 audience: str | None = None, issuer: str | None = None,
                 cache_size: int = 10_000, cache_ttl: float = 60.0,
                 timeout: float = 10.0, max_response_bytes: int = 64 * 1024) -> None:
        if cache_size < 0 or cache_ttl < 0:
            raise ValueError("cache_size and cache_ttl may not be negative")
        self.endpoint = endpoint
        self.audience = audience
        self.issuer = issuer
        self.cache_size = cache_size
        self.cache_ttl = cache_ttl
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        basic = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}"
        self._authorization = "Basic " + base64.b64encode(basic.encode()).decode()
        # sha256(token) -> (monotonic expiry, principal or the refusal's description)
        self._cache: OrderedDict[bytes, tuple[float, Principal | str]] = OrderedDict()
        #: Introspection requests sent so far.
        self.requests = 0

    def __repr__(self) -> str:  # never show the client secret
        return f"IntrospectionVerifier({self.endpoint!r})"

    @property
    def cached(self) -> int:
        return len(self._cache)

    async def verify(self, token: str, resource: str) -> Principal:
        """The principal of a token the introspection endpoint says is active, unexpired,
        for its audience (this resource unless ``audience`` is set) and (when ``issuer``
        is set) from that issuer;
        :class:`InvalidToken` for any other, or when the endpoint cannot answer."""
        # The verdict depends on the resource when no fixed audience is configured (the
        # token must name the resource it is used at), so the resource is in the key.
        scope = "" if self.audience else resource
        key = hashlib.sha256(f"{scope}\0{token}".encode()).digest()
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit is not None:
            if hit[0] > now:
                self._cache.move_to_end(key)
                return _answer(hit[1])
            del self._cache[key]
        outcome, exp = await self._introspect(token, resource)
        ttl = self.cache_ttl
        if exp is not None:
            ttl = min(ttl, exp - time.time())
        if ttl > 0 and self.cache_size > 0:
            self._cache[key] = (now + ttl, outcome)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return _answer(outcome)

    async def _introspect(self, token: str, resource: str) -> tuple[Principal | str, float | None]:
        self.requests += 1
        req = HTTPRequest(self.endpoint, method="POST",
                          body=urlencode({"token": token, "token_type_hint": "access_token"}),
                          headers={"Content-Type": "application/x-www-form-urlencoded",
                                   "Accept": "application/json",
                                   "Authorization": self._authorization},
                          connect_timeout=self.timeout, request_timeout=self.timeout)
        try:
            resp = await fetch(req, self.max_response_bytes)
            data = json.loads(resp.body)
        except (HTTPClientError, OSError, ValueError) as exc:
            log.warning("token introspection at %s failed: %s", self.endpoint, exc)
            raise InvalidToken("token could not be verified") from None
        if not isinstance(data, dict) or data.get("active") is not True:
            return "token is not active", None
        exp = data.get("exp")
        exp_f = float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) \
            else None
        if exp_f is not None and exp_f <= time.time():
            return "token expired", None
        audience = self.audience or resource
        if not any(a.rstrip("/") == audience.rstrip("/") for a in audiences_of(data)):
            return "token audience is not this resource", exp_f
        if self.issuer is not None and data.get("iss") != self.issuer:
            return "token issuer is not trusted", exp_f
        return principal_of(data), exp_f


def _answer(outcome: Principal | str) -> Principal:
    if isinstance(outcome, str):
        raise InvalidToken(outcome)
    return outcome
