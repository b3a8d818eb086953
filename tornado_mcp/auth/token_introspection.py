"""Verifying opaque tokens by RFC 7662 introspection, cached.

The resource server asks the authorization server's introspection endpoint about each
token it has not seen recently (authenticating itself with its own client id and secret),
and keeps the answer for at most ``cache_ttl`` seconds, never past the token's ``exp``.
The cache holds at most ``cache_size`` tokens (the least recently used goes first), keyed
by a SHA-256 of the token (and of the resource it was presented at, when the audience is
the resource), so a flood of made-up tokens costs bounded memory and the cache
itself holds no token.  Negative answers are cached too, so one bad token is asked about
once per TTL.

Outbound calls are bounded: at most ``max_concurrent`` introspection requests are in
flight at once (per verifier, so per process for the usual one verifier); a token that
finds every slot taken waits for one at most ``max_wait`` seconds, and at most
``max_waiting`` tokens wait at once.  A token that cannot be asked about in time is
refused with :class:`~tornado_mcp.protocol.auth_errors.VerifierBusy` (HTTP 503 with
``Retry-After``, never 401: the token may well be good).  The same token presented by
many requests at once is asked about once: they all wait for that one answer.

A token is accepted when the answer says ``active``, its ``aud`` holds the audience (the
configured resource URL by default; RFC 8707) and, when ``issuer`` is given, its ``iss``
is it.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import quote, urlencode

from tornado.httpclient import HTTPClientError, HTTPRequest

from ..protocol.auth_errors import InvalidToken, VerifierBusy
from ..protocol.identity import Principal
from .http import fetch
from .quietlog import Throttled
from .verifier import audiences_of, principal_of

log = logging.getLogger("tornado_mcp.auth")


class IntrospectionVerifier:
    """A :class:`~tornado_mcp.auth.TokenVerifier` asking ``endpoint`` (RFC 7662)."""

    def __init__(self, endpoint: str, client_id: str, client_secret: str, *,
                 audience: str | None = None, issuer: str | None = None,
                 cache_size: int = 10_000, cache_ttl: float = 60.0,
                 timeout: float = 10.0, max_response_bytes: int = 64 * 1024,
                 max_concurrent: int = 8, max_wait: float = 5.0,
                 max_waiting: int = 1000) -> None:
        if cache_size < 0 or cache_ttl < 0:
            raise ValueError("cache_size and cache_ttl may not be negative")
        if max_concurrent < 1 or max_waiting < 0 or not 0 <= max_wait < float("inf"):
            raise ValueError("max_concurrent must be at least 1, max_waiting and max_wait "
                             "finite and not negative")
        self.max_concurrent = max_concurrent
        self.max_wait = max_wait
        self.max_waiting = max_waiting
        self._slots = asyncio.Semaphore(max_concurrent)
        # sha256 key -> the one introspection in flight for it, shared by its waiters
        self._flights: dict[bytes, asyncio.Future[tuple[Principal | str, float | None]]] = {}
        self._failures = Throttled(log)  # one line a minute, however many tokens fail
        #: Introspection requests in flight now, and tokens waiting for a slot.
        self.in_flight = 0
        self.waiting = 0
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
        flight = self._flights.get(key)
        if flight is None:
            flight = asyncio.ensure_future(self._bounded(token, resource))
            self._flights[key] = flight
            flight.add_done_callback(lambda f: self._landed(key, f))
        outcome, exp = await asyncio.shield(flight)
        ttl = self.cache_ttl
        if exp is not None:
            ttl = min(ttl, exp - time.time())
        if ttl > 0 and self.cache_size > 0 and key not in self._cache:
            self._cache[key] = (now + ttl, outcome)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return _answer(outcome)

    def _landed(self, key: bytes, flight: asyncio.Future[Any]) -> None:
        if self._flights.get(key) is flight:
            del self._flights[key]
        if not flight.cancelled():
            flight.exception()  # retrieved, even when every waiter has gone

    async def _bounded(self, token: str, resource: str) -> tuple[Principal | str, float | None]:
        """:meth:`_introspect` in one of the ``max_concurrent`` slots."""
        if self._slots.locked():
            if self.waiting >= self.max_waiting:
                raise VerifierBusy("token verification is busy; retry shortly")
            self.waiting += 1
            try:
                await asyncio.wait_for(self._slots.acquire(), self.max_wait)
            except TimeoutError:
                raise VerifierBusy("token verification is busy; retry shortly") from None
            finally:
                self.waiting -= 1
        else:
            await self._slots.acquire()
        self.in_flight += 1
        try:
            return await self._introspect(token, resource)
        finally:
            self.in_flight -= 1
            self._slots.release()

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
            self._failures.log(logging.WARNING, "token introspection at %s failed: %s",
                               self.endpoint, exc)
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
        try:
            return principal_of(data), exp_f
        except InvalidToken as exc:
            return str(exc), exp_f


def _answer(outcome: Principal | str) -> Principal:
    if isinstance(outcome, str):
        raise InvalidToken(outcome)
    return outcome
